"""`experiment capture run-profile` and `experiment autocapture` against the local API emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client

from tau.k8s import meta
from tests.portal_helpers import portal

NS = "team"


def job(name: str, run_id: str) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "labels": {
                meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE,
                meta.LABEL_RUN_ID: run_id,
                meta.LABEL_PROFILE: "azure.research.training.xl",
                meta.LABEL_GPU_CLASS: "h100",
                meta.KUEUE_QUEUE_NAME: "team-q",
            },
            "annotations": {
                meta.ANNOTATION_CONFIG_HASH: "sha256:abc",
                meta.ANNOTATION_RESULT_PATH: "pvc://results/train-1",
                meta.ANNOTATION_GPU_COUNT: "8",
                meta.ANNOTATION_STORAGE_MOUNTS: "data:/data",
            },
        },
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
            }
        },
    }


@pytest.fixture
def cluster(kube_api, kubeconfig_file, kube_client, monkeypatch, tmp_path):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.register_kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    monkeypatch.chdir(tmp_path)
    created = client.BatchV1Api(kube_client).create_namespaced_job(NS, job("train-1", "train-1"))
    kube_api.put(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-train-1-abcde",
                "namespace": NS,
                "labels": {"kueue.x-k8s.io/job-uid": created.metadata.uid},
            },
            "spec": {"queueName": "team-q", "podSets": [{"name": "main", "count": 1}]},
        }
    )
    kube_api.set_status(
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        "job-train-1-abcde",
        {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                 "lastTransitionTime": "2026-12-01T10:00:30Z"},
                {"type": "Admitted", "status": "True", "reason": "Admitted",
                 "lastTransitionTime": "2026-12-01T10:00:30Z"},
            ],
            "admission": {"clusterQueue": "team-cq"},
        },
        namespace=NS,
    )  # fmt: skip
    kube_api.set_status(
        "batch/v1", "Job", "train-1", {"startTime": "2026-12-01T10:01:00Z", "active": 1},
        namespace=NS,
    )  # fmt: skip
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "train-1-0-x",
                "namespace": NS,
                # tau's pod template labels (tau.render.labels.pod_labels): autocapture
                # lists pods by the managed-by label, as the portal's runs board does.
                "labels": {
                    "job-name": "train-1",
                    meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE,
                    meta.LABEL_RUN_ID: "train-1",
                },
            },
            "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "i"}]},
            "status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True",
                     "lastTransitionTime": "2026-12-01T10:00:40Z"},
                    {"type": "Ready", "status": "True"},
                ],
                "containerStatuses": [{"name": "c", "image": "i", "ready": True,
                                       "restartCount": 0, "state": {"running": {}}}],
            },
        }
    )  # fmt: skip
    return kube_api


@pytest.fixture
def store(tmp_path: Path, capsys) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


def test_capture_run_profile_maps_labels_annotations_and_live_state(cluster, store, capsys):
    args = ["experiment", "capture", "run-profile", "train-1", "-n", NS, "--context", "emulator"]
    result = portal(capsys, *args, "--store", store, "-o", "json")
    assert result.code == 0, result.err
    run = result.json()["run"]
    assert run["run_id"] == "train-1" and run["state"] == "running"
    assert run["config_hash"] == "sha256:abc" and run["result_uri"] == "pvc://results/train-1"
    body = portal(capsys, "experiment", "sql", "select * from run_context", "--store", store,
                  "--format", "json").json()[0]  # fmt: skip
    assert body["namespace"] == NS and body["local_queue"] == "team-q"
    assert body["cluster_queue"] == "team-cq" and body["kueue_workload"] == "job-train-1-abcde"
    assert body["gpu_count"] == 8 and body["gpu_class"] == "h100"
    pod = cluster.get_object("v1", "Pod", "train-1-0-x", namespace=NS)
    assert body["node_names"] == "node-a" and body["pod_uid"] == pod["metadata"]["uid"]
    assert body["mounts"] == "data:/data"
    tags = portal(capsys, "experiment", "search", "--store", store, "--json").json()["runs"][0]
    assert tags["tags"] == {"tau.capture.source": "status-run-profile"}
    assert tags["owner"] == "tau-status"
    missing = portal(capsys, "experiment", "capture", "run-profile", "nope", "-n", NS,
                     "--context", "emulator", "--store", store)  # fmt: skip
    assert missing.code == 1 and "no Job or RayJob 'nope' in namespace team" in missing.err


def test_autocapture_writes_lifecycle_events_and_moves_state_forward(cluster, store, capsys):
    args = ["experiment", "autocapture", "-n", NS, "--context", "emulator", "--store", store]
    first = portal(capsys, *args, "-o", "json")
    assert first.code == 0, first.err
    counts = first.json()
    assert counts["runs"] == 1 and counts["created_runs"] == 1 and counts["events"] >= 4
    query = "select type, source, severity, message from events order by type"
    events = portal(capsys, "experiment", "sql", query, "--store", store, "--format", "json")
    events = events.json()
    by_type = {e["type"]: e for e in events}
    assert by_type["submitted"]["message"] == f"Job {NS}/train-1 was submitted"
    assert by_type["running"]["message"] == f"Job {NS}/train-1 started running"
    assert by_type["kueue-admitted"]["message"] == (
        "Workload job-train-1-abcde was admitted to queue team-q"
    )
    assert by_type["pod-scheduled"]["message"] == "Pod train-1-0-x scheduled on node-a"
    assert by_type["pod-scheduled"]["source"] == "kubernetes/pod"

    again = portal(capsys, *args, "-o", "json").json()
    assert again["events"] == 0 and again["created_runs"] == 0  # nothing new: no-op

    cluster.set_status(
        "batch/v1", "Job", "train-1",
        {"startTime": "2026-12-01T10:01:00Z", "completionTime": "2026-12-01T11:00:00Z",
         "succeeded": 1, "conditions": [{"type": "Complete", "status": "True",
                                         "lastTransitionTime": "2026-12-01T11:00:00Z"}]},
        namespace=NS,
    )  # fmt: skip
    done = portal(capsys, *args, "-o", "json").json()
    assert done["updated_runs"] == 1
    status = portal(capsys, "experiment", "status", "train-1", "--store", store, "--json").json()
    assert status["run"]["state"] == "succeeded"
    assert status["run"]["completed_at"] == "2026-12-01T11:00:00Z"
    times = portal(capsys, "experiment", "sql", "select max(time) as t from events", "--store",
                   store, "--format", "json").json()  # fmt: skip
    assert status["latest_event_at"] == times[0]["t"]
    query = "select time, message from events where type = 'succeeded'"
    done_event = portal(capsys, "experiment", "sql", query, "--store", store, "--format", "json")
    done_event = done_event.json()
    assert done_event == [
        {"time": "2026-12-01T11:00:00Z", "message": f"Job {NS}/train-1 succeeded"}
    ]

    # A terminal state never moves again, and a different terminal state is a conflict.
    cluster.set_status(
        "batch/v1", "Job", "train-1",
        {"conditions": [{"type": "Failed", "status": "True",
                         "lastTransitionTime": "2026-12-01T11:05:00Z"}]},
        namespace=NS,
    )  # fmt: skip
    clash = portal(capsys, *args)
    assert clash.code == 1
    assert 'terminal run state is "succeeded", controller observed "failed"' in clash.err


def test_kubeconfig_is_untouched(cluster, store, capsys, kubeconfig_file):
    before = Path(kubeconfig_file).read_bytes()
    args = ["experiment", "autocapture", "-n", NS, "--context", "emulator", "--store", store]
    assert portal(capsys, *args).code == 0
    assert Path(kubeconfig_file).read_bytes() == before
    assert json.loads(Path(store / "manifest.json").read_text())["kind"] == "tau.exp.store"
