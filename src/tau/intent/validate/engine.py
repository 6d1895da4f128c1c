"""Engine selection and the engine-scoped vocabulary: which fields a Job or a RayJob accepts.

Pure. Mixing the Job and Ray vocabularies is the most common authoring failure, so each
rejected field gets its own diagnostic at its own line, with the field to use instead.
"""

from __future__ import annotations

import re

from tau.intent.validate.context import Context, canonical

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

JOB = "job"
RAYJOB = "rayjob"
#: The managed eval kind: a RayJob with a CPU worker group beside its GPU worker.
EVAL_KIND = "rayjob-eval"

_RAY_RESOURCE_FIELDS = tuple(
    f"compute.{who}_{what}"
    for who in ("head", "worker")
    for what in ("cpu_request", "memory_request", "cpu_limit", "memory_limit")
)
_TUNE_FIELDS = ("metric", "mode", "num_samples", "max_concurrent_trials")
_TORCHRUN_OWNED = (
    "standalone",
    "nnodes",
    "nproc-per-node",
    "node-rank",
    "rdzv-backend",
    "rdzv-endpoint",
    "rdzv-id",
    "master-addr",
    "master-port",
    "module",
    "no-python",
    "run-path",
)
_FLAG_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_RAY_TRAIN_SECTIONS = ("torch_config", "scaling_config", "failure_config")
#: The group the reference's execution.configs messages are worded about.
_CONFIGS = "execution.configs"


def select_engine(ctx: Context) -> None:
    """Choose the engine (explicit, from workload_kind, or inferred) and record the intent."""
    engine_path, engine = canonical(ctx.data, "engine")
    kind_path, kind = canonical(ctx.data, "workload_kind")
    if kind == EVAL_KIND:
        if not ctx.get("workflow.file"):
            ctx.error(
                kind_path,
                f"workload_kind={EVAL_KIND} runs a managed eval manifest; it needs workflow.file",
                "name the eval manifest in workflow.file, or use workload_kind: rayjob",
            )
        # The wrapper of an eval places a RayJob.
        kind = RAYJOB
    if engine and kind and engine != kind:
        ctx.error(
            kind_path,
            f"engine={engine} conflicts with workload_kind={kind}",
            f"remove `{kind_path}` or make it agree with `{engine_path}`",
        )
    parts = [f"engine={engine}"] if engine else []
    if kind:
        parts.append(f"workload_kind={kind}")
    ctx.intent = "/".join(parts) or "implicit dispatch"
    if engine or kind:
        ctx.engine = engine or kind
        return
    # Inference, as the reference does it: any Ray-shaped field selects Ray.
    workers = ctx.get("compute.workers")
    ray_shaped = (
        (isinstance(workers, int) and workers > 1)
        or ctx.has("compute.gpus_per_worker")
        or bool(ctx.get("runtime.pip"))
    )
    ctx.engine = RAYJOB if ray_shaped else JOB


def check_name(ctx: Context) -> None:
    # A name that is written but unusable (`name: 12`) already has its own diagnostic.
    if ctx.name or ("name",) in ctx.source.keys or ("run", "name") in ctx.source.keys:
        return
    # The reference's dispatch names the Ray path `ray` (its engine before rayjob).
    ctx.error(
        "name",
        f"{'ray' if ctx.engine == RAYJOB else JOB} runs require NAME",
        "set `name:` in the config, or pass `tau run NAME --config PATH`",
    )


