"""A researcher's RayJob, end to end on the real control plane: server dry-run, submit through
Kueue, KubeRay's RayCluster with its head and worker pods on the fake nodes, the status tree from
running to succeeded (or failed), the driver log, the run list, and a cancel that returns only
once the RayJob, its RayCluster and their pods are gone.

The pods run nothing: the fake Ray head (controlplane/ray_head.py) answers KubeRay's dashboard
calls and derives the driver's fate from the head container's E2E_OUTCOME (unset: succeeds 2 s
after the submission; fail: fails; hold: runs until the RayJob is annotated tau-e2e/finish).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import WORKSPACE  # also its namespace
from tests.e2e.test_job_lifecycle import fake_env
from tests.e2e.test_job_lifecycle import write_target as write_job_target

pytestmark = pytest.mark.e2e

RAY = "ray.io/v1"
WORKLOAD = "kueue.x-k8s.io/v1beta2"
IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0"
DRIVER_LOG_CONTAINER = "ray-driver-log-offload"
#: Every RayJob this module submits; the cleanup deletes them whatever happened.
NAMES = ("rj-dry", "rj-train", "rj-quick", "rj-hold", "rj-bad")


def write_target(shell: Shell, config: dict[str, Any]) -> None:
    write_job_target(shell, config["name"], config)


def ray_run(name: str, outcome: str | None = None, log: str = "") -> dict[str, Any]:
    """A two-worker Ray Train run, one GPU per worker (2 of the queue's 16 GPUs)."""
    env = fake_env(outcome, log, EPOCHS="1")
    return {
        "name": name,
        "engine": "rayjob",
        "entrypoint": f"{name.replace('-', '_')}.py",
        "runtime": {"image": IMAGE, "env": env},
        "compute": {"workers": 2, "gpus_per_worker": 1},
        "policy": {"preset": "azure.research.training.l"},
    }


def status_doc(shell: Shell, name: str) -> dict[str, Any]:
    """`tau run status -o json`; it exits 1 for a failed or missing run, with the document."""
    proc = shell.tau("run", "status", name, "-o", "json")
    assert proc.returncode in (0, 1) and proc.stdout, (proc.returncode, proc.stderr)
    doc: dict[str, Any] = json.loads(proc.stdout)
    bad = doc["status"]["state"] in ("failed", "not_found")
    assert (proc.returncode == 1) == bad, doc["status"]
    return doc


def phases(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in doc.get("phases") or []}


def wait_state(shell: Shell, name: str, state: str, timeout: float = 120) -> dict[str, Any]:
    doc: dict[str, Any] = wait_for(
        f"tau run status {name} to say {state}",
        lambda: (d := status_doc(shell, name))["status"]["state"] == state and d,
        timeout=timeout,
    )
    return doc


def conditions(obj: dict[str, Any]) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    uid = owner["metadata"]["uid"]
    return any(ref["uid"] == uid for ref in obj["metadata"].get("ownerReferences") or [])


def workloads_of(admin: Api, rayjob: dict[str, Any]) -> list[dict[str, Any]]:
    ns = rayjob["metadata"]["namespace"]
    return [w for w in admin.list(WORKLOAD, "Workload", ns) if owned_by(w, rayjob)]


def ray_pods(admin: Api, namespace: str, cluster: str) -> list[dict[str, Any]]:
    return admin.list("v1", "Pod", namespace, label_selector=f"ray.io/cluster={cluster}")


def finish(admin: Api, namespace: str, name: str, outcome: str) -> None:
    """End a held RayJob's driver: the fake Ray head reads this annotation on the RayJob."""
    body = {"metadata": {"annotations": {"tau-e2e/finish": outcome}}}
    admin.patch(RAY, "RayJob", name, body, namespace)


def list_rows(shell: Shell) -> dict[str, list[str]]:
    """`tau run list` as a user reads it: NAME KIND STATUS AGE rows under a header."""
    lines = shell.ok("run", "list").splitlines()
    assert lines[0] == "History: live-only", lines
    if lines[1:] == [f'No jobs found in namespace "{WORKSPACE}"']:
        return {}  # an empty namespace, when this test runs alone
    assert lines[1].split() == ["NAME", "KIND", "STATUS", "AGE"], lines
    return {row.split()[0]: row.split() for row in lines[2:] if row.strip()}


@pytest.fixture(scope="module", autouse=True)
def _cleanup(admin: Api, researcher) -> Iterator[None]:
    """Whatever a test left (a held RayJob holds GPUs of the shared queue) goes at the end."""
    yield
    for name in NAMES:
        admin.delete(RAY, "RayJob", name, researcher.namespace)


def test_server_dry_run_returns_the_servers_rayjob_and_creates_nothing(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, ray_run("rj-dry"))
    out = repo.ok("run", "rj-dry", "--dry-run=server")
    docs = [d for d in yaml.safe_load_all(out) if d]
    assert [d["kind"] for d in docs] == ["RayJob"]
    rayjob = docs[0]
    # What the API server would store, after Kueue's and KubeRay's webhooks: a uid and a
    # creation time, the researcher's namespace and queue, still suspended for Kueue.
    assert rayjob["apiVersion"] == RAY
    assert rayjob["metadata"]["uid"] and rayjob["metadata"]["creationTimestamp"]
    assert rayjob["metadata"]["namespace"] == ns
    assert rayjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == f"{ns}-queue"
    assert rayjob["spec"]["suspend"] is True
    assert rayjob["spec"]["submissionMode"] == "HTTPMode"
    workers = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [(g["replicas"], g["rayStartParams"]["num-gpus"]) for g in workers] == [(2, "1")]
    # Nothing was stored: no RayJob, no Workload, no RayCluster.
    assert admin.get(RAY, "RayJob", "rj-dry", ns) is None
    assert not [
        w
        for w in admin.list(WORKLOAD, "Workload", ns)
        if any(o["name"] == "rj-dry" for o in w["metadata"].get("ownerReferences") or [])
    ]
    assert not [
        c for c in admin.list(RAY, "RayCluster", ns) if c["metadata"]["name"].startswith("rj-dry")
    ]


def test_a_rayjob_runs_through_kueue_and_kuberay_to_success(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, ray_run("rj-train", "hold", log="epoch 1 loss 0.5\\nepoch 2"))
    out = repo.ok("run", "rj-train")
    assert out.splitlines() == [
        "submitted rj-train (profile=azure.research.training.l, ns=team-e2e)",
        f"status:  tau run status rj-train -n {ns}",
        f"logs:    tau run logs rj-train -n {ns} -f",
        f"profile: tau run status rj-train -n {ns} --run-profile",
    ]
    rayjob = admin.get(RAY, "RayJob", "rj-train", ns)
    assert rayjob is not None

    # Kueue: a Workload owned by the RayJob, admitted to the baseline ClusterQueue with the two
    # workers' GPUs counted against its quota.
    workload = wait_for(
        "Kueue to admit the RayJob's Workload",
        lambda: [w for w in workloads_of(admin, rayjob) if conditions(w).get("Admitted") == "True"],
    )[0]
    assert workload["spec"]["queueName"] == f"{ns}-queue"
    admission = workload["status"]["admission"]
    assert admission["clusterQueue"] == "taugrid-cq"
    gpus = {
        a["name"]: (a.get("resourceUsage") or {}).get("nvidia.com/gpu")
        for a in admission["podSetAssignments"]
    }
    assert gpus == {"head": None, "rj-train-w": "2"}

    # KubeRay: the RayCluster it names, owned by the RayJob; the head on the CPU node, one
    # worker per GPU on the tainted GPU nodes, all Running.
    # The RayCluster the RayJob names now: right after admission Kueue's unsuspend and
    # KubeRay's own status writes can race (a 409 on either side), and KubeRay may suspend
    # and start again with a new cluster name, so the name is read afresh each time.
    def current_cluster() -> dict[str, Any] | None:
        status = (admin.get(RAY, "RayJob", "rj-train", ns) or {}).get("status") or {}
        name = status.get("rayClusterName")
        return admin.get(RAY, "RayCluster", name, ns) if name else None

    cluster = wait_for("the RayCluster the RayJob names", current_cluster)
    cluster_name = cluster["metadata"]["name"]
    assert owned_by(cluster, rayjob)
    pods = wait_for(
        "the head and two workers Running",
        lambda: (
            p
            if len(p := ray_pods(admin, ns, cluster_name)) == 3
            and all(x["status"].get("phase") == "Running" for x in p)
            else None
        ),
    )
    by_type: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        by_type.setdefault(pod["metadata"]["labels"]["ray.io/node-type"], []).append(pod)
    assert [p["spec"]["nodeName"] for p in by_type["head"]] == ["cpu-0"]
    assert len(by_type["worker"]) == 2
    for worker in by_type["worker"]:
        assert worker["spec"]["nodeName"].startswith("gpu-h100-")
        limits = worker["spec"]["containers"][0]["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == "1"

    # The status tree: running once the driver runs, every startup phase done.
    running = wait_state(repo, "rj-train", "running")
    assert running["status"]["workloadKind"] == "RayJob"
    assert running["metadata"] == {"name": "rj-train", "namespace": ns}
    tree = phases(running)
    assert {name: p["status"] for name, p in tree.items()} == {
        "Submitted": "done",
        "Kueue admission": "done",
        "RayCluster": "done",
        "Pod scheduling": "done",
        "DRA allocation": "skipped",
        "Image pull": "done",
        "Init containers": "done",
        "Container start": "done",
        "Ready": "done",
        "RayJob status": "done",
        "Compute release": "pending",
    }
    assert tree["RayCluster"]["detail"] == f"created {cluster_name} status=ready"
    assert tree["Pod scheduling"]["detail"] == "3/3 assigned to nodes"
    assert tree["RayJob status"]["detail"] == "jobDeploymentStatus=Running jobStatus=RUNNING"
    assert running["workloads"][0]["name"] == workload["metadata"]["name"]
    assert running["workloads"][0]["clusterQueue"] == "taugrid-cq"
    assert sorted(p["node"] for p in running["pods"]) == sorted(p["spec"]["nodeName"] for p in pods)

    # The driver log: tau reads the head pod's log sidecar. On the fake nodes a container logs
    # "started <its command>" (controlplane/log_feeder.py), so the sidecar's own command is the
    # whole log, and the head container's lines (E2E_LOG) are not in it.
    head = by_type["head"][0]
    sidecar = next(c for c in head["spec"]["containers"] if c["name"] == DRIVER_LOG_CONTAINER)
    command = " ".join([*(sidecar.get("command") or []), *(sidecar.get("args") or [])])
    assert "job-driver-*.log" in command
    driver_log = f"started {command.splitlines()[0]}\n"
    logs = repo.ok("run", "logs", "rj-train")
    assert logs == driver_log
    assert "epoch 1 loss 0.5" not in logs

    finish(admin, ns, "rj-train", "succeeded")
    done = wait_state(repo, "rj-train", "succeeded")
    tree = phases(done)
    assert tree["RayJob status"]["status"] == "done"
    assert tree["RayJob status"]["detail"] == "jobDeploymentStatus=Complete jobStatus=SUCCEEDED"
    assert tree["Kueue admission"]["detail"] == f"1/1 finished; quota released queue={ns}-queue"
    live = admin.get(RAY, "RayJob", "rj-train", ns)
    assert live is not None
    assert (live["status"]["jobDeploymentStatus"], live["status"]["jobStatus"]) == (
        "Complete",
        "SUCCEEDED",
    )
    text = repo.ok("run", "status", "rj-train")
    assert text.startswith(f"RayJob {ns}/rj-train\nState: succeeded")

    assert list_rows(repo)["rj-train"][1:3] == ["RayJob", "Complete"]
    listing = json.loads(repo.ok("run", "list", "-o", "json"))
    row = next(r for r in listing["runs"] if r["name"] == "rj-train")
    assert (row["kind"], row["status"], row["queue"]) == ("RayJob", "Complete", f"{ns}-queue")


def test_an_unattended_rayjob_succeeds_and_its_cluster_is_torn_down(
    repo: Shell, admin: Api, researcher, record_property: Callable[[str, object], None]
) -> None:
    ns = researcher.namespace
    write_target(repo, ray_run("rj-quick"))
    started = time.monotonic()
    repo.ok("run", "rj-quick")
    wait_state(repo, "rj-quick", "succeeded", timeout=180)
    elapsed = time.monotonic() - started
    record_property("rayjob_submit_to_succeeded_seconds", round(elapsed, 1))
    print(f"\nrj-quick: submit to succeeded in {elapsed:.1f}s")

    # shutdownAfterJobFinishes + ttlSecondsAfterFinished: KubeRay deletes the RayCluster soon
    # after the driver ends, and the status tree then says the compute is free again.
    live = admin.get(RAY, "RayJob", "rj-quick", ns)
    assert live is not None
    print(
        f"rj-quick on the server: created {live['metadata']['creationTimestamp']}, "
        f"started {live['status'].get('startTime')}, ended {live['status'].get('endTime')}"
    )
    cluster_name = live["status"]["rayClusterName"]
    wait_for(
        "KubeRay to tear the RayCluster down",
        lambda: (
            admin.get(RAY, "RayCluster", cluster_name, ns) is None
            and not ray_pods(admin, ns, cluster_name)
        ),
        timeout=120,
    )
    released = phases(status_doc(repo, "rj-quick"))
    assert released["Compute release"]["status"] == "done"
    assert released["Compute release"]["detail"] == (
        "quota released; resources reusable; no active Ray pods remain"
    )
    assert released["RayCluster"]["detail"] == f"{cluster_name} deleted after the run"
    assert list_rows(repo)["rj-quick"][1:3] == ["RayJob", "Complete"]

    # The driver log went with the head pod: tau says the run ended (not that it has no pods
    # "yet"), and exits 3 (the cluster has nothing to give).
    logs = repo.tau("run", "logs", "rj-quick")
    assert logs.returncode == 3 and logs.stdout == ""
    assert logs.stderr.splitlines() == [
        f"error: RayJob {ns}/rj-quick has ended (Complete) and none of its pods remain, "
        "so its logs are gone",
        f"  hint: `tau run status rj-quick -n {ns}` shows how it ended",
    ]


def test_cancel_returns_once_the_rayjob_its_cluster_and_pods_are_gone(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, ray_run("rj-hold", "hold"))
    repo.ok("run", "rj-hold")
    wait_state(repo, "rj-hold", "running")
    rayjob = admin.get(RAY, "RayJob", "rj-hold", ns)
    assert rayjob is not None
    cluster_name = rayjob["status"]["rayClusterName"]
    assert len(ray_pods(admin, ns, cluster_name)) == 3
    assert workloads_of(admin, rayjob)

    # KubeRay holds a RayJob with its own finalizer (it stops the Ray job first), and tau
    # deletes it in the foreground: it is the last object to go.
    assert "ray.io/rayjob-finalizer" in rayjob["metadata"]["finalizers"]
    out = repo.ok("run", "cancel", "rj-hold")
    assert out == (
        f"cancelled RayJob {ns}/rj-hold: workload, pods and cluster are gone; "
        "Kueue reclaimed the quota\n"
    )
    # Checked at once, without waiting: cancel said it is all gone, so it is.
    assert admin.get(RAY, "RayJob", "rj-hold", ns) is None
    assert admin.get(RAY, "RayCluster", cluster_name, ns) is None
    assert ray_pods(admin, ns, cluster_name) == []
    assert workloads_of(admin, rayjob) == []

    assert status_doc(repo, "rj-hold")["status"]["state"] == "not_found"
    assert "rj-hold" not in list_rows(repo)


def test_a_failing_rayjob_ends_failed_and_the_status_tree_names_the_failure(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, ray_run("rj-bad", "fail"))
    repo.ok("run", "rj-bad")
    failed = wait_state(repo, "rj-bad", "failed")
    live = admin.get(RAY, "RayJob", "rj-bad", ns)
    assert live is not None
    status = live["status"]
    assert (status["jobDeploymentStatus"], status["jobStatus"]) == ("Failed", "FAILED")
    tree = phases(failed)
    assert tree["RayJob status"]["status"] == "warning"
    assert tree["RayJob status"]["detail"] == (
        "jobDeploymentStatus=Failed jobStatus=FAILED "
        f"reason={status['reason']}: {status['message']}"
    )
    assert "failed" in status["message"]
    assert tree["RayJob status"]["hint"] == "read the driver log: `tau run logs`"
    assert tree["RayCluster"]["status"] == "warning"
    assert failed["status"]["startupFailed"] is True

    proc = repo.tau("run", "status", "rj-bad")
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"RayJob {ns}/rj-bad\nState: failed")
    assert "[!] RayJob status" in proc.stdout
    assert list_rows(repo)["rj-bad"][1:3] == ["RayJob", "Failed"]
