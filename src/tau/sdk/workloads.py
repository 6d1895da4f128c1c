"""`@tau.train` and `@tau.eval`: a Python function plus the intent of the run that executes it.

Pure, except that a config given as a path is read, and a handle's `.submit()` goes through
`tau.sdk.submission`. The decorator checks everything it can at once (a module with a bad
argument fails at import, pointing at its line, not at submit time), and builds the handle's
manifest right away so an unusable config, extra_manifest or env is refused there too.

Calling a handle runs the function here with a local, cwd-rooted Ctx; `.manifest()` is the
semantic intent (`tau python inspect`); `tau.sdk.generate` turns it into the run config.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from tau.k8s.names import DNS_1123_LABEL
from tau.sdk.config import (
    ConfigSource,
    deep_merge,
    load_config,
    merge_runtime_env,
    runtime_env_entries,
)
from tau.sdk.ctx import Ctx
from tau.sdk.entrypoints import USER_MODULE_SOURCE, EntrypointSpec, entrypoint_spec
from tau.sdk.errors import SdkError
from tau.sdk.manifest import (
    DEFAULT_CHECKPOINT_ARTIFACT,
    DEFAULT_WORKLOAD_KIND,
    EVAL_WORKLOAD_KIND,
    copy_block,
    validate_checkpoint_artifact,
    with_data_pvc,
)
from tau.sdk.mounts import normalize_mounts
from tau.sdk.overrides import COMPUTE_KEYS, nonblank_text, positive_int, selector_pairs

#: Keys the decorator's own arguments own; extra_manifest may not set them.
RESERVED_MANIFEST_KEYS = frozenset({"schema_version", "name", "compute", "eval", "entrypoint"})

_SECRET_PARTS = frozenset({"TOKEN", "TOKENS", "KEY", "KEYS"})
_SECRET_SUBSTRINGS = ("SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY")


def looks_secret(env_name: str) -> bool:
    """True for names like HF_TOKEN, DB_PASSWORD, OPENAI_API_KEY, SSH_KEY.

    TOKEN and KEY count as word parts only (`HF_TOKEN`, `GITHUBTOKEN`, `SSH_KEY`), so that
    TOKENIZERS_PARALLELISM or MONKEY_MODE stay ordinary settings.
    """
    upper = env_name.upper()
    if any(word in upper for word in _SECRET_SUBSTRINGS):
        return True
    parts = [p for p in re.split(r"[^A-Z0-9]+", upper) if p]
    return any(p in _SECRET_PARTS or p.endswith("TOKEN") for p in parts)


def refuse_literal_secrets(entries: Any, handle_name: str) -> None:
    """A secret-looking env name with a literal value would land in manifests, build artifacts
    and the cluster's objects in clear: refuse it (without repeating the value).
    """
    for entry in entries or ():
        if not isinstance(entry, Mapping) or "valueFrom" in entry:
            continue
        name = str(entry.get("name") or "")
        if looks_secret(name) and str(entry.get("value", "")) != "":
            raise SdkError(
                f"tau-py: env {name} of '{handle_name}' holds a literal value; pass it with "
                "tau.secret_from_env(...), tau.secret_from_file(...) or tau.secret_ref(...) so "
                "it never lands in a manifest"
            )


@dataclass(frozen=True)
class Placement:
    """Where and how the run is scheduled: the decorator's placement arguments."""

    namespace: str | None = None
    team: str | None = None
    preset: str | None = None
    lane: str | None = None
    queue: str | None = None
    gpu_class: str | None = None
    gpu_resource_mode: str | None = None
    node_selector: tuple[tuple[str, str], ...] = ()
    smoke_pairs: int = 0
    workload_kind: str = DEFAULT_WORKLOAD_KIND


def _compute_resources(**values: Any) -> dict[str, Any]:
    """Resource keyword arguments → `compute` keys, each checked (>= 1 / non-blank)."""
    out: dict[str, Any] = {}
    for arg, key in COMPUTE_KEYS.items():
        value = values.get(arg)
        if value is None:
            continue
        out[key] = positive_int(value, arg) if "cpu" in arg else nonblank_text(value, arg)
    return out


