"""DRA GPUs on the real control plane: a managed run with `compute.gpu_resource_mode: dra`
claims its GPU from the platform's `full-gpu` ResourceClaimTemplate, Kubernetes 1.37's
resource-claim controller makes the pod's ResourceClaim and its scheduler allocates it from the
ResourceSlices published for the fake GPU nodes, and `tau run status` reads the DRA phase from
the real claim: `0/1 allocated` with the "no suitable devices" warning while no node publishes
a device, `1/1 allocated` once the driver (played here by the test, as KWOK's nodes run none)
publishes the nodes' GPUs.

The templates, the DeviceClass and the slices are the platform's, so the test creates them with
the admin client and removes them afterwards; tau creates none of them. KWOK plays the kubelet:
it never prepares a device, so a pod reaches Running with its claim allocated, which is what
this proves (the scheduler's half of DRA, not the kubelet's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e import dra_platform
from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_job_lifecycle import finish, job_pods, status_doc

pytestmark = pytest.mark.e2e

RESOURCE = dra_platform.API
GPU_NODES = (("gpu-h100-0", 8), ("gpu-h100-1", 8))
#: Every Job this module submits; the cleanup removes them whatever happened.
RUNS = ("tau-dra-wait",)
TEMPLATE_GPUS = (1, 2, 8)


def dra_run(name: str) -> dict[str, Any]:
    """A one-GPU managed Job through DRA, held running until the test ends it."""
    return {
        "schema_version": 1,
        "name": name,
        "compute": {"gpus": 1, "cpus": 2, "memory": "8Gi", "gpu_resource_mode": "dra"},
        "runtime": {"pip": ["torch==2.4.0"], "env": [{"name": "E2E_OUTCOME", "value": "hold"}]},
        "run": {"entrypoint": "train.py", "workload_kind": "job"},
        # The fake GPU nodes, whose devices the test publishes (no real kubelet, no driver).
        "policy": {"node_selector": {"type": "kwok", "nvidia.com/gpu.present": "true"}},
    }


def claims_of(admin: Api, namespace: str, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ResourceClaims the resource-claim controller made for `pods` (owned by them)."""
    uids = {p["metadata"]["uid"] for p in pods}
    return [
        c
        for c in admin.list(RESOURCE, "ResourceClaim", namespace)
        if any(o["uid"] in uids for o in c["metadata"].get("ownerReferences") or [])
    ]


def dra_phase(doc: dict[str, Any]) -> dict[str, Any]:
    return next(p for p in doc["phases"] if p["name"] == "DRA allocation")


def slice_name(node: str) -> str:
    name: str = dra_platform.resource_slice(node, 0)["metadata"]["name"]
    return name


@pytest.fixture(scope="module")
def platform(admin: Api, researcher) -> Iterator[str]:
    """The DeviceClass and the workspace's claim templates; slices are the test's to publish.
    Afterwards every run, claim, slice, template and the class are gone again."""
    ns = researcher.namespace
    admin.apply(dra_platform.device_class())
    for gpus in TEMPLATE_GPUS:
        admin.apply(dra_platform.claim_template(ns, gpus))
    yield ns
    for run in RUNS:
        admin.delete("batch/v1", "Job", run, ns)
    wait_for(
        "the DRA runs' pods and their claims to be gone",
        lambda: (
            not any(job_pods(admin, ns, r) for r in RUNS)
            and not [
                c
                for c in admin.list(RESOURCE, "ResourceClaim", ns)
                if any(c["metadata"]["name"].startswith(r) for r in RUNS)
            ]
        ),
    )
    for node, _ in GPU_NODES:
        admin.delete(RESOURCE, "ResourceSlice", slice_name(node))
    for gpus in TEMPLATE_GPUS:
        name = dra_platform.claim_template(ns, gpus)["metadata"]["name"]
        admin.delete(RESOURCE, "ResourceClaimTemplate", name, ns)
    admin.delete(RESOURCE, "DeviceClass", dra_platform.DEVICE_CLASS)
    wait_for(
        "the DRA objects to be gone",
        lambda: (
            not admin.list(RESOURCE, "ResourceSlice")
            and admin.get(RESOURCE, "DeviceClass", dra_platform.DEVICE_CLASS) is None
        ),
    )


def test_a_dra_run_waits_for_devices_then_its_claim_is_allocated(
    repo: Shell, admin: Api, platform: str
) -> None:
    ns, run = platform, "tau-dra-wait"
    (repo.cwd / "tau" / "dra-wait.yaml").write_text(
        yaml.safe_dump(dra_run("dra-wait"), sort_keys=False)
    )
    (repo.cwd / "tau" / "train.py").write_text("print('train')\n")
    repo.ok("run", "dra-wait")
    job = admin.get("batch/v1", "Job", run, ns)
    assert job is not None
    pod_spec = job["spec"]["template"]["spec"]
    assert pod_spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "full-gpu"}]
    trainer = pod_spec["containers"][0]["resources"]
    assert trainer["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in trainer.get("limits", {})

    # No node publishes a GPU yet: the scheduler cannot allocate the pod's claim, and the
    # status tree says so from the real claim and the scheduler's event.
    waiting = wait_for(
        "the DRA phase to warn that no device fits",
        lambda: (
            (d := status_doc(repo, run))
            and dra_phase(d)["status"] == "warning"
            and "no suitable devices" in dra_phase(d)["detail"]
            and d
        ),
    )
    detail = dra_phase(waiting)["detail"]
    assert detail.startswith("0/1 allocated: no suitable devices ("), detail
    assert "cannot allocate all claims" in detail, detail
    assert waiting["status"]["state"] == "starting"
    assert any(d["code"] == "DRAClaimPending" for d in waiting["diagnostics"])
    pods = job_pods(admin, ns, run)
    (claim,) = claims_of(admin, ns, pods)
    assert not (claim.get("status") or {}).get("allocation")
    text = repo.ok("run", "status", run)
    assert "[!] DRA allocation" in text and "no suitable devices" in text

    # The driver publishes both GPU nodes' devices: the scheduler allocates the claim from a
    # slice of the node it binds the pod to, and KWOK runs the pod.
    for node, gpus in GPU_NODES:
        admin.apply(dra_platform.resource_slice(node, gpus))
    running = wait_for(
        "the claim to be allocated and the run to be running",
        lambda: (
            (d := status_doc(repo, run))["status"]["state"] == "running"
            and dra_phase(d)["status"] == "done"
            and d
        ),
        timeout=180,
    )
    assert dra_phase(running)["detail"] == "1/1 allocated"
    (pod,) = job_pods(admin, ns, run)
    node = pod["spec"]["nodeName"]
    assert node in dict(GPU_NODES)
    (claim,) = claims_of(admin, ns, [pod])
    allocation = claim["status"]["allocation"]
    (result,) = allocation["devices"]["results"]
    assert (result["driver"], result["pool"], result["request"]) == (
        dra_platform.DRIVER,
        node,
        "gpu",
    )
    assert result["device"].startswith("gpu-")
    assert [r["name"] for r in claim["status"].get("reservedFor") or []] == [
        pod["metadata"]["name"]
    ]

    finish(admin, ns, run, "succeeded")
    wait_for("the run to succeed", lambda: status_doc(repo, run)["status"]["state"] == "succeeded")
    repo.ok("run", "cancel", run)
    # The claim was the pod's: it goes with the pod.
    wait_for(
        "the run's claim to be deleted with its pod",
        lambda: (
            not [
                c
                for c in admin.list(RESOURCE, "ResourceClaim", ns)
                if c["metadata"]["name"].startswith(run)
            ]
        ),
    )
