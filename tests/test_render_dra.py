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


GOLDEN_DRA = Path(__file__).resolve().parents[1] / "golden" / "managed-rayjob-dra"


def _gpu_shape(docs: list[dict[str, Any]]) -> list[Any]:
    """What decides the GPUs: each pod's claims and first container's resources, the queue."""
    doc = workload(docs)
    shape: list[Any] = [doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]]
    for spec in pod_specs(doc):
        shape.append((spec.get("resourceClaims"), spec["containers"][0]["resources"]))
    return shape


@pytest.mark.parametrize("preset_in_wrapper", [False, True])
def test_one_manifest_one_render_through_workflow_file(
    tmp_path: Path, capsys: Cap, preset_in_wrapper: bool
) -> None:
    """The DRA manifest of golden managed-rayjob-dra, reached from a direct config's
    workflow.file, claims its GPUs exactly as it does as the tau.yaml itself.
    """
    itself = tmp_path / "itself"
    itself.mkdir()
    for name in ("tau.yaml", "train.py"):
        (itself / name).write_bytes((GOLDEN_DRA / name).read_bytes())
    code, direct_docs, out = render(capsys, itself)
    assert code == 0, out
    delegated = tmp_path / "delegated"
    delegated.mkdir()
    config: dict[str, Any] = {"engine": "rayjob", "entrypoint": "train.py"}
    # The run config decides the kind (the reference's rule for workflow.file).
    config["workflow"] = {"file": "manifest.yaml", "workload_kind": "rayjob"}
    if preset_in_wrapper:
        config["policy"] = {"preset": "azure.research.large-memory.2x"}
    write(delegated, config, yaml.safe_load((GOLDEN_DRA / "tau.yaml").read_text()))
    code, docs, out = render(capsys, delegated)
    assert code == 0, out
    assert "nvidia.com/gpu: '2'" not in out
    assert _gpu_shape(docs) == _gpu_shape(direct_docs)
    assert pod_specs(workload(docs))[1]["resourceClaims"] == [
        {"name": "gpu", "resourceClaimTemplateName": "ds-2gpus"}
    ]
    assert validate_document(workload(docs)) == []
    # The manifest's other run-config fields are the run config's to decide on this path (the
    # reference's rule): one it does not repeat is said to have no effect, not dropped silently.
    ignored = [
        line
        for line in out.splitlines()
        if line.endswith(
            "warning: policy.preset has no effect in a manifest reached through workflow.file: "
            "the run config (tau.yaml) decides it"
        )
    ]
    assert len(ignored) == (0 if preset_in_wrapper else 1), out
    assert all("manifest.yaml:" in line for line in ignored)
    assert "run.workload_kind has no effect" not in out  # the run config says the same


def test_a_run_config_that_disagrees_with_the_manifests_mode_is_refused(
    tmp_path: Path, capsys: Cap
) -> None:
    config = wrapper(
        workload_kind="rayjob", extra={"compute": {"gpu_resource_mode": "device-plugin"}}
    )
    write(tmp_path, config, manifest("two-modes", compute={"gpus": 2, "gpu_resource_mode": "dra"}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1, out
    assert (
        'compute.gpu_resource_mode "device-plugin" disagrees with the manifest\'s "dra" '
        "(manifest.yaml); a run has one GPU mode"
    ) in out
    assert "remove compute.gpu_resource_mode from the run config" in out


def test_an_agreeing_run_config_and_the_nvidia_alias_render(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(workload_kind="rayjob", extra={"compute": {"gpu_resource_mode": "nvidia"}})
    write(tmp_path, config, manifest("alias", compute={"gpu_resource_mode": "device-plugin"}))
    code, _, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "nvidia.com/gpu: '1'" in out and "resourceClaims" not in out


def test_the_manifests_mode_is_checked_by_the_run_config_schema(
    tmp_path: Path, capsys: Cap
) -> None:
    write(tmp_path, wrapper(), manifest("typo", compute={"gpu_resource_mode": "dar"}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1, out
    assert "manifest.yaml:" in out
    assert (
        'compute.gpu_resource_mode must be one of: device-plugin, nvidia, dra, mig (got "dar")'
        in out
    )


def test_a_mig_profile_in_the_manifest_reaches_the_ray_workers(tmp_path: Path, capsys: Cap) -> None:
    compute = {"gpu_resource_mode": "mig", "mig_profile": "1g.18gb"}
    write(tmp_path, wrapper(workload_kind="rayjob"), manifest("sliced", compute=compute))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    worker = pod_specs(workload(docs))[1]["containers"][0]["resources"]
    assert worker["limits"]["nvidia.com/mig-1g.18gb"] == "1"
    assert "nvidia.com/gpu" not in worker["limits"]


@pytest.mark.parametrize(
    ("kind", "compute", "message"),
    [
        (
            "rayjob",
            {"gpu_resource_mode": "mig"},
            "compute.gpu_resource_mode: mig requires compute.mig_profile; without a profile "
            "the workers would request full GPUs",
        ),
        (
            "job",
            {"gpu_resource_mode": "mig", "mig_profile": "1g.18gb"},
            'workload_kind=job cannot use compute.gpu_resource_mode="mig"; managed Jobs support '
            "device-plugin or dra GPUs",
        ),
        (
            "job",
            {"mig_profile": "1g.18gb"},
            'workload_kind=job cannot set compute.mig_profile "1g.18gb"; a managed Job would '
            "request whole GPUs",
        ),
    ],
    ids=["mig-without-profile", "job-mig-mode", "job-mig-profile"],
)
@pytest.mark.parametrize("reached", ["itself", "workflow.file"])
def test_a_mode_the_managed_render_cannot_honour_is_refused(
    tmp_path: Path, capsys: Cap, kind: str, compute: dict[str, str], message: str, reached: str
) -> None:
    """Before, each of these rendered whole nvidia.com/gpu devices without a word."""
    doc = manifest("refused", compute=compute)
    if reached == "itself":
        doc["run"] = {"entrypoint": "train.py", "workload_kind": kind}
        write(tmp_path, doc)
    else:
        write(tmp_path, wrapper(workload_kind=kind), doc)
    code, _, out = render(capsys, tmp_path)
    assert code == 1, out
    assert message in out
    assert ("tau.yaml:" if reached == "itself" else "manifest.yaml:") in out
    assert "Traceback" not in out


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