def _with_runtime(manifest: dict[str, Any], pip: Sequence[str] | None, env: Any) -> dict[str, Any]:
    entries = runtime_env_entries(env)
    if pip is None and not entries:
        return manifest
    runtime = copy_block(manifest, "runtime", "config/extra_manifest")
    if pip is not None:
        packages = [str(p) for p in pip]
        if not packages or any(not p.strip() for p in packages):
            raise SdkError("tau-py: runtime_pip must contain at least one non-empty package")
        runtime["pip"] = packages
    if entries:
        runtime["env"] = merge_runtime_env(runtime.get("env"), entries)
    return {**manifest, "runtime": runtime}


def _with_mounts(manifest: dict[str, Any], mounts: Sequence[Any] | None) -> dict[str, Any]:
    extra = normalize_mounts(mounts)
    if not extra:
        return manifest
    storage = copy_block(manifest, "storage", "config/extra_manifest")
    existing = storage.get("mounts") or []
    if not isinstance(existing, list):
        raise SdkError("tau-py: storage.mounts must be a list")
    storage["mounts"] = [*existing, *extra]
    return {**manifest, "storage": storage}


def _model_metadata(
    *,
    model: str | None,
    base_model: str | None,
    task: str | None,
    tags: Mapping[str, str] | None,
    primary_metric: str | None,
    metric_direction: str | None,
) -> dict[str, Any]:
    """The `model` block: registry metadata of the checkpoint the run produces."""
    meta: dict[str, Any] = {}
    if model:
        if model.strip() != model:
            raise SdkError("tau-py: model name must not be empty or have whitespace")
        if not DNS_1123_LABEL.match(model):
            raise SdkError(
                "tau-py: model name must use lowercase alphanumerics with internal hyphens"
            )
        meta["name"] = model
    if base_model:
        meta["base"] = base_model
    if task:
        meta["task"] = task
    if tags:
        clean: dict[str, str] = {}
        for key, value in tags.items():
            if not isinstance(key, str) or not key.strip() or key.strip() != key:
                raise SdkError(
                    "tau-py: model tag keys must be non-empty strings without surrounding "
                    "whitespace"
                )
            if "/" in key or ".." in key:
                raise SdkError("tau-py: model tag keys must not contain '/' or '..'")
            if not isinstance(value, str) or value.strip() != value:
                raise SdkError(
                    "tau-py: model tag values must be strings without surrounding whitespace"
                )
            clean[key] = value
        meta["tags"] = clean
    if primary_metric:
        if primary_metric.strip() != primary_metric or ".." in primary_metric:
            raise SdkError("tau-py: primary_metric must not have whitespace or '..'")
        meta["primary_metric"] = primary_metric
    if metric_direction:
        if metric_direction not in ("lower", "higher"):
            raise SdkError("tau-py: metric_direction must be 'lower' or 'higher'")
        meta["metric_direction"] = metric_direction
    return meta


def _with_model(manifest: dict[str, Any], meta: Mapping[str, Any]) -> dict[str, Any]:
    if not meta:
        return manifest
    block = copy_block(manifest, "model", "extra_manifest")
    for key, value in meta.items():
        if key == "tags":
            tags = block.get("tags") or {}
            if not isinstance(tags, dict):
                raise SdkError("tau-py: extra_manifest['model']['tags'] must be a dict")
            tags = dict(tags)
            for tag, tag_value in value.items():
                if tags.get(tag) is not None and tags[tag] != tag_value:
                    raise SdkError(
                        f"tau-py: model tag {tag!r} conflicts with extra_manifest value "
                        f"{tags[tag]!r}"
                    )
                tags[tag] = tag_value
            block["tags"] = tags
            continue
        if block.get(key) is not None and block[key] != value:
            raise SdkError(
                f"tau-py: model metadata {key!r}={value!r} conflicts with extra_manifest value "
                f"{block[key]!r}"
            )
        block[key] = value
    return {**manifest, "model": block}


