"""Helper pods that read a run's claim look like the run: its image, node selector and
tolerations (Kueue's flavor adds them at admission), so they reach nodes that can mount a
node-local claim and pull nothing from a registry the cluster may not reach."""

from __future__ import annotations

from typing import Any

from tau.registry.pvc import HELPER_IMAGE, PvcBackend

PLACEMENT = {
    "nodeSelector": {"type": "real"},
    "tolerations": [{"key": "tau-e2e/real-node", "operator": "Exists", "effect": "NoSchedule"}],
}


def job(**pod: Any) -> dict[str, Any]:
    return {
        "kind": "Job",
        "metadata": {"annotations": {"tau.azure.com/image": "registry.local/trainer:1"}},
        "spec": {"template": {"spec": {"containers": [{"image": "other:2"}], **pod}}},
    }


def test_a_job_helper_takes_the_runs_image_and_placement() -> None:
    backend = PvcBackend.for_run("data", None, namespace="ns", run=job(**PLACEMENT))
    assert backend.image == "registry.local/trainer:1"
    spec = backend._pod("tau-ls-1", "true", {})["spec"]
    assert spec["nodeSelector"] == {"type": "real"}
    assert spec["tolerations"] == PLACEMENT["tolerations"]


def test_a_rayjob_helper_follows_the_head_pod() -> None:
    rayjob = {
        "kind": "RayJob",
        "metadata": {},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {
                    "template": {"spec": {"containers": [{"image": "ray:2"}], **PLACEMENT}}
                }
            }
        },
    }
    backend = PvcBackend.for_run("data", None, namespace="ns", run=rayjob)
    assert backend.image == "ray:2"
    assert backend._pod("tau-ls-1", "true", {})["spec"]["nodeSelector"] == {"type": "real"}


def test_a_run_without_an_image_or_placement_keeps_the_defaults() -> None:
    backend = PvcBackend.for_run("data", None, namespace="ns", run={"spec": {}})
    spec = backend._pod("tau-ls-1", "true", {})["spec"]
    assert backend.image == HELPER_IMAGE
    assert "nodeSelector" not in spec and "tolerations" not in spec
