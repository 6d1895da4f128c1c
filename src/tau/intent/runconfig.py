"""The typed run config: what `validate` returns, shaped like spec/tau-run-config.schema.json.

Pure. Written by hand rather than generated: every alias of the schema (`script`,
`run.entrypoint`, `run.image`, `workload_kind`, `policy.priority`, ...) is collapsed into one
canonical field here, which is exactly where the type differs from the schema.
tests/test_runconfig.py pins the type to the schema: every schema field is a field here or a
listed alias, and every schema default is the default here.

Typed NamedTuples rather than frozen dataclasses: both are immutable and fully typed, but the
dataclass decorator generates and execs five methods per class at import, ~10 ms for these
sixteen classes, which every command that reads a config would pay; the NamedTuples take
~2 ms (bench/cli_speed.py measures it; a pydantic model costs ~200 ms).

Defaults live here and nowhere else: a field whose unset value means "the default" carries
the default; a field where unset differs from any value (compute.gpus) is optional.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (milliseconds for a module of them), and this is imported
# by every command that reads a tau.yaml.
from typing import Any, NamedTuple

JOB = "job"
RAYJOB = "rayjob"

JOB_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.54.0-cuda13.0"
RAY_GPU_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0"
RAY_CPU_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.54.0"
DEFAULT_RETRY_ON = ("Preempted", "Evicted")
DEFAULT_BACKOFF_INITIAL = "30s"
DEFAULT_BACKOFF_MAX = "5m"
DEFAULT_NSYS_DURATION = "2m"
DEFAULT_TTL_SECONDS = 28800

#: Written path → canonical path, in precedence order per canonical path: the first non-blank
#: value wins (the contract's `configToDispatch`). Workload kinds collapse into the engine.
ALIASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("name", ("run.name", "name")),
    ("engine", ("run.engine", "engine")),
    ("entrypoint", ("run.entrypoint", "run.script", "entrypoint", "script")),
    ("runtime.image", ("runtime.image", "run.image", "image")),
    ("run.main_script", ("run.main_script", "workflow.main_script", "workflow.script")),
    (
        "workload_kind",
        ("workflow.workload_kind", "run.workload_kind", "compute.workload_kind"),
    ),
    ("policy.priority_tier", ("policy.priority_tier", "policy.priority")),
)

#: A mapping of the config kept as (key, value) pairs in written order, so the type stays frozen.
Pairs = tuple[tuple[str, Any], ...]


class Source(NamedTuple):
    """run.source: an immutable, digest-pinned source image unpacked for a Job."""

    image: str | None = None
    path: str | None = None


class Run(NamedTuple):
    """run.*: the Job and Ray extras (its identity aliases are collapsed to the top level)."""

    main_script: str | None = None
    smoke_pairs: int | None = None
    source: Source | None = None
    ttl_seconds_after_finished: int = DEFAULT_TTL_SECONDS
    execution_deadline_seconds: int | None = None
    working_dir: str | None = None
    working_dir_excludes: tuple[str, ...] = ()


class Workflow(NamedTuple):
    """workflow.*: managed-workflow fields; direct configs only ever see them rejected."""

    file: str | None = None
    extra_scripts: tuple[str, ...] = ()
    upstream_checkpoint: str | None = None
    secret_payload: str | None = None
    smoke_pairs: int | None = None


class Security(NamedTuple):
    mode: str | None = None


class Runtime(NamedTuple):
    image: str | None = None
    working_dir: str | None = None
    pip: tuple[str, ...] = ()
    env: Pairs = ()
    env_secret: Pairs = ()
    env_kv: Pairs = ()
    security: Security = Security()


class Resources(NamedTuple):
    """CPU and memory requests and limits as written (Kubernetes quantities)."""

    cpu_request: str | None = None
    memory_request: str | None = None
    cpu_limit: str | None = None
    memory_limit: str | None = None


class Compute(NamedTuple):
    workers: int = 1
    #: GPUs per Job node; None (unset) lets the preset's shape decide.
    gpus: int | None = None
    gpus_per_worker: int = 1
    cpu_workers: int | None = None
    gpu_resource_mode: str = "device-plugin"
    mig_profile: str | None = None
    #: compute.{cpu,memory}_{request,limit}: the Job container, or every Ray pod.
    resources: Resources = Resources()
    #: compute.head_* and compute.worker_*.
    head: Resources = Resources()
    worker: Resources = Resources()


class Policy(NamedTuple):
    workspace: str | None = None
    namespace: str | None = None
    preset: str | None = None
    profile: str | None = None
    queue: str | None = None
    team: str | None = None
    lane: str | None = None
    gpu_class: str | None = None
    mode: str | None = None
    topology: str | None = None
    shape: str | None = None
    priority_tier: str | None = None
    topology_policy: str | None = None
    workload_priority_class: str | None = None
    pod_priority_class: str | None = None
    node_selector: Pairs = ()
    clear_node_selector: bool = False
    disable_default_priorities: bool = False
    preemptable: bool = False


class ImageAsset(NamedTuple):
    name: str
    image: str
    source_path: str
    mount_path: str


class Storage(NamedTuple):
    data_pvc: str | None = None
    result_pvc: str | None = None
    output: str | None = None
    publish: str | None = None
    volumes: tuple[str, ...] = ()
    mounts: tuple[str, ...] = ()
    image_assets: tuple[ImageAsset, ...] = ()
    checkpoint: str | None = None


class Profiler(NamedTuple):
    mode: str | None = None
    rank: str = "0"
    warmup: str | None = None
    #: Unset means DEFAULT_NSYS_DURATION under nsys (see `effective_duration`).
    duration: str | None = None

    @property
    def effective_duration(self) -> str | None:
        return self.duration or (DEFAULT_NSYS_DURATION if self.mode == "nsys" else None)


class Metrics(NamedTuple):
    history: tuple[str, ...] = ()
    offload_enabled: bool = False


class Experiment(NamedTuple):
    project: str | None = None
    name: str | None = None
    group: str | None = None
    title: str | None = None

    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The fields that are set, sorted by name: what labels and annotations carry."""
        found = (("group", self.group), ("name", self.name), ("project", self.project))
        return tuple((k, v) for k, v in (*found, ("title", self.title)) if v)