def _with_checkpoint(manifest: dict[str, Any], artifact: str) -> dict[str, Any]:
    artifacts = copy_block(manifest, "artifacts", "extra_manifest")
    existing = artifacts.get("checkpoint")
    if existing is not None and existing != artifact:
        raise SdkError(
            f"tau-py: checkpoint_artifact={artifact!r} conflicts with "
            f"extra_manifest['artifacts']['checkpoint']={existing!r}"
        )
    artifacts["checkpoint"] = artifact
    return {**manifest, "artifacts": artifacts}


def _refuse_reserved(extra_manifest: Mapping[str, Any], decorator: str) -> None:
    collisions = sorted(RESERVED_MANIFEST_KEYS & set(extra_manifest))
    if collisions:
        raise SdkError(
            "tau-py: extra_manifest cannot override reserved keys "
            + ", ".join(collisions)
            + f" (these are owned by the {decorator} decorator kwargs to keep the local Ctx "
            "and the submitted manifest in sync)"
        )


def _source_path(fn: Callable[..., Any]) -> Path:
    try:
        return Path(inspect.getfile(fn)).resolve()
    except TypeError:
        raise SdkError(
            "tau-py: cannot determine source file of training function; @train must decorate "
            f"a function defined in a .py file (got {fn!r})"
        ) from None


