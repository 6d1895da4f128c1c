"""Resolve a validated config and a preset catalog into a Plan.

Pure: the entrypoint bytes, the catalog and any cluster facts arrive as arguments. This is
where presets meet explicit policy, the GPU count per node is decided and the output path meets
the mounts. Every rule that can reject the config at this stage lives in
`tau.intent.validate.dryrun` (stage "client"); resolve only derives values and reports what those
rules return, so an exception out of here is a bug, never a user error.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tau.errors import Diagnostic
from tau.intent.presets import Catalog, Preset, label_normal
from tau.intent.runconfig import JOB, RunConfig
from tau.intent.validate import ValidConfig, dryrun
from tau.intent.validate.env import parse_secret_ref
from tau.intent.validate.findings import Findings
from tau.k8s import dra, paths
from tau.plan import metrics_offload
from tau.plan.model import (
    UNRESOLVED_NAMESPACE,
    UNRESOLVED_QUEUE,
    Capture,
    Environment,
    ImageAsset,
    JobShape,
    Placement,
    Plan,
    PodResources,
    Profiler,
    RayShape,
    Resources,
    Script,
    SecretRef,
    Storage,
    Tune,
    Volume,
)

DEFAULT_PRIORITY = "taugrid-default"
HIGH_PRIORITY = "taugrid-priority"
_MANAGED_SERIES = ("ndm-a100-v4", "nd-h200-v5")
# policy.* fields a preset also sets, with the preset attribute they override.
_OVERRIDABLE = (
    ("team", "team"),
    ("lane", "lane"),
    ("mode", "mode"),
    ("topology", "placement"),
    ("shape", "shape"),
    ("gpu_class", "gpu_class"),
    ("profile", "profile"),
    ("workload_priority_class", "workload_priority_class"),
    ("pod_priority_class", "pod_priority_class"),
)


class _Findings(Findings):
    """The client-stage rules of resolve collect through the one Findings class."""

    def __init__(self, valid: ValidConfig) -> None:
        super().__init__(valid.source)
        self.valid = valid
        self.config: RunConfig = valid.config

    def report(self, problems: list[dryrun.Problem]) -> None:
        for problem in problems:
            if problem.warning:
                self.warn(problem.path, problem.message, problem.hint)
            else:
                self.error(problem.path, problem.message, problem.hint)


@dataclass(frozen=True)
class Resolved:
    """A Plan with the warnings resolving it raised."""

    plan: Plan
    warnings: tuple[Diagnostic, ...]
    placeholders: tuple[str, ...]


def config_hash(valid: ValidConfig) -> str:
    """sha256 of the validated config as canonical JSON; resume compares it."""
    canonical = json.dumps(valid.data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _placement(f: _Findings, catalog: Catalog) -> Placement:
    policy = f.config.policy
    preset: Preset | None = None
    name = policy.preset
    if name:
        preset = catalog.find(name)
        f.report(dryrun.preset_usable(name, preset, catalog))
        if preset is not None and preset.disabled:
            preset = None
    merged: dict[str, str] = {}
    for key, attr in _OVERRIDABLE:
        explicit = str(getattr(policy, key) or "")
        inherited = getattr(preset, attr) if preset else ""
        if preset:
            f.report(dryrun.preset_override(key, explicit, preset, inherited))
        merged[key] = explicit or inherited or ""
    tier = policy.priority_tier or ""
    team, lane = label_normal(merged["team"]), label_normal(merged["lane"])
    mode = label_normal(merged["mode"]) or ("elastic" if lane == "elastic" else "fixed")
    if not lane and mode == "elastic":
        lane = "elastic"
    queue = str(policy.queue or (preset.queue if preset else "") or "")
    topology_annotations = bool(preset and preset.topology_name)
    if preset and policy.queue and policy.queue != preset.queue:
        topology_annotations = False  # a different queue is not the preset's topology
        if not policy.team:
            team = label_normal(policy.queue.split("-", 1)[0])
    if not queue and (team or lane):
        queue = "jobqueue"
    gpu_class = label_normal(merged["gpu_class"])
    aliases = {
        "a100-nvlink-80gb": "a100-80gb",
        "h100-standalone-95gb": "h100-95gb",
        "h200-nvlink-141gb": "h200-141gb",
    }
    gpu_class = aliases.get(gpu_class, gpu_class)
    f.report(dryrun.topology(lane, mode, gpu_class, merged["topology"], tier))
    f.report(
        dryrun.elastic(
            mode,
            preemptable=bool(policy.preemptable or (preset and preset.reclaimable)),
            checkpoint=bool(
                (preset and preset.checkpoint_every) or f.config.resilience.checkpoint_path
            ),
            mode_path=next(
                (f"policy.{k}" for k in ("mode", "lane", "preset") if getattr(policy, k)),
                "policy",
            ),
        )
    )
    workload_pc, pod_pc = merged["workload_priority_class"], merged["pod_priority_class"]
    # The tier is applied before, and regardless of, disable_default_priorities (§3.4).
    if tier == "priority":
        workload_pc = pod_pc = HIGH_PRIORITY
    elif not policy.disable_default_priorities:
        if lane or team:
            workload_pc = workload_pc or DEFAULT_PRIORITY
            pod_pc = pod_pc or DEFAULT_PRIORITY
    else:
        workload_pc = policy.workload_priority_class or ""
        pod_pc = policy.pod_priority_class or ""
    selector = _node_selector(f, preset, gpu_class)
    placement = Placement(
        preset=preset.name if preset else "",
        profile=merged["profile"],
        team=team,
        lane=lane,
        mode=mode,
        topology=label_normal(merged["topology"]),
        gpu_class=gpu_class,
        queue=queue,
        cluster_queue=preset.cluster_queue if preset else "",
        resource_flavor=preset.resource_flavor if preset else "",
        kueue_topology=preset.topology_name if preset and topology_annotations else "",
        topology_annotations=topology_annotations,
        workload_priority_class=workload_pc,
        pod_priority_class=pod_pc,
        reclaimable=bool(preset and preset.reclaimable),
        preemptable=bool(policy.preemptable or (preset and preset.reclaimable)),
        description=preset.description if preset else "",
        explain=preset.explain if preset else "",
        source=catalog.source if preset else "",
        node_selector=tuple(sorted(selector.items())),
    )
    if _dra(f.config):
        placement = _dra_placement(placement, preset, explicit_queue=bool(policy.queue))
    return placement


def _dra(config: RunConfig) -> bool:
    """GPUs through DRA claims: compute.gpu_resource_mode dra (a MIG profile forces MIG)."""
    return config.compute.gpu_resource_mode == "dra" and not config.compute.mig_profile


def _dra_placement(p: Placement, preset: Preset | None, *, explicit_queue: bool) -> Placement:
    """The parallel DRA admission contract (the reference's WithDRAQueue and GPU queue mode).

    A preset of the shared GPU queue maps onto the DRA queue's ClusterQueue and the `-dra`
    flavor of its series; DRA flavors have no topology, so no Kueue topology annotations. The
    queue becomes the DRA queue unless policy.queue names one.
    """
    if preset is not None and _on_shared_gpu_queue(preset):
        series = preset.resource_flavor.removesuffix(dra.FLAVOR_SUFFIX)
        p = p._replace(
            cluster_queue=dra.DRA_CLUSTER_QUEUE,
            resource_flavor=series + dra.FLAVOR_SUFFIX if series else "",
            kueue_topology="",
        )
    if not explicit_queue and p.queue in ("", dra.SHARED_QUEUE):
        p = p._replace(queue=dra.DRA_QUEUE)
    return p._replace(topology_annotations=False)


def _on_shared_gpu_queue(preset: Preset) -> bool:
    """The preset routes to the shared GPU queue (or already the DRA one) on a managed series."""
    pairs = {
        dra.SHARED_QUEUE: dra.SHARED_CLUSTER_QUEUE,
        "": dra.SHARED_CLUSTER_QUEUE,
        dra.DRA_QUEUE: dra.DRA_CLUSTER_QUEUE,
    }
    if preset.queue not in pairs or preset.cluster_queue not in ("", pairs[preset.queue]):
        return False
    series = preset.resource_flavor.removesuffix(dra.FLAVOR_SUFFIX)
    return not series or series in _MANAGED_SERIES


def _node_selector(f: _Findings, preset: Preset | None, gpu_class: str) -> dict[str, str]:
    from tau.k8s import meta

    policy = f.config.policy
    selector: dict[str, str] = {}
    if not policy.clear_node_selector:
        flavor = preset.resource_flavor if preset else ""
        series = flavor.removesuffix("-dra")
        if series in _MANAGED_SERIES:
            selector[meta.AZURE_GPU_SERIES] = series
    # The GPU class is a placement contract, not a preset convenience: clearing keeps it.
    if gpu_class and gpu_class != "any":
        selector[meta.NODE_GPU_CLASS] = gpu_class
    for key, value in policy.node_selector:
        f.report(dryrun.node_selector_class(key, value, gpu_class))
        selector[key] = value
    return selector


def _job_gpus(f: _Findings, placement: Placement, preset_shape: str) -> int:
    """The GPU count per node of a direct Job (the reference's resolveDirectJobGPUCount)."""
    policy = f.config.policy
    count, problems = dryrun.job_gpus(
        f.config.compute.gpus,
        shape=policy.shape or preset_shape or "",
        shape_path="policy.shape" if policy.shape else "policy.preset",
        preset_named=policy.preset or "",
        preset=placement.preset,
        profile=placement.profile,
        intent=_intent(f.valid),
    )
    f.report(problems)
    return count


def _intent(valid: ValidConfig) -> str:
    """How the engine was chosen, as Job dispatch errors quote it: an explicit engine or not."""
    return f"engine={valid.engine}" if valid.explicit_engine else "implicit dispatch"


def _resources(written: Any) -> Resources:
    return Resources(
        written.cpu_request, written.memory_request, written.cpu_limit, written.memory_limit
    )


def _storage(f: _Findings, engine: str, name: str) -> dict[str, Any]:
    storage = f.config.storage
    data_pvc = storage.data_pvc or storage.result_pvc
    volumes: list[Volume] = []
    declared = {}
    for spec in storage.volumes:
        vol, _, claim = spec.partition("=")
        declared[vol] = claim.removeprefix("pvc:")
    mounts = storage.mounts
    f.report(dryrun.mounts(declared, mounts))
    for spec in mounts:
        vol, _, rest = spec.partition(":")
        path, _, access = rest.partition(":")
        if vol in declared and not any(v.path == path for v in volumes):
            volumes.append(Volume(vol, declared[vol], path, access == "ro"))
    if len(declared) == 1 and not mounts:
        ((vol, claim),) = declared.items()
        volumes.append(Volume(vol, claim, paths.DATA_ROOT))
    if data_pvc:
        volumes.insert(0, Volume("data", data_pvc, paths.DATA_ROOT))
    pvc_paths = [(v.path, v.claim) for v in volumes]
    output = storage.output
    # The default output belongs to the data (or result) PVC; explicit volumes/mounts alone
    # get none, since nothing says which of them holds results.
    if not output and data_pvc:
        output = f"/data/checkpoints/workflows/{name}" if engine == "job" else f"/data/{name}"
    f.report(dryrun.output_on_pvc(output or "", [p for p, _ in pvc_paths]))
    f.report(dryrun.checkpoint_on_data(storage.checkpoint, [p for p, _ in pvc_paths], name))
    match = [c for p, c in pvc_paths if output and (output == p or output.startswith(p + "/"))]
    result_pvc = match[0] if match else None
    return {
        "data_pvc": data_pvc,
        "volumes": tuple(volumes),
        "output": output,
        "result_pvc": result_pvc,
    }


def resolve(
    valid: ValidConfig,
    catalog: Catalog,
    script: Script | None,
    *,
    namespace: str | None = None,
    queue: str | None = None,
    service_account: str | None = None,
    retry_env: dict[str, str] | None = None,
    project: tuple[bytes, str] | None = None,
    platform: metrics_offload.Platform | None = None,
    metrics_session: str | None = None,
) -> Resolved:
    """Turn a validated config into a Plan.

    Args:
        valid: the validated config.
        catalog: the preset catalog (see presets.load_catalog).
        script: the entrypoint read from disk, or None when the image's own command runs.
        namespace, queue: cluster facts when known (submit); None gives placeholders.
        service_account: the workspace's (or --service-account); the client dry-run passes
            UNRESOLVED_SERVICE_ACCOUNT unless the flag names one.
        retry_env: the TAU_RETRY_* / TAU_RESUME_FROM values of a retry or resume attempt;
            they replace any user values of the same keys.
        project: (zip, module) of run.working_dir, read by preview.read_project.
        platform: what the workspace and the process env set for metrics offload; None is a
            client dry-run with no env (placeholders).
        metrics_session: the submission's metrics session id; None derives one from the
            config (a dry-run render stays byte-for-byte reproducible).

    Raises:
        ConfigError: every render-time problem, with the warnings found on the way.
    """
    _not_built(valid.config)
    f = _Findings(valid)
    config = valid.config
    name, engine = config.name, config.engine
    f.report(dryrun.profiler_engine(engine, config.profiler.mode))
    placement = _placement(f, catalog)
    preset = catalog.find(config.policy.preset or "") if placement.preset else None
    launcher = config.launcher
    nodes = config.execution.nodes
    ppn = config.execution.processes_per_node
    gpus = 0
    if engine == "job":
        before = len(f.errors)
        gpus = _job_gpus(f, placement, preset.shape if preset else "")
        if len(f.errors) == before:  # an unknown count is already reported as such
            f.report(dryrun.torchrun_gpu_count(launcher, ppn, gpus))
    f.report(dryrun.name_length(engine, name, nodes))
    entry = config.entrypoint
    shebang_script = False
    if engine == JOB and script is not None:
        explicit = config.execution.launcher
        f.report(dryrun.script_interpreter(explicit, script.filename, script.shebang, str(entry)))
        shebang_script = launcher == "python" and (
            dryrun.interpreter(explicit, script.filename, script.shebang) == "shebang"
        )
    storage = _storage(f, engine, name)
    offload = metrics_offload.resolve(
        f,
        config,
        output=storage["output"],
        result_pvc=storage["result_pvc"],
        volumes=storage["volumes"],
        config_hash=config_hash(valid),
        platform=platform or metrics_offload.Platform(),
        session=metrics_session,
        retry_env=retry_env or {},
    )
    secrets = []
    for env_name, ref in sorted(config.runtime.env_secret):
        secret, key = parse_secret_ref(ref) or ("", "")
        secrets.append(SecretRef(env_name, secret, key))
    placeholders = []
    if namespace is None:
        namespace = config.policy.namespace or (
            preset.namespace if engine == "rayjob" and preset else None
        )
        if not namespace:
            namespace = UNRESOLVED_NAMESPACE
            placeholders.append("namespace")
    if queue is None and not placement.queue:
        if engine == "job":
            placeholders.insert(0, "queue")
            placement = placement._replace(queue=UNRESOLVED_QUEUE)
        else:
            placement = placement._replace(queue=dra.SHARED_QUEUE)
    elif queue is not None:
        placement = placement._replace(queue=queue)
    placeholders.extend(metrics_offload.placeholders(offload))
    f.raise_errors()
    source = config.run.source
    compute, execution, profiler = config.compute, config.execution, config.profiler
    plan = Plan(
        name=name,
        engine=engine,
        namespace=namespace,
        service_account=service_account,
        image=config.image,
        placement=placement,
        launcher=launcher,
        script=script,
        config_hash=config_hash(valid),
        security_restricted=config.runtime.security.mode == "restricted",
        job=JobShape(
            gpus=gpus,
            nodes=nodes,
            processes_per_node=ppn,
            ttl_seconds=config.run.ttl_seconds_after_finished,
            execution_deadline=config.run.execution_deadline_seconds,
            working_dir=config.runtime.working_dir,
            shebang_script=shebang_script,
        ),
        ray=RayShape(
            workers=compute.workers,
            gpus_per_worker=compute.gpus_per_worker,
            cpu_workers=(compute.cpu_workers or 0) if engine == "rayjob" else 0,
            mig_profile=compute.mig_profile,
            pip=config.runtime.pip,
            project_zip=project[0] if project else None,
            project_module=project[1] if project else None,
        ),
        resources=PodResources(
            main=_resources(compute.resources),
            head=_resources(compute.head),
            worker=_resources(compute.worker),
        ),
        env=Environment(
            values=tuple(sorted(config.runtime.env)),
            secrets=tuple(secrets),
            launcher_configs=tuple(sorted(execution.configs)),
        ),
        storage=Storage(
            data_pvc=storage["data_pvc"],
            volumes=storage["volumes"],
            output=storage["output"],
            result_pvc=storage["result_pvc"],
            checkpoint_artifact=config.storage.checkpoint,
            source_image=source.image if source else None,
            source_path=source.path if source else None,
            source_entrypoint=entry if source else None,
            image_assets=tuple(
                ImageAsset(a.name, a.image, a.source_path, a.mount_path)
                for a in config.storage.image_assets
            ),
        ),
        tune=Tune(
            metric=execution.metric,
            mode=execution.mode,
            num_samples=execution.num_samples,
            max_concurrent=execution.max_concurrent_trials,
        ),
        profiler=Profiler(
            mode=profiler.mode,
            rank=profiler.rank,
            warmup=profiler.warmup,
            duration=profiler.effective_duration,
        ),
        capture=Capture(
            workspace=config.policy.workspace,
            experiment=config.experiment.pairs(),
            retry_env=tuple(sorted((retry_env or {}).items())),
        ),
        dra=_dra(config),
        metrics_offload=offload,
    )
    if valid.managed is not None:
        from tau.plan import managed

        plan = managed.apply(plan, valid.managed)
    if config.metrics.history:
        from tau.plan import metrics_history

        plan = metrics_history.apply(plan, config.metrics.history)
    return Resolved(plan, f.warnings, tuple(placeholders))


#: Config features the reference renders that this tau does not yet; refused, never ignored.
_NOT_BUILT = (("storage.publish", "staged artifact publishing"),)


def _not_built(config: RunConfig) -> None:
    from tau.errors import NotImplementedYet

    built = (config.storage.publish,)
    for (path, what), value in zip(_NOT_BUILT, built, strict=True):
        if value:
            raise NotImplementedYet(f"{path} ({what})")
