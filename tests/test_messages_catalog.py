# ruff: noqa: E501
"""The reference's own words, pinned: where it reports a problem tau also reports, tau's error says
it the same way.

Users, their scripts and the seed's troubleshooting text recognise the reference's messages
(../shared/reference/messages-catalog.md, one case per message here). tau keeps its location
prefix (`tau.yaml:L:C: error: <path>: `) and may add a hint line; the reference's text, with its
values filled in, must appear in the first line of the error. Each case is the smallest config
that triggers the message, so it is also the only error of the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from tau.cli import main

PIN = "sha256:" + "b" * 64
IMAGE = f"ghcr.io/acme/src@{PIN}"
CPU: dict[str, Any] = {
    "compute": {"gpus": 0},
    "policy": {"profile": "cpu", "queue": "research-eval"},
}
PRESET: dict[str, Any] = {"policy": {"preset": "azure.research.training.l"}}


class Case(NamedTuple):
    """One catalog message: the config that triggers it, where it is raised, the text expected."""

    id: str
    config: dict[str, Any]
    expected: str
    #: `validate` (tau run validate) or `dry` (tau run --dry-run=client).
    stage: str = "validate"
    #: The entrypoint's content.
    script: str = "print('training')\n"
    #: False where the combination is inherently wrong twice (each field belongs to the other
    #: engine): the message must then be one of the errors, in its own first line.
    only: bool = True
    #: A managed workflow manifest written beside the config as manifest.yaml.
    manifest: dict[str, Any] | None = None
    #: The command line instead of the stage's (`{config}` is ./tau.yaml).
    args: tuple[str, ...] = ()
    #: Other files beside the config (a topology policy file).
    files: tuple[tuple[str, str], ...] = ()


def merge(*parts: dict[str, Any]) -> dict[str, Any]:
    """Deep-merge config fragments, later ones winning."""
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if isinstance(value, dict) and isinstance(out.get(key), dict):
                out[key] = merge(out[key], value)
            else:
                out[key] = value
    return out


def job(*parts: dict[str, Any]) -> dict[str, Any]:
    return merge({"name": "demo", "engine": "job", "entrypoint": "train.py"}, CPU, *parts)


def ray(*parts: dict[str, Any]) -> dict[str, Any]:
    return merge({"name": "demo", "engine": "rayjob", "entrypoint": "train.py"}, PRESET, *parts)


def managed_job(*parts: dict[str, Any]) -> dict[str, Any]:
    """A direct config wrapping a managed workflow manifest (workflow.file)."""
    return merge(
        {"name": "demo", "entrypoint": "train.py", "workflow": {"file": "train.py"}}, *parts
    )


def offload(**experiment: str) -> dict[str, Any]:
    return {
        "metrics": {"offload": {"enabled": True}, "history": ["metrics.jsonl"]},
        "experiment": experiment,
    }


def asset(**fields: str) -> dict[str, Any]:
    return {
        "name": "vocab",
        "image": IMAGE,
        "source_path": "/vocab",
        "mount_path": "/opt/vocab",
    } | fields


SOURCE = {"run": {"source": {"image": IMAGE, "path": "/src"}}}


def policy_file(**preset: object) -> tuple[tuple[str, str], ...]:
    """policy.yaml holding one preset `lab.p` with the given fields (None drops a field)."""
    fields = {
        "team": "lab",
        "lane": "training",
        "shape": "1xgpu",
        "gpuClass": "a100-80gb",
        "queue": "q",
        "clusterQueue": "cq",
    } | preset
    fields = {k: v for k, v in fields.items() if v is not None}
    doc = {
        "apiVersion": "tau.azure.com/v1alpha1",
        "kind": "TopologyPolicy",
        "metadata": {"name": "p"},
        "spec": {"presets": {"lab.p": fields}},
    }
    return (("policy.yaml", yaml.safe_dump(doc)),)


LAB = {"policy": {"topology_policy": "policy.yaml", "preset": "lab.p"}}


def manifest(**fields: Any) -> dict[str, Any]:
    return merge(
        {
            "schema_version": 1,
            "name": "sft",
            "compute": {"gpus": 1},
            "runtime": {"pip": ["torch==2.4.0"]},
        },
        fields,
    )


def wrapper(*parts: dict[str, Any]) -> dict[str, Any]:
    """A direct config dispatching manifest.yaml (the managed path)."""
    return merge(
        {
            "run": {"entrypoint": "train.py"},
            "policy": {"namespace": "team", "queue": "jobqueue"},
            "workflow": {"file": "manifest.yaml"},
        },
        *parts,
    )


CASES = [
    # Run-config parsing.
    Case(
        "eval-removed",
        job({"task": "eval"}),
        "task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run.",
    ),
    Case(
        "invalid-duration",
        job({"resilience": {"backoff_initial": "5"}}),
        'invalid duration "5": ',
    ),
    # Direct-config field validation.
    Case("gpus-negative", job({"compute": {"gpus": -1}}), "compute.gpus must be >= 0"),
    Case(
        "working-dir-unclean",
        job({"runtime": {"working_dir": "work"}}),
        'runtime.working_dir "work" must be a clean absolute container path',
    ),
    Case(
        "security-mode",
        job({"runtime": {"security": {"mode": "baseline"}}}),
        'runtime.security.mode must be "restricted" or omitted',
    ),
    Case(
        "publish",
        job({"storage": {"publish": "direct"}}),
        "storage.publish must be one of: staged",
    ),
    # run.source.
    Case(
        "source-path-hidden",
        job({"run": {"source": {"image": IMAGE, "path": "/tau-source/x"}}}),
        'run.source.path "/tau-source/x" is hidden by Tau\'s staging volume',
    ),
    Case(
        "source-requires-entrypoint",
        merge({"name": "demo", "engine": "job"}, CPU, SOURCE),
        "run.source requires entrypoint",
    ),
    Case(
        "source-entrypoint-unclean",
        job(SOURCE, {"entrypoint": "../train.py"}),
        'entrypoint "../train.py" must be a clean relative path inside run.source',
    ),
    Case(
        "source-image-unpinned",
        job({"run": {"source": {"image": "ghcr.io/acme/src:v1", "path": "/src"}}}),
        "run.source.image must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest",
    ),
    Case(
        "source-path-unclean",
        job({"run": {"source": {"image": IMAGE, "path": "src"}}}),
        "run.source.path must be a clean absolute path below /",
    ),
    Case(
        "source-with-workflow",
        managed_job(SOURCE),
        "run.source requires direct Job dispatch and cannot be used with workflow.file",
    ),
    Case("source-on-ray", ray(SOURCE), "run.source requires engine: job"),
    Case(
        "source-with-project",
        job(SOURCE, {"run": {"working_dir": "."}}),
        "run.source and run.working_dir cannot be used together",
        only=False,
    ),
    # storage.image_assets.
    Case(
        "assets-too-many",
        job(
            {
                "storage": {
                    "image_assets": [asset(name=f"a{i}", mount_path=f"/opt/a{i}") for i in range(9)]
                }
            }
        ),
        "storage.image_assets supports at most 8 entries",
    ),
    Case(
        "asset-name",
        job({"storage": {"image_assets": [asset(name="Vocab")]}}),
        "storage.image_assets[0].name must be a lowercase DNS label no longer than 50 characters",
    ),
    Case(
        "asset-name-twice",
        job({"storage": {"image_assets": [asset(), asset(mount_path="/opt/other")]}}),
        'storage.image_assets name "vocab" is declared more than once',
    ),
    Case(
        "asset-image-unpinned",
        job({"storage": {"image_assets": [asset(image="ghcr.io/acme/vocab:v1")]}}),
        "storage.image_assets[0].image must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest",
    ),
    Case(
        "asset-source-hidden",
        job({"storage": {"image_assets": [asset(source_path="/tau-asset/v")]}}),
        'storage.image_assets[0].source_path "/tau-asset/v" is hidden by Tau\'s staging volume',
    ),
    Case(
        "asset-source-unclean",
        job({"storage": {"image_assets": [asset(source_path="vocab")]}}),
        "storage.image_assets[0].source_path must be a clean absolute path below /",
    ),
    Case(
        "asset-mount-unclean",
        job({"storage": {"image_assets": [asset(mount_path="/")]}}),
        "storage.image_assets[0].mount_path must be a clean absolute path below /",
    ),
    Case(
        "asset-mount-reserved",
        job({"storage": {"image_assets": [asset(mount_path="/data/vocab")]}}),
        'storage.image_assets[0].mount_path "/data/vocab" overlaps Tau-reserved path /data',
    ),
    Case(
        "asset-mount-twice",
        job({"storage": {"image_assets": [asset(), asset(name="other")]}}),
        'storage.image_assets mount_path "/opt/vocab" is declared more than once',
    ),
    Case(
        "asset-mounts-overlap",
        job(
            {"storage": {"image_assets": [asset(), asset(name="other", mount_path="/opt/vocab/x")]}}
        ),
        'storage.image_assets mount paths "/opt/vocab" and "/opt/vocab/x" overlap',
    ),
    Case(
        "assets-with-workflow",
        managed_job({"storage": {"image_assets": [asset()]}}),
        "storage.image_assets requires direct Job dispatch and cannot be used with workflow.file",
    ),
    Case(
        "assets-on-ray",
        ray({"storage": {"image_assets": [asset()]}}),
        "storage.image_assets requires engine: job",
    ),
    # storage.checkpoint.
    Case(
        "checkpoint-whitespace",
        job({"storage": {"checkpoint": " model "}}),
        'storage.checkpoint: must not have surrounding whitespace (got " model ")',
    ),
    Case(
        "checkpoint-escapes",
        job({"storage": {"checkpoint": "../model"}}),
        "storage.checkpoint: must be a relative path inside the run's checkpoint dir, without '.' or '..' segments (got \"../model\")",
    ),
    # metrics / experiment identity.
    Case(
        "history-empty",
        job({"metrics": {"history": [" "]}}),
        "metrics.history[0] must not be empty",
    ),
    Case(
        "history-absolute",
        job({"metrics": {"history": ["/tmp/m.jsonl"]}}),
        'metrics.history[0] "/tmp/m.jsonl": absolute paths must be under /data',
    ),
    Case(
        "history-escapes",
        job({"metrics": {"history": ["../m.jsonl"]}}),
        'metrics.history[0] "../m.jsonl": relative paths must not escape storage.output',
    ),
    Case(
        "offload-without-history",
        job(offload(project="vision", name="sft"), {"metrics": {"history": []}}),
        "metrics.history requires at least one JSONL path when metrics.offload.enabled is true",
    ),
    Case(
        "offload-without-project",
        job(offload(name="sft")),
        "experiment.project is required when metrics.offload.enabled is true",
    ),
    Case(
        "offload-without-name",
        job(offload(project="vision")),
        "experiment.name is required when metrics.offload.enabled is true",
    ),
    Case(
        "project-invalid",
        job(offload(project="My Proj", name="sft")),
        "experiment.project: project \"My Proj\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    ),
    Case(
        "experiment-edge",
        job(offload(project="vision", name="-sft")),
        'experiment.name: experiment "-sft" is invalid (must start and end with an alphanumeric)',
    ),
    Case(
        "group-invalid",
        job(offload(project="vision", group="a/b")),
        "experiment.group: group \"a/b\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')",
    ),
    # metrics offload at dispatch (run.go, run_job.go); the platform-side ones (workspace, image,
    # session id, interval) need a submit's workspace or env: tests/test_metrics_offload.py.
    Case(
        "offload-multi-node",
        job(
            offload(project="vision", name="sft"),
            {"execution": {"launcher": "torchrun", "nodes": 2}, "storage": {"data_pvc": "d"}},
        ),
        "metrics.offload.enabled requires a single Job pod; execution.nodes must be unset or 1",
        stage="dry",
    ),
    Case(
        "offload-without-entrypoint",
        job(
            offload(project="vision", name="sft"),
            {"entrypoint": None, "storage": {"data_pvc": "d"}},
        ),
        "metrics.offload.enabled requires run.entrypoint so Tau can record the workload exit status",
        stage="dry",
    ),
    Case(
        "offload-output-outside-data",
        job(
            offload(project="vision", name="sft"),
            {
                "storage": {
                    "volumes": ["s=pvc:scratch"],
                    "mounts": ["s:/scratch"],
                    "output": "/scratch/out",
                }
            },
        ),
        "metrics.offload.enabled requires storage.output on a writable PVC mounted under /data",
        stage="dry",
    ),
    Case(
        "offload-output-read-only",
        job(
            offload(project="vision", name="sft"),
            {
                "storage": {
                    "volumes": ["s=pvc:scratch"],
                    "mounts": ["s:/data:ro"],
                    "output": "/data/o",
                }
            },
        ),
        "metrics.offload.enabled requires storage.output backed by a writable PVC",
        stage="dry",
    ),
    # runtime.env / env_secret / env_kv.
    Case(
        "env-reserved",
        job({"runtime": {"env": {"MASTER_ADDR": "x"}}}),
        "runtime.env contains Tau-managed keys that cannot be overridden: MASTER_ADDR; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)",
    ),
    Case(
        "env-value-too-large",
        job({"runtime": {"env": {"BLOB": "x" * 65537}}}),
        'literal environment variable "BLOB" is 65537 bytes; maximum is 65536 bytes: publish source or artifacts once and reference a digest-pinned OCI image with run.source instead of embedding content in environment variables',
    ),
    Case(
        "env-total-too-large",
        job({"runtime": {"env": {f"V{i}": "x" * 60000 for i in range(3)}}}),
        "literal environment payload is 180012 bytes; maximum is 131072 bytes: publish source or artifacts once and reference a digest-pinned OCI image with run.source instead of embedding content in environment variables",
    ),
    Case(
        "env-secret-conflict",
        job({"runtime": {"env": {"TOKEN": "x"}, "env_secret": {"TOKEN": "s:k"}}}),
        "runtime.env_secret.TOKEN conflicts with runtime.env.TOKEN; set each env var in only one place",
    ),
    Case(
        "env-kv-conflict-env",
        managed_job({"runtime": {"env": {"TOKEN": "x"}, "env_kv": {"TOKEN": "vault/token"}}}),
        "runtime.env_kv.TOKEN conflicts with runtime.env.TOKEN; set each env var in only one place",
    ),
    Case(
        "env-kv-conflict-secret",
        managed_job(
            {"runtime": {"env_secret": {"TOKEN": "s:k"}, "env_kv": {"TOKEN": "vault/token"}}}
        ),
        "runtime.env_kv.TOKEN conflicts with runtime.env_secret.TOKEN; set each env var in only one place",
    ),
    # engine / launcher / execution.
    Case(
        "engine-invalid",
        job({"engine": "deployment"}),
        'engine "deployment" is not valid; use job or rayjob',
    ),
    Case(
        "ttl-not-positive",
        job({"run": {"ttl_seconds_after_finished": 0}}),
        "run.ttl_seconds_after_finished must be > 0",
    ),
    Case(
        "ttl-above-int32",
        job({"run": {"ttl_seconds_after_finished": 2147483648}}),
        "run.ttl_seconds_after_finished must be <= 2147483647 (Kubernetes int32 maximum)",
    ),
    Case(
        "ttl-with-workflow",
        managed_job({"run": {"ttl_seconds_after_finished": 60}}),
        "run.ttl_seconds_after_finished requires direct Job dispatch and cannot be used with workflow.file",
    ),
    Case(
        "ttl-on-ray",
        ray({"run": {"ttl_seconds_after_finished": 60}}),
        "run.ttl_seconds_after_finished requires engine: job",
    ),
    Case(
        "working-dir-on-ray",
        ray({"runtime": {"working_dir": "/work"}}),
        "runtime.working_dir requires engine: job",
    ),
    Case(
        "working-dir-with-source",
        job(SOURCE, {"runtime": {"working_dir": "/work"}}),
        "runtime.working_dir and run.source cannot be used together; run.source fixes the container working directory at /tau/source",
    ),
    Case(
        "working-dir-with-project",
        ray({"runtime": {"working_dir": "/work"}, "run": {"working_dir": "."}}),
        "runtime.working_dir and run.working_dir cannot be used together; runtime.working_dir sets a Job container path while run.working_dir ships a local project through Ray",
        only=False,
    ),
    Case(
        "nodes-below-one", job({"execution": {"nodes": 0}}), "execution.nodes must be >= 1 (got 0)"
    ),
    Case(
        "ray-launcher-on-job",
        job({"execution": {"launcher": "ray-train"}}),
        'execution.launcher "ray-train" requires engine: rayjob (needs a Ray cluster); got engine: job',
    ),
    Case(
        "launcher-unknown-job",
        job({"execution": {"launcher": "deepspeed"}}),
        'execution.launcher "deepspeed" is not valid for engine: job; use python or torchrun',
    ),
    Case(
        "torchrun-on-ray",
        ray({"execution": {"launcher": "torchrun"}}),
        "execution.launcher torchrun is for engine: job; Ray Train manages distributed init via TorchConfig",
    ),
    Case(
        "python-on-ray",
        ray({"execution": {"launcher": "python"}}),
        "execution.launcher python is for engine: job; use ray-train for engine: rayjob",
    ),
    Case(
        "launcher-unknown-ray",
        ray({"execution": {"launcher": "deepspeed"}}),
        'execution.launcher "deepspeed" is not valid for engine: rayjob; use ray-train or ray-tune',
    ),
    Case(
        "nodes-on-ray",
        ray({"execution": {"nodes": 2}}),
        "execution.nodes is for engine: job; use compute.workers for RayJob pod count",
    ),
    Case(
        "ray-launcher-implicit",
        merge(
            {"name": "demo", "entrypoint": "train.py"},
            CPU,
            {"execution": {"launcher": "ray-train"}},
        ),
        'execution.launcher "ray-train" requires engine: rayjob; set engine: rayjob explicitly',
    ),
    Case(
        "launcher-unknown",
        merge({"name": "demo", "entrypoint": "train.py"}, CPU, {"execution": {"launcher": "mpi"}}),
        'execution.launcher "mpi" is not valid; use python, torchrun (engine: job) or ray-train, ray-tune (engine: rayjob)',
    ),
    Case(
        "clear-selector-with-workflow",
        managed_job({"policy": {"clear_node_selector": True}}),
        "policy.clear_node_selector requires native job dispatch; managed workflow dispatch cannot clear profile/topology node selectors",
    ),
    Case(
        "clear-selector-on-ray",
        ray({"policy": {"clear_node_selector": True}}),
        "policy.clear_node_selector requires engine: job; RayJobs cannot clear profile/topology node selectors",
    ),
    Case(
        "processes-without-torchrun",
        job({"execution": {"processes_per_node": 2}}),
        "execution.processes_per_node > 1 requires execution.launcher: torchrun",
    ),
    # Ray Tune.
    Case(
        "tune-field-without-tune",
        ray({"execution": {"metric": "loss"}}),
        "execution.metric/mode/num_samples/max_concurrent_trials require execution.launcher: ray-tune",
    ),
    Case(
        "tune-without-metric",
        ray({"execution": {"launcher": "ray-tune", "configs": {"lr": [0.1]}}}),
        "execution.metric is required for launcher: ray-tune",
    ),
    Case(
        "tune-without-configs",
        ray({"execution": {"launcher": "ray-tune", "metric": "loss"}}),
        "execution.configs is required for launcher: ray-tune (defines the search space)",
    ),
    Case(
        "tune-mode",
        ray(
            {
                "execution": {
                    "launcher": "ray-tune",
                    "metric": "loss",
                    "mode": "best",
                    "configs": {"lr": [0.1]},
                }
            }
        ),
        'execution.mode must be min or max, got "best"',
    ),
    # execution.configs.
    Case(
        "configs-key-invalid",
        job({"execution": {"configs": {"-lr": 1}}}),
        'key "-lr" is invalid; must match [A-Za-z0-9][A-Za-z0-9_.-]*',
    ),
    Case(
        "configs-null",
        job({"execution": {"configs": {"debug": None}}}),
        'key "debug" has null value; use empty string for a bare flag',
    ),
    Case(
        "configs-non-scalar",
        job({"execution": {"configs": {"lr": [1, 2]}}}),
        'key "lr" has non-scalar value (type list); only string, int, float, and bool are allowed',
    ),
    Case(
        "configs-torchrun-owned",
        job(PRESET, {"execution": {"launcher": "torchrun", "configs": {"nnodes": 2}}}),
        'execution.configs: "nnodes" is a Tau-managed torchrun flag and cannot be overridden',
    ),
    Case(
        "configs-same-flag",
        job(
            PRESET,
            {"execution": {"launcher": "torchrun", "configs": {"max_steps": 1, "max-steps": 2}}},
        ),
        'execution.configs: "max-steps" and "max_steps" are the same flag (canonical: --max-steps)',
    ),
    Case(
        "configs-ray-section",
        ray({"execution": {"configs": {"trainer": {}}}}),
        'execution.configs: "trainer" is not a valid Ray Train config section; use torch_config, scaling_config, or failure_config',
    ),
    Case(
        "configs-ray-section-scalar",
        ray({"execution": {"configs": {"torch_config": 1}}}),
        "execution.configs.torch_config must be a map, not a scalar or list",
    ),
    Case(
        "configs-scaling-owned",
        ray({"execution": {"configs": {"scaling_config": {"num_workers": 4}}}}),
        "execution.configs.scaling_config.num_workers is Tau-managed (derived from compute.workers × gpus_per_worker); remove it",
    ),
    # tau run: dispatch selection.
    Case(
        "publish-with-workflow",
        managed_job({"storage": {"publish": "staged"}}),
        "storage.publish is not supported for managed workflow configs",
    ),
    Case(
        "env-kv-direct",
        job({"runtime": {"env_kv": {"TOKEN": "vault/token"}}}),
        "runtime.env_kv is only supported for workflow.file managed configs; direct job/ray configs must remove runtime.env_kv or use workflow.file",
    ),
    Case(
        "gpus-on-ray",
        ray({"compute": {"gpus": 1}}),
        "compute.gpus is only supported for engine: job; use compute.gpus_per_worker for Ray",
    ),
    Case(
        "engine-kind-conflict",
        job({"run": {"workload_kind": "rayjob"}}),
        "engine=job conflicts with workload_kind=rayjob",
    ),
    Case(
        "multi-node-without-torchrun",
        job({"execution": {"nodes": 2}}),
        "engine=job with execution.nodes=2 requires execution.launcher=torchrun",
    ),
    Case(
        "gpu-mode-on-job",
        job({"compute": {"gpu_resource_mode": "dra"}}),
        'engine=job cannot use compute.gpu_resource_mode="dra"; direct Jobs support device-plugin GPUs',
    ),
    Case(
        "ambiguous-resources",
        merge(
            {"name": "demo", "engine": "job", "entrypoint": "train.py"},
            {"policy": {"profile": "cpu"}},
        ),
        "engine=job has ambiguous resources: set compute.gpus explicitly (0 for CPU, positive for GPU) or use a preset with a GPU shape; policy.profile does not define Job resources",
        stage="dry",
    ),
    Case(
        "shape-without-count",
        merge(
            {"name": "demo", "engine": "job", "entrypoint": "train.py"},
            {"policy": {"profile": "cpu", "queue": "q", "shape": "axa100"}},
        ),
        'policy.shape "axa100" does not prove a direct Job GPU count; set compute.gpus explicitly',
        stage="dry",
    ),
    # tau run: Ray dispatch.
    Case("ray-without-name", merge(ray(), {"name": None}), "ray runs require NAME"),
    Case("job-without-name", merge(job(), {"name": None}), "job runs require NAME"),
    Case(
        "ray-without-entrypoint",
        merge(ray(), {"entrypoint": None}),
        "engine=ray requires run.entrypoint",
    ),
    Case(
        "ray-result-pvc",
        ray({"storage": {"data_pvc": "a", "result_pvc": "b"}}),
        "storage.result_pvc cannot differ from storage.data_pvc for Ray run configs",
    ),
    Case(
        "ray-volumes",
        ray({"storage": {"volumes": ["data=pvc:training-data"]}}),
        "ray run configs support storage.data_pvc/output, but not storage.volumes/mounts",
    ),
    # tau run: Job dispatch.
    Case(
        "project-on-job",
        job({"run": {"working_dir": "."}}),
        "run.working_dir is not supported with engine: job.",
    ),
    Case(
        "warmup-without-nsys",
        job({"profiler": {"mode": "ncu", "warmup": "10s"}, "storage": {"data_pvc": "d"}}),
        "profiler.warmup currently applies only to profiler.mode=nsys",
    ),
    Case(
        "duration-without-nsys",
        job({"profiler": {"duration": "10s"}}),
        "profiler.duration currently applies only to profiler.mode=nsys",
    ),
    Case(
        "profiler-mode",
        job({"profiler": {"mode": "perf"}, "storage": {"data_pvc": "d"}}),
        'profiler "perf": must be nsys|ncu',
    ),
    Case(
        "profiler-without-pvc",
        job({"profiler": {"mode": "nsys"}}),
        "profiler requires durable PVC output; configure storage.data_pvc, storage.volumes/mounts",
    ),
    Case(
        "gpus-conflict-shape",
        job({"compute": {"gpus": 2}, "policy": {"shape": "4xa100-80gb"}}),
        'compute.gpus=2 conflicts with policy shape "4xa100-80gb" (4 GPUs)',
        stage="dry",
    ),
    Case(
        "job-result-pvc",
        job({"storage": {"data_pvc": "a", "result_pvc": "b"}}),
        "storage.result_pvc cannot differ from storage.data_pvc for job run configs",
    ),
    Case(
        "job-data-pvc-and-volumes",
        job({"storage": {"data_pvc": "a", "volumes": ["data=pvc:training-data"]}}),
        "storage.data_pvc cannot be combined with storage.volumes for job run configs",
    ),
    Case(
        "output-relative",
        job({"storage": {"output": "out"}}),
        'storage.output "out": must be an absolute path',
    ),
    Case(
        "output-without-pvc",
        job({"storage": {"output": "/data/out"}}),
        'storage.output "/data/out": no PVC supplied by storage.data_pvc or storage.volumes/mounts; output cannot be retrieved by `tau run get`',
        stage="dry",
    ),
    Case(
        "output-not-under-pvc",
        job({"storage": {"data_pvc": "d", "output": "/results/out"}}),
        'storage.output "/results/out": not under any mounted PVC path [/data]',
        stage="dry",
    ),
    # Job rendering: interpreter, launcher, torchrun.
    Case(
        "empty-shebang",
        job(),
        'script "train.py" has an empty shebang; add an interpreter after #!',
        stage="dry",
        script="#!\nprint('x')\n",
    ),
    Case(
        "shell-shebang-python-launcher",
        job({"execution": {"launcher": "python"}}),
        'script "train.py" has a non-Python shebang but execution.launcher is python',
        stage="dry",
        script="#!/bin/bash\necho x\n",
    ),
    Case(
        "no-shebang-not-py",
        job({"entrypoint": "train.sh"}),
        'script "train.sh" has no shebang and is not a .py file; add a shebang or set execution.launcher: python',
        stage="dry",
    ),
    Case(
        "torchrun-not-py",
        job(PRESET, {"entrypoint": "train.sh", "execution": {"launcher": "torchrun"}}),
        'run.entrypoint "train.sh" must be a .py file with execution.launcher: torchrun, which runs it under python3; point it at a Python entrypoint or drop the launcher',
    ),
    Case(
        "torchrun-unknown-gpus",
        job({"execution": {"launcher": "torchrun", "processes_per_node": 2}}),
        "processes_per_node (2) with torchrun requires a known GPU count, but the profile does not declare one",
        stage="dry",
    ),
    Case(
        "torchrun-too-many-processes",
        job(
            {"compute": {"gpus": 2}, "execution": {"launcher": "torchrun", "processes_per_node": 4}}
        ),
        "processes_per_node (4) exceeds profile GPU count (2)",
        stage="dry",
    ),
    Case(
        "multi-node-name",
        job(
            PRESET,
            {
                "name": "n" * 55,
                "compute": {"gpus": 1},
                "execution": {"launcher": "torchrun", "nodes": 2},
            },
        ),
        f'job name "{"n" * 55}" is too long for multi-node: "{"n" * 55}-headless" must fit DNS label limit (63 chars); max name length is 54',
        stage="dry",
    ),
    Case(
        "mount-unknown-volume",
        job({"storage": {"volumes": ["data=pvc:d"], "mounts": ["cache:/cache"]}}),
        'mount "cache" references unknown volume "cache"',
        stage="dry",
    ),
    Case(
        "mount-path-twice",
        job({"storage": {"volumes": ["data=pvc:d"], "mounts": ["data:/data", "data:/data"]}}),
        'mountPath "/data" declared more than once',
        stage="dry",
    ),
    Case(
        "rayjob-name",
        ray({"name": "r" * 48}),
        f'RayJob name "{"r" * 48}" is too long (48 chars; KubeRay limit is 47)',
        stage="dry",
    ),
    # Policy: gpu class, node selector, lane, mode, topology.
    Case(
        "gpu-class-selector",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {
                    "gpu_class": "a100-80gb",
                    "node_selector": {"tau.azure.com/gpu-class": "h100-95gb"},
                },
            }
        ),
        'gpu_class "a100-80gb" requires tau.azure.com/gpu-class="a100-80gb", but the workload node selector uses "h100-95gb"',
        stage="dry",
    ),
    Case(
        "lane-invalid",
        job({"policy": {"lane": "fast"}}),
        'lane="fast" is invalid (allowed: eval|training|large-memory|elastic)',
    ),
    Case(
        "elastic-lane",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {"mode": "elastic", "lane": "training", "preemptable": True},
                "resilience": {"checkpoint_path": "/data/ckpt"},
            }
        ),
        'mode=elastic must route through lane=elastic, got lane="training"',
        stage="dry",
    ),
    Case(
        "elastic-not-preemptable",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {"mode": "elastic", "lane": "elastic"},
                "resilience": {"checkpoint_path": "/data/ckpt"},
            }
        ),
        "mode=elastic requires policy.preemptable=true",
        stage="dry",
    ),
    Case(
        "elastic-scarce",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {
                    "mode": "elastic",
                    "lane": "elastic",
                    "preemptable": True,
                    "gpu_class": "h200-141gb",
                },
                "resilience": {"checkpoint_path": "/data/ckpt"},
            }
        ),
        "elastic jobs cannot request scarce h200-141gb",
        stage="dry",
    ),
    Case(
        "elastic-placement",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {
                    "mode": "elastic",
                    "lane": "elastic",
                    "preemptable": True,
                    "topology": "multi-node-nccl",
                },
                "resilience": {"checkpoint_path": "/data/ckpt"},
            }
        ),
        'mode=elastic must use independent or elastic-workers placement, got "multi-node-nccl"',
        stage="dry",
    ),
    Case(
        "elastic-priority",
        job(
            {
                "compute": {"gpus": 1},
                "policy": {
                    "mode": "elastic",
                    "lane": "elastic",
                    "preemptable": True,
                    "priority_tier": "priority",
                },
                "resilience": {"checkpoint_path": "/data/ckpt"},
            }
        ),
        "priority=priority is not supported for lane=elastic; use explicit priority class names if needed",
        stage="dry",
    ),
    Case(
        "checkpoint-without-pvc",
        job({"storage": {"checkpoint": "final/model"}}),
        "storage.checkpoint requires writable durable PVC storage to write the artifact index",
        stage="dry",
    ),
    Case(
        "policy-gpu-class",
        job(LAB),
        'gpuClass="t4-16gb" is invalid (allowed: any|a100-80gb|h100-95gb|h200-141gb)',
        stage="dry",
        files=policy_file(gpuClass="t4-16gb"),
    ),
    Case(
        "preset-disabled",
        job(LAB),
        'topology preset "lab.p" is disabled: drained for maintenance',
        stage="dry",
        files=policy_file(disabled=True, disabledReason="drained for maintenance"),
    ),
    Case(
        "preset-without-gpu-count",
        merge({"name": "demo", "engine": "job", "entrypoint": "train.py"}, LAB),
        'preset "lab.p" does not define a direct Job GPU count; set compute.gpus explicitly (0 for CPU, positive for GPU)',
        stage="dry",
        files=policy_file(shape=None),
    ),
    Case(
        "preset-unknown",
        job({"policy": {"preset": "azure.nope"}}),
        'topology preset "azure.nope" not found in ',
        stage="dry",
    ),
    # tau run: config and target discovery.
    Case(
        "target-is-path",
        {},
        'run target "tau/train.yaml" must be a name, not a path; use --config for explicit paths',
        args=("run", "tau/train.yaml", "--dry-run=client"),
    ),
    Case(
        "target-missing",
        {},
        'run target "train" not found; expected tau/train.yaml or pass --config',
        args=("run", "train", "--dry-run=client"),
    ),
    Case(
        "no-config",
        {},
        "no Tau run config found; create tau.yaml or pass --config",
        args=("run", "--dry-run=client"),
    ),
    # tau run: managed workflow dispatch.
    Case(
        "managed-positional-name",
        wrapper(),
        "managed workflow configs take the run name from the config file; remove positional NAME",
        manifest=manifest(),
        args=("run", "other", "--config", "{config}", "--dry-run=client"),
    ),
    Case(
        "managed-without-entrypoint",
        {
            "policy": {"namespace": "team", "queue": "jobqueue"},
            "workflow": {"file": "manifest.yaml"},
        },
        "workflow config requires run.entrypoint",
        stage="dry",
        manifest=manifest(),
    ),
    Case(
        "managed-kind-invalid",
        wrapper({"run": {"workload_kind": "deployment"}}),
        "workload_kind must be one of: job, rayjob, rayjob-eval",
        manifest=manifest(),
    ),
    Case(
        "managed-job-cpu-only",
        wrapper({"run": {"workload_kind": "job"}}),
        "workload_kind=job cannot host a CPU-only manifest (compute.gpus=0); omit workload_kind or set workload_kind: rayjob",
        stage="dry",
        manifest=manifest(compute={"gpus": 0}),
    ),
    Case(
        "managed-job-multi-node",
        wrapper({"run": {"workload_kind": "job"}}),
        "workload_kind=job cannot be multi-node (compute.workers=2); omit workload_kind or set workload_kind: rayjob",
        stage="dry",
        manifest=manifest(compute={"gpus": 8, "workers": 2}),
    ),
    Case(
        "managed-eval-without-cpu-workers",
        wrapper({"run": {"workload_kind": "rayjob-eval"}}),
        "workload_kind=rayjob-eval requires eval.cpu_workers > 0 (set it in the manifest or the run config)",
        stage="dry",
        manifest=manifest(),
    ),
    Case(
        "managed-profiler-ncu",
        wrapper({"profiler": {"mode": "ncu"}, "storage": {"data_pvc": "d"}}),
        'profile.mode "ncu": managed workflow RayJob profiling supports nsys only',
        stage="dry",
        manifest=manifest(),
    ),
    Case(
        "managed-profiler-on-job",
        wrapper(
            {
                "profiler": {"mode": "nsys"},
                "storage": {"data_pvc": "d"},
                "run": {"workload_kind": "job"},
            }
        ),
        'profile.mode nsys currently requires rayjob training (got "job")',
        stage="dry",
        manifest=manifest(),
    ),
    Case(
        "scarce-outside-large-memory",
        job({"compute": {"gpus": 1}, "policy": {"gpu_class": "h200-141gb", "lane": "training"}}),
        'h200-141gb is reserved for lane=large-memory, got lane="training"',
        stage="dry",
    ),
]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    return tmp_path


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line or line.startswith("error: ")]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_first_line_of_the_error_carries_the_reference_text(
    workdir: Path, capsys: pytest.CaptureFixture[str], case: Case
) -> None:
    config = {k: v for k, v in case.config.items() if v is not None}
    if config:
        Path("tau.yaml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    for name, text in case.files:
        Path(name).write_text(text)
    if case.manifest is not None:
        Path("manifest.yaml").write_text(yaml.safe_dump(case.manifest, sort_keys=False))
    entry = config.get("entrypoint")
    for name in {"train.py", entry if isinstance(entry, str) else "train.py"}:
        Path(name).write_text(case.script)
    args = ["run", "--config", "tau.yaml", "--dry-run=client"]
    if case.stage == "validate":
        args = ["run", "validate", "--config", "tau.yaml"]
    if case.args:
        args = [a.replace("{config}", "tau.yaml") for a in case.args]
    code = main(args)
    err = capsys.readouterr().err
    assert code == 1, err
    lines = error_lines(err)
    if case.only:
        assert len(lines) == 1, err
    assert any(case.expected in line for line in lines), err


def test_every_case_names_a_distinct_message() -> None:
    texts = [c.expected for c in CASES]
    assert len(set(texts)) == len(texts)
