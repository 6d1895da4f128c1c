"""Managed workflows through `tau run`: the reference's dispatch cases (managed_workflow_test.go,
render_test.go, run_config_test.go), run through the CLI with --dry-run=client.

Each case writes a manifest and a main script, as the reference's helper does, and reads the
rendered YAML; the numbers are the contract's ("Reference tests").
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.cli import main
from tests.manifest_check import validate_document

Cap = pytest.CaptureFixture[str]


def manifest(name: str = "secret-job", **fields: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": 1,
        "name": name,
        "compute": {"gpus": 1},
        "runtime": {"pip": ["torch==2.4.0"]},
    }
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        else:
            doc[key] = value
    return doc


def wrapper(**workflow: Any) -> dict[str, Any]:
    """A direct config delegating to manifest.yaml in the same folder."""
    extra = workflow.pop("extra", {})
    return {
        "run": {"entrypoint": "train.py"},
        "policy": {"namespace": "test-workspace", "queue": "jobqueue"},
        "workflow": {"file": "manifest.yaml", **workflow},
        **extra,
    }


def write(folder: Path, config: dict[str, Any], doc: dict[str, Any] | None = None) -> Path:
    (folder / "train.py").write_text("print('train')\n")
    if doc is not None:
        (folder / "manifest.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    path = folder / "tau.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def render(
    capsys: Cap, folder: Path, *flags: str, name: str | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    argv = ["run", *([name] if name else []), "--config", str(folder / "tau.yaml")]
    code = main([*argv, "--dry-run=client", *flags])
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d] if code == 0 else []
    return code, docs, out + err


def workload(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] in ("Job", "RayJob"))


def pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] == "Job":
        return [doc["spec"]["template"]["spec"]]
    cluster = doc["spec"]["rayClusterSpec"]
    return [cluster["headGroupSpec"]["template"]["spec"]] + [
        g["template"]["spec"] for g in cluster["workerGroupSpecs"]
    ]


def decode_payload(init: dict[str, Any]) -> dict[str, bytes]:
    env = {e["name"]: e["value"] for e in init["env"]}
    doc = json.loads(gzip.decompress(base64.b64decode(env["TAU_PAYLOAD_B64"])))
    return {f["name"]: base64.b64decode(f["data"]) for f in doc["files"]}


SECRET_ENV = [
    {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "tau-secret-job-secrets", "key": "HF_TOKEN"}},
    }
]


# 2, 37, 40: the secret payload renders first, redacted on a client dry-run, owned by the Job.
def test_secret_payload_dry_run_redacts_the_value_and_names_its_owner(
    tmp_path: Path, capsys: Cap
) -> None:
    doc = manifest(runtime={"env": SECRET_ENV})
    payload = {"name": "tau-secret-job-secrets", "stringData": {"HF_TOKEN": "fake-token-value"}}
    (tmp_path / "secrets.json").write_text(json.dumps(payload))
    write(tmp_path, wrapper(workload_kind="job", secret_payload="secrets.json"), doc)
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "fake-token-value" not in out and "key: HF_TOKEN" not in out
    secret, job = docs
    assert secret["kind"] == "Secret" and secret["metadata"]["name"] == "tau-secret-job-secrets"
    assert secret["stringData"] == {"HF_TOKEN": "<redacted>"}
    assert secret["metadata"]["annotations"] == {
        "tau.azure.com/owner-kind": "Job",
        "tau.azure.com/owner-name": "tau-secret-job",
    }
    assert secret["metadata"]["labels"]["tau.azure.com/managed-by"] == "tau"
    labels = job["metadata"]["labels"]
    assert labels["kueue.x-k8s.io/queue-name"] == "jobqueue"
    assert labels["tau.azure.com/run-id"] == "tau-secret-job"
    assert labels["tau.azure.com/workload-kind"] == "job"
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "<redacted>",
        "key": "<redacted>",
    }
    for d in docs:
        assert validate_document(d) == [], d["kind"]


# 4: every kind carries managed-by, run-id and its workload-kind label.
@pytest.mark.parametrize(
    ("kind", "fields", "api_kind"),
    [
        ("job", {}, "Job"),
        ("rayjob", {"compute": {"gpus": 1, "workers": 2}}, "RayJob"),
        ("rayjob-eval", {"eval": {"cpu_workers": 2}}, "RayJob"),
    ],
)
def test_each_kind_renders_the_workload_identity_labels(
    tmp_path: Path, capsys: Cap, kind: str, fields: dict[str, Any], api_kind: str
) -> None:
    write(tmp_path, wrapper(workload_kind=kind), manifest(**fields))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    doc = workload(docs)
    assert doc["kind"] == api_kind
    labels = doc["metadata"]["labels"]
    assert labels["tau.azure.com/managed-by"] == "tau"
    assert labels["tau.azure.com/run-id"] == "tau-secret-job"
    assert labels["tau.azure.com/workload-kind"] == kind
    assert validate_document(doc) == []


# 13: the run config's data PVC, namespace, queue and node selector place the manifest's run.
def test_the_wrapper_data_pvc_overrides_the_manifest(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper(
        workload_kind="rayjob",
        extra={
            "storage": {"data_pvc": "lustre-research"},
            "policy": {
                "namespace": "ray",
                "queue": "research-queue",
                "node_selector": {"kubernetes.azure.com/agentpool": "a10"},
            },
        },
    )
    write(tmp_path, config, manifest())
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    doc = workload(docs)
    assert doc["metadata"]["namespace"] == "ray"
    assert doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "research-queue"
    specs = pod_specs(doc)
    worker = specs[1]
    assert worker["nodeSelector"] == {"kubernetes.azure.com/agentpool": "a10"}
    data = next(v for v in specs[0]["volumes"] if v["name"] == "data")
    assert data["persistentVolumeClaim"] == {"claimName": "lustre-research"}


# 25, 27: a multi-node manifest becomes a RayJob (said on stderr); a Job cannot host it.
def test_a_multi_node_manifest_infers_a_rayjob(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(), manifest(compute={"gpus": 8, "workers": 2}))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "tau: inferred workload_kind=rayjob" in out
    doc = workload(docs)
    assert doc["kind"] == "RayJob"
    (group,) = doc["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert group["replicas"] == 2 and group["rayStartParams"]["num-gpus"] == "8"


def test_a_multi_node_manifest_with_an_explicit_job_kind_fails(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="job"), manifest(compute={"gpus": 8, "workers": 2}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert (
        "workload_kind=job cannot be multi-node (compute.workers=2); omit workload_kind or set "
        "workload_kind: rayjob" in out
    )
    assert "tau.yaml:" in out


# 29: no main script.
def test_a_wrapper_without_a_main_script_fails(tmp_path: Path, capsys: Cap) -> None:
    config = wrapper()
    del config["run"]
    write(tmp_path, config, manifest())
    code, _, out = render(capsys, tmp_path)
    assert code == 1 and "workflow config requires run.entrypoint" in out


@pytest.mark.parametrize("kind", ["rayjob", "job"])
def test_a_wrapper_without_a_main_script_fails_in_the_references_words_for_either_kind(
    tmp_path: Path, capsys: Cap, kind: str
) -> None:
    config = wrapper(workload_kind=kind)
    del config["run"]
    write(tmp_path, config, manifest())
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert "error: run.entrypoint: workflow config requires run.entrypoint" in out
    assert "engine=ray requires run.entrypoint" not in out


# The reference's TestRunConfigWorkflowRuntimeImageOverride: workflow.main_script names the
# trainer (no engine, no entrypoint); runtime.image replaces the manifest's image.
def test_workflow_main_script_and_runtime_image_render_a_rayjob(
    tmp_path: Path, capsys: Cap
) -> None:
    config = {
        "name": "workflow-image",
        "workflow": {"file": "manifest.yaml", "main_script": "train.py", "workload_kind": "rayjob"},
        "runtime": {"image": "example.com/research/ray:workflow"},
        "policy": {"namespace": "ray", "queue": "team-a", "disable_default_priorities": True},
    }
    write(tmp_path, config, manifest("workflow-image"))
    (tmp_path / "train.py").write_text("print('the trainer')\n")
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    doc = workload(docs)
    assert (doc["kind"], doc["metadata"]["name"]) == ("RayJob", "tau-workflow-image")
    images = {c["image"] for spec in pod_specs(doc) for c in spec["containers"]}
    assert images == {"example.com/research/ray:workflow"}
    trainer = "python3 /script/train.py --manifest /manifest/manifest.yaml"
    assert trainer in doc["spec"]["entrypoint"]
    head = pod_specs(doc)[0]
    payload = next(c for c in head["initContainers"] if c["name"] == "tau-payload")
    raw = next(e["value"] for e in payload["env"] if e["name"] == "TAU_PAYLOAD_B64")
    (shipped,) = json.loads(gzip.decompress(base64.b64decode(raw)))["files"]
    assert shipped["name"] == "train.py"
    assert base64.b64decode(shipped["data"]) == b"print('the trainer')\n"
    assert validate_document(doc) == []
    assert main(["run", "validate", "--config", str(tmp_path / "tau.yaml")]) == 0
    assert capsys.readouterr().out.endswith("tau.yaml is valid\n")


# 30: an eval manifest infers rayjob-eval and carries the upstream checkpoint.
def test_an_eval_manifest_infers_rayjob_eval_with_the_upstream_checkpoint(
    tmp_path: Path, capsys: Cap
) -> None:
    upstream = "/data/checkpoints/train-fullft/last.safetensors"
    doc = manifest("eval-smoke", eval={"cpu_workers": 4, "upstream": "train-fullft"})
    write(tmp_path, wrapper(upstream_checkpoint=upstream), doc)
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "tau: inferred workload_kind=rayjob-eval" in out
    rayjob = workload(docs)
    assert rayjob["metadata"]["name"] == "tau-eval-smoke"
    for spec in pod_specs(rayjob):
        env = {e["name"]: e.get("value") for e in spec["containers"][0]["env"]}
        assert env["TAU_UPSTREAM_CHECKPOINT"] == upstream
    groups = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [(g["replicas"], g["rayStartParams"]["num-gpus"]) for g in groups] == [
        (1, "1"),
        (4, "0"),
    ]
    # The CPU group runs without GPUs or their tolerations.
    assert "tolerations" not in groups[1]["template"]["spec"]
    assert validate_document(rayjob) == []


# 31, 32: compute.cpu_workers of the run config makes any manifest an eval, with that count.
def test_the_wrapper_cpu_workers_override_the_manifest(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(extra={"compute": {"cpu_workers": 8}}), manifest())
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    assert "inferred workload_kind=rayjob-eval" in out
    groups = workload(docs)["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert groups[1]["replicas"] == 8


# 33, 34, 35: kind conflicts with the manifest, and an unknown kind.
@pytest.mark.parametrize("kind", ["job", "rayjob"])
def test_an_explicit_non_eval_kind_rejects_an_eval_manifest(
    tmp_path: Path, capsys: Cap, kind: str
) -> None:
    write(tmp_path, wrapper(workload_kind=kind), manifest(eval={"cpu_workers": 4}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert f"workload_kind={kind} cannot host an eval manifest (eval.cpu_workers=4" in out
    assert "set workload_kind: rayjob-eval" in out


def test_rayjob_eval_requires_cpu_workers(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="rayjob-eval"), manifest())
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert "workload_kind=rayjob-eval requires eval.cpu_workers > 0" in out


def test_an_unknown_kind_lists_the_kinds(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="deployment"), manifest())
    code, _, out = render(capsys, tmp_path)
    assert code == 1 and "rayjob-eval" in out


# The CPU-only path: inferred rayjob, which needs an image; a Job cannot host it.
def test_a_cpu_only_manifest_runs_as_a_cpu_rayjob_and_needs_an_image(
    tmp_path: Path, capsys: Cap
) -> None:
    write(tmp_path, wrapper(), manifest(compute={"gpus": 0}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1 and "CPU RayJobs do not have a stable default image" in out
    image = {"runtime": {"image": "rayproject/ray:2.54.0-py312-cpu"}}
    write(tmp_path, wrapper(extra=image), manifest(compute={"gpus": 0}))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    (group,) = workload(docs)["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    resources = group["template"]["spec"]["containers"][0]["resources"]
    # The manifest's CPU-only defaults: 1 CPU and 4Gi per worker.
    assert resources["requests"] == {"cpu": "1", "memory": "4Gi"}


def test_a_cpu_only_manifest_cannot_run_as_a_job(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="job"), manifest(compute={"gpus": 0}))
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert "workload_kind=job cannot host a CPU-only manifest (compute.gpus=0)" in out


# A Job with several GPUs runs one pod under torchrun --standalone.
def test_a_multi_gpu_job_runs_torchrun_standalone(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="job", smoke_pairs=8), manifest(compute={"gpus": 4}))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    job = workload(docs)
    assert "completions" not in job["spec"]
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert (
        "torch.distributed.run --standalone --nproc_per_node=4 /script/train.py "
        "--manifest /manifest/manifest.yaml --smoke-pairs 8" in command
    )


# 38, 39: Key Vault.
def test_key_vault_renders_a_secret_provider_class_and_the_identity(
    tmp_path: Path, capsys: Cap
) -> None:
    doc = manifest(runtime={"env_kv": {"HF_TOKEN": "my-vault/hf-token"}})
    write(tmp_path, wrapper(workload_kind="job"), doc)
    flags = (
        "--key-vault",
        "my-vault",
        "--tenant-id",
        "tenant-abc",
        "--workload-identity-client-id",
        "client-xyz",
    )
    code, _, out = render(capsys, tmp_path, *flags)
    assert code == 1 and "a ServiceAccount is required when runtime.env_kv is set" in out
    code, docs, out = render(capsys, tmp_path, *flags, "--service-account", "tau-workload")
    assert code == 0, out
    job, spc = docs
    assert spc["kind"] == "SecretProviderClass" and spc["metadata"]["name"] == "tau-secret-job-kv"
    assert spc["spec"]["parameters"]["keyvaultName"] == "my-vault"
    pod = job["spec"]["template"]["spec"]
    assert job["spec"]["template"]["metadata"]["labels"]["azure.workload.identity/use"] == "true"
    assert pod["serviceAccountName"] == "tau-workload"
    env = {e["name"]: e for e in pod["containers"][0]["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "<redacted>",
        "key": "<redacted>",
    }
    csi = next(v for v in pod["volumes"] if v["name"] == "kv-secrets")["csi"]
    assert csi["volumeAttributes"] == {"secretProviderClass": "tau-secret-job-kv"}
    for d in docs:
        assert validate_document(d) == [], d["kind"]


def test_key_vault_needs_the_tenant_and_the_client(tmp_path: Path, capsys: Cap) -> None:
    doc = manifest(runtime={"env_kv": {"HF_TOKEN": "my-vault/hf-token"}})
    write(tmp_path, wrapper(workload_kind="job"), doc)
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert "runtime.env_kv_tenant is required when runtime.env_kv is set" in out
    assert "runtime.env_kv_client is required when runtime.env_kv is set" in out
    assert "manifest.yaml:" in out


def test_key_vault_flags_on_a_direct_config_are_refused(tmp_path: Path, capsys: Cap) -> None:
    config = {"name": "direct", "engine": "job", "entrypoint": "train.py"}
    write(tmp_path, config)
    code, _, out = render(capsys, tmp_path, "--key-vault", "v")
    assert code == 1
    assert "runtime.env_kv is only supported for workflow.file managed configs" in out


# 45: the manifest copy under /manifest hides Secret names and keys; the workload keeps them.
def test_the_shipped_manifest_copy_is_redacted(tmp_path: Path, capsys: Cap) -> None:
    env = [{"name": "TOK", "valueFrom": {"secretKeyRef": {"name": "raw-secret-name", "key": "k1"}}}]
    write(tmp_path, wrapper(workload_kind="job"), manifest(runtime={"env": env}))
    (tmp_path / "train.py").write_text("print('train')\n")
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    (job,) = docs  # no Secret, no SecretProviderClass, no ConfigMap
    inits = {c["name"]: c for c in job["spec"]["template"]["spec"]["initContainers"]}
    copy = decode_payload(inits["tau-manifest-payload"])["manifest.yaml"].decode()
    assert "name: <redacted>" in copy and "key: <redacted>" in copy
    assert "raw-secret-name" not in copy
    assert job["metadata"]["annotations"]["tau.azure.com/manifest-payload-digest"]
    scripts = decode_payload(inits["tau-payload"])
    assert scripts == {"train.py": b"print('train')\n"}


# 46: a RayJob's env references and extra PVC mounts.
def test_a_rayjob_renders_secret_env_and_storage_mounts(tmp_path: Path, capsys: Cap) -> None:
    env = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
        {"name": "WANDB_MODE", "value": "offline"},
    ]
    mounts = [
        {
            "name": "dataset",
            "pvc": "captioner-dataset",
            "mountPath": "/datasets/captioner",
            "readOnly": True,
        }
    ]
    doc = manifest(
        compute={"gpus": 1, "workers": 2},
        runtime={"env": env},
        storage={"data_pvc": "project-training", "mounts": mounts},
    )
    write(tmp_path, wrapper(workload_kind="rayjob"), doc)
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    for spec in pod_specs(workload(docs)):
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert volumes["dataset"]["persistentVolumeClaim"] == {"claimName": "captioner-dataset"}
        assert volumes["data"]["persistentVolumeClaim"] == {"claimName": "project-training"}
        mount = next(m for m in spec["containers"][0]["volumeMounts"] if m["name"] == "dataset")
        assert mount == {"name": "dataset", "mountPath": "/datasets/captioner", "readOnly": True}
        env_out = {e["name"]: e for e in spec["containers"][0]["env"]}
        assert env_out["WANDB_MODE"]["value"] == "offline"
        assert "secretKeyRef" in env_out["HF_TOKEN"]["valueFrom"]


# Extra scripts land beside train.py, and Ray workers get them too.
def test_extra_scripts_ship_beside_the_main_script(tmp_path: Path, capsys: Cap) -> None:
    (tmp_path / "my_loss.py").write_text("LOSS = 1\n")
    (tmp_path / "kernel.cu").write_text("// kernel\n")
    config = wrapper(workload_kind="rayjob", extra_scripts=["my_loss.py", "kernel.cu:k.cu"])
    write(tmp_path, config, manifest(compute={"gpus": 1, "workers": 2}))
    code, docs, out = render(capsys, tmp_path)
    assert code == 0, out
    for spec in pod_specs(workload(docs)):
        init = next(c for c in spec["initContainers"] if c["name"] == "tau-payload")
        assert sorted(decode_payload(init)) == ["k.cu", "my_loss.py", "train.py"]


# 49 and the wrapper: validate refuses a manifest, accepts a wrapper whose manifest exists.
def test_validate_refuses_a_manifest_and_accepts_a_wrapper(tmp_path: Path, capsys: Cap) -> None:
    doc = {**manifest("managed"), "run": {"entrypoint": "train.py"}}
    write(tmp_path, doc)
    assert main(["run", "validate", "--config", str(tmp_path / "tau.yaml")]) == 1
    assert "managed workflow manifests are outside tau run validate" in capsys.readouterr().err
    write(tmp_path, wrapper(workload_kind="job"), manifest())
    assert main(["run", "validate", "--config", str(tmp_path / "tau.yaml")]) == 0
    assert capsys.readouterr().out.endswith("tau.yaml is valid\n")


# The reference's incompatibilities, all at once, located in the wrapper.
def test_direct_dispatch_features_are_refused_with_the_references_words(
    tmp_path: Path, capsys: Cap
) -> None:
    config = wrapper(
        workload_kind="job",
        extra={
            "run": {"entrypoint": "train.py", "ttl_seconds_after_finished": 60},
            "policy": {"clear_node_selector": True, "namespace": "x", "queue": "q"},
        },
    )
    write(tmp_path, config, manifest())
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert (
        "run.ttl_seconds_after_finished requires direct Job dispatch and cannot be used with "
        "workflow.file" in out
    )
    assert "policy.clear_node_selector requires native job dispatch" in out


def test_a_positional_name_with_config_is_refused(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="job"), manifest())
    code, _, out = render(capsys, tmp_path, name="other")
    assert code == 1
    assert "managed workflow configs take the run name from the config file" in out


def test_a_missing_manifest_is_located_at_workflow_file(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="job"))
    code, _, out = render(capsys, tmp_path)
    assert code == 1 and "tau.yaml:" in out and "workflow.file" in out
    assert "Traceback" not in out


def test_a_rayjob_name_over_kuberays_limit_is_refused(tmp_path: Path, capsys: Cap) -> None:
    write(tmp_path, wrapper(workload_kind="rayjob"), manifest("n" * 44))
    code, _, out = render(capsys, tmp_path)
    assert code == 1 and "KubeRay limit is 47" in out


def test_the_removed_eval_task_fields_get_the_migration_story(tmp_path: Path, capsys: Cap) -> None:
    doc = {**manifest(eval={"harness": "lm-eval", "cpu_workers": 1}), "task": "eval"}
    write(tmp_path, wrapper(), doc)
    code, _, out = render(capsys, tmp_path)
    assert code == 1
    assert out.count("task: eval, eval.harness, and eval.model were removed") == 2
    assert "unknown config key" not in out