class Execution(NamedTuple):
    #: As written; `RunConfig.launcher` applies the engine's default.
    launcher: str | None = None
    processes_per_node: int = 1
    nodes: int = 1
    metric: str | None = None
    mode: str | None = None
    num_samples: int | None = None
    max_concurrent_trials: int | None = None
    configs: Pairs = ()
    allow_nccl_override: bool = False


class Resilience(NamedTuple):
    max_retries: int = 0
    retry_on: tuple[str, ...] = DEFAULT_RETRY_ON
    checkpoint_path: str | None = None
    backoff_initial: str = DEFAULT_BACKOFF_INITIAL
    backoff_max: str = DEFAULT_BACKOFF_MAX


class RunConfig(NamedTuple):
    """A validated direct run config with every alias collapsed into its canonical field."""

    name: str
    engine: str
    entrypoint: str | None = None
    run: Run = Run()
    workflow: Workflow = Workflow()
    runtime: Runtime = Runtime()
    compute: Compute = Compute()
    policy: Policy = Policy()
    storage: Storage = Storage()
    profiler: Profiler = Profiler()
    metrics: Metrics = Metrics()
    experiment: Experiment = Experiment()
    execution: Execution = Execution()
    resilience: Resilience = Resilience()

    @property
    def launcher(self) -> str:
        """execution.launcher, or the engine's default (python for a Job, ray-train for Ray)."""
        return self.execution.launcher or ("python" if self.engine == JOB else "ray-train")

    @property
    def image(self) -> str:
        """runtime.image, or the engine's default image."""
        if self.runtime.image:
            return self.runtime.image
        if self.engine == JOB:
            return JOB_IMAGE
        return RAY_GPU_IMAGE if self.compute.gpus_per_worker > 0 else RAY_CPU_IMAGE

    @property
    def checkpoint_path(self) -> str:
        """Where a retried or resumed attempt resumes from (resilience.checkpoint_path)."""
        return self.resilience.checkpoint_path or f"/data/checkpoints/finetunes/{self.name}"


def _get(data: dict[str, Any], group: str) -> dict[str, Any]:
    value = data.get(group)
    return value if isinstance(value, dict) else {}


def _pairs(value: Any) -> Pairs:
    return tuple(value.items()) if isinstance(value, dict) else ()


def _resources(compute: dict[str, Any], prefix: str) -> Resources:
    return Resources(
        compute.get(f"{prefix}cpu_request"),
        compute.get(f"{prefix}memory_request"),
        compute.get(f"{prefix}cpu_limit"),
        compute.get(f"{prefix}memory_limit"),
    )


