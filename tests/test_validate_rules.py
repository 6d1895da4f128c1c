# ruff: noqa: E501
"""Every offline validation rule: one valid and one invalid config each, exact messages at file:line:col.

Each invalid case lists the head line of every diagnostic the config produces, in the order
`tau run validate` prints them (sorted by location), so a new or changed rule shows up here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tau.errors import ConfigError
from tau.intent.duration import DurationError, format_duration, parse_duration
from tau.intent.load import load
from tau.intent.validate import validate
from tau.k8s.quantity import parse_quantity

SHA = "sha256:" + "0" * 64
PIN = f"ghcr.io/acme/src@{SHA}"


def job(extra: str = "") -> str:
    """A Job config whose extra lines start at line 4."""
    return "name: demo\nengine: job\nentrypoint: main.py\n" + extra


def ray(extra: str = "") -> str:
    """A RayJob config whose extra lines start at line 4."""
    return "name: demo\nengine: rayjob\nentrypoint: main.py\n" + extra


def implicit(extra: str = "") -> str:
    """A config with no engine (Tau infers it) whose extra lines start at line 3."""
    return "name: demo\nentrypoint: main.py\n" + extra


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory (the working directory) with an entrypoint that imports nothing local."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text("import os\nimport json\n")
    return tmp_path


def check(text: str, *, name: str | None = None):
    """Validate `text` as ./tau.yaml: (diagnostics, ValidConfig or None).

    Diagnostics are the formatted lines `ConfigError.format()` prints, errors or (for a
    valid config) warnings.
    """
    Path("tau.yaml").write_text(text)
    try:
        valid = validate(load(Path("tau.yaml")), name=name)
    except ConfigError as exc:
        return exc.format(), None
    return "\n".join(w.format() for w in valid.warnings), valid


def heads(formatted: str) -> list[str]:
    """The first line of each diagnostic (hints dropped)."""
    return [line for line in formatted.splitlines() if line and not line.startswith("  hint:")]


def hints(formatted: str) -> list[str]:
    return [
        line.removeprefix("  hint: ")
        for line in formatted.splitlines()
        if line.startswith("  hint:")
    ]


INVALID = [
    pytest.param(
        "name: 12\nengine: job\nentrypoint: main.py\n",
        ["tau.yaml:1:7: error: name must be a string (got integer 12)"],
        id="type-name-without-a-second-missing-name-error",
    ),
    pytest.param(
        job("policy:\n  lane: Training\n"),
        [
            'tau.yaml:5:9: error: policy.lane: lane="Training" is invalid (allowed: eval|training|large-memory|elastic)'
        ],
        id="enums-other-than-engine-and-launcher-are-case-sensitive",
    ),
    pytest.param(
        job("compute:\n  gpu: 2\n"),
        ["tau.yaml:5:3: error: compute.gpu: field gpu not found in type runconfig.Compute"],
        id="unknown-key-in-group",
    ),
    pytest.param(
        job("entrypont: x.py\n"),
        ["tau.yaml:4:1: error: entrypont: field entrypont not found in type runconfig.Config"],
        id="unknown-top-level-key",
    ),
    pytest.param(
        job("gpus: 1\n"),
        ["tau.yaml:4:1: error: gpus: field gpus not found in type runconfig.Config"],
        id="misplaced-key",
    ),
    pytest.param(
        job("frobnicate: 1\n"),
        ["tau.yaml:4:1: error: frobnicate: field frobnicate not found in type runconfig.Config"],
        id="unknown-key-no-suggestion",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - name: a\n      image: {PIN}\n      source_path: /src\n      mount_path: /assets\n      mountpath: /x\n"
        ),
        [
            "tau.yaml:10:7: error: storage.image_assets[0].mountpath: field mountpath not found in type runconfig.ImageAsset"
        ],
        id="unknown-key-in-list-item",
    ),
    pytest.param(
        job("compute:\n  gpus: two\n"),
        ['tau.yaml:5:9: error: compute.gpus must be an integer (got string "two")'],
        id="type-integer",
    ),
    pytest.param(
        job("runtime: [a, b]\n"),
        ["tau.yaml:4:10: error: runtime must be a mapping (got a list)"],
        id="type-mapping",
    ),
    pytest.param(
        job("policy:\n  clear_node_selector: maybe\n"),
        [
            'tau.yaml:5:24: error: policy.clear_node_selector must be a boolean (true or false) (got string "maybe")'
        ],
        id="type-boolean",
    ),
    pytest.param(
        job("runtime:\n  env:\n    EPOCHS: 3\n"),
        ["tau.yaml:6:13: error: runtime.env.EPOCHS must be a string (got integer 3)"],
        id="type-string-in-map",
    ),
    pytest.param(
        job("runtime:\n  pip: numpy\n"),
        ['tau.yaml:5:8: error: runtime.pip must be a list (got string "numpy")'],
        id="type-list",
    ),
    pytest.param(
        job("storage:\n  mounts: [1]\n"),
        ["tau.yaml:5:12: error: storage.mounts[0] must be a string (got integer 1)"],
        id="type-list-item",
    ),
    pytest.param(
        job("policy:\n  lane: fast\n"),
        [
            'tau.yaml:5:9: error: policy.lane: lane="fast" is invalid (allowed: eval|training|large-memory|elastic)'
        ],
        id="enum",
    ),
    pytest.param(
        "name: demo\nengine: spark\nentrypoint: main.py\n",
        ['tau.yaml:2:9: error: engine "spark" is not valid; use job or rayjob'],
        id="enum-engine",
    ),
    pytest.param(
        job("runtime:\n  security:\n    mode: baseline\n"),
        [
            'tau.yaml:6:11: error: runtime.security.mode must be "restricted" or omitted (got "baseline")'
        ],
        id="enum-security-mode",
    ),
    pytest.param(
        job("storage:\n  publish: direct\n"),
        ['tau.yaml:5:12: error: storage.publish must be one of: staged (got "direct")'],
        id="enum-publish",
    ),
    pytest.param(
        job("compute:\n  gpus: -1\n"),
        ["tau.yaml:5:9: error: compute.gpus must be >= 0 (got -1)"],
        id="minimum",
    ),
    pytest.param(
        job("execution:\n  nodes: 0\n"),
        ["tau.yaml:5:10: error: execution.nodes must be >= 1 (got 0)"],
        id="minimum-nodes",
    ),
    pytest.param(
        ray("compute:\n  gpus_per_worker: 9\n"),
        ["tau.yaml:5:20: error: compute.gpus_per_worker must be between 0 and 8 (got 9)"],
        id="minimum-and-maximum",
    ),
    pytest.param(
        job("run:\n  ttl_seconds_after_finished: 2147483648\n"),
        [
            "tau.yaml:5:31: error: run.ttl_seconds_after_finished must be <= 2147483647 (Kubernetes int32 maximum) (got 2147483648)"
        ],
        id="maximum-ttl",
    ),
    pytest.param(
        "name: My_Run\nengine: job\nentrypoint: main.py\n",
        [
            "tau.yaml:1:7: error: name \"My_Run\" is not valid: use a lowercase DNS label: a-z, 0-9 and '-', starting and ending with a letter or digit"
        ],
        id="pattern-name",
    ),
    pytest.param(
        ray("compute:\n  mig_profile: 1g18gb\n"),
        [
            'tau.yaml:5:16: error: compute.mig_profile "1g18gb" is not valid: use <N>g.<M>gb, e.g. 1g.18gb'
        ],
        id="pattern-mig-profile",
    ),
    pytest.param(
        job("storage:\n  volumes: [data]\n"),
        ['tau.yaml:5:13: error: storage.volumes[0] "data" is not valid: use NAME=pvc:CLAIM'],
        id="pattern-volume",
    ),
    pytest.param(
        job("profiler:\n  mode: nsys\n  rank: first\nstorage:\n  data_pvc: d\n"),
        [
            'tau.yaml:6:9: error: profiler.rank "first" is not valid: use a non-negative integer or all'
        ],
        id="pattern-profiler-rank",
    ),
    pytest.param(
        "name: " + "a" * 64 + "\nengine: job\nentrypoint: main.py\n",
        [
            'tau.yaml:1:7: error: name "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" is 64 characters; at most 63 are allowed'
        ],
        id="max-length-name",
    ),
    pytest.param(
        job(
            "storage:\n  image_assets:\n"
            + "".join(
                f"    - {{name: a{i}, image: '{PIN}', source_path: /src, mount_path: /assets/a{i}}}\n"
                for i in range(9)
            )
        ),
        ["tau.yaml:6:5: error: storage.image_assets supports at most 8 entries (got 9)"],
        id="max-items-image-assets",
    ),
    pytest.param(
        job("task: eval\n"),
        [
            "tau.yaml:4:1: error: task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run."
        ],
        id="eval-migration-task",
    ),
    pytest.param(
        job("eval:\n  harness: lm-eval\n"),
        [
            "tau.yaml:4:1: error: eval: task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run."
        ],
        id="eval-migration-eval-group",
    ),
    pytest.param(
        job("run:\n  task: eval\n"),
        [
            "tau.yaml:5:3: error: run.task: task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run."
        ],
        id="eval-migration-run-task",
    ),
    pytest.param(
        "schema_version: 1\nname: demo\n",
        [
            "tau.yaml:1:1: error: schema_version: managed workflow manifests are outside tau run validate; validate direct tau run --config files with this command"
        ],
        id="managed-manifest",
    ),
    pytest.param(
        job("workflow:\n  file: manifest.yaml\n"),
        ['tau.yaml:5:9: error: workflow.file "manifest.yaml": manifest not found (manifest.yaml)'],
        id="workflow-file-missing",
    ),
    pytest.param(
        job("compute:\n  workload_kind: rayjob\n"),
        [
            "tau.yaml:5:18: error: compute.workload_kind: engine=job conflicts with workload_kind=rayjob"
        ],
        id="engine-conflicts-with-workload-kind",
    ),
    pytest.param(
        "engine: job\nentrypoint: main.py\n",
        ["tau.yaml:1:1: error: name: job runs require NAME"],
        id="name-required",
    ),
    pytest.param(
        "engine: rayjob\nentrypoint: main.py\n",
        ["tau.yaml:1:1: error: name: ray runs require NAME"],
        id="ray-name-required",
    ),
    pytest.param(
        ray("compute:\n  gpus: 8\n"),
        [
            "tau.yaml:5:9: error: compute.gpus is only supported for engine: job; use compute.gpus_per_worker for Ray"
        ],
        id="ray-compute-gpus",
    ),
    pytest.param(
        implicit("compute:\n  workers: 2\n  gpus: 8\n"),
        [
            "tau.yaml:5:9: error: compute.gpus is only supported for engine: job; use compute.gpus_per_worker for Ray"
        ],
        id="ray-inferred-compute-gpus",
    ),
    pytest.param(
        ray("execution:\n  nodes: 2\n"),
        [
            "tau.yaml:5:10: error: execution.nodes is for engine: job; use compute.workers for RayJob pod count"
        ],
        id="ray-execution-nodes",
    ),
    pytest.param(
        "name: demo\nengine: rayjob\n",
        ["tau.yaml:1:1: error: entrypoint: engine=ray requires run.entrypoint"],
        id="ray-entrypoint-required",
    ),
    pytest.param(
        ray("storage:\n  data_pvc: a\n  result_pvc: b\n"),
        [
            "tau.yaml:6:15: error: storage.result_pvc cannot differ from storage.data_pvc for Ray run configs"
        ],
        id="ray-result-pvc",
    ),
    pytest.param(
        ray("storage:\n  volumes: ['x=pvc:y']\n"),
        [
            "tau.yaml:5:12: error: storage.volumes: ray run configs support storage.data_pvc/output, but not storage.volumes/mounts"
        ],
        id="ray-volumes",
    ),
    pytest.param(
        ray("storage:\n  mounts: ['x:/x']\n"),
        [
            "tau.yaml:5:11: error: storage.mounts: ray run configs support storage.data_pvc/output, but not storage.volumes/mounts"
        ],
        id="ray-mounts",
    ),
    pytest.param(
        ray("run:\n  ttl_seconds_after_finished: 60\n"),
        [
            "tau.yaml:5:31: error: run.ttl_seconds_after_finished requires engine: job and direct dispatch"
        ],
        id="ray-ttl",
    ),
    pytest.param(
        ray(f"run:\n  source:\n    image: '{PIN}'\n    path: /src\n"),
        ["tau.yaml:6:5: error: run.source requires engine: job and direct dispatch"],
        id="ray-run-source",
    ),
    pytest.param(
        ray("runtime:\n  working_dir: /app\n"),
        ["tau.yaml:5:16: error: runtime.working_dir requires engine: job and direct dispatch"],
        id="ray-runtime-working-dir",
    ),
    pytest.param(
        ray("policy:\n  clear_node_selector: true\n"),
        [
            "tau.yaml:5:24: error: policy.clear_node_selector requires engine: job; RayJobs cannot clear profile/topology node selectors"
        ],
        id="ray-clear-node-selector",
    ),
    pytest.param(
        ray("compute:\n  gpu_resource_mode: dra\n"),
        [
            'tau.yaml:5:22: error: compute.gpu_resource_mode: engine=rayjob cannot use compute.gpu_resource_mode="dra"; RayJobs support device-plugin or mig GPUs'
        ],
        id="ray-dra",
    ),
    pytest.param(
        ray("execution:\n  launcher: torchrun\n"),
        [
            "tau.yaml:5:13: error: execution.launcher torchrun is for engine: job; Ray Train manages distributed init via TorchConfig"
        ],
        id="ray-launcher-torchrun",
    ),
    pytest.param(
        ray("execution:\n  launcher: python\n"),
        [
            "tau.yaml:5:13: error: execution.launcher python is for engine: job; use ray-train for engine: rayjob"
        ],
        id="ray-launcher-python",
    ),
    pytest.param(
        job("compute:\n  workers: 2\n"),
        [
            "tau.yaml:5:12: error: compute.workers: engine=job cannot set compute.workers=2; use engine: rayjob or remove compute.workers"
        ],
        id="job-workers",
    ),
    pytest.param(
        job("compute:\n  gpus_per_worker: 8\n"),
        [
            "tau.yaml:5:20: error: compute.gpus_per_worker: engine=job cannot set compute.gpus_per_worker; use compute.gpus for a direct Job or switch to engine: rayjob"
        ],
        id="job-gpus-per-worker",
    ),
    pytest.param(
        job("runtime:\n  pip: [numpy]\n"),
        [
            "tau.yaml:5:8: error: runtime.pip: engine=job cannot set runtime.pip; use engine: rayjob or bake dependencies into the image"
        ],
        id="job-pip",
    ),
    pytest.param(
        job("compute:\n  head_cpu_request: '2'\n"),
        [
            "tau.yaml:5:21: error: compute.head_cpu_request: engine=job cannot set compute.head_cpu_request; jobs are single-pod, so use compute.cpu_request or switch to engine: rayjob"
        ],
        id="job-head-resources",
    ),
    pytest.param(
        job("compute:\n  worker_memory_limit: 8Gi\n"),
        [
            "tau.yaml:5:24: error: compute.worker_memory_limit: engine=job cannot set compute.worker_memory_limit; jobs are single-pod, so use compute.memory_limit or switch to engine: rayjob"
        ],
        id="job-worker-resources",
    ),
    pytest.param(
        job("compute:\n  mig_profile: 1g.18gb\n"),
        [
            "tau.yaml:5:16: error: compute.mig_profile: engine=job cannot set compute.mig_profile; switch to engine: rayjob"
        ],
        id="job-mig-profile",
    ),
    pytest.param(
        job("compute:\n  gpu_resource_mode: dra\n"),
        [
            'tau.yaml:5:22: error: compute.gpu_resource_mode: engine=job cannot use compute.gpu_resource_mode="dra"; direct Jobs support device-plugin GPUs'
        ],
        id="job-gpu-resource-mode",
    ),
    pytest.param(
        job("run:\n  working_dir: .\n"),
        ["tau.yaml:5:16: error: run.working_dir is not supported with engine: job."],
        id="job-run-working-dir",
    ),
    pytest.param(
        job("storage:\n  data_pvc: a\n  result_pvc: b\n"),
        [
            "tau.yaml:6:15: error: storage.result_pvc cannot differ from storage.data_pvc for job run configs"
        ],
        id="job-result-pvc",
    ),
    pytest.param(
        job("storage:\n  data_pvc: a\n  volumes: ['x=pvc:y']\n"),
        [
            "tau.yaml:6:12: error: storage.volumes: storage.data_pvc cannot be combined with storage.volumes for job run configs"
        ],
        id="job-data-pvc-and-volumes",
    ),
    pytest.param(
        job("execution:\n  launcher: ray-tune\n  metric: loss\n  configs: {lr: [1, 2]}\n"),
        [
            'tau.yaml:5:13: error: execution.launcher "ray-tune" requires engine: rayjob (needs a Ray cluster); got engine: job'
        ],
        id="job-launcher-ray",
    ),
    pytest.param(
        implicit("execution:\n  launcher: ray-train\n"),
        [
            'tau.yaml:4:13: error: execution.launcher "ray-train" requires engine: rayjob; set engine: rayjob explicitly'
        ],
        id="implicit-job-launcher-ray",
    ),
    pytest.param(
        job("execution:\n  nodes: 2\n"),
        [
            "tau.yaml:5:10: error: execution.nodes: engine=job with execution.nodes=2 requires execution.launcher=torchrun"
        ],
        id="job-nodes-need-torchrun",
    ),
    pytest.param(
        "name: demo\nentrypoint: main.py\nrun:\n  workload_kind: job\ncompute:\n  workers: 3\n",
        [
            "tau.yaml:6:12: error: compute.workers: workload_kind=job cannot set compute.workers=3; use engine: rayjob or remove compute.workers"
        ],
        id="workload-kind-intent",
    ),
    pytest.param(
        job("execution:\n  processes_per_node: 8\n"),
        [
            "tau.yaml:5:23: error: execution.processes_per_node > 1 requires execution.launcher: torchrun"
        ],
        id="processes-per-node-need-torchrun",
    ),
    pytest.param(
        ray("execution:\n  num_samples: 4\n"),
        [
            "tau.yaml:5:16: error: execution.num_samples: execution.metric/mode/num_samples/max_concurrent_trials require execution.launcher: ray-tune"
        ],
        id="tune-fields-need-ray-tune",
    ),
    pytest.param(
        ray("execution:\n  launcher: ray-tune\n  configs: {lr: [1, 2]}\n"),
        ["tau.yaml:5:13: error: execution.metric is required for launcher: ray-tune"],
        id="ray-tune-needs-metric",
    ),
    pytest.param(
        ray("execution:\n  launcher: ray-tune\n  metric: loss\n"),
        [
            "tau.yaml:5:13: error: execution.configs is required for launcher: ray-tune (defines the search space)"
        ],
        id="ray-tune-needs-configs",
    ),
    pytest.param(
        "name: demo\nengine: job\nentrypoint: train.sh\nexecution:\n  launcher: torchrun\n",
        [
            'tau.yaml:3:13: error: entrypoint: run.entrypoint "train.sh" must be a .py file with execution.launcher: torchrun, which runs it under python3; point it at a Python entrypoint or drop the launcher'
        ],
        id="torchrun-needs-py",
    ),
    pytest.param(
        job("execution:\n  configs:\n    --lr: 1\n"),
        [
            'tau.yaml:6:11: error: execution.configs: key "--lr" is invalid; must match [A-Za-z0-9][A-Za-z0-9_.-]*'
        ],
        id="configs-bad-key",
    ),
    pytest.param(
        job("execution:\n  configs:\n    verbose:\n"),
        [
            'tau.yaml:6:13: error: execution.configs: key "verbose" has null value; use empty string for a bare flag'
        ],
        id="configs-null",
    ),
    pytest.param(
        job("execution:\n  configs:\n    layers: [1, 2]\n"),
        [
            'tau.yaml:6:13: error: execution.configs: key "layers" has non-scalar value (type list); only string, int, float, and bool are allowed'
        ],
        id="configs-not-scalar",
    ),
    pytest.param(
        job("execution:\n  launcher: torchrun\n  configs:\n    nproc_per_node: 4\n"),
        [
            'tau.yaml:7:21: error: execution.configs: "nproc_per_node" is a Tau-managed torchrun flag and cannot be overridden'
        ],
        id="configs-torchrun-owned",
    ),
    pytest.param(
        job(
            "execution:\n  launcher: torchrun\n  configs:\n    max-restarts: 1\n    max_restarts: 2\n"
        ),
        [
            'tau.yaml:8:19: error: execution.configs: "max_restarts" and "max-restarts" are the same flag (canonical: --max-restarts)'
        ],
        id="configs-torchrun-same-flag",
    ),
    pytest.param(
        ray("execution:\n  configs:\n    lr: 0.1\n"),
        [
            'tau.yaml:6:9: error: execution.configs: "lr" is not a valid Ray Train config section; use torch_config, scaling_config, or failure_config'
        ],
        id="configs-ray-train-section",
    ),
    pytest.param(
        ray("execution:\n  configs:\n    torch_config: nccl\n"),
        [
            "tau.yaml:6:19: error: execution.configs.torch_config must be a map, not a scalar or list"
        ],
        id="configs-ray-train-not-mapping",
    ),
    pytest.param(
        ray("execution:\n  configs:\n    scaling_config:\n      num_workers: 4\n"),
        [
            "tau.yaml:7:20: error: execution.configs.scaling_config.num_workers is Tau-managed (derived from compute.workers × gpus_per_worker); remove it"
        ],
        id="configs-ray-train-scaling",
    ),
    pytest.param(
        job(
            "runtime:\n  env:\n    MASTER_ADDR: x\n    TAU_WORLD_SIZE: '2'\n    NCCL_DEBUG: INFO\n"
        ),
        [
            "tau.yaml:6:18: error: runtime.env contains Tau-managed keys that cannot be overridden: MASTER_ADDR, NCCL_DEBUG, TAU_WORLD_SIZE; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)"
        ],
        id="env-reserved",
    ),
    pytest.param(
        job("runtime:\n  env:\n    tau_resume_from: /data/x\n"),
        [
            "tau.yaml:6:22: error: runtime.env contains Tau-managed keys that cannot be overridden: tau_resume_from; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)"
        ],
        id="env-reserved-tau-case",
    ),
    pytest.param(
        job("runtime:\n  env_secret:\n    MASTER_PORT: 'a:b'\n"),
        [
            "tau.yaml:6:18: error: runtime.env_secret.MASTER_PORT: runtime.env contains Tau-managed keys that cannot be overridden: MASTER_PORT; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)"
        ],
        id="env-reserved-in-secret",
    ),
    pytest.param(
        job(
            "execution:\n  allow_nccl_override: true\nruntime:\n  env:\n    NCCL_DEBUG: INFO\n    MASTER_PORT: '1'\n"
        ),
        [
            "tau.yaml:9:18: error: runtime.env contains Tau-managed keys that cannot be overridden: MASTER_PORT; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)"
        ],
        id="env-nccl-override",
    ),
    pytest.param(
        job("runtime:\n  env:\n    1BAD: x\n"),
        [
            'tau.yaml:6:11: error: runtime.env.1BAD: env var name "1BAD" is invalid (use C_IDENTIFIER format)'
        ],
        id="env-name",
    ),
    pytest.param(
        job("runtime:\n  env:\n    my.var: x\n"),
        [
            'tau.yaml:6:13: error: runtime.env.my.var: env var name "my.var" is invalid (use C_IDENTIFIER format)'
        ],
        id="env-name-with-dots",
    ),
    pytest.param(
        job("runtime:\n  env:\n    BIG: " + "x" * 65537 + "\n"),
        [
            'tau.yaml:6:10: error: runtime.env.BIG: literal environment variable "BIG" is 65537 bytes; maximum is 65536 bytes: publish source or artifacts once and reference a digest-pinned OCI image with run.source instead of embedding content in environment variables'
        ],
        id="env-value-too-large",
    ),
    pytest.param(
        job("runtime:\n  env:\n" + "".join(f"    V{i}: {'x' * 60000}\n" for i in range(3))),
        [
            "tau.yaml:6:5: error: runtime.env: literal environment payload is 180012 bytes; maximum is 131072 bytes: publish source or artifacts once and reference a digest-pinned OCI image with run.source instead of embedding content in environment variables"
        ],
        id="env-total-too-large",
    ),
    pytest.param(
        job("runtime:\n  env_secret:\n    TOKEN: hf-credentials\n"),
        [
            'tau.yaml:6:12: error: runtime.env_secret.TOKEN: expected SECRET:KEY, got "hf-credentials"'
        ],
        id="env-secret-shape",
    ),
    pytest.param(
        job("runtime:\n  env:\n    TOKEN: x\n  env_secret:\n    TOKEN: 'hf:token'\n"),
        [
            "tau.yaml:8:12: error: runtime.env_secret.TOKEN conflicts with runtime.env.TOKEN; set each env var in only one place"
        ],
        id="env-secret-conflict",
    ),
    pytest.param(
        job("runtime:\n  env_secret:\n    TOKEN: 'HF_Creds:token'\n"),
        [
            "tau.yaml:6:12: error: runtime.env_secret.TOKEN: secret name \"HF_Creds\" is not a valid Kubernetes name (lowercase letters, digits, '-' and '.')"
        ],
        id="env-secret-name",
    ),
    pytest.param(
        job("runtime:\n  env_secret:\n    TOKEN: 'hf:to/ken'\n"),
        [
            "tau.yaml:6:12: error: runtime.env_secret.TOKEN: secret key \"to/ken\" is not a valid Secret data key (letters, digits, '-', '_' and '.')"
        ],
        id="env-secret-key",
    ),
    pytest.param(
        job("runtime:\n  env_kv:\n    TOKEN: vault/token\n"),
        [
            "tau.yaml:6:5: error: runtime.env_kv is only supported for workflow.file managed configs; direct job/ray configs must remove runtime.env_kv or use workflow.file"
        ],
        id="env-kv",
    ),
    pytest.param(
        job("runtime:\n  env:\n    TOKEN: x\n  env_kv:\n    TOKEN: vault/token\n"),
        [
            "tau.yaml:8:5: error: runtime.env_kv is only supported for workflow.file managed configs; direct job/ray configs must remove runtime.env_kv or use workflow.file",
            "tau.yaml:8:12: error: runtime.env_kv.TOKEN conflicts with runtime.env.TOKEN; set each env var in only one place",
        ],
        id="env-kv-conflict",
    ),
    pytest.param(
        job("runtime:\n  working_dir: app/../x\n"),
        [
            'tau.yaml:5:16: error: runtime.working_dir "app/../x" must be a clean absolute container path'
        ],
        id="runtime-working-dir-not-clean",
    ),
    pytest.param(
        job(
            f"runtime:\n  working_dir: /app\nrun:\n  source:\n    image: '{PIN}'\n    path: /src\n"
        ),
        [
            "tau.yaml:5:16: error: runtime.working_dir and run.source cannot be used together; run.source fixes the container working directory at /tau/source"
        ],
        id="runtime-working-dir-with-source",
    ),
    pytest.param(
        job("run:\n  source:\n    path: /src\n"),
        ["tau.yaml:6:5: error: run.source.image is required with run.source"],
        id="source-image-required",
    ),
    pytest.param(
        job("run:\n  source:\n    image: ghcr.io/acme/src:v1\n    path: /src\n"),
        [
            "tau.yaml:6:12: error: run.source.image must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest"
        ],
        id="source-image-pinned",
    ),
    pytest.param(
        job(f"run:\n  source:\n    image: '{PIN}'\n"),
        ["tau.yaml:6:5: error: run.source.path is required with run.source"],
        id="source-path-required",
    ),
    pytest.param(
        job(f"run:\n  source:\n    image: '{PIN}'\n    path: /tau-source/x\n"),
        [
            'tau.yaml:7:11: error: run.source.path "/tau-source/x" is hidden by Tau\'s staging volume'
        ],
        id="source-path-reserved",
    ),
    pytest.param(
        "name: demo\nengine: job\nentrypoint: ../main.py\n"
        + f"run:\n  source:\n    image: '{PIN}'\n    path: /src\n",
        [
            'tau.yaml:3:13: error: entrypoint "../main.py" must be a clean relative path inside run.source.path'
        ],
        id="source-entrypoint-relative",
    ),
    pytest.param(
        f"name: demo\nengine: job\nrun:\n  source:\n    image: '{PIN}'\n    path: /src\n",
        ["tau.yaml:1:1: error: entrypoint: run.source requires entrypoint"],
        id="source-entrypoint-required",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: Bad_Name, image: '{PIN}', source_path: /src, mount_path: /assets}}\n"
        ),
        [
            'tau.yaml:6:14: error: storage.image_assets[0].name must be a lowercase DNS label no longer than 50 characters (got "Bad_Name")'
        ],
        id="asset-name",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: a, image: '{PIN}', source_path: /src, mount_path: /a1}}\n    - {{name: a, image: '{PIN}', source_path: /src, mount_path: /a2}}\n"
        ),
        ['tau.yaml:7:14: error: storage.image_assets name "a" is declared more than once'],
        id="asset-name-unique",
    ),
    pytest.param(
        job(
            "storage:\n  image_assets:\n    - {name: a, image: 'ubuntu:22.04', source_path: /src, mount_path: /assets}\n"
        ),
        [
            "tau.yaml:6:24: error: storage.image_assets[0].image must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest"
        ],
        id="asset-image",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: a, image: '{PIN}', source_path: /tau-asset/x, mount_path: /assets}}\n"
        ),
        [
            'tau.yaml:6:129: error: storage.image_assets[0].source_path "/tau-asset/x" is hidden by Tau\'s staging volume'
        ],
        id="asset-source-path",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: a, image: '{PIN}', source_path: /src, mount_path: assets}}\n"
        ),
        [
            'tau.yaml:6:147: error: storage.image_assets[0].mount_path must be a clean absolute path below / (got "assets")'
        ],
        id="asset-mount-path",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: a, image: '{PIN}', source_path: /src, mount_path: /data/assets}}\n"
        ),
        [
            'tau.yaml:6:147: error: storage.image_assets[0].mount_path "/data/assets" overlaps Tau-reserved path /data'
        ],
        id="asset-mount-reserved",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: a, image: '{PIN}', source_path: /src, mount_path: /assets}}\n    - {{name: b, image: '{PIN}', source_path: /src, mount_path: /assets/b}}\n"
        ),
        [
            'tau.yaml:7:147: error: storage.image_assets mount paths "/assets" and "/assets/b" overlap'
        ],
        id="asset-mount-overlap",
    ),
    pytest.param(
        job("storage:\n  output: checkpoints/demo\n"),
        ['tau.yaml:5:11: error: storage.output "checkpoints/demo": must be an absolute path'],
        id="storage-output-absolute",
    ),
    pytest.param(
        job("storage:\n  checkpoint: ../final\n"),
        [
            "tau.yaml:5:15: error: storage.checkpoint: must be a relative path inside the run's checkpoint dir, without '.' or '..' segments (got \"../final\")"
        ],
        id="storage-checkpoint",
    ),
    pytest.param(
        job("metrics:\n  history: ['  ']\n"),
        ["tau.yaml:5:13: error: metrics.history[0] must not be empty"],
        id="metrics-history-empty",
    ),
    pytest.param(
        job("metrics:\n  history: [/tmp/metrics.jsonl]\n"),
        [
            'tau.yaml:5:13: error: metrics.history[0] "/tmp/metrics.jsonl": absolute paths must be under /data'
        ],
        id="metrics-history-under-data",
    ),
    pytest.param(
        job("metrics:\n  history: [../metrics.jsonl]\n"),
        [
            'tau.yaml:5:13: error: metrics.history[0] "../metrics.jsonl": relative paths must not escape storage.output'
        ],
        id="metrics-history-escape",
    ),
    pytest.param(
        job("metrics:\n  offload:\n    enabled: true\n"),
        [
            "tau.yaml:6:14: error: experiment.name is required when metrics.offload.enabled is true",
            "tau.yaml:6:14: error: experiment.project is required when metrics.offload.enabled is true",
            "tau.yaml:6:14: error: metrics.history requires at least one JSONL path when metrics.offload.enabled is true",
        ],
        id="metrics-offload-requirements",
    ),
    pytest.param(
        job(
            "metrics:\n  history: [metrics.jsonl]\n  offload:\n    enabled: true\nexperiment:\n  project: Tau Examples\n  name: baseline\n"
        ),
        [
            "tau.yaml:9:12: error: experiment.project: project \"Tau Examples\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
        ],
        id="telemetry-ids",
    ),
    pytest.param(
        job("resilience:\n  backoff_initial: 10x\n"),
        [
            'tau.yaml:5:20: error: resilience.backoff_initial: invalid duration "10x": unknown unit "x" in duration "10x" (use ns, us, ms, s, m or h)'
        ],
        id="duration-unknown-unit",
    ),
    pytest.param(
        job("resilience:\n  backoff_max: '5'\n"),
        [
            'tau.yaml:5:16: error: resilience.backoff_max: invalid duration "5": missing unit in duration "5" (use ns, us, ms, s, m or h)'
        ],
        id="duration-missing-unit",
    ),
    pytest.param(
        job("profiler:\n  mode: nsys\n  warmup: soon\nstorage:\n  data_pvc: d\n"),
        [
            'tau.yaml:6:11: error: profiler.warmup: invalid duration "soon" (use forms like 30s, 5m, 1h30m)'
        ],
        id="duration-invalid",
    ),
    pytest.param(
        job("profiler:\n  mode: nsys\n  duration: -1m\nstorage:\n  data_pvc: d\n"),
        ['tau.yaml:6:13: error: profiler.duration "-1m" must not be negative'],
        id="duration-negative",
    ),
    pytest.param(
        job("resilience:\n  backoff_initial: 10m\n  backoff_max: 5m\n"),
        [
            'tau.yaml:5:20: error: resilience.backoff_initial "10m" exceeds resilience.backoff_max "5m"'
        ],
        id="backoff-order",
    ),
    pytest.param(
        job("resilience:\n  max_retries: 1\n  retry_on: [Unknown]\n"),
        [
            "tau.yaml:6:14: error: resilience.retry_on[0]: resilience.retry_on cannot include Unknown: a failure tau cannot classify is never retried"
        ],
        id="retry-on-unknown",
    ),
    pytest.param(
        job("resilience:\n  max_retries: 1\n  retry_on: [Crashed]\n"),
        [
            'tau.yaml:6:14: error: resilience.retry_on[0]: resilience.retry_on value "Crashed" is not a failure reason; use one of: Preempted, Evicted, OOMKilled'
        ],
        id="retry-on-value",
    ),
    pytest.param(
        job("profiler:\n  rank: '0'\n"),
        ["tau.yaml:5:9: error: profiler.rank requires profiler.mode (nsys or ncu)"],
        id="profiler-needs-mode",
    ),
    pytest.param(
        job("profiler:\n  mode: ncu\n  duration: 1m\nstorage:\n  data_pvc: d\n"),
        [
            "tau.yaml:6:13: error: profiler.duration currently applies only to profiler.mode=nsys (got profiler.mode ncu)"
        ],
        id="profiler-nsys-only",
    ),
    pytest.param(
        job("policy:\n  queue: auto\n"),
        [
            "tau.yaml:5:10: error: policy.queue: auto requires live queue discovery and is not supported by this focused run --config slice"
        ],
        id="queue-auto",
    ),
    pytest.param(
        job("policy:\n  priority: default\n  priority_tier: priority\n"),
        [
            'tau.yaml:5:13: error: policy.priority "default" conflicts with policy.priority_tier "priority"; policy.priority is an alias, set one'
        ],
        id="priority-conflict",
    ),
    pytest.param(
        job("policy:\n  priority_tier: priority\n  workload_priority_class: team-high\n"),
        [
            "tau.yaml:5:18: error: policy.priority_tier cannot be combined with explicit priority classes (policy.workload_priority_class); set one or the other"
        ],
        id="priority-tier-and-explicit-class",
    ),
    pytest.param(
        job("policy:\n  node_selector:\n    -bad/key: x\n"),
        [
            'tau.yaml:6:15: error: policy.node_selector.-bad/key: policy.node_selector key "-bad/key" is not a valid label key'
        ],
        id="node-selector-key",
    ),
    pytest.param(
        job("policy:\n  node_selector:\n    kubernetes.io/os: not valid\n"),
        [
            "tau.yaml:6:23: error: policy.node_selector.kubernetes.io/os: policy.node_selector value \"not valid\" for \"kubernetes.io/os\" is not a valid label value (at most 63 characters: letters, digits, '-', '_', '.')"
        ],
        id="node-selector-value",
    ),
    pytest.param(
        job("compute:\n  memory_request: 16GB\n"),
        ['tau.yaml:5:19: error: compute.memory_request "16GB" is not a Kubernetes quantity'],
        id="quantity",
    ),
    pytest.param(
        job("compute:\n  cpu_request: '4'\n  cpu_limit: 2000m\n"),
        ['tau.yaml:5:16: error: compute.cpu_request "4" exceeds compute.cpu_limit "2000m"'],
        id="request-exceeds-limit",
    ),
    pytest.param(
        "name: demo\nengine: job\nname: other\n",
        ["tau.yaml:3:1: error: name: duplicate key 'name' (first set at line 1)"],
        id="duplicate-key",
    ),
    pytest.param(
        "name: demo\ncompute: [\n",
        ["tau.yaml:3:1: error: invalid YAML: did not find expected node content"],
        id="yaml-syntax",
    ),
    pytest.param(
        "name: demo\n---\nname: other\n",
        ["tau.yaml:3:1: error: a run config holds exactly one YAML document"],
        id="multi-document",
    ),
    pytest.param(
        "- name: demo\n",
        ["tau.yaml:1:1: error: a run config is a mapping of fields, got list"],
        id="not-a-mapping",
    ),
    pytest.param(
        "name: !custom demo\n",
        ["tau.yaml:1:7: error: name: invalid YAML: cannot read 'demo' tagged !custom"],
        id="unknown-tag",
    ),
]

WARNINGS = [
    pytest.param(
        "name: demo\nengine: Job\nentrypoint: main.py\nexecution:\n  launcher: ' Torchrun'\n  configs: {max-restarts: 0}\n",
        [
            'tau.yaml:2:9: warning: engine value "Job" is not canonical; tau reads it as "job"',
            'tau.yaml:5:13: warning: execution.launcher value " Torchrun" is not canonical; tau reads it as "torchrun"',
        ],
        id="engine-and-launcher-are-case-folded",
    ),
    pytest.param(
        ray(
            "execution:\n  launcher: ray-tune\n  metric: loss\n  mode: MAX\n  configs: {lr: [1, 2]}\n"
        ),
        [
            'tau.yaml:7:9: warning: execution.mode value "MAX" is not canonical; tau reads it as "max"'
        ],
        id="tune-mode-is-case-folded",
    ),
    pytest.param(
        "name: demo\nengine: ray\nentrypoint: main.py\n",
        ['tau.yaml:2:9: warning: engine value "ray" is deprecated; tau reads it as "rayjob"'],
        id="deprecated-engine",
    ),
    pytest.param(
        implicit("run:\n  workload_kind: ray-train\n"),
        [
            'tau.yaml:4:18: warning: run.workload_kind value "ray-train" is deprecated; tau reads it as "rayjob"'
        ],
        id="deprecated-workload-kind",
    ),
    pytest.param(
        job("policy:\n  gpu_class: h100-standalone-95gb\n"),
        [
            'tau.yaml:5:14: warning: policy.gpu_class value "h100-standalone-95gb" is deprecated; tau reads it as "h100-95gb"'
        ],
        id="deprecated-gpu-class",
    ),
    pytest.param(
        job("resilience:\n  retry_on: [Preempted]\n"),
        [
            "tau.yaml:5:13: warning: resilience.retry_on has no effect while resilience.max_retries is 0"
        ],
        id="retry-on-without-retries",
    ),
]

#: Valid configs, one (at least) per rule above; each must validate with no diagnostic at all.
#: tests/test_codegen.py also feeds these to jsonschema and to the generated model.
VALID = [
    pytest.param(job("compute:\n  gpus: 0\n"), id="minimal-cpu-job"),
    # The shapes the product contract (tau-skill.md) shows.
    pytest.param(
        "name: train\nengine: rayjob\nentrypoint: main.py\nruntime:\n  image: <pinned-image>\ncompute:\n  workers: 2\n  gpus_per_worker: 8\nstorage:\n  data_pvc: training-data\n  output: /data/checkpoints/workflows/train\n",
        id="skill-minimal-shape",
    ),
    pytest.param(
        "name: run-a\nscript: main.py\ncompute:\n  gpus: 0\nexperiment:\n  project: tau-examples\n  name: lr-sweep\n  group: small\n",
        id="skill-experiment-metadata",
    ),
    pytest.param(
        job(
            'resilience:\n  max_retries: 2\n  retry_on: ["Preempted", "Evicted"]\n  backoff_initial: 30s\n  backoff_max: 5m\n  checkpoint_path: /data/checkpoints/finetunes/<name>\n'
        ),
        id="skill-resilience",
    ),
    pytest.param(
        job(
            "compute:\n  gpus: 8\n  gpu_resource_mode: nvidia\n  workload_kind: job\n  cpu_request: 500m\n  cpu_limit: '2'\n  memory_request: 16Gi\n  memory_limit: 32Gi\n"
        ),
        id="job-compute",
    ),
    pytest.param(implicit("compute:\n  gpus: 1\n"), id="implicit-job"),
    pytest.param(
        implicit("compute:\n  workers: 2\n  gpus_per_worker: 8\n"), id="implicit-ray-from-workers"
    ),
    pytest.param(
        "name: demo\nrun:\n  engine: job\n  entrypoint: main.py\n  image: python:3.12-slim\n",
        id="nested-run-aliases",
    ),
    pytest.param(
        "name: demo\nengine: job\nscript: main.py\nimage: python:3.12-slim\n",
        id="top-level-aliases",
    ),
    pytest.param(
        "schema_version: 1\nname: demo\nengine: job\nentrypoint: main.py\n",
        id="schema-version-with-engine-is-direct",
    ),
    pytest.param(
        ray(
            "runtime:\n  image: mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0\n  pip: [numpy==2.1.0]\ncompute:\n  workers: 2\n  gpus_per_worker: 1\n  head_cpu_request: '2'\n  head_memory_limit: 8Gi\n  worker_cpu_limit: '16'\n  worker_memory_request: 64Gi\n  mig_profile: 1g.18gb\n  gpu_resource_mode: mig\n"
        ),
        id="ray-compute",
    ),
    pytest.param(ray("compute:\n  gpus_per_worker: 0\n  workers: 1\n"), id="ray-cpu"),
    pytest.param(
        ray(
            "storage:\n  data_pvc: training-data\n  result_pvc: training-data\n  output: /data/checkpoints/workflows/demo\n"
        ),
        id="ray-storage",
    ),
    pytest.param(
        ray(
            "execution:\n  launcher: ray-train\n  configs:\n    scaling_config: {use_gpu: true}\n    torch_config: {backend: nccl}\n    failure_config: {max_failures: 2}\n"
        ),
        id="ray-train-configs",
    ),
    pytest.param(
        ray(
            "execution:\n  launcher: ray-tune\n  metric: loss\n  mode: max\n  num_samples: 8\n  max_concurrent_trials: 2\n  configs:\n    lr: [0.1, 0.01]\n"
        ),
        id="ray-tune",
    ),
    pytest.param(
        ray("run:\n  working_dir: .\n  working_dir_excludes: ['*.ckpt']\n"), id="ray-working-dir"
    ),
    pytest.param(
        job(
            "execution:\n  launcher: python\n  configs:\n    epochs: 3\n    lr: 0.1\n    dry-run: ''\n    fast: true\n"
        ),
        id="python-configs",
    ),
    pytest.param(
        job(
            "execution:\n  launcher: torchrun\n  nodes: 2\n  processes_per_node: 8\n  configs:\n    max-restarts: 0\n"
        ),
        id="torchrun-multi-node",
    ),
    pytest.param(
        job("compute:\n  gpus: 0\nrun:\n  workload_kind: job\n"),
        id="engine-agrees-with-workload-kind",
    ),
    pytest.param(
        job(
            f"run:\n  ttl_seconds_after_finished: 3600\n  source:\n    image: '{PIN}'\n    path: /src\n"
        ),
        id="job-run-source",
    ),
    pytest.param(
        job(
            f"storage:\n  image_assets:\n    - {{name: weights, image: 'ghcr.io/acme/weights:v1@{SHA}', source_path: /weights, mount_path: /assets/weights}}\n    - {{name: vocab, image: 'localhost:5000/vocab@{SHA}', source_path: /vocab, mount_path: /assets/vocab}}\n"
        ),
        id="job-image-assets",
    ),
    pytest.param(
        job("runtime:\n  working_dir: /app\n  security:\n    mode: restricted\n"),
        id="job-runtime-working-dir",
    ),
    pytest.param(
        job(
            "runtime:\n  env:\n    EPOCHS: '3'\n    TAU_RESUME_FROM: /data/checkpoints/demo\n    _PRIVATE: x\n  env_secret:\n    HF_TOKEN: 'hf-credentials:token'\n"
        ),
        id="env-and-secrets",
    ),
    pytest.param(
        job("execution:\n  allow_nccl_override: true\nruntime:\n  env:\n    NCCL_DEBUG: INFO\n"),
        id="nccl-override",
    ),
    pytest.param(
        job(
            "storage:\n  data_pvc: training-data\n  output: /data/checkpoints/demo\n  publish: staged\n  checkpoint: final/model\n"
        ),
        id="job-storage",
    ),
    pytest.param(
        job(
            "storage:\n  volumes: ['scratch=pvc:scratch-claim']\n  mounts: ['scratch:/scratch:rw', 'scratch:/ro']\n"
        ),
        id="job-volumes-and-mounts",
    ),
    pytest.param(
        job(
            "metrics:\n  history: [metrics.jsonl, 'logs/*.jsonl', /data/metrics/run.jsonl]\n  offload:\n    enabled: true\nexperiment:\n  project: tau-examples\n  name: baseline.v2\n  group: a_b\n"
        ),
        id="metrics-offload",
    ),
    pytest.param(
        job("experiment:\n  project: tau-examples\n  title: Baseline vs fine-tune\n"),
        id="experiment-title",
    ),
    pytest.param(
        job("metrics:\n  history: [..hidden/metrics.jsonl, a/../b.jsonl]\n"),
        id="metrics-history-dot-dot-prefixed-name",
    ),
    pytest.param(
        job(
            "resilience:\n  max_retries: 2\n  retry_on: [Preempted, Evicted, OOMKilled]\n  backoff_initial: 1m30s\n  backoff_max: 1h\n  checkpoint_path: /data/checkpoints/finetunes/demo\n"
        ),
        id="resilience",
    ),
    pytest.param(
        job(
            "profiler:\n  mode: nsys\n  rank: all\n  warmup: 30s\n  duration: 2m\nstorage:\n  data_pvc: d\n"
        ),
        id="profiler-nsys",
    ),
    pytest.param(
        job("profiler:\n  mode: ncu\n  rank: '3'\nstorage:\n  data_pvc: d\n"), id="profiler-ncu"
    ),
    pytest.param(
        job(
            "policy:\n  workspace: research\n  namespace: research\n  preset: azure.research.training.xl\n  queue: research-training\n  lane: training\n  gpu_class: h100-95gb\n  mode: fixed\n  topology: single-node-nvlink\n  shape: 8xh100-95gb\n  priority: priority\n  priority_tier: priority\n  node_selector:\n    kubernetes.io/os: linux\n    pool: gpu\n  clear_node_selector: true\n"
        ),
        id="policy",
    ),
    pytest.param(
        job("policy:\n  disable_default_priorities: true\n"), id="policy-no-default-priorities"
    ),
    pytest.param(
        "name: demo\nengine: job\nentrypoint: main.py\ncompute: &shared\n  gpus: 0\nrun:\n  <<: {image: 'python:3.12'}\n",
        id="yaml-anchor-and-merge-key",
    ),
    pytest.param(
        "name: demo  # the run name\nengine: job\nentrypoint: main.py\n---\n",
        id="one-document-with-trailing-separator",
    ),
]


@pytest.mark.parametrize(("text", "expected"), INVALID)
def test_an_invalid_config_reports_each_problem_with_its_exact_message_and_location(
    project: Path, text: str, expected: list[str]
) -> None:
    formatted, valid = check(text)
    assert valid is None
    assert heads(formatted) == expected


@pytest.mark.parametrize("text", VALID)
def test_a_valid_config_passes_with_no_diagnostic(project: Path, text: str) -> None:
    formatted, valid = check(text)
    assert formatted == ""
    assert valid is not None


@pytest.mark.parametrize(("text", "expected"), WARNINGS)
def test_a_warning_does_not_fail_validation_and_is_reported_at_its_value(
    project: Path, text: str, expected: list[str]
) -> None:
    formatted, valid = check(text)
    assert valid is not None
    assert heads(formatted) == expected


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        pytest.param(
            job("compute:\n  gpu: 2\n"), "did you mean `compute.gpus`?", id="typo-in-group"
        ),
        pytest.param(
            job("entrypont: x.py\n"), "did you mean `entrypoint`?", id="typo-at-top-level"
        ),
        pytest.param(
            job("runtime:\n  envs: {}\n"), "did you mean `runtime.env`?", id="plural-typo"
        ),
        pytest.param(
            job("gpus: 1\n"),
            "`gpus` belongs elsewhere: did you mean `compute.gpus`?",
            id="misplaced-top-level",
        ),
        pytest.param(
            job("compute:\n  data_pvc: x\n"),
            "`data_pvc` belongs elsewhere: did you mean `storage.data_pvc`?",
            id="misplaced-in-group",
        ),
        pytest.param(
            job("frobnicate: 1\n"),
            "run `tau run explain-config` for the fields of this group",
            id="no-suggestion",
        ),
        pytest.param(
            ray("engine: ray\n").replace("engine: rayjob\n", ""),
            "write `engine: rayjob`",
            id="deprecated-alias",
        ),
        pytest.param(
            job("runtime:\n  env:\n    NCCL_DEBUG: INFO\n"),
            "set execution.allow_nccl_override: true to tune NCCL_* deliberately",
            id="nccl",
        ),
        pytest.param(
            "schema_version: 1\n",
            "a direct config sets `engine: job` or `engine: rayjob`",
            id="managed-manifest",
        ),
        pytest.param(
            "name: demo\nname: again\n", "keep exactly one entry for each key", id="duplicate-key"
        ),
        pytest.param(
            job("runtime:\n  env:\n    EPOCHS: 3\n"),
            "quote the value to make it a string",
            id="number-for-string",
        ),
        pytest.param(
            job("policy:\n  node_selector:\n    spot: yes\n"),
            "quote the value to make it a string",
            id="yaml-1.1-boolean-for-string",
        ),
    ],
)
def test_a_diagnostic_says_what_to_do_about_it(project: Path, text: str, hint: str) -> None:
    formatted, _ = check(text)
    assert hints(formatted) == [hint]


def test_a_deprecated_engine_alias_is_normalized_to_rayjob(project: Path) -> None:
    _, valid = check("name: demo\nengine: ray\nentrypoint: main.py\n")
    assert valid is not None
    assert valid.engine == "rayjob"
    assert valid.data["engine"] == valid.config.engine == "rayjob"


@pytest.mark.parametrize(
    ("text", "engine"),
    [
        pytest.param(implicit(), "job", id="nothing-ray-shaped-is-a-job"),
        pytest.param(implicit("compute:\n  workers: 2\n"), "rayjob", id="workers-above-one"),
        pytest.param(implicit("compute:\n  workers: 1\n"), "job", id="one-worker-stays-a-job"),
        pytest.param(
            implicit("compute:\n  gpus_per_worker: 1\n"),
            "rayjob",
            id="gpus-per-worker-set-even-to-one",
        ),
        pytest.param(implicit("runtime:\n  pip: [numpy]\n"), "rayjob", id="pip"),
        pytest.param(implicit("run:\n  workload_kind: rayjob\n"), "rayjob", id="workload-kind"),
        pytest.param(
            "name: demo\nrun:\n  engine: rayjob\n  entrypoint: main.py\n", "rayjob", id="run-engine"
        ),
    ],
)
def test_the_engine_is_explicit_or_inferred_from_ray_shaped_fields(
    project: Path, text: str, engine: str
) -> None:
    formatted, valid = check(text)
    assert formatted == ""
    assert valid is not None and valid.engine == engine


def test_a_name_from_the_command_line_satisfies_the_name_rule_and_wins(project: Path) -> None:
    _, valid = check("engine: job\nentrypoint: main.py\n", name="from-cli")
    assert valid is not None and valid.name == "from-cli"
    _, valid = check(job(), name="override")
    assert valid is not None and valid.name == "override"


def test_run_name_takes_precedence_over_the_top_level_name(project: Path) -> None:
    _, valid = check("name: outer\nengine: job\nentrypoint: main.py\nrun:\n  name: inner\n")
    assert valid is not None and valid.name == "inner"


def test_all_problems_of_one_file_are_reported_in_one_run_sorted_by_location(project: Path) -> None:
    text = (
        "name: demo\n"  # 1
        "engine: job\n"  # 2
        "entrypoint: main.py\n"  # 3
        "resilience:\n"  # 4
        "  backoff_max: '5'\n"  # 5  settings: missing unit
        "compute:\n"  # 6
        "  gpu: 1\n"  # 7  structure: unknown key
        "  workers: 4\n"  # 8  engine: Job cannot set workers
        "runtime:\n"  # 9
        "  env:\n"  # 10
        "    MASTER_ADDR: x\n"  # 11 env: reserved
        "storage:\n"  # 12
        "  output: relative\n"  # 13 storage: not absolute
        "policy:\n"  # 14
        "  lane: fast\n"  # 15 structure: enum
        "  queue: auto\n"  # 16 settings: auto
    )
    formatted, valid = check(text)
    assert valid is None
    assert heads(formatted) == [
        'tau.yaml:5:16: error: resilience.backoff_max: invalid duration "5": missing unit in duration "5" (use ns, us, ms, s, m or h)',
        "tau.yaml:7:3: error: compute.gpu: field gpu not found in type runconfig.Compute",
        "tau.yaml:8:12: error: compute.workers: engine=job cannot set compute.workers=4; use engine: rayjob or remove compute.workers",
        "tau.yaml:11:18: error: runtime.env contains Tau-managed keys that cannot be overridden: MASTER_ADDR; remove them from runtime.env (settable TAU_ keys: TAU_RESUME_FROM, TAU_RETRY_ATTEMPT, TAU_RETRY_MAX, TAU_RETRY_REASON)",
        'tau.yaml:13:11: error: storage.output "relative": must be an absolute path',
        'tau.yaml:15:9: error: policy.lane: lane="fast" is invalid (allowed: eval|training|large-memory|elastic)',
        "tau.yaml:16:10: error: policy.queue: auto requires live queue discovery and is not supported by this focused run --config slice",
    ]


def test_errors_and_warnings_of_one_file_come_together_in_location_order(project: Path) -> None:
    formatted, valid = check("name: demo\nengine: ray\nentrypoint: main.py\ncompute:\n  gpus: 1\n")
    assert valid is None
    assert heads(formatted) == [
        'tau.yaml:2:9: warning: engine value "ray" is deprecated; tau reads it as "rayjob"',
        "tau.yaml:5:9: error: compute.gpus is only supported for engine: job; use compute.gpus_per_worker for Ray",
    ]


def test_an_empty_file_fails_only_for_the_missing_name(project: Path) -> None:
    formatted, _ = check("")
    assert heads(formatted) == ["tau.yaml: error: name: job runs require NAME"]


def test_a_missing_config_file_is_a_config_error_not_a_traceback(project: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load(Path("absent.yaml"))
    assert caught.value.format() == "absent.yaml: error: config file 'absent.yaml' not found"


# The local-import check reads the entrypoint, so each case writes its own project files.


def test_an_entrypoint_importing_an_unshipped_sibling_module_is_rejected(project: Path) -> None:
    (project / "helpers.py").write_text("")
    (project / "pkg").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "main.py").write_text("import os\nimport helpers\nfrom pkg.sub import x\n")
    formatted, valid = check(job())
    assert valid is None
    assert heads(formatted) == [
        'tau.yaml:3:13: error: entrypoint "main.py" imports local module "helpers" (line 2), which is not shipped: only the entrypoint file is embedded in the run',
        'tau.yaml:3:13: error: entrypoint "main.py" imports local module "pkg" (line 3), which is not shipped: only the entrypoint file is embedded in the run',
    ]
    assert hints(formatted)[0] == (
        "ship the project with run.source (a digest-pinned source image), "
        "install the module in the image, or inline it"
    )
    formatted, _ = check(ray())
    assert hints(formatted)[0].startswith("set run.working_dir to ship the project directory")


@pytest.mark.parametrize(
    ("text", "script"),
    [
        pytest.param(
            job(),
            "import os\nimport numpy\nfrom torch import nn\n",
            id="stdlib-and-installed-modules",
        ),
        pytest.param(
            job("# not-next-to-it\n"), "import helpers\n", id="a-module-that-is-not-next-to-it"
        ),
        pytest.param(job(), "def broken(:\n", id="a-script-that-does-not-parse"),
        pytest.param(
            ray("run:\n  working_dir: .\n"),
            "import helpers\n",
            id="ray-working-dir-ships-the-project",
        ),
        pytest.param(
            job(f"run:\n  source:\n    image: '{PIN}'\n    path: /src\n"),
            "import helpers\n",
            id="run-source-ships-the-tree",
        ),
        pytest.param(
            job().replace("main.py", "absent.py"),
            "import helpers\n",
            id="a-missing-entrypoint-is-left-to-dry-run",
        ),
    ],
)
def test_the_local_import_check_passes_when_nothing_unshipped_is_imported(
    project: Path, text: str, script: str
) -> None:
    (project / "main.py").write_text(script)
    if "helpers" in script and "not-next-to-it" not in text:
        (project / "helpers.py").write_text("")
    formatted, valid = check(text)
    assert formatted == ""
    assert valid is not None


# Go-style durations (resilience.backoff_*, profiler.warmup/duration).


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("2h45m30.5s", 9930.5),
        ("300ms", 0.3),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("0", 0.0),
        ("+0", 0.0),
        ("-5s", -5.0),
        ("+1m", 60.0),
        ("100ns", 100e-9),
        ("7us", 7e-6),
        ("7\u00b5s", 7e-6),
        ("7\u03bcs", 7e-6),
        ("1m0s", 60.0),
    ],
)
def test_a_go_duration_parses_to_seconds(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'invalid duration ""'),
        ("-", 'invalid duration "-"'),
        ("5", 'missing unit in duration "5" (use ns, us, ms, s, m or h)'),
        ("1h30", 'missing unit in duration "1h30" (use ns, us, ms, s, m or h)'),
        ("10x", 'unknown unit "x" in duration "10x" (use ns, us, ms, s, m or h)'),
        ("1d", 'unknown unit "d" in duration "1d" (use ns, us, ms, s, m or h)'),
        ("1e3s", 'unknown unit "e" in duration "1e3s" (use ns, us, ms, s, m or h)'),
        ("s", 'invalid duration "s" (use forms like 30s, 5m, 1h30m)'),
        ("soon", 'invalid duration "soon" (use forms like 30s, 5m, 1h30m)'),
        ("1.5.5s", 'missing unit in duration "1.5.5s" (use ns, us, ms, s, m or h)'),
        ("--5s", 'invalid duration "--5s" (use forms like 30s, 5m, 1h30m)'),
    ],
)
def test_a_malformed_go_duration_is_rejected_with_the_reason(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (30, "30s"), (300, "5m0s"), (3723, "1h2m3s"), (3600, "1h0m0s")]
)
def test_a_duration_formats_in_go_style(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


# Kubernetes quantities (compute.*_request / *_limit).


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", "2"),
        ("500m", "0.5"),
        ("1.5", "1.5"),
        ("0.25", "0.25"),
        ("16Gi", str(16 * 2**30)),
        ("1Ki", "1024"),
        ("1Mi", str(2**20)),
        ("1k", "1000"),
        ("100M", "100000000"),
        ("1G", "1000000000"),
        ("1e3", "1000"),
        ("1E", str(10**18)),
        ("2E3", "2000"),
        ("250u", "0.00025"),
        ("3n", "3e-9"),
        ("+4", "4"),
        ("-1", "-1"),
        (".5", "0.5"),
    ],
)
def test_a_kubernetes_quantity_parses_to_its_value_in_base_units(text: str, value: str) -> None:
    from decimal import Decimal

    assert parse_quantity(text) == Decimal(value)


@pytest.mark.parametrize(
    "text", ["", "16GB", "16gi", "Gi", "1 Gi", " 1", "1 ", "1.2.3", "abc", "1Kib", "0x10", "1e"]
)
def test_a_string_that_is_not_a_kubernetes_quantity_is_rejected(text: str) -> None:
    assert parse_quantity(text) is None


def test_request_and_limit_compare_by_value_not_by_text(project: Path) -> None:
    formatted, valid = check(
        job(
            "compute:\n  cpu_request: 1500m\n  cpu_limit: '2'\n  memory_request: 1Gi\n  memory_limit: 1024Mi\n"
        )
    )
    assert formatted == "" and valid is not None


def test_the_test_project_directory_is_the_working_directory(project: Path) -> None:
    assert Path(os.getcwd()).resolve() == project.resolve()


# The loader: YAML features a hand-written tau.yaml may use.


def test_merge_keys_are_expanded_and_keys_written_in_the_mapping_win(project: Path) -> None:
    text = job("runtime:\n  env:\n    <<: [{A: '1', B: '2'}, {B: '3', C: '4'}]\n    A: '0'\n")
    formatted, valid = check(text)
    assert formatted == ""
    assert valid is not None
    assert dict(valid.config.runtime.env) == {"A": "0", "B": "2", "C": "4"}


def test_a_merge_key_needs_a_mapping(project: Path) -> None:
    formatted, _ = check(job("runtime:\n  env:\n    <<: [a]\n"))
    assert heads(formatted) == [
        "tau.yaml:6:10: error: invalid YAML: a `<<` merge key takes a mapping or a list of mappings"
    ]


def test_mapping_keys_are_read_as_written_like_yaml_v3(project: Path) -> None:
    """PyYAML would read `ON:`/`yes:`/`null:` keys as True/None; Go's yaml.v3 keeps the text."""
    formatted, valid = check(
        job("policy:\n  node_selector:\n    ON: '1'\n    yes: '2'\n    '3': c\n")
    )
    assert formatted == ""
    assert valid is not None
    assert dict(valid.config.policy.node_selector) == {"ON": "1", "yes": "2", "3": "c"}
    formatted, _ = check(job("null: 1\n"))
    assert heads(formatted) == [
        "tau.yaml:4:1: error: null: field null not found in type runconfig.Config"
    ]


