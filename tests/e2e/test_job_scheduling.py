"""Jobs that show the layers of the status tree on the real control plane: an Indexed torchrun
Job across both GPU nodes, a run pending for quota while it holds them, one that can never be
placed, cancel waiting for the pods, idempotent resubmission and resume of a failed run."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tau.k8s import meta
from tau.runs.submit import submit
from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import DATA_CLAIM
from tests.e2e.test_job_lifecycle import (
    finish,
    gpu_job,
    job_pods,
    phase_statuses,
    status_doc,
    write_target,
)

pytestmark = pytest.mark.e2e


def running_pods(admin: Api, ns: str, job: str) -> list[dict[str, Any]]:
    return [
        p for p in job_pods(admin, ns, job) if (p.get("status") or {}).get("phase") == "Running"
    ]


def first_open(doc: dict[str, Any]) -> dict[str, Any] | None:
    return next((p for p in doc["phases"] if p["status"] not in ("done", "skipped")), None)


def researcher_api(researcher: Any) -> Any:
    from kubernetes import config as kube_config

    return kube_config.new_client_from_config(
        str(researcher.kubeconfig), context=researcher.context
    )


def client_render(repo: Shell, name: str, ns: str, queue: str) -> list[dict[str, Any]]:
    """The run's objects as a submit sends them: the offline render with the workspace's
    namespace and queue in place of its placeholders (this workspace names no account)."""
    text = repo.ok("run", name, "--dry-run=client", "-o", "json")
    text = text.replace("<unresolved-namespace>", ns).replace("<unresolved-queue>", queue)
    docs = json.loads(text)
    docs = docs if isinstance(docs, list) else docs.get("items", [docs])
    for doc in docs:
        spec = (doc.get("spec") or {}).get("template", {}).get("spec", {})
        if spec.get("serviceAccountName", "").startswith("<unresolved"):
            del spec["serviceAccountName"]
    return docs


def cancel(repo: Shell, admin: Api, ns: str, name: str) -> None:
    out = repo.ok("run", "cancel", name)
    assert name in out
    # cancel returns only once the pods are gone: no waiting here.
    assert job_pods(admin, ns, name) == []
    assert admin.get("batch/v1", "Job", name, ns) is None


def torchrun(name: str) -> dict[str, Any]:
    return gpu_job(
        name,
        "hold",
        execution={
            "launcher": "torchrun",
            "nodes": 2,
            "processes_per_node": 8,
            "configs": {"max-restarts": 0},
        },
        policy={"preset": "azure.research.training.xl"},
    )


def test_torchrun_fills_both_gpu_nodes_and_a_second_run_waits_for_quota(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, "ddp", torchrun("ddp"))
    repo.ok("run", "ddp")
    pods = wait_for(
        "two Running ranks", lambda: len(p := running_pods(admin, ns, "ddp")) == 2 and p
    )
    # An Indexed Job: one pod per completion index, one rank per 8-GPU node.
    indexes = sorted(
        p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods
    )
    assert indexes == ["0", "1"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["gpu-h100-0", "gpu-h100-1"]
    job = admin.get("batch/v1", "Job", "ddp", ns)
    assert job is not None and job["spec"]["completionMode"] == "Indexed"
    assert admin.get("v1", "Service", "ddp-headless", ns) is not None

    # All 16 GPUs of the ClusterQueue are in use: a 1-GPU run waits in Kueue, and the status
    # tree says so with Kueue's own words.
    write_target(repo, "waits", gpu_job("waits", None))
    repo.ok("run", "waits")
    doc = wait_for(
        "the waiting run's Kueue message",
        lambda: (
            (d := status_doc(repo, "waits"))["workloads"] and d["workloads"][0]["message"] and d
        ),
    )
    assert doc["status"]["state"] == "queued"
    layer = first_open(doc)
    assert layer is not None and layer["name"] == "Kueue admission"
    message = doc["workloads"][0]["message"]
    assert "insufficient unused quota for nvidia.com/gpu" in message, message
    assert message in layer["detail"]

    # The torchrun job finishes; the waiting run is admitted with the freed quota.
    finish(admin, ns, "ddp", "succeeded")
    wait_for("ddp to succeed", lambda: status_doc(repo, "ddp")["status"]["state"] == "succeeded")
    wait_for(
        "the waiting run to finish",
        lambda: status_doc(repo, "waits")["status"]["state"] == "succeeded",
    )


def test_a_run_no_node_can_hold_names_the_layer_and_the_real_reason(
    repo: Shell, admin: Api, researcher
) -> None:
    # 16 GPUs in one pod: within the queue's quota, more than any node has.
    config = gpu_job("too-big", "hold", compute={"gpus": 16})
    del config["policy"]
    write_target(repo, "too-big", config)
    repo.ok("run", "too-big")
    doc = wait_for(
        "the reason the run cannot start",
        lambda: (
            (d := status_doc(repo, "too-big"))["workloads"] and d["workloads"][0]["message"] and d
        ),
    )
    assert doc["status"]["state"] == "queued"
    assert doc["pods"] == []
    layer = first_open(doc)
    # Kueue places pods by topology, so it is Kueue (not the scheduler) that finds no node
    # large enough; the tree names that layer with Kueue's own message.
    assert layer is not None and layer["name"] == "Kueue admission", layer
    message = doc["workloads"][0]["message"]
    assert "doesn't allow to fit" in message and message in layer["detail"], message
    # Not a quota wait: the tree says a pod this large may never fit.
    assert "larger than any node" in layer["hint"]
    assert doc["diagnostics"][0]["code"] == "TopologyNoRoom"
    cancel(repo, admin, researcher.namespace, "too-big")


def test_cancel_returns_when_the_pods_are_gone_and_resubmit_is_idempotent(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, "held", gpu_job("held", "hold"))
    repo.ok("run", "held")
    first = admin.get("batch/v1", "Job", "held", ns)
    assert first is not None
    uid = first["metadata"]["uid"]
    # Another submission of the same name is refused with the way out, and changes nothing.
    again = repo.tau("run", "held")
    assert again.returncode == 3
    assert again.stderr.startswith(
        f"error: run {ns}/held already exists from another submission (Job held, submission-id "
    ), again.stderr
    assert "tau run cancel held" in again.stderr
    # The same submission again (what a retry after a lost answer does): the real apiserver's
    # 409 is recognised as this submission's own object, and nothing new is created.
    result = submit(
        researcher_api(researcher),
        client_render(repo, "held", ns, f"{ns}-queue"),
        submission_id=first["metadata"]["annotations"][meta.ANNOTATION_SUBMISSION_ID],
    )
    assert result.recovered
    assert [o["metadata"]["uid"] for o in result.objects if o["kind"] == "Job"] == [uid]
    assert admin.get("batch/v1", "Job", "held", ns)["metadata"]["uid"] == uid
    wait_for("a Running pod", lambda: running_pods(admin, ns, "held"))
    cancel(repo, admin, ns, "held")
    assert not [
        w
        for w in admin.list("kueue.x-k8s.io/v1beta2", "Workload", ns)
        if any(o["name"] == "held" for o in w["metadata"].get("ownerReferences") or [])
    ]
    listing = json.loads(repo.ok("run", "list", "-o", "json"))
    assert "held" not in [r["name"] for r in listing["runs"]]


def test_resume_replaces_an_evicted_run(repo: Shell, admin: Api, researcher) -> None:
    ns = researcher.namespace
    # Resume needs the checkpoint on a claim (the workspace's `training-data`).
    write_target(repo, "evicted", gpu_job("evicted", "evict", storage={"data_pvc": DATA_CLAIM}))
    repo.ok("run", "evicted")
    wait_for("the run to fail", lambda: status_doc(repo, "evicted")["status"]["state"] == "failed")
    old = admin.get("batch/v1", "Job", "evicted", ns)
    assert old is not None
    out = repo.ok("run", "resume", "evicted", "--config", "tau/evicted.yaml")
    lines = out.splitlines()
    assert lines[:3] == [
        "failure reason: Evicted",
        "checkpoint: /data/checkpoints/finetunes/evicted",
        f"deleting failed workload {ns}/evicted...",
    ], out
    assert lines[3].startswith("resumed evicted after Evicted (attempt 1, TAU_RESUME_FROM=/data/")
    new = wait_for(
        "the replacement Job",
        lambda: (
            (j := admin.get("batch/v1", "Job", "evicted", ns))
            and j["metadata"]["uid"] != old["metadata"]["uid"]
            and j
        ),
    )
    env = {
        e["name"]: e.get("value")
        for e in new["spec"]["template"]["spec"]["containers"][0].get("env") or []
    }
    assert env.get("TAU_RESUME_FROM", "").startswith("/data/")
    cancel(repo, admin, ns, "evicted")


def test_resume_of_a_run_without_a_volume_is_refused_and_the_run_stays(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    write_target(repo, "scratch", gpu_job("scratch", "evict"))
    repo.ok("run", "scratch")
    wait_for("the run to fail", lambda: status_doc(repo, "scratch")["status"]["state"] == "failed")
    old = admin.get("batch/v1", "Job", "scratch", ns)
    proc = repo.tau("run", "resume", "scratch", "--config", "tau/scratch.yaml")
    assert (proc.returncode, proc.stdout) == (1, ""), proc
    assert proc.stderr.startswith(
        f"error: run {ns}/scratch has nothing to resume from: no PersistentVolumeClaim holds "
        "/data/checkpoints/finetunes/scratch in its pods, so it only wrote to node-local "
        "scratch, and that state does not survive workload deletion\n"
    ), proc.stderr
    job = admin.get("batch/v1", "Job", "scratch", ns)
    assert job is not None and job["metadata"]["uid"] == old["metadata"]["uid"]
    assert "deletionTimestamp" not in job["metadata"]
    cancel(repo, admin, ns, "scratch")


def test_resume_refuses_a_run_that_failed_for_an_unknown_reason(
    repo: Shell, admin: Api, researcher
) -> None:
    write_target(repo, "crashed", gpu_job("crashed", "fail"))
    repo.ok("run", "crashed")
    doc = wait_for(
        "the run to fail",
        lambda: (d := status_doc(repo, "crashed"))["status"]["state"] == "failed" and d,
    )
    assert doc["status"]["startupFailed"] or doc["status"]["failureReason"]
    proc = repo.tau("run", "resume", "crashed", "--config", "tau/crashed.yaml")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"error: run {researcher.namespace}/crashed failed for a reason tau cannot classify "
        "(Unknown); it cannot be resumed blindly\n"
    ), proc.stderr
    assert "Traceback" not in proc.stderr
    assert phase_statuses(doc)