def _call_signature(fn: Callable[..., Any], *, eval_handle: bool) -> inspect.Signature | None:
    """What calling the handle takes: the function's parameters after ctx (plus, for an eval,
    the keyword-only upstream_checkpoint the handle itself consumes).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(signature.parameters.values())[1:]
    if eval_handle:
        if any(p.name == "upstream_checkpoint" for p in params):
            raise SdkError(
                "tau-py: @tau.eval reserves upstream_checkpoint for local handle invocation; "
                "read it from ctx.upstream_checkpoint instead"
            )
        extra = inspect.Parameter(
            "upstream_checkpoint", inspect.Parameter.KEYWORD_ONLY, default=None
        )
        at = next(
            (i for i, p in enumerate(params) if p.kind is inspect.Parameter.VAR_KEYWORD),
            len(params),
        )
        params.insert(at, extra)
    return signature.replace(parameters=params)


class _Handle:
    """What train and eval handles share: identity, files, placement, submission."""

    kind: str = ""
    _name: str
    _fn: Callable[..., Any]
    _placement: Placement
    _source_path: Path
    _source_text: str | None = None
    _staged_scripts: tuple[tuple[Path, str], ...] = ()

    def _wrap(self, fn: Callable[..., Any], *, eval_handle: bool) -> None:
        functools.update_wrapper(self, fn, updated=())  # type: ignore[arg-type]
        signature = _call_signature(fn, eval_handle=eval_handle)
        if signature is not None:
            self.__signature__ = signature

    @property
    def name(self) -> str:
        """The workload name (the run and RayJob are named after it)."""
        return self._name

    @property
    def placement(self) -> Placement:
        return self._placement

    @property
    def source_path(self) -> Path:
        """The file the function is defined in (entrypoint mode: the entrypoint script)."""
        return self._source_path

    @property
    def staged_scripts(self) -> tuple[tuple[Path, str], ...]:
        """(local file, name in /script) of the extra scripts staged with the module."""
        return self._staged_scripts

    def source_bytes(self) -> bytes:
        """The bytes staged as tau_user_module.py: the module's file, or in entrypoint mode the
        generated module that calls the entrypoint.
        """
        if self._source_text is not None:
            return self._source_text.encode("utf-8")
        try:
            return self._source_path.read_bytes()
        except OSError as exc:
            raise SdkError(
                f"tau-py: cannot read the source of '{self._name}': {self._source_path}: "
                f"{exc.strerror}"
            ) from None

    def manifest(self) -> dict[str, Any]:
        raise NotImplementedError

    def submit(self, **kwargs: Any) -> int:
        """Submit this workload alone through the `tau run` path (returns the exit code 0;
        failures raise). Keywords: dry_run, kube_context, the override flags of
        `tau python submit` (namespace, queue, cpu_request, ...), and for an eval the
        absolute pod path upstream_checkpoint.
        """
        from tau.sdk.submission import submit_handle

        return submit_handle(self, **kwargs)

    def __repr__(self) -> str:
        return f"<tau {self.kind} handle {self._name!r}>"


class TrainHandle(_Handle):
    """A `@tau.train` function: call it to run locally, `.submit()` to run on the cluster."""

    _tau_train_handle = True
    kind = "train"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        gpus: int | None,
        workers: int | None,
        placement: Placement,
        data_pvc: str | None,
        resources: Mapping[str, Any],
        checkpoint_artifact: str,
        model: Mapping[str, Any],
        config: ConfigSource,
        runtime_pip: Sequence[str] | None,
        env: Any,
        mounts: Sequence[Any] | None,
        extra_manifest: Mapping[str, Any] | None,
        entrypoint: EntrypointSpec | None = None,
        source_path: Path | None = None,
    ) -> None:
        base = load_config(config)
        raw_compute = base.get("compute")
        compute = raw_compute if isinstance(raw_compute, dict) else {}
        resolved = name or str(base.get("name") or "")
        if not resolved:
            raise SdkError("tau-py: @tau.train requires name=... or config['name']")
        self._name = resolved
        self._gpus = int(gpus if gpus is not None else compute.get("gpus", 1))
        self._workers = int(workers if workers is not None else compute.get("workers", 1))
        if self._workers < 1:
            raise SdkError(f"tau-py: workers must be >= 1 (got {self._workers})")
        if placement.lane == "eval":
            raise SdkError(
                'tau-py: @tau.train cannot use lane="eval"; use @tau.eval for eval workloads.'
            )
        self._fn = fn
        self._placement = placement
        self._data_pvc = None if data_pvc is None else nonblank_text(data_pvc, "data_pvc")
        self._resources = dict(resources)
        self._checkpoint = validate_checkpoint_artifact(
            checkpoint_artifact, "tau-py: checkpoint_artifact"
        )
        self._model = dict(model)
        self._config = base
        self._runtime_pip = None if runtime_pip is None else tuple(runtime_pip)
        self._env = env
        self._mounts = list(mounts) if mounts else None
        self._extra_manifest = dict(extra_manifest or {})
        self._entrypoint = entrypoint
        if entrypoint is not None:
            self._source_text = USER_MODULE_SOURCE
            self._staged_scripts = entrypoint.staged_scripts
        self._source_path = source_path or _source_path(fn)
        self._wrap(fn, eval_handle=False)
        refuse_literal_secrets(
            (self.manifest().get("runtime") or {}).get("env"), self._name
        )  # builds the manifest once: every conflict is reported at decoration

    @property
    def gpus(self) -> int:
        return self._gpus

    @property
    def workers(self) -> int:
        return self._workers

    def manifest(self) -> dict[str, Any]:
        """The run's semantic intent: config, then the decorator's arguments over it."""
        m = load_config(self._config)
        m.setdefault("schema_version", 1)
        compute = copy_block(m, "compute", "config")
        compute["gpus"] = self._gpus
        if self._workers > 1 or "workers" in compute:
            compute["workers"] = self._workers
        compute.update(self._resources)
        m["name"] = self._name
        m["compute"] = compute
        m.setdefault("eval", {})
        if self._extra_manifest:
            _refuse_reserved(self._extra_manifest, "@train")
            m = deep_merge(m, self._extra_manifest)
        m = _with_runtime(m, self._runtime_pip, self._env)
        m = with_data_pvc(m, self._data_pvc)
        m = _with_mounts(m, self._mounts)
        m = _with_model(m, self._model)
        if self._entrypoint is not None:
            if "entrypoint" in m:
                raise SdkError("tau-py: manifest entrypoint is owned by tau.train(entrypoint=...)")
            m["entrypoint"] = self._entrypoint.manifest_block()
        return _with_checkpoint(m, self._checkpoint)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function here, now, with a Ctx rooted at the current directory."""
        if self._entrypoint is not None and len(args) == 1 and callable(args[0]) and not kwargs:
            raise SdkError(
                "tau.train(entrypoint=...) returns a train handle directly; do not use it as a "
                "decorator"
            )
        ctx = Ctx(
            name=self._name,
            gpus=self._gpus,
            workers=self._workers,
            smoke_pairs=self._placement.smoke_pairs,
            manifest=self.manifest(),
            is_remote=False,
        )
        return self._fn(ctx, *args, **kwargs)