def test_a_value_with_a_bad_explicit_tag_is_a_diagnostic(project: Path) -> None:
    formatted, valid = check(job("compute:\n  gpus: !!int many\n"))
    assert valid is None
    assert heads(formatted) == [
        "tau.yaml:5:9: error: compute.gpus: invalid YAML: cannot read 'many' tagged tag:yaml.org,2002:int"
    ]


def test_a_trailing_document_separator_does_not_make_a_second_document(project: Path) -> None:
    assert check(job("---\n"))[0] == ""
    assert heads(check(job("---\n~\n"))[0]) == [
        "tau.yaml:5:1: error: a run config holds exactly one YAML document"
    ]


def test_map_keys_with_brackets_or_dots_are_reported_at_their_own_line(project: Path) -> None:
    text = job(
        "execution:\n  configs:\n    ok: 1\n    'x[1]': 2\nruntime:\n  env:\n    'a[b]': c\n    my.var: d\n"
    )
    formatted, _ = check(text)
    assert heads(formatted) == [
        'tau.yaml:7:13: error: execution.configs: key "x[1]" is invalid; must match [A-Za-z0-9][A-Za-z0-9_.-]*',
        'tau.yaml:10:13: error: runtime.env.a[b]: env var name "a[b]" is invalid (use C_IDENTIFIER format)',
        'tau.yaml:11:13: error: runtime.env.my.var: env var name "my.var" is invalid (use C_IDENTIFIER format)',
    ]