def build(data: dict[str, Any], *, name: str, engine: str, entrypoint: str | None) -> RunConfig:
    """The RunConfig of schema-checked data (aliases already collapsed by the caller's rules).

    Args:
        data: the schema walker's output: well-typed values only, unknown keys dropped.
        name, engine, entrypoint: the canonical identity, chosen by alias precedence.
    """
    run, wf, rt = _get(data, "run"), _get(data, "workflow"), _get(data, "runtime")
    cp, po, st = _get(data, "compute"), _get(data, "policy"), _get(data, "storage")
    pr, me, ex = _get(data, "profiler"), _get(data, "metrics"), _get(data, "experiment")
    xe, rs = _get(data, "execution"), _get(data, "resilience")
    src = run.get("source")
    main_script = run.get("main_script") or wf.get("main_script") or wf.get("script")
    return RunConfig(
        name=name,
        engine=engine,
        entrypoint=entrypoint,
        run=Run(
            main_script=main_script,
            smoke_pairs=run.get("smoke_pairs"),
            source=Source(src.get("image"), src.get("path")) if isinstance(src, dict) else None,
            ttl_seconds_after_finished=run.get("ttl_seconds_after_finished") or DEFAULT_TTL_SECONDS,
            execution_deadline_seconds=run.get("execution_deadline_seconds"),
            working_dir=run.get("working_dir"),
            working_dir_excludes=tuple(run.get("working_dir_excludes") or ()),
        ),
        workflow=Workflow(
            file=wf.get("file"),
            extra_scripts=tuple(wf.get("extra_scripts") or ()),
            upstream_checkpoint=wf.get("upstream_checkpoint"),
            secret_payload=wf.get("secret_payload"),
            smoke_pairs=wf.get("smoke_pairs"),
        ),
        runtime=Runtime(
            image=rt.get("image") or run.get("image") or data.get("image") or None,
            working_dir=rt.get("working_dir"),
            pip=tuple(rt.get("pip") or ()),
            env=_pairs(rt.get("env")),
            env_secret=_pairs(rt.get("env_secret")),
            env_kv=_pairs(rt.get("env_kv")),
            security=Security(_get(rt, "security").get("mode")),
        ),
        compute=Compute(
            workers=cp.get("workers") or 1,
            gpus=cp.get("gpus"),
            gpus_per_worker=1 if cp.get("gpus_per_worker") is None else cp["gpus_per_worker"],
            cpu_workers=cp.get("cpu_workers"),
            gpu_resource_mode=cp.get("gpu_resource_mode") or "device-plugin",
            mig_profile=cp.get("mig_profile"),
            resources=_resources(cp, ""),
            head=_resources(cp, "head_"),
            worker=_resources(cp, "worker_"),
        ),
        policy=Policy(
            workspace=po.get("workspace"),
            namespace=po.get("namespace"),
            preset=po.get("preset"),
            profile=po.get("profile"),
            queue=po.get("queue"),
            team=po.get("team"),
            lane=po.get("lane"),
            gpu_class=po.get("gpu_class"),
            mode=po.get("mode"),
            topology=po.get("topology"),
            shape=po.get("shape"),
            priority_tier=po.get("priority_tier") or po.get("priority") or None,
            topology_policy=po.get("topology_policy"),
            workload_priority_class=po.get("workload_priority_class"),
            pod_priority_class=po.get("pod_priority_class"),
            node_selector=_pairs(po.get("node_selector")),
            clear_node_selector=bool(po.get("clear_node_selector")),
            disable_default_priorities=bool(po.get("disable_default_priorities")),
            preemptable=bool(po.get("preemptable")),
        ),
        storage=Storage(
            data_pvc=st.get("data_pvc"),
            result_pvc=st.get("result_pvc"),
            output=st.get("output"),
            publish=st.get("publish"),
            volumes=tuple(st.get("volumes") or ()),
            mounts=tuple(st.get("mounts") or ()),
            image_assets=tuple(
                ImageAsset(
                    a.get("name", ""),
                    a.get("image", ""),
                    a.get("source_path", ""),
                    a.get("mount_path", ""),
                )
                for a in st.get("image_assets") or ()
            ),
            checkpoint=st.get("checkpoint"),
        ),
        profiler=Profiler(
            mode=pr.get("mode"),
            rank=str(pr.get("rank") or "0"),
            warmup=pr.get("warmup"),
            duration=pr.get("duration"),
        ),
        metrics=Metrics(
            history=tuple(me.get("history") or ()),
            offload_enabled=bool(_get(me, "offload").get("enabled")),
        ),
        experiment=Experiment(ex.get("project"), ex.get("name"), ex.get("group"), ex.get("title")),
        execution=Execution(
            launcher=xe.get("launcher"),
            processes_per_node=xe.get("processes_per_node") or 1,
            nodes=xe.get("nodes") or 1,
            metric=xe.get("metric"),
            mode=xe.get("mode"),
            num_samples=xe.get("num_samples"),
            max_concurrent_trials=xe.get("max_concurrent_trials"),
            configs=_pairs(xe.get("configs")),
            allow_nccl_override=bool(xe.get("allow_nccl_override")),
        ),
        resilience=Resilience(
            max_retries=rs.get("max_retries") or 0,
            retry_on=tuple(rs.get("retry_on") or ()) or DEFAULT_RETRY_ON,
            checkpoint_path=rs.get("checkpoint_path"),
            backoff_initial=rs.get("backoff_initial") or DEFAULT_BACKOFF_INITIAL,
            backoff_max=rs.get("backoff_max") or DEFAULT_BACKOFF_MAX,
        ),
    )
