"""Where a path lies on a claim: what resume asks of the failed workload and its replacement."""

from __future__ import annotations

from typing import Any

from tau.k8s.durable import claim_at


def pod(mounts: list[tuple[str, str]], volumes: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "containers": [
            {"name": "main", "volumeMounts": [{"name": n, "mountPath": p} for n, p in mounts]}
        ],
        "volumes": volumes,
    }


PVC = {"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}
SCRATCH = {"name": "scratch", "emptyDir": {}}


def job(spec: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "Job", "spec": {"template": {"spec": spec}}}


def test_a_claim_at_data_holds_the_checkpoint() -> None:
    workload = job(pod([("data", "/data")], [PVC]))
    assert claim_at(workload, "/data/checkpoints/finetunes/x") == "training-data"
    assert claim_at(workload, "/data") == "training-data"
    # A sibling path that merely starts with the same letters is not under the mount.
    assert claim_at(workload, "/database/x") is None


def test_nothing_mounted_or_scratch_is_not_durable() -> None:
    assert claim_at(job(pod([], [])), "/data/checkpoints/x") is None
    assert claim_at(job(pod([("scratch", "/data")], [SCRATCH])), "/data/checkpoints/x") is None


def test_the_deepest_mount_decides() -> None:
    spec = pod([("data", "/data"), ("scratch", "/data/checkpoints")], [PVC, SCRATCH])
    assert claim_at(job(spec), "/data/checkpoints/x") is None
    assert claim_at(job(spec), "/data/datasets/y") == "training-data"


def test_a_rayjob_worker_group_with_the_claim_counts() -> None:
    rayjob = {
        "kind": "RayJob",
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {"template": {"spec": pod([], [])}},
                "workerGroupSpecs": [{"template": {"spec": pod([("data", "/data/")], [PVC])}}],
            }
        },
    }
    assert claim_at(rayjob, "/data/checkpoints/x") == "training-data"