def check_ray(ctx: Context) -> None:
    """Fields and values a RayJob does not accept."""
    if ctx.has("compute.gpus"):
        ctx.error(
            "compute.gpus",
            "compute.gpus is only supported for engine: job; use compute.gpus_per_worker for Ray",
        )
    nodes = ctx.get("execution.nodes")
    if isinstance(nodes, int) and nodes > 1:
        ctx.error(
            "execution.nodes",
            "execution.nodes is for engine: job; use compute.workers for RayJob pod count",
        )
    # A wrapper with workflow.file runs the manifest's trainer, named by its main script
    # (run.main_script > workflow.main_script > workflow.script > the entrypoint): the
    # workflow rules require that one instead.
    if ctx.entrypoint is None and not ctx.get("workflow.file"):
        ctx.error(
            "entrypoint",
            "engine=ray requires run.entrypoint",
            "set `entrypoint:` to the driver script, relative to this file",
        )
    data_pvc, result_pvc = ctx.get("storage.data_pvc"), ctx.get("storage.result_pvc")
    if data_pvc and result_pvc and data_pvc != result_pvc:
        ctx.error(
            "storage.result_pvc",
            "storage.result_pvc cannot differ from storage.data_pvc for Ray run configs",
        )
    for path in ("storage.volumes", "storage.mounts"):
        if ctx.get(path):
            ctx.error(
                path,
                "ray run configs support storage.data_pvc/output, but not storage.volumes/mounts",
            )
    for path in (
        "run.ttl_seconds_after_finished",
        "run.execution_deadline_seconds",
        "run.source",
        "storage.image_assets",
        "runtime.working_dir",
    ):
        if ctx.has(path):
            ctx.error(path, f"{path} requires engine: job and direct dispatch")
    if ctx.get("policy.clear_node_selector"):
        ctx.error(
            "policy.clear_node_selector",
            "policy.clear_node_selector requires engine: job; RayJobs cannot clear "
            "profile/topology node selectors",
        )
    mode = ctx.get("compute.gpu_resource_mode")
    if mode == "dra" and not ctx.get("workflow.file"):
        # A managed workflow renders DRA claims (tau.k8s.dra); a direct RayJob does not.
        ctx.error(
            "compute.gpu_resource_mode",
            "engine=rayjob cannot use "
            'compute.gpu_resource_mode="dra"; RayJobs support device-plugin or mig GPUs',
        )
    if mode == "mig" and not ctx.get("compute.mig_profile"):
        ctx.error(
            "compute.gpu_resource_mode",
            "compute.gpu_resource_mode: mig requires compute.mig_profile; without a profile "
            "the workers would request full GPUs",
            "set compute.mig_profile to the MIG slice, e.g. 1g.18gb",
        )
    launcher = ctx.get("execution.launcher")
    if launcher == "torchrun":
        ctx.error(
            "execution.launcher",
            "execution.launcher torchrun is for engine: job; "
            "Ray Train manages distributed init via TorchConfig",
        )
    elif launcher == "python":
        ctx.error(
            "execution.launcher",
            "execution.launcher python is for engine: job; use ray-train for engine: rayjob",
        )


def check_job(ctx: Context) -> None:
    """Fields and values a direct Job does not accept."""
    intent = ctx.intent
    workers = ctx.get("compute.workers")
    if isinstance(workers, int) and workers > 1:
        ctx.error(
            "compute.workers",
            f"{intent} cannot set compute.workers={workers}; use "
            "engine: rayjob or remove compute.workers",
        )
    if ctx.has("compute.gpus_per_worker"):
        ctx.error(
            "compute.gpus_per_worker",
            f"{intent} cannot set compute.gpus_per_worker; "
            "use compute.gpus for a direct Job or switch to engine: rayjob",
        )
    if ctx.get("runtime.pip"):
        ctx.error(
            "runtime.pip",
            f"{intent} cannot set runtime.pip; use engine: rayjob or "
            "bake dependencies into the image",
        )
    for path in _RAY_RESOURCE_FIELDS:
        if ctx.has(path):
            plain = "compute." + path.split("_", 1)[1]
            ctx.error(
                path,
                f"{intent} cannot set {path}; jobs are single-pod, so use "
                f"{plain} or switch to engine: rayjob",
            )
    if ctx.has("compute.mig_profile"):
        ctx.error(
            "compute.mig_profile",
            f"{intent} cannot set compute.mig_profile; switch to engine: rayjob",
        )
    mode = ctx.get("compute.gpu_resource_mode")
    if mode == "mig" or (mode == "dra" and not ctx.get("workflow.file")):
        ctx.error(
            "compute.gpu_resource_mode",
            f"{intent} cannot use compute.gpu_resource_mode="
            f'"{mode}"; direct Jobs support device-plugin GPUs',
        )
    if ctx.has("run.working_dir"):
        ctx.error(
            "run.working_dir",
            "run.working_dir is not supported with engine: job.",
            "run.working_dir ships a project archive to a Ray cluster: use run.source (an "
            "immutable source image) for a Job, or switch to engine: rayjob",
        )
    data_pvc, result_pvc = ctx.get("storage.data_pvc"), ctx.get("storage.result_pvc")
    if data_pvc and result_pvc and data_pvc != result_pvc:
        ctx.error(
            "storage.result_pvc",
            "storage.result_pvc cannot differ from storage.data_pvc for job run configs",
        )
    if data_pvc and ctx.get("storage.volumes"):
        ctx.error(
            "storage.volumes",
            "storage.data_pvc cannot be combined with storage.volumes for job run configs",
        )
    retries = ctx.get("resilience.max_retries")
    if ctx.has("run.execution_deadline_seconds") and isinstance(retries, int) and retries > 0:
        ctx.error(
            "run.execution_deadline_seconds",
            "run.execution_deadline_seconds is not allowed together with Tau retry "
            f"(resilience.max_retries={retries}): a deadline failure is not retryable and "
            "each resubmit would restart the clock",
            "remove one of run.execution_deadline_seconds or resilience.max_retries",
        )
    launcher = ctx.get("execution.launcher")
    if launcher in ("ray-train", "ray-tune") and ctx.intent == "implicit dispatch":
        ctx.error(
            "execution.launcher",
            f'execution.launcher "{launcher}" requires engine: '
            "rayjob; set engine: rayjob explicitly",
        )
    elif launcher in ("ray-train", "ray-tune"):
        ctx.error(
            "execution.launcher",
            f'execution.launcher "{launcher}" requires engine: '
            "rayjob (needs a Ray cluster); got engine: job",
        )
    nodes = ctx.get("execution.nodes")
    if isinstance(nodes, int) and nodes > 1 and launcher != "torchrun":
        ctx.error(
            "execution.nodes",
            f"{intent} with execution.nodes={nodes} requires execution.launcher=torchrun",
        )


