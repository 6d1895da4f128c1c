"""Table tests of `tau.status.interpret` over realistic object fixtures (tests/fixtures/status)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tau.status import tables
from tau.status.interpret import interpret
from tau.status.model import Owner, Phase, PhaseStatus, RunStatus, State
from tau.status.snapshot import Snapshot

FIXTURES = Path(__file__).parent / "fixtures" / "status"
NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)

D, A, P, W, S = "done", "active", "pending", "warning", "skipped"
JOB_PHASES = (
    "Submitted",
    "Kueue admission",
    "Pod scheduling",
    "DRA allocation",
    "Image pull",
    "Init containers",
    "Container start",
    "Ready",
)
RAY_PHASES = (
    "Submitted",
    "Kueue admission",
    "RayCluster",
    "Pod scheduling",
    "DRA allocation",
    "Image pull",
    "Init containers",
    "Container start",
    "Ready",
    "RayJob status",
    "Compute release",
)


def load_objects(case: str) -> list[dict]:
    text = (FIXTURES / f"{case}.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def snapshot_of(case: str, objects: list[dict] | None = None) -> Snapshot:
    objects = load_objects(case) if objects is None else objects
    name = next((o["metadata"]["name"] for o in objects if o["kind"] in ("Job", "RayJob")), "train")
    return Snapshot.from_objects("research", name, objects)


def run(case: str) -> RunStatus:
    return interpret(snapshot_of(case), NOW)


# case, state, phase statuses in tree order, diagnostic codes (in order), owners of the codes.
CASES = [
    ("not-found", State.NOT_FOUND, (P, P, P, S, P, S, P, P), ["RunNotFound"], {"researcher"}),
    ("quota-pending", State.QUEUED, (D, A, P, S, P, S, P, P), ["QuotaPending"], {"queue owner"}),
    ("preempted", State.QUEUED, (D, W, D, S, D, S, D, A), ["Preempted"], {"queue owner"}),
    (
        "admitted-no-pods",
        State.STARTING,
        (D, D, P, S, P, S, P, P),
        ["AdmittedNotScheduled"],
        {"platform"},
    ),
    (
        "unschedulable",
        State.STARTING,
        (D, D, W, S, P, S, P, P),
        ["UntoleratedTaint", "NodeSelectorMismatch"],
        {"platform"},
    ),
    ("claim-not-found", State.STARTING, (D, D, W, S, P, S, P, P), ["ClaimNotFound"], {"platform"}),
    (
        "insufficient-gpus",
        State.STARTING,
        (D, D, W, S, P, S, P, P),
        ["UntoleratedTaint", "InsufficientCapacity"],
        {"platform"},
    ),
    (
        "dra-claim-pending",
        State.STARTING,
        (D, D, W, W, P, S, P, P),
        ["DRAClaimPending"],
        {"platform"},
    ),
    (
        "image-pull-backoff",
        State.STARTING,
        (D, D, D, S, W, S, A, P),
        ["ImagePullBackOff"],
        {"researcher"},
    ),
    (
        "init-container-failing",
        State.STARTING,
        (D, D, D, S, A, W, A, P),
        ["InitContainerFailed"],
        {"researcher"},
    ),
    (
        "crashloop-backoff",
        State.STARTING,
        (D, D, D, S, D, S, W, P),
        ["CrashLoopBackOff"],
        {"researcher"},
    ),
    ("oomkilled", State.FAILED, (D, D, D, S, D, S, W, W), ["OOMKilled"], {"researcher"}),
    ("running", State.RUNNING, (D, D, D, S, D, S, D, D), ["ProgressUnverified"], {"researcher"}),
    ("success", State.SUCCEEDED, (D, D, D, S, D, S, D, D), ["EvidenceUnverified"], {"researcher"}),
    (
        "success-no-result-path",
        State.SUCCEEDED,
        (D, D, D, S, D, S, D, D),
        ["EvidenceUnknown"],
        {"researcher"},
    ),
    (
        "raycluster-never-ready",
        State.STARTING,
        (D, D, A, D, S, D, S, A, A, A, P),
        ["RayClusterNotReady"],
        {"platform"},
    ),
    (
        "rayjob-running",
        State.RUNNING,
        (D, D, D, D, S, D, S, D, D, D, P),
        ["ProgressUnverified"],
        {"researcher"},
    ),
    (
        "rayjob-failed",
        State.FAILED,
        (D, D, W, S, S, S, S, S, S, W, D),
        ["RayJobFailed"],
        {"researcher"},
    ),
    (
        "rayjob-success",
        State.SUCCEEDED,
        (D, D, D, D, S, D, S, D, D, D, D),
        ["EvidenceUnverified"],
        {"researcher"},
    ),
]


@pytest.mark.parametrize(
    ("case", "state", "phases", "codes", "owners"), CASES, ids=[c[0] for c in CASES]
)
def test_fixture_interprets_to_expected_phases_state_and_diagnostics(
    case, state, phases, codes, owners
):
    status = run(case)
    names = RAY_PHASES if case.startswith("ray") else JOB_PHASES
    assert [p.name.value for p in status.phases] == list(names)
    assert tuple(p.status.value for p in status.phases) == phases
    assert status.state is state
    assert [d.code for d in status.diagnostics] == codes
    assert {d.owner.value for d in status.diagnostics} == owners


def test_every_fixture_file_has_a_table_case():
    assert {p.stem for p in FIXTURES.glob("*.yaml")} == {c[0] for c in CASES}


def test_interpret_is_pure_and_deterministic():
    snapshot = snapshot_of("crashloop-backoff")
    assert interpret(snapshot, NOW) == interpret(snapshot, NOW)


def test_admitted_is_not_scheduled():
    status = run("admitted-no-pods")
    scheduling = status.phases[2]
    assert scheduling.status is PhaseStatus.PENDING
    assert "admitted is not scheduled" in (scheduling.hint or "")


def test_running_is_not_progressing():
    status = run("running")
    assert "running is not progressing" in (status.phases[-1].hint or "")
    assert status.diagnostics[0].code == "ProgressUnverified"
    assert any(a.command == "tau run logs train -n research" for a in status.actions)


def test_completed_is_not_evidence_preserved():
    with_path, without = run("success"), run("success-no-result-path")
    assert with_path.evidence is not None and with_path.evidence.result_pvc == "training-data"
    assert "not checked" in with_path.diagnostics[0].message
    assert "artifacts unknown" in without.diagnostics[0].message
    assert any(a.name == "results" for a in with_path.actions)


def test_quota_pending_names_queue_owner_and_says_yaml_cannot_fix_it():
    status = run("quota-pending")
    admission = status.phases[1]
    assert "0/1 admitted queue=jobqueue reason=couldn't assign flavors" in admission.detail
    assert "editing tau.yaml does not add quota" in (admission.hint or "")
    assert status.diagnostics[0].owner is Owner.QUEUE_OWNER


def test_oomkilled_is_classified_and_startup_failed():
    status = run("oomkilled")
    assert status.failure_reason == "OOMKilled"
    assert status.startup_failed
    assert any(a.name == "resume" for a in status.actions)


def test_kueue_conditions_are_read_by_type_not_position():
    objects = load_objects("quota-pending")
    workload = next(o for o in objects if o["kind"] == "Workload")
    workload["status"]["conditions"] = [
        {"type": "Evicted", "status": "False", "reason": "Nope"},
        {"type": "PodsReady", "status": "False"},
        *workload["status"]["conditions"],
        {"type": "Admitted", "status": "False", "reason": "NoReservation"},
    ]
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    assert status.phases[1].status is PhaseStatus.ACTIVE
    assert [d.code for d in status.diagnostics] == ["QuotaPending"]
    reordered = copy.deepcopy(objects)
    next(o for o in reordered if o["kind"] == "Workload")["status"]["conditions"].reverse()
    assert interpret(snapshot_of("quota-pending", reordered), NOW) == status


def test_job_without_workload_waits_for_kueue_and_names_the_queue_label():
    objects = [o for o in load_objects("quota-pending") if o["kind"] == "Job"]
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    assert status.phases[1].status is PhaseStatus.ACTIVE
    assert "kueue.x-k8s.io/queue-name=jobqueue" in (status.phases[1].hint or "")
    assert status.diagnostics[0].code == "WorkloadNotObserved"


def test_multikueue_manager_view_adds_placement_and_skips_pod_phases():
    objects = load_objects("admitted-no-pods")
    job = next(o for o in objects if o["kind"] == "Job")
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    workload = next(o for o in objects if o["kind"] == "Workload")
    workload["status"]["clusterName"] = "worker-east"
    workload["status"]["admissionChecks"] = [
        {"name": "multikueue", "state": "Ready", "message": "The workload got reservation"}
    ]
    status = interpret(snapshot_of("admitted-no-pods", objects), NOW)
    assert status.phases[2].name is Phase.MULTIKUEUE_PLACEMENT
    assert status.phases[2].detail == "worker-cluster placement ready on worker-east"
    assert {p.status for p in status.phases[3:]} == {PhaseStatus.SKIPPED}


def test_rejected_admission_check_is_a_warning_and_startup_failure():
    objects = load_objects("quota-pending")
    workload = next(o for o in objects if o["kind"] == "Workload")
    workload["status"]["admissionChecks"] = [
        {"name": "provisioning", "state": "Rejected", "message": "no capacity in region"}
    ]
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    assert status.phases[1].status is PhaseStatus.WARNING
    assert status.diagnostics[0].code == "AdmissionRejected"
    assert status.startup_failed


def test_kuberay_submitter_job_does_not_hide_the_rayjob():
    objects = load_objects("rayjob-running")
    objects.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "ray-train",
                "namespace": "research",
                "ownerReferences": [{"kind": "RayJob", "name": "ray-train"}],
            },
            "spec": {},
        }
    )
    assert interpret(snapshot_of("rayjob-running", objects), NOW).kind == "RayJob"


def test_rayjob_still_holding_nodes_after_finish_is_not_released():
    objects = load_objects("rayjob-running")
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    rayjob["status"].update(jobDeploymentStatus="Complete", jobStatus="SUCCEEDED")
    status = interpret(snapshot_of("rayjob-running", objects), NOW)
    assert status.phases[-1].status is PhaseStatus.ACTIVE
    assert "3 Ray pod(s) still hold 3 node(s)" in status.phases[-1].detail
    assert "ComputeNotReleased" in [d.code for d in status.diagnostics]


def test_partial_observation_is_reported():
    snapshot = Snapshot.from_objects(
        "research", "train", load_objects("running"), errors=("pods: 403 forbidden",)
    )
    status = interpret(snapshot, NOW)
    assert status.diagnostics[0].code == "PartialObservation"


@pytest.mark.parametrize("value", sorted(tables.RAYJOB_DEPLOYMENT_PHASE))
def test_every_rayjob_deployment_status_maps_to_its_phase_status(value):
    objects = load_objects("rayjob-running")
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    rayjob["status"] = {
        "jobDeploymentStatus": value,
        "rayClusterName": "ray-train-raycluster-x2b9k",
    }
    status = interpret(snapshot_of("rayjob-running", objects), NOW)
    phase = next(p for p in status.phases if p.name is Phase.RAYJOB_STATUS)
    assert phase.status is tables.RAYJOB_DEPLOYMENT_PHASE[value]
    expected = tables.RAYJOB_TERMINAL_STATE.get(value)
    if expected is not None:
        assert status.state is expected


@pytest.mark.parametrize("value", sorted(tables.RAY_JOB_STATUS_PHASE))
def test_every_ray_job_status_maps_to_its_phase_status(value):
    objects = load_objects("rayjob-running")
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    rayjob["status"]["jobStatus"] = value
    status = interpret(snapshot_of("rayjob-running", objects), NOW)
    phase = next(p for p in status.phases if p.name is Phase.RAYJOB_STATUS)
    assert phase.status is tables.RAY_JOB_STATUS_PHASE[value]
    if value in tables.RAY_JOB_TERMINAL_STATE:
        assert status.state is tables.RAY_JOB_TERMINAL_STATE[value]


@pytest.mark.parametrize(("condition", "state"), tables.JOB_TERMINAL_CONDITIONS)
def test_every_job_terminal_condition_sets_the_state(condition, state):
    objects = load_objects("running")
    job = next(o for o in objects if o["kind"] == "Job")
    job["status"] = {"conditions": [{"type": condition, "status": "True"}]}
    assert interpret(snapshot_of("running", objects), NOW).state is state


def _with_waiting_reason(reason: str) -> RunStatus:
    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    container = pod["status"]["containerStatuses"][0]
    container.update(ready=False, imageID="", state={"waiting": {"reason": reason}})
    pod["status"]["conditions"][-1]["status"] = "False"
    return interpret(snapshot_of("running", objects), NOW)


@pytest.mark.parametrize("reason", sorted(tables.IMAGE_PULL_FAILURES))
def test_every_image_pull_failure_warns_image_pull(reason):
    status = _with_waiting_reason(reason)
    phase = next(p for p in status.phases if p.name is Phase.IMAGE_PULL)
    assert phase.status is PhaseStatus.WARNING
    assert reason in phase.detail
    assert status.diagnostics[0].code == "ImagePullBackOff"


@pytest.mark.parametrize("reason", sorted(tables.CONTAINER_FAILURES))
def test_every_container_failure_warns_container_start(reason):
    status = _with_waiting_reason(reason)
    phase = next(p for p in status.phases if p.name is Phase.CONTAINER_START)
    assert phase.status is PhaseStatus.WARNING
    assert status.diagnostics[0].code == tables.CONTAINER_FAILURES[reason]


@pytest.mark.parametrize("reason", sorted(tables.CONTAINER_PROGRESS))
def test_every_progress_reason_is_active_with_a_hint(reason):
    status = _with_waiting_reason(reason)
    phase = next(p for p in status.phases if p.name is Phase.CONTAINER_START)
    assert phase.status is PhaseStatus.ACTIVE
    assert phase.hint == tables.CONTAINER_PROGRESS[reason]


def test_every_diagnostic_code_names_an_owner_and_a_suggestion():
    from tau.status.diagnose import CODES

    for code, spec in CODES.items():
        assert spec.owner in Owner, code
        assert spec.suggestion, code


def test_dra_is_skipped_for_device_plugin_gpus_and_that_is_normal():
    phase = run("running").phases[3]
    assert phase.status is PhaseStatus.SKIPPED
    assert "normal" in phase.detail


def test_indexed_job_without_its_headless_service_is_flagged():
    objects = load_objects("running")
    job = next(o for o in objects if o["kind"] == "Job")
    job["spec"].update(completionMode="Indexed", completions=2, parallelism=2)
    status = interpret(snapshot_of("running", objects), NOW)
    assert "HeadlessServiceMissing" in [d.code for d in status.diagnostics]
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "train-headless", "namespace": "research"},
        }
    )
    status = interpret(snapshot_of("running", objects), NOW)
    assert "HeadlessServiceMissing" not in [d.code for d in status.diagnostics]


def test_preemption_event_alone_makes_admission_a_warning():
    objects = [o for o in load_objects("quota-pending")]
    objects.append(
        {
            "kind": "Event",
            "reason": "Preempted",
            "type": "Normal",
            "message": "Preempted to accommodate a workload",
            "involvedObject": {"kind": "Workload", "name": "job-train-3f2a1"},
            "lastTimestamp": "2026-12-02T10:30:00Z",
        }
    )
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    assert status.phases[1].status is PhaseStatus.WARNING
    assert "reason=Preempted" in status.phases[1].detail


def test_failed_scheduling_event_without_a_pod_condition_is_a_warning():
    objects = load_objects("unschedulable")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"]["conditions"] = []
    status = interpret(snapshot_of("unschedulable", objects), NOW)
    assert status.phases[2].status is PhaseStatus.WARNING
    assert "reason=FailedScheduling" in status.phases[2].detail
    assert [d.code for d in status.diagnostics] == ["UntoleratedTaint", "NodeSelectorMismatch"]


def test_status_modules_load_without_the_kubernetes_client():
    import subprocess
    import sys

    code = (
        "import sys; import tau.status.interpret, tau.status.text, tau.status.document, "
        "tau.status.classify, tau.status.fetch, tau.status.watch; "
        "assert 'kubernetes' not in sys.modules, 'kubernetes imported eagerly'"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1] / "src"
    )


def test_kueue_eviction_that_is_not_preemption_is_evicted_for_the_platform():
    objects = load_objects("quota-pending")
    workload = next(o for o in objects if o["kind"] == "Workload")
    workload["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "PodsReadyTimeout",
            "message": "Exceeded the PodsReady timeout research/job-train-3f2a1",
        }
    )
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    assert status.phases[1].status is PhaseStatus.WARNING
    assert [(d.code, d.owner) for d in status.diagnostics] == [("Evicted", Owner.PLATFORM)]


#: A real kubelet's eviction message (pkg/kubelet/eviction's format): the resource, the
#: threshold, and the container that used the most above its request.
KUBELET_SAID = (
    "The node was low on resource: memory. Threshold quantity: 1Gi, available: 912Mi. "
    "Container main was using 2301Mi, request is 256Mi, has larger consumption of memory. "
)


def test_node_evicted_pod_is_evicted_in_the_kubelets_words_and_the_platform_owns_it():
    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"].update(phase="Failed", reason="Evicted", message=KUBELET_SAID)
    pod["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
    )
    found = [d for d in interpret(snapshot_of("running", objects), NOW).diagnostics]
    evicted = [d for d in found if d.code == "Evicted"]
    assert [d.owner for d in evicted] == [Owner.PLATFORM]
    node = pod["spec"]["nodeName"]
    assert evicted[0].message == (
        f"pod {pod['metadata']['name']} was evicted by node {node}: {KUBELET_SAID.strip()}"
    )
    assert "Preempted" not in [d.code for d in found]


def test_volume_mount_failure_is_a_platform_fix():
    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"]["containerStatuses"][0].update(
        ready=False,
        state={
            "waiting": {
                "reason": "CreateContainerConfigError",
                "message": "failed to mount volume data: PVC training-data not bound",
            }
        },
    )
    status = interpret(snapshot_of("running", objects), NOW)
    assert (status.diagnostics[0].code, status.diagnostics[0].owner) == (
        "VolumeMountFailed",
        Owner.PLATFORM,
    )


def test_failed_job_without_a_container_cause_is_run_failed_and_unknown():
    objects = [o for o in load_objects("oomkilled") if o["kind"] != "Pod"]
    job = next(o for o in objects if o["kind"] == "Job")
    job["status"]["conditions"] = [
        {
            "type": "Failed",
            "status": "True",
            "reason": "DeadlineExceeded",
            "message": "Job was active longer than specified deadline",
        }
    ]
    status = interpret(snapshot_of("oomkilled", objects), NOW)
    assert status.state is State.FAILED and status.failure_reason == "Unknown"
    assert status.diagnostics[0].code == "RunFailed"
    assert "DeadlineExceeded" in status.diagnostics[0].message
    assert {p.status for p in status.phases[2:]} == {PhaseStatus.SKIPPED}


def _pending_because(message: str) -> RunStatus:
    objects = load_objects("quota-pending")
    workload = next(o for o in objects if o["kind"] == "Workload")
    for cond in workload["status"]["conditions"]:
        if cond.get("message"):
            cond["message"] = message
    return interpret(snapshot_of("quota-pending", objects), NOW)


def test_a_flavor_without_topology_is_a_platform_fix_not_a_quota_wait():
    # Kueue v0.17's words when tau's topology request meets a flavor without a Topology.
    status = _pending_because(
        "couldn't assign flavors to pod set main: "
        'Flavor "taugrid-default" does not support TopologyAwareScheduling'
    )
    admission = status.phases[1]
    assert "no free quota" not in (admission.hint or "")
    assert "topologyName" in (admission.hint or "")
    first = status.diagnostics[0]
    assert (first.code, first.owner) == ("TopologyUnsupported", Owner.PLATFORM)
    assert status.startup_failed


def test_no_node_with_room_says_waiting_may_not_help():
    status = _pending_because(
        'couldn\'t assign flavors to pod set main: topology "default-node-topology" '
        "doesn't allow to fit any of 1 pod(s)"
    )
    admission = status.phases[1]
    assert "larger than any node" in (admission.hint or "")
    first = status.diagnostics[0]
    assert (first.code, first.owner) == ("TopologyNoRoom", Owner.RESEARCHER)
    assert not status.startup_failed


def _ready_phase(objects: list[dict], case: str = "raycluster-never-ready") -> str:
    status = interpret(snapshot_of(case, objects), NOW)
    (ready,) = [p for p in status.phases if p.name is Phase.READY]
    return ready.detail


def test_running_but_not_ready_names_the_pod_and_the_probe_it_waits_for():
    objects = load_objects("raycluster-never-ready")
    head = "ray-train-raycluster-x2b9k-head-7qz2m"
    assert _ready_phase(objects) == (
        f"0/3 pods ready; {head} running, not ready: readiness probe of ray-head not passed yet"
    )
    # The kubelet's latest probe failure, as it wrote it, once there is one.
    for at, said in (("10:01:00", "connection refused"), ("10:02:00", "statuscode: 503")):
        objects.append(
            {
                "kind": "Event",
                "reason": "Unhealthy",
                "type": "Warning",
                "message": f"Readiness probe failed: HTTP probe failed with {said}",
                "involvedObject": {"kind": "Pod", "name": head},
                "lastTimestamp": f"2026-12-02T{at}Z",
            }
        )
    assert _ready_phase(objects).endswith(
        f"{head} running, not ready: Readiness probe failed: HTTP probe failed with statuscode: 503"
    )


def test_a_pod_on_its_way_out_is_not_waiting_for_a_probe():
    objects = load_objects("raycluster-never-ready")
    for obj in objects:
        if obj["kind"] == "Pod":
            obj["metadata"]["deletionTimestamp"] = "2026-12-02T10:59:00Z"
    assert _ready_phase(objects) == "0/3 pods ready"


def test_a_crash_looping_container_beside_a_running_one_is_named():
    objects = load_objects("raycluster-never-ready")
    head = next(o for o in objects if o["kind"] == "Pod" and "head" in o["metadata"]["name"])
    head["spec"]["containers"].append({"name": "sidecar", "image": "busybox:1.37"})
    head["status"]["containerStatuses"].append(
        {
            "name": "sidecar",
            "ready": False,
            "restartCount": 4,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
        }
    )
    assert _ready_phase(objects).endswith("running, not ready: sidecar CrashLoopBackOff")


@pytest.mark.parametrize(
    "message",
    [
        # Kueue's words when a pod set asks for more than the ClusterQueue can ever hold.
        "couldn't assign flavors to pod set head: insufficient quota for cpu in flavor "
        "taugrid-real, previously considered podsets requests (0) + current podset request "
        "(2010m) > maximum capacity (2)",
        "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in "
        "flavor h100, request > maximum capacity (8 > 0)",
    ],
)
def test_a_request_larger_than_the_queue_can_ever_hold_is_not_a_wait(message):
    objects = load_objects("quota-pending")
    workload = next(o for o in objects if o["kind"] == "Workload")
    for condition in workload["status"]["conditions"]:
        if condition.get("type") == "QuotaReserved":
            condition["message"] = message
    status = interpret(snapshot_of("quota-pending", objects), NOW)
    admission = status.phases[1]
    assert "waiting will not help" in (admission.hint or "")
    assert "no free quota" not in (admission.hint or "")
    (diagnostic,) = status.diagnostics
    assert (diagnostic.code, diagnostic.owner) == ("QuotaNeverFits", Owner.RESEARCHER)
    assert "waiting will not help" in diagnostic.suggestion


def _node_lost(objects: list[dict], *, ready: str, event_at: str) -> RunStatus:
    """The running case with its pod marked as the node controller marks a lost node's pods:
    Ready=False since 10:20, and its NodeNotReady event at `event_at`."""
    pod = next(o for o in objects if o["kind"] == "Pod")
    for cond in pod["status"]["conditions"]:
        if cond["type"] == "Ready":
            cond.update(status=ready, lastTransitionTime="2026-12-02T10:20:00Z")
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e-lost", "namespace": "research"},
            "involvedObject": {"kind": "Pod", "name": pod["metadata"]["name"]},
            "reason": "NodeNotReady",
            "message": "Node is not ready",
            "type": "Warning",
            "lastTimestamp": event_at,
        }
    )
    return interpret(snapshot_of("running", objects), NOW)


def test_a_pod_whose_node_stopped_reporting_names_the_node_and_the_platform():
    status = _node_lost(load_objects("running"), ready="False", event_at="2026-12-02T10:20:00Z")
    lost = next(d for d in status.diagnostics if d.code == "NodeNotReady")
    assert lost.owner is Owner.PLATFORM and "node aks-h100-0 is NotReady" in lost.message
    ready = next(p for p in status.phases if p.name is Phase.READY)
    assert ready.status is PhaseStatus.WARNING and "aks-h100-0 is NotReady" in ready.detail
    assert "readiness probe" not in ready.detail
    assert status.state is State.RUNNING  # its containers may still run: nothing has failed


@pytest.mark.parametrize(
    ("ready", "event_at"),
    [
        ("True", "2026-12-02T10:20:00Z"),  # the node came back: the pod is Ready again
        ("False", "2026-12-02T10:10:00Z"),  # an older outage's event; not ready for another cause
    ],
)
def test_an_old_node_not_ready_event_leaves_no_warning(ready: str, event_at: str):
    status = _node_lost(load_objects("running"), ready=ready, event_at=event_at)
    assert "NodeNotReady" not in [d.code for d in status.diagnostics]


def test_a_process_that_failed_on_a_full_volume_names_storage_and_the_platform():
    import dataclasses

    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"]["phase"] = "Failed"
    pod["status"]["containerStatuses"][0].update(
        ready=False, state={"terminated": {"exitCode": 1, "reason": "Error"}}
    )
    said = "OSError: [Errno 28] No space left on device: '/data/ckpt/step-3.pt'"
    snapshot = dataclasses.replace(
        snapshot_of("running", objects),
        last_lines=((pod["metadata"]["name"], "trainer", f"saving step 3\n{said}\n"),),
    )
    status = interpret(snapshot, NOW)
    full = next(d for d in status.diagnostics if d.code == "StorageFull")
    assert full.owner is Owner.PLATFORM
    assert full.message == f'storage: train-0-r4nn1/trainer exit=1: the process said "{said}"'
    assert "ContainerFailed" not in [d.code for d in status.diagnostics]
    # Without those words it is the researcher's failure, as before.
    plain = interpret(dataclasses.replace(snapshot, last_lines=()), NOW)
    assert "StorageFull" not in [d.code for d in plain.diagnostics]
    assert "ContainerFailed" in [d.code for d in plain.diagnostics]


def test_a_preempted_run_names_its_preemptor_beside_kueues_words():
    import dataclasses

    snapshot = dataclasses.replace(
        snapshot_of("preempted"), preemptors=(("78", "Job research/high"),)
    )
    status = interpret(snapshot, NOW)
    said = next(d for d in status.diagnostics if d.code == "Preempted")
    assert said.message.endswith(
        "Preempted to accommodate a workload (UID 77, JobUID 78) due to prioritization in the "
        "ClusterQueue; preempted for Job research/high"
    ), said.message
    admission = next(p for p in status.phases if p.name is Phase.KUEUE_ADMISSION)
    assert "preempted for Job research/high" in admission.detail