ODD_VALUES = [
    None,
    "",
    "x",
    "a[b]",
    "a.b",
    "/",
    "../x",
    "-5s",
    0,
    -1,
    2,
    99,
    2.5,
    True,
    [],
    ["x"],
    [None],
    [{"a": 1}],
    {},
    {"k": None},
    {"k": [1]},
    {"a[b]": "1"},
    {"a.b": 1},
]


def test_no_value_at_any_schema_path_makes_validation_crash(project: Path) -> None:
    """Every problem is a ConfigError with formatted diagnostics, never a traceback."""
    import yaml

    from tau.intent.load import parse
    from tau.intent.validate.structure import known_paths

    for engine in ("job", "rayjob"):
        for path in known_paths():
            for value in ODD_VALUES:
                data: dict = {"name": "demo", "engine": engine, "entrypoint": "main.py"}
                node = data
                for part in path[:-1]:
                    node = node.setdefault(part, {})
                    if not isinstance(node, dict):
                        break
                else:
                    node[path[-1]] = value
                    try:
                        validate(parse(yaml.safe_dump(data), Path("tau.yaml")))
                    except ConfigError as exc:
                        assert exc.format()


def test_duplicate_keys_and_unreadable_values_are_reported_with_every_other_problem(
    project: Path,
) -> None:
    text = job("compute:\n  gpus: 1\n  gpus: 2\n  gpu_count: 3\nruntime:\n  image: !custom x\n")
    formatted, valid = check(text)
    assert valid is None
    assert heads(formatted) == [
        "tau.yaml:6:3: error: compute.gpus: duplicate key 'gpus' (first set at line 5)",
        "tau.yaml:7:3: error: compute.gpu_count: field gpu_count not found in type runconfig.Compute",
        "tau.yaml:9:10: error: runtime.image: invalid YAML: cannot read 'x' tagged !custom",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "? [a, b]\n: 1\nname: demo\nengine: job\nentrypoint: main.py\n",
            ["tau.yaml:1:3: error: mapping keys must be plain strings"],
            id="non-scalar-key",
        ),
        pytest.param(
            "name: demo\nimage: a\x07b\n",
            [
                "tau.yaml:2:9: error: invalid YAML: unacceptable character #x0007: control characters are not allowed"
            ],
            id="control-character",
        ),
        pytest.param(
            "!custom root\n",
            ["tau.yaml:1:1: error: invalid YAML: cannot read 'root' tagged !custom"],
            id="unreadable-root",
        ),
        pytest.param(
            "name: demo\n\tengine: job\n",
            ["tau.yaml:2:1: error: invalid YAML: found a tab character that violates indentation"],
            id="tab-indentation",
        ),
        pytest.param(
            "name: 'demo\n",
            ["tau.yaml:2:1: error: invalid YAML: found unexpected end of stream"],
            id="unterminated-quote",
        ),
        pytest.param(
            "compute: *gpus\n",
            ["tau.yaml:1:10: error: invalid YAML: found undefined alias"],
            id="undefined-alias",
        ),
    ],
)
def test_unreadable_yaml_is_one_located_diagnostic(
    project: Path, text: str, expected: list[str]
) -> None:
    formatted, valid = check(text)
    assert valid is None
    assert heads(formatted) == expected


def test_a_null_document_is_an_empty_config(project: Path) -> None:
    assert heads(check("~\n")[0]) == ["tau.yaml:1:1: error: name: job runs require NAME"]


def test_a_file_that_is_not_utf8_is_a_config_error(project: Path) -> None:
    Path("latin1.yaml").write_bytes(b"name: caf\xe9\n")
    with pytest.raises(ConfigError) as caught:
        load(Path("latin1.yaml"))
    assert caught.value.format().startswith("latin1.yaml: error: cannot read config: 'utf-8' codec")


def test_run_source_and_run_working_dir_cannot_be_combined(project: Path) -> None:
    formatted, _ = check(
        job(f"run:\n  working_dir: .\n  source:\n    image: '{PIN}'\n    path: /src\n")
    )
    assert heads(formatted) == [
        "tau.yaml:5:16: error: run.working_dir: run.source and run.working_dir cannot be used together",
        "tau.yaml:5:16: error: run.working_dir is not supported with engine: job.",
    ]
