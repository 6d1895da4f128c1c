"""`experiment autocapture` (one reconcile) against the emulator: one list per kind, namespaces,
and every lifecycle event row of portal-contract §4.4.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client

from tau.k8s import meta
from tests.portal_capture_seed import (
    CTX,
    NS,
    TAU,
    complete,
    job,
    new_store,
    pod,
    prepare,
    true_since,
    workload,
)
from tests.portal_helpers import portal


@pytest.fixture
def emulator(kube_api, kubeconfig_file, monkeypatch, tmp_path):
    return prepare(kube_api, kubeconfig_file, monkeypatch, tmp_path)


@pytest.fixture
def store(tmp_path, capsys):
    return new_store(tmp_path, capsys)


def autocapture(capsys, store: Path, *args: str):
    return portal(capsys, "experiment", "autocapture", *CTX, "--store", store, "-o", "json", *args)


def sql(capsys, store: Path, query: str) -> list[dict]:
    result = portal(capsys, "experiment", "sql", query, "--store", store, "--format", "json")
    assert result.code == 0, result.err
    return result.json()  # type: ignore[return-value]


def seed_run(emulator, kube_client, name: str, namespace: str = NS) -> None:
    """A running Job with its admitted Workload and a scheduled, ready pod."""
    created = client.BatchV1Api(kube_client).create_namespaced_job(namespace, job(name, namespace))
    emulator.put(workload(f"job-{name}", created.metadata.uid, namespace))
    emulator.set_status(
        "kueue.x-k8s.io/v1beta2", "Workload", f"job-{name}",
        {"conditions": [true_since("Admitted", "2026-12-01T10:00:30Z")],
         "admission": {"clusterQueue": "team-cq"}},
        namespace=namespace,
    )  # fmt: skip
    emulator.set_status(
        "batch/v1", "Job", name, {"startTime": "2026-12-01T10:01:00Z", "active": 1},
        namespace=namespace,
    )  # fmt: skip
    emulator.put(
        pod(f"{name}-0", name, namespace, phase="Running",
            conditions=[true_since("PodScheduled", "2026-12-01T10:00:40Z"),
                        {"type": "Ready", "status": "True"}],
            containerStatuses=[{"name": "c", "ready": True, "state": {"running": {}}}])
    )  # fmt: skip


# -- one list per kind ------------------------------------------------------------------


def test_one_reconcile_lists_each_kind_once_whatever_the_number_of_runs(
    emulator, kube_client, store, capsys
):
    for name in ("a", "b", "c", "d"):
        seed_run(emulator, kube_client, name)
    emulator.reset_requests()
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0, result.err
    assert result.json()["runs"] == 4 and result.json()["warnings"] == []
    reads = [r for r in emulator.requests if r.method == "GET"]
    lists = sorted(r.path for r in reads)
    assert lists == sorted(
        [
            f"/apis/batch/v1/namespaces/{NS}/jobs",
            f"/apis/ray.io/v1/namespaces/{NS}/rayjobs",
            f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NS}/workloads",
            f"/api/v1/namespaces/{NS}/pods",
            f"/api/v1/namespaces/{NS}/events",
        ]
    ), lists  # no per-run read, and no claims list while no pod uses DRA
    tau = f"{meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE}"
    selectors = {r.path.rsplit("/", 1)[1]: r.query.get("labelSelector", "") for r in reads}
    assert selectors == {"jobs": tau, "rayjobs": tau, "pods": tau, "workloads": "", "events": ""}
    # Every run got its own Workload, pod and node, linked from the shared lists.
    contexts = sql(capsys, store, "select run_id, kueue_workload, node_names from run_context")
    assert {c["run_id"]: c["kueue_workload"] for c in contexts} == {
        n: f"job-{n}" for n in ("a", "b", "c", "d")
    }


def test_per_kind_capture_records_what_a_per_run_capture_records(
    emulator, kube_client, tmp_path, capsys
):
    seed_run(emulator, kube_client, "train")
    stores = [new_store(tmp_path / kind, capsys) for kind in ("fetch", "lists")]
    args = ["experiment", "capture", "run-profile", "train", "-n", NS, *CTX, "--no-history"]
    assert portal(capsys, *args, "--owner", "tau-controller", "--store", stores[0]).code == 0
    assert autocapture(capsys, stores[1], "-n", NS).code == 0
    columns = "run_id, state, started_at, config_hash, result_uri"
    tables = {
        "runs": f"select {columns} from runs",
        "run_context": "select * from run_context",
        "events": "select type, source, severity, message, time, payload from events order by 1",
    }
    for query in tables.values():
        assert sql(capsys, stores[0], query) == sql(capsys, stores[1], query), query


def test_all_namespaces_is_one_cluster_wide_list_per_kind(emulator, kube_client, store, capsys):
    seed_run(emulator, kube_client, "a", "team")
    seed_run(emulator, kube_client, "b", "other")
    emulator.reset_requests()
    result = autocapture(capsys, store, "-n", "*")
    assert result.code == 0, result.err
    assert result.json()["runs"] == 2 and result.json()["namespace"] == "*"
    paths = sorted(r.path for r in emulator.requests if r.method == "GET")
    assert "/apis/batch/v1/jobs" in paths and "/api/v1/pods" in paths
    assert not any("/namespaces/" in p for p in paths), paths
    rows = sql(capsys, store, "select run_id, namespace from run_context order by run_id")
    assert rows == [{"run_id": "a", "namespace": "team"}, {"run_id": "b", "namespace": "other"}]


def test_without_n_the_namespace_is_the_contracts_default(emulator, kube_client, store, capsys):
    seed_run(emulator, kube_client, "here", "default")
    seed_run(emulator, kube_client, "elsewhere", NS)
    result = autocapture(capsys, store)
    assert result.code == 0, result.err
    assert result.json()["namespace"] == "default" and result.json()["runs"] == 1


def test_a_namespace_with_no_access_is_a_cluster_error(emulator, store, capsys):
    emulator.deny(403, f"/apis/batch/v1/namespaces/{NS}/jobs")
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 3 and "Traceback" not in result.err
    assert "forbidden to list jobs.batch" in result.err and f"namespace {NS}" in result.err


def test_a_kind_that_cannot_be_listed_is_a_warning_and_the_runs_are_still_recorded(
    emulator, kube_client, store, capsys
):
    seed_run(emulator, kube_client, "train")
    emulator.deny(403, f"/api/v1/namespaces/{NS}/events")
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0 and result.json()["runs"] == 1
    (warning,) = result.json()["warnings"]
    assert warning.startswith("forbidden to list events") and "recorded without it" in warning
    table = portal(capsys, "experiment", "autocapture", "-n", NS, *CTX, "--store", store)
    assert "warning: forbidden to list events" in table.err


# -- §4.4 lifecycle events ------------------------------------------------------------------


def test_every_lifecycle_event_row_of_the_contract(emulator, kube_client, store, capsys):
    created = client.BatchV1Api(kube_client).create_namespaced_job(NS, job("train"))
    emulator.put(workload("job-train", created.metadata.uid))
    emulator.set_status(
        "kueue.x-k8s.io/v1beta2", "Workload", "job-train",
        {"conditions": [true_since("Admitted", "2026-12-01T10:00:30Z"),
                        true_since("Finished", "2026-12-01T10:30:00Z")]},
        namespace=NS,
    )  # fmt: skip
    emulator.set_status(
        "batch/v1", "Job", "train",
        {"startTime": "2026-12-01T10:01:00Z",
         "conditions": [true_since("Failed", "2026-12-01T10:30:00Z")]},
        namespace=NS,
    )  # fmt: skip
    claimed = pod("train-0", "train", phase="Failed", reason="Evicted",
                  conditions=[true_since("PodScheduled", "2026-12-01T10:00:40Z")],
                  startTime="2026-12-01T10:00:41Z")  # fmt: skip
    claimed["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "train-gpu"}]
    emulator.put(claimed)
    emulator.put(pod("train-1", "train", phase="Failed", startTime="2026-12-01T10:00:42Z"))
    emulator.put(
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "train-gpu", "namespace": NS}, "spec": {}}
    )  # fmt: skip
    for name, extra in (
        ("oom", {"type": "Warning", "reason": "OOMKilling", "source": {"component": "kubelet"}}),
        ("pulled", {"type": "Normal", "reason": "Pulled"}),
    ):
        emulator.put(
            {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": f"train-0.{name}", "namespace": NS},
             "involvedObject": {"kind": "Pod", "name": "train-0", "namespace": NS},
             "message": f"{name} happened", "lastTimestamp": "2026-12-01T10:05:00Z", **extra}
        )  # fmt: skip
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0, result.err
    events = sql(capsys, store, "select type, source, severity, message from events")
    assert sorted(events, key=lambda e: (e["type"], e["message"])) == [
        {"type": "failed", "source": "kubernetes/job", "severity": "error",
         "message": f"Job {NS}/train failed"},
        {"type": "kubernetes-event", "source": "kubelet", "severity": "warning",
         "message": "oom happened"},
        {"type": "kubernetes-event", "source": "kubernetes/event", "severity": "info",
         "message": "pulled happened"},
        {"type": "kueue-admitted", "source": "kueue/workload", "severity": "info",
         "message": "Workload job-train was admitted to queue team-q"},
        {"type": "kueue-finished", "source": "kueue/workload", "severity": "info",
         "message": "Workload job-train finished"},
        {"type": "pod-failed", "source": "kubernetes/pod", "severity": "warning",
         "message": "Pod train-0 failed: Evicted"},
        {"type": "pod-failed", "source": "kubernetes/pod", "severity": "warning",
         "message": "Pod train-1 failed: Failed"},
        {"type": "pod-scheduled", "source": "kubernetes/pod", "severity": "info",
         "message": "Pod train-0 scheduled on node-a"},
        {"type": "resource-claim-observed", "source": "kubernetes/resourceclaim",
         "severity": "info", "message": "ResourceClaim train-gpu observed"},
        {"type": "running", "source": "kubernetes/job", "severity": "info",
         "message": f"Job {NS}/train started running"},
        {"type": "submitted", "source": "kubernetes/job", "severity": "info",
         "message": f"Job {NS}/train was submitted"},
    ]  # fmt: skip
    ids = sql(capsys, store, "select event_id, payload from events")
    assert all(len(e["event_id"]) == len("event-") + 16 for e in ids)
    assert all(isinstance(json.loads(e["payload"]), dict) for e in ids)
    run = sql(capsys, store, "select state from runs")
    assert run == [{"state": "failed"}]


def test_the_same_event_on_two_pods_of_a_run_is_two_rows(emulator, kube_client, store, capsys):
    # Each pod of a multi-pod run gets the same message from the same source in the same
    # second ("Started container trainer", "Pulling image ..."): two events, not a conflict.
    seed_run(emulator, kube_client, "train")
    emulator.put(
        pod("train-1", "train", phase="Running",
            conditions=[true_since("PodScheduled", "2026-12-01T10:00:40Z")])
    )  # fmt: skip
    for name in ("train-0", "train-1"):
        emulator.put(
            {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": f"{name}.started", "namespace": NS},
             "involvedObject": {"kind": "Pod", "name": name, "namespace": NS},
             "reason": "Started", "type": "Normal", "source": {"component": "kubelet"},
             "message": "Started container trainer", "lastTimestamp": "2026-12-01T10:00:45Z"}
        )  # fmt: skip
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0, result.err
    rows = sql(capsys, store, "select event_id, payload from events where message like 'Started%'")
    assert sorted(json.loads(r["payload"])["object"] for r in rows) == ["train-0", "train-1"]
    assert len({r["event_id"] for r in rows}) == 2
    # `capture run-profile` of the same run afterwards records the same two rows again.
    again = portal(
        capsys, "experiment", "capture", "run-profile", "train", "-n", NS, *CTX,
        "--store", store, "--no-history", "-o", "json",
    )  # fmt: skip
    assert again.code == 0, again.err
    assert len(sql(capsys, store, "select 1 from events where message like 'Started%'")) == 2


def test_state_only_moves_forward_and_terminal_states_conflict(
    emulator, kube_client, store, capsys
):
    seed_run(emulator, kube_client, "train")
    assert autocapture(capsys, store, "-n", NS).code == 0
    # The pod is gone and the Job looks queued again (suspended): the run stays running.
    emulator.delete_object("v1", "Pod", "train-0", namespace=NS)
    client.BatchV1Api(kube_client).patch_namespaced_job("train", NS, {"spec": {"suspend": True}})
    emulator.set_status(
        "kueue.x-k8s.io/v1beta2", "Workload", "job-train", {"conditions": []}, namespace=NS
    )
    again = autocapture(capsys, store, "-n", NS)
    assert again.code == 0 and again.json()["updated_runs"] == 0
    assert sql(capsys, store, "select state from runs") == [{"state": "running"}]
    complete(emulator, "train")
    assert autocapture(capsys, store, "-n", NS).json()["updated_runs"] == 1
    emulator.set_status(
        "batch/v1", "Job", "train",
        {"conditions": [true_since("Failed", "2026-12-01T11:05:00Z")]}, namespace=NS,
    )  # fmt: skip
    clash = autocapture(capsys, store, "-n", NS)
    assert clash.code == 1
    assert 'terminal run state is "succeeded", controller observed "failed"' in clash.err
    assert sql(capsys, store, "select state from runs") == [{"state": "succeeded"}]


def test_a_rayjob_is_one_run_with_its_submitter_job(emulator, store, capsys):
    emulator.put(
        {"apiVersion": "ray.io/v1", "kind": "RayJob",
         "metadata": {"name": "ray", "namespace": NS, "labels": TAU | {meta.LABEL_RUN_ID: "ray"}},
         "spec": {}, "status": {"rayClusterName": "ray-abc", "jobStatus": "RUNNING",
                                "startTime": "2026-12-01T10:01:00Z"}}
    )  # fmt: skip
    submitter = job("ray")
    submitter["metadata"]["ownerReferences"] = [{"kind": "RayJob", "name": "ray", "uid": "u"}]
    emulator.put(submitter)
    head = pod("ray-abc-head", "x", phase="Running")
    head["metadata"]["labels"] = TAU | {meta.RAY_CLUSTER_LABEL: "ray-abc"}
    emulator.put(head)
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0 and result.json()["runs"] == 1
    (context,) = sql(capsys, store, "select ray_job, node_names from run_context")
    assert context == {"ray_job": "ray", "node_names": "node-a"}


def test_a_run_captured_by_run_profile_is_enriched_by_autocapture(
    emulator, kube_client, store, capsys
):
    seed_run(emulator, kube_client, "train")
    profile = ["experiment", "capture", "run-profile", "train", "-n", NS, *CTX, "--no-history"]
    assert portal(capsys, *profile, "--store", store).code == 0
    complete(emulator, "train")
    result = autocapture(capsys, store, "-n", NS)
    assert result.code == 0, result.err
    assert result.json()["updated_runs"] == 1 and result.json()["tags"] == 0
    tags = sql(capsys, store, "select key, value from tags where scope_id = 'train'")
    assert tags == [{"key": "tau.capture.source", "value": "status-run-profile"}]
    assert sql(capsys, store, "select state, owner from runs") == [
        {"state": "succeeded", "owner": "tau-status"}
    ]


def test_run_profile_needs_one_namespace(emulator, store, capsys):
    args = ["experiment", "capture", "run-profile", "train", "-n", "*", *CTX, "--store", store]
    result = portal(capsys, *args)
    assert result.code == 1
    assert "--namespace '*' reads every namespace; capture run-profile needs" in result.err
