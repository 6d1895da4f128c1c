"""DRA GPUs on the managed path: `compute.gpu_resource_mode: dra` renders resourceClaims named
after the platform's claim templates (`full-gpu`, `ds-<N>gpus`) instead of nvidia.com/gpu, on
the parallel DRA queue (the reference's managed workflow case 10); the direct Job and RayJob
paths keep refusing the mode, as the run-config contract says. Every rendered document passes
the Kubernetes 1.37 schemas (and the KubeRay CRD), and so do the DRA objects the e2e test
publishes as a platform would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.k8s import dra
from tests.e2e import dra_platform
from tests.manifest_check import validate_document
from tests.test_workflow_dispatch import manifest, pod_specs, render, workload, wrapper, write

Cap = pytest.CaptureFixture[str]


def gpu_containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The trainer / GPU worker containers (the first container of each pod)."""
    return [spec["containers"][0] for spec in pod_specs(doc)]


@pytest.mark.parametrize(
    ("gpus", "template"), [(0, ""), (1, "full-gpu"), (2, "ds-2gpus"), (8, "ds-8gpus")]
)
def test_the_claim_template_names_the_gpu_count(gpus: int, template: str) -> None:
    assert dra.claim_template(gpus) == template


def test_a_dra_preset_rayjob_uses_the_dra_queue_and_the_managed_series(
    tmp_path: Path, capsys: Cap
) -> None:
    """Reference case 10: gpus 2, rayjob, preset large-memory.2x, dra."""
    config = manifest(
        "dra-h200",
        compute={"gpus": 2, "gpu_resource_mode": "dra"},
        run={"entrypoint": "train.py", "workload_kind": "rayjob"},
        policy={"preset": "azure.research.large-memory.2x"},
    )
    write(tmp_path, config)
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    for want in (
        "kueue.x-k8s.io/queue-name: jobqueue-dra",
        "resourceClaimTemplateName: ds-2gpus",
        "kueue.azure.com/gpu-series: nd-h200-v5",
        "tau.azure.com/resource-flavor: nd-h200-v5-dra",
        "tau.azure.com/cluster-queue: tau-dra-cq",
        "tau.azure.com/dra-claim-template: ds-2gpus",
    ):
        assert want in out, want
    for forbidden in (
        "nvidia.com/gpu: '2'",
        "kueue.x-k8s.io/podset-unconstrained-topology",
        "kueue.x-k8s.io/podset-required-topology",
        "kueue.x-k8s.io/podset-preferred-topology",
        "tau.azure.com/kueue-topology",
    ):
        assert forbidden not in out, forbidden
    rayjob = workload(docs)
    head, worker = pod_specs(rayjob)
    # The control head holds no GPU and so no claim; the worker claims two GPUs of one node.
    assert "resourceClaims" not in head
    assert worker["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "ds-2gpus"}]
    resources = worker["containers"][0]["resources"]
    assert resources["claims"] == [{"name": "gpu"}]
    assert not [k for k in (*resources["requests"], *resources["limits"]) if "nvidia.com" in k]
    assert validate_document(rayjob) == []


def test_a_dra_job_claims_full_gpu_and_goes_to_the_dra_queue(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(workload_kind="job", extra={"compute": {"gpu_resource_mode": "dra"}})
    del config["policy"]["queue"]
    write(tmp_path, config, manifest("probe"))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    job = workload(docs)
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "jobqueue-dra"
    (spec,) = pod_specs(job)
    assert spec["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "full-gpu"}]
    main = spec["containers"][0]
    assert main["resources"]["claims"] == [{"name": "gpu"}]
    assert "nvidia.com/gpu" not in main["resources"]["requests"]
    assert "nvidia.com/gpu" not in main["resources"]["limits"]
    # GPU nodes stay tainted for GPU pods, however the GPUs are handed out.
    assert {t["key"] for t in spec["tolerations"]} == {"sku", "nvidia.com/gpu"}
    assert job["metadata"]["annotations"]["tau.azure.com/dra-claim-template"] == "full-gpu"
    assert validate_document(job) == []


def test_an_explicit_queue_stays_as_written(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(workload_kind="rayjob", extra={"compute": {"gpu_resource_mode": "dra"}})
    config["policy"]["queue"] = "custom-dra"
    write(tmp_path, config, manifest("queued"))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    assert workload(docs)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "custom-dra"


def test_an_eval_claims_gpus_for_its_gpu_worker_only(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(workload_kind="rayjob-eval", extra={"compute": {"gpu_resource_mode": "dra"}})
    write(tmp_path, config, manifest("evaluate", eval={"cpu_workers": 2}))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    head, gpu, cpu = pod_specs(workload(docs))
    assert "resourceClaims" not in head and "resourceClaims" not in cpu
    assert gpu["resourceClaims"][0]["resourceClaimTemplateName"] == "full-gpu"
    assert "claims" not in cpu["containers"][0]["resources"]
    assert validate_document(workload(docs)) == []


def test_a_cpu_only_manifest_claims_nothing(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(workload_kind="rayjob", extra={"compute": {"gpu_resource_mode": "dra"}})
    doc = manifest("cpu-only", compute={"gpus": 0}, runtime={"image": "python:3.12"})
    write(tmp_path, config, doc)
    code, _, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "resourceClaims" not in out and "dra-claim-template" not in out


def test_device_plugin_renders_no_claims(tmp_path: Path, capsys: Cap) -> None:
    """Reference cases 11-12: the device-plugin mode forbids every claim field."""
    config = wrapper(
        workload_kind="rayjob", extra={"compute": {"gpu_resource_mode": "device-plugin"}}
    )
    write(tmp_path, config, manifest("flex-a100"))
    code, _, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "nvidia.com/gpu: '1'" in out
    for forbidden in ("resourceClaimTemplateName:", "resourceClaims:", "claims:\n"):
        assert forbidden not in out, forbidden


@pytest.mark.parametrize(
    ("engine", "message"),
    [
        ("job", 'engine=job cannot use compute.gpu_resource_mode="dra"; direct Jobs support'),
        ("rayjob", 'engine=rayjob cannot use compute.gpu_resource_mode="dra"; RayJobs support'),
    ],
)
def test_the_direct_paths_still_refuse_dra(
    tmp_path: Path, capsys: Cap, engine: str, message: str
) -> None:
    config: dict[str, Any] = {
        "name": "direct",
        "engine": engine,
        "entrypoint": "train.py",
        "compute": {"gpu_resource_mode": "dra"},
    }
    config["compute"]["gpus" if engine == "job" else "gpus_per_worker"] = 1
    write(tmp_path, config)
    code, _, out = render(capsys, tmp_path)
    assert code == 1, out
    assert message in out


def test_the_platform_objects_of_the_e2e_pass_the_kubernetes_schemas() -> None:
    objects = [
        dra_platform.device_class(),
        dra_platform.resource_slice("gpu-h100-0", 8),
        *(dra_platform.claim_template("team-e2e", n) for n in (1, 2, 8)),
    ]
    for obj in objects:
        assert validate_document(obj) == [], obj["kind"]
    assert [o["metadata"]["name"] for o in objects[2:]] == ["full-gpu", "ds-2gpus", "ds-8gpus"]
    # A field the API does not know is caught: the check is strict, not a pass-through.
    bad = yaml.safe_load(yaml.safe_dump(objects[1]))
    bad["spec"]["devices"][0]["unknown"] = True
    assert validate_document(bad) != []