class EvalHandle(_Handle):
    """A `@tau.eval` function: a CPU head, one GPU actor worker and N CPU workers."""

    _tau_eval_handle = True
    kind = "eval"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        after: str | None,
        gpus: int,
        cpu_workers: int,
        placement: Placement,
        data_pvc: str | None,
        resources: Mapping[str, Any],
        extra_manifest: Mapping[str, Any] | None,
    ) -> None:
        if not name:
            raise SdkError("tau-py: @tau.eval requires name=...")
        if cpu_workers < 1:
            raise SdkError(
                f"tau-py: @tau.eval cpu_workers must be >= 1 (got {cpu_workers}); the eval "
                "shape is a system head + 1 GPU actor worker + N CPU workers, and N=0 makes no "
                "sense (use @tau.train instead)"
            )
        if gpus < 1:
            raise SdkError(f"tau-py: @tau.eval gpus must be >= 1 (got {gpus})")
        self._name = name
        self._after = after
        self._gpus = int(gpus)
        self._cpu_workers = int(cpu_workers)
        self._fn = fn
        self._placement = placement
        self._data_pvc = None if data_pvc is None else nonblank_text(data_pvc, "data_pvc")
        self._resources = dict(resources)
        self._extra_manifest = dict(extra_manifest or {})
        self._source_path = _source_path(fn)
        self._wrap(fn, eval_handle=True)
        refuse_literal_secrets((self.manifest().get("runtime") or {}).get("env"), self._name)

    @property
    def after(self) -> str | None:
        """The name of the @tau.train whose checkpoint this eval reads."""
        return self._after

    @property
    def gpus(self) -> int:
        return self._gpus

    @property
    def cpu_workers(self) -> int:
        return self._cpu_workers

    def manifest(self) -> dict[str, Any]:
        """The eval's semantic intent (`eval.cpu_workers` marks the eval shape)."""
        compute: dict[str, Any] = {"gpus": self._gpus, **self._resources}
        block: dict[str, Any] = {"cpu_workers": self._cpu_workers}
        if self._after:
            block["upstream"] = self._after
        m: dict[str, Any] = {
            "schema_version": 1,
            "name": self._name,
            "compute": compute,
            "eval": block,
        }
        if self._extra_manifest:
            _refuse_reserved(self._extra_manifest, "@eval")
            m.update(load_config(self._extra_manifest))
        return with_data_pvc(m, self._data_pvc)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the function here with a cwd-rooted Ctx; `upstream_checkpoint=PATH` sets
        ctx.upstream_checkpoint.
        """
        upstream = kwargs.pop("upstream_checkpoint", None)
        ctx = Ctx(
            name=self._name,
            gpus=self._gpus,
            workers=1,
            manifest=self.manifest(),
            upstream_checkpoint=Path(upstream) if upstream else None,
            is_remote=False,
        )
        return self._fn(ctx, *args, **kwargs)


@dataclass(frozen=True)
class _TrainArgs:
    """The keyword arguments of tau.train besides entrypoint mode, checked once."""

    name: str | None
    gpus: int | None
    workers: int | None
    placement: Placement
    data_pvc: str | None
    resources: dict[str, Any]
    checkpoint_artifact: str
    model: dict[str, Any]
    config: Any
    runtime_pip: Sequence[str] | None
    env: Any
    mounts: Sequence[Any] | None
    extra_manifest: Mapping[str, Any] | None = field(default=None)

    def handle(
        self,
        fn: Callable[..., Any],
        entrypoint: EntrypointSpec | None = None,
        source_path: Path | None = None,
    ) -> TrainHandle:
        # The handle's keywords are this record's fields, by name.
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        return TrainHandle(fn, **given, entrypoint=entrypoint, source_path=source_path)


def train(
    *,
    name: str | None = None,
    gpus: int | None = None,
    workers: int | None = None,
    smoke_pairs: int = 0,
    namespace: str | None = None,
    workload_kind: str = DEFAULT_WORKLOAD_KIND,
    team: str | None = None,
    preset: str | None = None,
    lane: str | None = None,
    queue: str | None = None,
    gpu_class: str | None = None,
    gpu_resource_mode: str | None = None,
    node_selector: Any = None,
    data_pvc: str | None = None,
    cpu_request: int | None = None,
    memory_request: str | None = None,
    cpu_limit: int | None = None,
    memory_limit: str | None = None,
    worker_cpu_request: int | None = None,
    worker_memory_request: str | None = None,
    worker_cpu_limit: int | None = None,
    worker_memory_limit: str | None = None,
    checkpoint_artifact: str = DEFAULT_CHECKPOINT_ARTIFACT,
    model: str | None = None,
    base_model: str | None = None,
    task: str | None = None,
    tags: Mapping[str, str] | None = None,
    primary_metric: str | None = None,
    metric_direction: str | None = None,
    config: Any = None,
    runtime_pip: Sequence[str] | None = None,
    env: Mapping[str, Any] | Sequence[Any] | None = None,
    mounts: Sequence[Any] | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
    entrypoint: str | Path | None = None,
    entrypoint_args: Sequence[Any] | None = None,
    entrypoint_kwargs: Mapping[str, Any] | None = None,
    entrypoint_pass_ctx: bool = False,
    extra_scripts: Sequence[str | Path] | None = None,
) -> Any:
    """Declare a training run: `@tau.train(name=..., ...)` over `def fn(ctx): ...`.

    With `entrypoint="path.py[:function]"` there is no function to decorate: the handle is
    returned directly and runs that script's function (default `main`) instead. Every argument
    is keyword-only and becomes a field of the managed manifest the handle's `manifest()`
    returns (`tau python inspect` prints it); None leaves the field out (the config's value,
    else the platform's default).

    Args:
        name: The run's name (a DNS label); default `config["name"]`. Required one way or the
            other.
        gpus: GPUs per worker (`compute.gpus`); default the config's, else 1.
        workers: Ray workers, or torchrun nodes for `workload_kind="job"` (`compute.workers`);
            default the config's, else 1. At least 1.
        smoke_pairs: A quick smoke run of this many training pairs (`run.smoke_pairs`; 0: off).
        namespace: Kubernetes namespace of the run (`policy.namespace`); `tau python submit
            --namespace` wins over it; default the workspace's.
        workload_kind: `rayjob` (a KubeRay RayJob, the default) or `job` (a Kubernetes Job;
            torchrun when it has several GPUs).
        team: Team of the run (`policy.team`).
        preset: Legacy placement preset (`policy.preset`); prefer gpu_class and queue.
        lane: Scheduling lane (`policy.lane`); `"eval"` is refused: use `@tau.eval`.
        queue: Kueue LocalQueue (`policy.queue`); default the workspace's.
        gpu_class: GPU class of the nodes, e.g. `a100-80gb`, `h100-95gb` (`policy.gpu_class`).
        gpu_resource_mode: How pods claim GPUs (`compute.gpu_resource_mode`): the device
            plugin's `nvidia.com/gpu` (default) or `dra` (Dynamic Resource Allocation).
        node_selector: Extra node labels the pods need: a mapping, a `"key=value"` string, or a
            list of them (`policy.node_selector`).
        data_pvc: PersistentVolumeClaim mounted at `/data` (`storage.data_pvc`); checkpoints
            and outputs that outlive the pods go there.
        cpu_request: CPUs requested by the head (or the Job's pod), a whole number
            (`compute.cpus`).
        memory_request: Memory requested by the head, a Kubernetes quantity such as `"32Gi"`
            (`compute.memory`).
        cpu_limit: CPU limit of the head (`compute.cpu_limit`).
        memory_limit: Memory limit of the head (`compute.memory_limit`).
        worker_cpu_request: CPUs requested by each worker (`compute.worker_cpus`).
        worker_memory_request: Memory requested by each worker (`compute.worker_memory`).
        worker_cpu_limit: CPU limit of each worker (`compute.worker_cpu_limit`).
        worker_memory_limit: Memory limit of each worker (`compute.worker_memory_limit`).
        checkpoint_artifact: The checkpoint file the run leaves, relative to its artifacts
            folder (`artifacts.checkpoint`; default `last.safetensors`); an `@tau.eval` after
            this run reads it.
        model: Name of the model the run produces, lowercase letters, digits and inner hyphens
            (`model.name`); registered with the run's evidence.
        base_model: The model it starts from (`model.base`).
        task: What the model does, free text (`model.task`).
        tags: String labels of the model (`model.tags`).
        primary_metric: The metric that ranks runs of this model (`model.primary_metric`).
        metric_direction: `lower` or `higher`: which way primary_metric is better.
        config: The manifest to start from: a mapping, a YAML or TOML file path, or a list of
            them, deep-merged in order; the other arguments apply on top.
        runtime_pip: Packages pip installs in the pods before the run (`runtime.pip`), e.g.
            `["torch==2.4.0"]`.
        env: Environment of the pods: a mapping or `"KEY=VALUE"` strings; a value may be a
            `tau.secret_ref(...)` or `tau.secret_from_env(...)` (`runtime.env`, secrets by
            reference only).
        mounts: More volumes: a list of `tau.pvc_mount(...)` (`storage.mounts`).
        extra_manifest: Any other manifest fields, deep-merged last; it may not set
            `schema_version`, `name`, `compute`, `eval` or `entrypoint`.
        entrypoint: Run this script's function instead of a decorated one: `"path.py"` or
            `"path.py:function"` (default function `main`); the script is shipped with the
            run.
        entrypoint_args: Positional arguments of that function (JSON-serialisable).
        entrypoint_kwargs: Keyword arguments of that function (JSON-serialisable).
        entrypoint_pass_ctx: Pass the run's `tau.Ctx` as the function's first argument.
        extra_scripts: More files shipped beside the entrypoint (importable from it).

    Returns:
        A decorator that turns `fn(ctx)` into the run's handle, or (with `entrypoint`) the
        handle itself. Calling the handle runs the function locally; `tau python submit`
        submits it.

    Raises:
        SdkError: an argument is out of range or contradicts another (the message says which).
    """
    args = _TrainArgs(
        name=name,
        gpus=gpus,
        workers=workers,
        placement=Placement(
            namespace=namespace,
            team=team,
            preset=preset,
            lane=lane,
            queue=queue,
            gpu_class=gpu_class,
            gpu_resource_mode=gpu_resource_mode,
            node_selector=selector_pairs(node_selector),
            smoke_pairs=int(smoke_pairs or 0),
            workload_kind=workload_kind or DEFAULT_WORKLOAD_KIND,
        ),
        data_pvc=data_pvc,
        resources=_compute_resources(
            cpu_request=cpu_request,
            memory_request=memory_request,
            cpu_limit=cpu_limit,
            memory_limit=memory_limit,
            worker_cpu_request=worker_cpu_request,
            worker_memory_request=worker_memory_request,
            worker_cpu_limit=worker_cpu_limit,
            worker_memory_limit=worker_memory_limit,
        ),
        checkpoint_artifact=checkpoint_artifact,
        model=_model_metadata(
            model=model,
            base_model=base_model,
            task=task,
            tags=tags,
            primary_metric=primary_metric,
            metric_direction=metric_direction,
        ),
        config=config,
        runtime_pip=runtime_pip,
        env=env,
        mounts=mounts,
        extra_manifest=extra_manifest,
    )
    if entrypoint is not None:
        spec = entrypoint_spec(
            entrypoint,
            args=entrypoint_args,
            kwargs=entrypoint_kwargs,
            pass_ctx=entrypoint_pass_ctx,
            extra_scripts=extra_scripts,
        )
        source = spec.local_script or Path(spec.remote_script)
        return args.handle(spec.local_function(), entrypoint=spec, source_path=source)
    if entrypoint_args or entrypoint_kwargs or entrypoint_pass_ctx or extra_scripts:
        raise SdkError("tau-py: entrypoint_* and extra_scripts require entrypoint=...")
    return args.handle


def eval(
    *,
    name: str,
    after: str | None = None,
    gpus: int = 1,
    cpu_workers: int = 1,
    gpu_class: str | None = None,
    gpu_resource_mode: str | None = None,
    node_selector: Any = None,
    data_pvc: str | None = None,
    cpu_request: int | None = None,
    memory_request: str | None = None,
    cpu_limit: int | None = None,
    memory_limit: str | None = None,
    worker_cpu_request: int | None = None,
    worker_memory_request: str | None = None,
    worker_cpu_limit: int | None = None,
    worker_memory_limit: str | None = None,
    namespace: str | None = None,
    team: str | None = None,
    preset: str | None = None,
    extra_manifest: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], EvalHandle]:
    """Declare an eval run: `@tau.eval(name=..., after="<train name>", cpu_workers=N)`.

    `after` names the @tau.train of the same file whose checkpoint the eval reads
    (`ctx.upstream_checkpoint` in the pod). The eval is a RayJob of kind `rayjob-eval`: a
    CPU-only head, one GPU worker and `cpu_workers` CPU workers.

    Args:
        name: The eval run's name (a DNS label).
        after: The name of the `@tau.train` whose checkpoint it evaluates (`eval.upstream`).
        gpus: GPUs of the GPU worker (`compute.gpus`); at least 1.
        cpu_workers: CPU workers beside it (`eval.cpu_workers`); at least 1.
        gpu_class: GPU class of the nodes, e.g. `a100-80gb` (`policy.gpu_class`).
        gpu_resource_mode: The device plugin's `nvidia.com/gpu` (default) or `dra`.
        node_selector: Extra node labels: a mapping, `"key=value"`, or a list of them.
        data_pvc: PersistentVolumeClaim mounted at `/data` (`storage.data_pvc`).
        cpu_request: CPUs requested by the head (`compute.cpus`).
        memory_request: Memory requested by the head, e.g. `"16Gi"` (`compute.memory`).
        cpu_limit: CPU limit of the head (`compute.cpu_limit`).
        memory_limit: Memory limit of the head (`compute.memory_limit`).
        worker_cpu_request: CPUs requested by each worker (`compute.worker_cpus`).
        worker_memory_request: Memory requested by each worker (`compute.worker_memory`).
        worker_cpu_limit: CPU limit of each worker (`compute.worker_cpu_limit`).
        worker_memory_limit: Memory limit of each worker (`compute.worker_memory_limit`).
        namespace: Kubernetes namespace (`policy.namespace`); default the workspace's.
        team: Team of the run (`policy.team`).
        preset: Legacy placement preset (`policy.preset`).
        extra_manifest: Any other manifest fields, merged last.

    Returns:
        A decorator that turns `fn(ctx)` into the eval's handle; calling the handle runs it
        locally (`upstream_checkpoint=Path` gives it a checkpoint to read).
    """
    placement = Placement(
        namespace=namespace,
        team=team,
        preset=preset,
        gpu_class=gpu_class,
        gpu_resource_mode=gpu_resource_mode,
        node_selector=selector_pairs(node_selector),
        workload_kind=EVAL_WORKLOAD_KIND,
    )
    resources = _compute_resources(
        cpu_request=cpu_request,
        memory_request=memory_request,
        cpu_limit=cpu_limit,
        memory_limit=memory_limit,
        worker_cpu_request=worker_cpu_request,
        worker_memory_request=worker_memory_request,
        worker_cpu_limit=worker_cpu_limit,
        worker_memory_limit=worker_memory_limit,
    )

    def decorate(fn: Callable[..., Any]) -> EvalHandle:
        return EvalHandle(
            fn,
            name=name,
            after=after,
            gpus=gpus,
            cpu_workers=cpu_workers,
            placement=placement,
            data_pvc=data_pvc,
            resources=resources,
            extra_manifest=extra_manifest,
        )

    return decorate