def check_launcher(ctx: Context) -> None:
    """Launcher-scoped fields shared by both engines."""
    launcher = ctx.get("execution.launcher") or ("python" if ctx.engine == JOB else "ray-train")
    ppn = ctx.get("execution.processes_per_node")
    if isinstance(ppn, int) and ppn > 1 and launcher != "torchrun":
        ctx.error(
            "execution.processes_per_node",
            "execution.processes_per_node > 1 requires execution.launcher: torchrun",
        )
    if launcher != "ray-tune":
        for name in _TUNE_FIELDS:
            if ctx.has(f"execution.{name}"):
                ctx.error(
                    f"execution.{name}",
                    "execution.metric/mode/num_samples/"
                    "max_concurrent_trials require execution.launcher: ray-tune",
                )
    else:
        if not ctx.get("execution.metric"):
            ctx.error(
                "execution.launcher",
                "execution.metric is required for launcher: ray-tune",
                "name the metric the trials report, e.g. `metric: loss`",
                shown="execution.metric",
            )
        if not ctx.get("execution.configs"):
            ctx.error(
                "execution.launcher",
                "execution.configs is required for launcher: ray-tune (defines the search space)",
                shown=_CONFIGS,
            )
    entry_path, entry = ctx.entry_path, ctx.entrypoint
    if launcher == "torchrun" and isinstance(entry, str) and not entry.endswith(".py"):
        ctx.error(
            entry_path,
            f'run.entrypoint "{entry}" must be a .py file with '
            "execution.launcher: torchrun, which runs it under python3; point it at a Python "
            "entrypoint or drop the launcher",
        )
    configs = ctx.get("execution.configs")
    if isinstance(configs, dict):
        _check_configs(ctx, launcher, configs)


def _check_configs(ctx: Context, launcher: str, configs: dict[str, object]) -> None:
    if launcher in ("python", "torchrun"):
        seen: dict[str, str] = {}
        for key, value in configs.items():
            path = ("execution", "configs", key)
            if not _FLAG_KEY.match(key):
                ctx.error(
                    path,
                    f'key "{key}" is invalid; must match [A-Za-z0-9][A-Za-z0-9_.-]*',
                    shown=_CONFIGS,
                )
                continue
            if value is None:
                ctx.error(
                    path,
                    f'key "{key}" has null value; use empty string for a bare flag',
                    shown=_CONFIGS,
                )
            elif isinstance(value, dict | list):
                kind = "map" if isinstance(value, dict) else "list"
                ctx.error(
                    path,
                    f'key "{key}" has non-scalar value (type {kind}); only string, int, float, '
                    "and bool are allowed",
                    f"execution.launcher {launcher} passes each key as one --flag value",
                    shown=_CONFIGS,
                )
            if launcher == "torchrun":
                flag = key.lower().replace("_", "-")
                if flag in _TORCHRUN_OWNED:
                    ctx.error(
                        path,
                        f'execution.configs: "{key}" is a Tau-managed torchrun flag '
                        "and cannot be overridden",
                        shown=_CONFIGS,
                    )
                elif flag in seen:
                    ctx.error(
                        path,
                        f'execution.configs: "{key}" and "{seen[flag]}" are the same flag '
                        f"(canonical: --{flag})",
                        "keep one of them",
                        shown=_CONFIGS,
                    )
                seen.setdefault(flag, key)
    elif launcher == "ray-train":
        for key, value in configs.items():
            path = ("execution", "configs", key)
            if key not in _RAY_TRAIN_SECTIONS:
                ctx.error(
                    path,
                    f'execution.configs: "{key}" is not a valid Ray Train config section; use '
                    "torch_config, scaling_config, or failure_config",
                    shown=_CONFIGS,
                )
            elif not isinstance(value, dict):
                ctx.error(path, f"execution.configs.{key} must be a map, not a scalar or list")
            elif key == "scaling_config":
                for owned in ("num_workers", "resources_per_worker"):
                    if owned in value:
                        ctx.error(
                            (*path, owned),
                            f"execution.configs.scaling_config.{owned} is Tau-managed (derived "
                            "from compute.workers × gpus_per_worker); remove it",
                        )
