#!/usr/bin/env python3
"""tau_py_wrapper.py: run a `tau python` workload's decorated function inside its pod.

Staged by `tau python build`/`submit` as /script/train.py and started on the Ray head (or in the
Job's pod) as `python3 /script/train.py --manifest /manifest/tau.yaml --smoke-pairs N`.

Tau itself is not installed in the pod, and must not have to be: this file is self-contained
(the standard library, plus Ray when the workload is a RayJob). The user's module still says
`import tau` and `@tau.train(...)`, so before importing it the wrapper puts a small in-memory
`tau` module in `sys.modules`: its decorators return handles that only carry the function, and
calling a handle or `.submit()`-ing it refuses, since a job that submitted itself would recurse.

A train function runs under Ray Train (one worker per GPU) when the renderer asked for it
(TAU_NUM_WORKERS), else in this process; an eval function runs on the head. Ray's worker pods
mount neither /script nor /manifest, so the wrapper connects Ray with a working directory that
holds the staged scripts and an importable copy of the shim. The file has to stay valid on the
pod's Python (3.10 or newer) and byte-stable: it is shipped and hashed as it is.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import importlib.util
import json
import os
import pathlib
import shutil
import sys
import tempfile
import types
from collections.abc import Callable, Mapping
from typing import Any

#: Where the payload puts the staged files (the wrapper, the user module, extra scripts).
SCRIPT_DIR_ENV = "TAU_SCRIPT_DIR"
DEFAULT_SCRIPT_DIR = "/script"
USER_MODULE_FILENAME = "tau_user_module.py"
#: Per-section overrides of the Ray Train configs (execution.configs of the run config).
RAY_TRAIN_CONFIG_ENV = "TAU_RAY_TRAIN_CONFIG_JSON"
#: Set by the renderer on RayJobs: the Ray Train world size; its presence selects Ray Train.
NUM_WORKERS_ENV = "TAU_NUM_WORKERS"
#: Set on the shim module, so a second install (a Ray Train worker in-process) is a no-op.
SHIM_MARKER = "_tau_cluster_shim"
RAY_TRAIN_SECTIONS = ("torch_config", "scaling_config", "failure_config")

#: Ctx attribute -> (environment variable, default); "" means None when unset.
_CTX_PATHS = (
    ("data_dir", "TAU_DATA_DIR", "/data"),
    ("hot_dir", "TAU_HOT_DIR", "/mnt"),
    ("datasets_dir", "TAU_DATASETS_DIR", "/mnt/datasets"),
    ("checkpoints_dir", "TAU_CHECKPOINTS_DIR", "/mnt/checkpoints"),
    ("durable_datasets_dir", "TAU_DURABLE_DATASETS_DIR", "/data/datasets"),
    ("durable_checkpoints_dir", "TAU_DURABLE_CHECKPOINTS_DIR", "/data/checkpoints"),
    ("upstream_checkpoint", "TAU_UPSTREAM_CHECKPOINT", ""),
    ("resume_from", "TAU_RESUME_FROM", ""),
)


class WrapperError(Exception):
    """A workload the wrapper cannot run as staged; `main` prints it as one line, exit 1."""


def _say(text: str) -> None:
    """One line to the pod log, flushed: Ray and kubectl logs show it as it happens."""
    sys.stdout.write(f"tau-py wrapper: {text}\n")
    sys.stdout.flush()


# ----------------------------------------------------------------------------- Ctx


class Ctx:
    """What a train or eval function gets: its sizes, its manifest and the pod's folders.

    The same fields as the SDK's local Ctx, rooted at the pod's mounts (`is_remote` True).
    """

    name: str
    gpus: int
    workers: int
    smoke_pairs: int
    manifest: dict[str, Any]
    manifest_path: pathlib.Path | None
    data_dir: pathlib.Path
    hot_dir: pathlib.Path
    datasets_dir: pathlib.Path
    checkpoints_dir: pathlib.Path
    durable_datasets_dir: pathlib.Path
    durable_checkpoints_dir: pathlib.Path
    upstream_checkpoint: pathlib.Path | None
    resume_from: pathlib.Path | None
    storage_hot_status: str
    storage_hot_reason: str
    storage_hot_write_mbps: float | None
    is_remote: bool

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in sorted(self.__dict__.items()) if k != "manifest")
        return f"Ctx({inner})"


def build_ctx(
    manifest: Mapping[str, Any], manifest_path: str, smoke_pairs: int, env: Mapping[str, str]
) -> Ctx:
    """The Ctx of this pod: sizes from the manifest, folders from the environment the renderer
    set (the reference's defaults when a variable is unset).
    """
    compute = manifest.get("compute") or {}
    fields: dict[str, Any] = {
        "name": str(manifest.get("name") or ""),
        "gpus": int(compute.get("gpus") or 0),
        # A manifest without compute.workers is one node.
        "workers": int(compute.get("workers") or 1),
        "smoke_pairs": int(smoke_pairs),
        "manifest": copy.deepcopy(dict(manifest)),
        "manifest_path": pathlib.Path(manifest_path) if manifest_path else None,
        "storage_hot_status": env.get("TAU_STORAGE_HOT_STATUS", "hot"),
        "storage_hot_reason": env.get("TAU_STORAGE_HOT_REASON", ""),
        "storage_hot_write_mbps": _float_or_none(env.get("TAU_STORAGE_HOT_WRITE_MBPS", "")),
        "is_remote": True,
    }
    for attribute, variable, default in _CTX_PATHS:
        value = env.get(variable, default)
        fields[attribute] = pathlib.Path(value) if value else None
    return Ctx(**fields)


def _float_or_none(raw: str) -> float | None:
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


def ctx_payload(ctx: Ctx) -> dict[str, Any]:
    """The Ctx as plain JSON values: what travels to Ray Train workers."""
    return {k: (str(v) if isinstance(v, pathlib.PurePath) else v) for k, v in vars(ctx).items()}


def ctx_from_payload(payload: Mapping[str, Any]) -> Ctx:
    """A worker's Ctx from `ctx_payload` (paths become Path objects again)."""
    fields = dict(payload)
    for attribute in [name for name, _, _ in _CTX_PATHS] + ["manifest_path"]:
        value = fields.get(attribute)
        fields[attribute] = pathlib.Path(value) if value else None
    return Ctx(**fields)


# ----------------------------------------------------------------------------- the tau shim


class _Refusing:
    """The pod-side stand-in of an SDK handle: it names the function, it never runs it."""

    def __init__(self, kind: str, fn: Callable[..., Any] | None, kwargs: Mapping[str, Any]):
        self.kind = kind
        self.fn = fn
        self._fn = fn  # the reference's attribute name; reference-written modules may read it
        self.kwargs = dict(kwargs)
        self.name = str(kwargs.get("name") or "")
        self.__name__ = getattr(fn, "__name__", kind)
        setattr(self, f"_tau_{kind}_handle", True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"tau-py: refusing to call the {self.kind} function {self.__name__} directly inside "
            "a cluster-submitted job; the wrapper calls it with a populated Ctx."
        )

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "tau-py: refusing to .submit() from inside a cluster-submitted job (it would "
            "recurse). Submit from your local machine."
        )

    def deploy(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "tau-py: refusing to deploy from inside a cluster-submitted job. Deploy from your "
            "local machine."
        )


class SecretRef:
    """`tau.secret_ref(name, key)` in the pod: the value is already in the environment."""

    def __init__(self, name: str, key: str) -> None:
        self.name, self.key = str(name), str(key)


class SecretSource:
    """`tau.secret_from_env/file(...)` in the pod: the source was read at submit time."""

    def __init__(self, key: str, env: str | None = None, path: str | None = None) -> None:
        self.key, self.env, self.path = str(key), env, path


def _decorator(kind: str) -> Callable[..., Any]:
    def make(*args: Any, **kwargs: Any) -> Any:
        if args:
            raise TypeError(f"tau.{kind}: pass parameters as keyword arguments")
        if kind == "train" and kwargs.get("entrypoint"):
            # Entrypoint mode returns the handle itself; the manifest says what to call.
            return _Refusing(kind, _run_manifest_entrypoint, kwargs)

        def wrap(fn: Callable[..., Any]) -> _Refusing:
            return _Refusing(kind, fn, kwargs)

        return wrap

    make.__name__ = kind
    return make


def _run_manifest_entrypoint(ctx: Any) -> Any:
    """A `@tau.train(entrypoint="file.py:fn")` workload: call the staged function."""
    spec = (ctx.manifest or {}).get("entrypoint") or {}
    script = spec.get("script")
    if not script:
        raise WrapperError("the manifest has no entrypoint.script for an entrypoint-mode train")
    path = pathlib.Path(script)
    if not path.is_file() and (pathlib.Path.cwd() / path.name).is_file():
        # A Ray Train worker: the staged scripts are in Ray's working directory, its cwd.
        path = pathlib.Path.cwd() / path.name
    args = list(spec.get("args") or [])
    if spec.get("pass_ctx"):
        args.insert(0, ctx)
    return call_staged_function(
        path, spec.get("function") or "main", *args, **dict(spec.get("kwargs") or {})
    )


def load_staged_module(script_path: Any, *, module_name: str | None = None) -> types.ModuleType:
    """Import a staged script by path, its folder on sys.path while it runs."""
    path = pathlib.Path(script_path).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"tau staged module not found: {path}")
    name = module_name or f"_tau_staged_{path.stem}"
    if name in ("tau", "config", "workloads") or not name.isidentifier():
        raise ValueError(f"staged module name {name!r} is reserved or not an identifier")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"could not import staged module from {path}")
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)
    sys.modules[name] = module
    try:
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.path[:] = saved
    return module


def load_staged_function(
    script_path: Any, function_name: str, *, module_name: str | None = None
) -> Callable[..., Any]:
    """A callable of a staged script."""
    module = load_staged_module(script_path, module_name=module_name)
    fn = getattr(module, function_name, None)
    if not callable(fn):
        raise AttributeError(f"tau staged module {script_path} has no function {function_name!r}")
    return fn


def call_staged_function(
    script_path: Any, function_name: str, *args: Any, module_name: str | None = None, **kw: Any
) -> Any:
    """Load a staged script's function and call it."""
    return load_staged_function(script_path, function_name, module_name=module_name)(*args, **kw)


def make_shim(manifest: Mapping[str, Any]) -> types.ModuleType:
    """The in-memory `tau` module a user module imports in the pod (not registered here).

    `tau.config()` and `tau.load_config()` answer the submitted manifest: the project's config
    files they read locally were composed into it and may not be staged.
    """
    snapshot = copy.deepcopy(dict(manifest))

    def config(*sources: Any, **options: Any) -> dict[str, Any]:
        return copy.deepcopy(snapshot)

    def load_config(source: Any = None) -> dict[str, Any]:
        return copy.deepcopy(snapshot)

    def secret_ref(name: str, key: str) -> SecretRef:
        return SecretRef(name, key)

    def secret_from_env(key: str, *, env: str) -> SecretSource:
        return SecretSource(key, env=env)

    def secret_from_file(key: str, *, path: str) -> SecretSource:
        return SecretSource(key, path=str(path))

    def pvc_mount(name: str, *, pvc: str, mount_path: str, read_only: bool = False) -> dict:
        return {
            "name": str(name),
            "pvc": str(pvc),
            "mountPath": str(mount_path),
            "readOnly": bool(read_only),
        }

    def serve(**kwargs: Any) -> _Refusing:
        return _Refusing("serve", None, kwargs)

    names: dict[str, Any] = {
        "train": _decorator("train"),
        "eval": _decorator("eval"),
        "serve": serve,
        "Ctx": Ctx,
        "config": config,
        "load_config": load_config,
        "secret_ref": secret_ref,
        "secret": secret_ref,
        "secret_from_env": secret_from_env,
        "secret_from_file": secret_from_file,
        "SecretRef": SecretRef,
        "SecretSource": SecretSource,
        "pvc_mount": pvc_mount,
        "load_staged_module": load_staged_module,
        "load_staged_function": load_staged_function,
        "call_staged_function": call_staged_function,
    }
    shim = types.ModuleType("tau", "The pod-side stand-in of the tau SDK (tau_py_wrapper.py).")
    shim.__dict__.update(names)
    shim.__dict__["__all__"] = sorted(names)
    shim.__dict__["__path__"] = []  # a package: `import tau.x` fails cleanly
    shim.__dict__[SHIM_MARKER] = True
    return shim


def install_shim(manifest: Mapping[str, Any]) -> types.ModuleType:
    """Register the shim as `tau` (once per process) before the user module imports it."""
    current = sys.modules.get("tau")
    if current is not None and getattr(current, SHIM_MARKER, False):
        return current
    shim = make_shim(manifest)
    sys.modules["tau"] = shim
    return shim


# ----------------------------------------------------------------------------- the user module


def script_dir(env: Mapping[str, str]) -> pathlib.Path:
    """Where the staged files are (TAU_SCRIPT_DIR, for tests; /script in a pod)."""
    return pathlib.Path(env.get(SCRIPT_DIR_ENV) or DEFAULT_SCRIPT_DIR)


def load_user_module(path: pathlib.Path) -> types.ModuleType:
    """Import the staged user module, its folder (with the extra scripts) on sys.path.

    Raises:
        WrapperError: the file is missing, or its name would shadow the shim or not import.
    """
    name = path.stem
    if name == "tau":
        raise WrapperError(
            f"the staged user module {path.name} is refused: a module named tau would shadow "
            "the tau shim"
        )
    if not name.isidentifier():
        raise WrapperError(f"the staged user module {path.name} is not an importable name")
    if not path.is_file():
        raise WrapperError(f"the staged user module {path} does not exist")
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__file__", None) == str(path):
        return loaded  # a Ray Train worker running in the driver's process
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WrapperError(f"cannot load the staged user module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def workload_kind(manifest: Mapping[str, Any]) -> str:
    """`eval` when the manifest sizes eval CPU workers (a rayjob-eval), else `train`."""
    block = manifest.get("eval") or {}
    return (
        "eval" if isinstance(block, Mapping) and int(block.get("cpu_workers") or 0) > 0 else "train"
    )


def find_handle(module: types.ModuleType, kind: str, where: str) -> tuple[str, Any]:
    """The one `@tau.<kind>` handle of the module, as (attribute, handle).

    Raises:
        WrapperError: none, or more than one (aliases of one handle count once).
    """
    marker = f"_tau_{kind}_handle"
    found: list[tuple[str, Any]] = []
    for attribute in dir(module):
        obj = getattr(module, attribute)
        if getattr(obj, marker, False) and all(obj is not seen for _, seen in found):
            found.append((attribute, obj))
    if not found:
        raise WrapperError(f"no @tau.{kind}-decorated function found in {where}")
    if len(found) > 1:
        names = ", ".join(attribute for attribute, _ in found)
        raise WrapperError(
            f"multiple @tau.{kind}-decorated functions found ({names}); only one per module is "
            "supported"
        )
    return found[0]


def read_manifest(path: str) -> dict[str, Any]:
    """The staged manifest (YAML; PyYAML comes with Ray, a JSON manifest needs nothing)."""
    text = pathlib.Path(path).read_text(encoding="utf-8")
    try:
        yaml = importlib.import_module("yaml")
    except ModuleNotFoundError:
        try:
            doc = json.loads(text)
        except ValueError:
            raise WrapperError(
                f"reading {path} needs PyYAML, which this image lacks; add pyyaml to runtime.pip"
            ) from None
    else:
        doc = yaml.safe_load(text)
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise WrapperError(f"{path} must hold a mapping")
    return doc


# ----------------------------------------------------------------------------- Ray Train


def merge_ray_train_config(
    torch_config: Mapping[str, Any],
    scaling_config: Mapping[str, Any],
    failure_config: Mapping[str, Any],
    raw: str,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Each section's defaults `dict.update`d with the same-named section of `raw` (the
    TAU_RAY_TRAIN_CONFIG_JSON text); keys Tau does not know pass through to Ray unchanged.

    Raises:
        WrapperError: `raw` is not a JSON object of objects.
    """
    merged = (dict(torch_config), dict(scaling_config), dict(failure_config))
    if not raw.strip():
        return merged
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise WrapperError(f"{RAY_TRAIN_CONFIG_ENV} is malformed: {exc}") from None
    if not isinstance(doc, dict):
        raise WrapperError(f"{RAY_TRAIN_CONFIG_ENV} must be a JSON object")
    for section, target in zip(RAY_TRAIN_SECTIONS, merged, strict=True):
        if section not in doc:
            continue
        if not isinstance(doc[section], dict):
            raise WrapperError(f"{RAY_TRAIN_CONFIG_ENV}: {section} must be a JSON object")
        target.update(doc[section])
    return merged


def ray_train_config(
    ctx: Ctx, env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The TorchConfig, ScalingConfig and FailureConfig arguments of a train run.

    One Ray Train worker per GPU (`compute.workers` x `compute.gpus`, or one per node on CPUs),
    so plain DDP/FSDP code sees the usual world; the renderer's TAU_NUM_WORKERS wins.
    """
    gpus = int(ctx.gpus)
    default_workers = int(ctx.workers) * gpus if gpus > 0 else int(ctx.workers)
    num_workers = int(env.get(NUM_WORKERS_ENV) or default_workers)
    torch_config = {"backend": env.get("TAU_DIST_BACKEND") or ("nccl" if gpus > 0 else "gloo")}
    scaling_config = {
        "num_workers": num_workers,
        "use_gpu": gpus > 0,
        "resources_per_worker": {"GPU": 1} if gpus > 0 else {"CPU": 1},
        "placement_strategy": "SPREAD",
    }
    return merge_ray_train_config(
        torch_config, scaling_config, {}, env.get(RAY_TRAIN_CONFIG_ENV, "")
    )


def ray_train_worker(config: Mapping[str, Any]) -> Any:
    """One Ray Train worker: another process, maybe on another node without /script, so it
    installs the shim and imports the user module from Ray's working directory (its cwd),
    then calls the train function with the driver's Ctx.
    """
    ctx = ctx_from_payload(config["ctx"])
    install_shim(ctx.manifest)
    path = pathlib.Path.cwd() / USER_MODULE_FILENAME
    if not path.is_file():
        path = pathlib.Path(config["user_module"])  # Ray without the working directory
    module = load_user_module(path)
    _, handle = find_handle(module, "train", str(path))
    return handle.fn(ctx)


def run_ray_train(handle: Any, ctx: Ctx, scripts: pathlib.Path, env: Mapping[str, str]) -> Any:
    """Run the train function on Ray Train workers and wait for them."""
    ray = importlib.import_module("ray")
    ray_train = importlib.import_module("ray.train")
    ray_torch = importlib.import_module("ray.train.torch")
    connect_ray(ray, scripts, ctx.manifest)
    torch_kwargs, scaling_kwargs, failure_kwargs = ray_train_config(ctx, env)
    run_kwargs: dict[str, Any] = {}
    if failure_kwargs:
        run_kwargs["failure_config"] = ray_train.FailureConfig(**failure_kwargs)
    trainer = ray_torch.TorchTrainer(
        ray_train_worker,
        train_loop_config={
            "ctx": ctx_payload(ctx),
            "user_module": str(scripts / USER_MODULE_FILENAME),
        },
        torch_config=ray_torch.TorchConfig(**torch_kwargs),
        scaling_config=ray_train.ScalingConfig(**scaling_kwargs),
        run_config=ray_train.RunConfig(**run_kwargs),
    )
    return trainer.fit()


def run_in_process(handle: Any, ctx: Ctx, env: Mapping[str, str]) -> Any:
    """A Job's train: call the function here; under torchrun (WORLD_SIZE > 1) the wrapper
    sets up and tears down the process group, as Ray Train would.
    """
    if int(env.get("WORLD_SIZE") or "1") <= 1:
        return handle.fn(ctx)
    torch = importlib.import_module("torch")
    dist = importlib.import_module("torch.distributed")
    started = False
    if not dist.is_initialized():
        backend = env.get("TAU_DIST_BACKEND") or ("nccl" if torch.cuda.is_available() else "gloo")
        dist.init_process_group(backend=backend)
        started = True
    if torch.cuda.is_available():
        torch.cuda.set_device(int(env.get("LOCAL_RANK") or "0"))
    try:
        return handle.fn(ctx)
    finally:
        if started and dist.is_initialized():
            dist.destroy_process_group()


# ----------------------------------------------------------------------------- Ray's workers

#: The wrapper's copy in a Ray working directory, which the shim package loads.
WRAPPER_COPY = "_tau_py_wrapper.py"


def _shim_package_init() -> str:
    """`tau/__init__.py` of a Ray working directory: loads the wrapper copy beside it and
    fills the package with the same shim, from the manifest saved next to it.
    """
    return (
        '"""The tau shim for Ray workers of a tau python workload (from tau_py_wrapper.py)."""\n'
        "import importlib.util as _util\n"
        "import json as _json\n"
        "import pathlib as _pathlib\n\n"
        "_here = _pathlib.Path(__file__).resolve().parent\n"
        f"_copy = _here.parent / {WRAPPER_COPY!r}\n"
        '_spec = _util.spec_from_file_location("_tau_py_wrapper", _copy)\n'
        "_wrapper = _util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_wrapper)\n"
        '_manifest = _json.loads((_here / "manifest.json").read_text(encoding="utf-8"))\n'
        "globals().update(\n"
        "    (k, v) for k, v in vars(_wrapper.make_shim(_manifest)).items() "
        'if not k.startswith("__") or k == "__all__"\n'
        ")\n"
    )


def ray_working_dir(scripts: pathlib.Path, manifest: Mapping[str, Any]) -> pathlib.Path:
    """A Ray working directory: the staged scripts and an importable `tau` shim package.

    Ray's worker pods do not mount /script, and `sys.modules` does not reach another process;
    Ray ships the working directory to every worker and starts them inside it.

    Raises:
        WrapperError: a staged script named tau would take the shim's place.
    """
    items = sorted(scripts.iterdir())
    for item in items:
        if item.name in ("tau", "tau.py", WRAPPER_COPY):
            raise WrapperError(f"the staged script {item.name} would shadow the tau shim")
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tau-py-ray-"))
    for item in items:
        if item.is_dir():
            shutil.copytree(item, folder / item.name, symlinks=True)
        else:
            shutil.copy2(item, folder / item.name)
    shutil.copy2(pathlib.Path(__file__).resolve(), folder / WRAPPER_COPY)
    package = folder / "tau"
    package.mkdir()
    (package / "__init__.py").write_text(_shim_package_init(), encoding="utf-8")
    (package / "manifest.json").write_text(
        json.dumps(dict(manifest), sort_keys=True), encoding="utf-8"
    )
    return folder


def connect_ray(ray: Any, scripts: pathlib.Path, manifest: Mapping[str, Any]) -> None:
    """Connect to the RayJob's cluster with the working directory its workers import from."""
    if ray.is_initialized():
        _say(
            "Ray was already initialized (by the module?); its workers get no working "
            "directory and may not import the module"
        )
        return
    folder = ray_working_dir(scripts, manifest)
    ray.init(address="auto", runtime_env={"working_dir": str(folder)})


def run_eval(handle: Any, ctx: Ctx, scripts: pathlib.Path) -> Any:
    """Call the eval function on the head; connect Ray first (when the image has it), so the
    actors it starts can import the module too.
    """
    try:
        ray = importlib.import_module("ray")
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise  # Ray is there but broken: say so rather than run without it
    else:
        connect_ray(ray, scripts, ctx.manifest)
    return handle.fn(ctx)


# ----------------------------------------------------------------------------- main


def run(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Parse the arguments, load the module and run its train or eval function."""
    env = os.environ if env is None else env
    parser = argparse.ArgumentParser(prog="tau_py_wrapper.py", description=__doc__)
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--smoke-pairs", type=int, default=0)
    args, _unknown = parser.parse_known_args(argv)
    manifest = read_manifest(args.manifest)
    ctx = build_ctx(manifest, args.manifest, args.smoke_pairs, env)
    install_shim(manifest)
    scripts = script_dir(env)
    user_module = scripts / USER_MODULE_FILENAME
    module = load_user_module(user_module)
    kind = workload_kind(manifest)
    _, handle = find_handle(module, kind, str(user_module))
    if kind == "eval":
        cpu_workers = int((manifest.get("eval") or {}).get("cpu_workers") or 0)
        upstream = ctx.upstream_checkpoint or "<unset>"
        _say(
            f"invoking {handle.__name__} (kind=eval, gpus={ctx.gpus}, cpu_workers={cpu_workers}, "
            f"upstream={upstream})"
        )
        run_eval(handle, ctx, scripts)
        return 0
    _say(
        f"invoking {handle.__name__} (kind=train, workers={ctx.workers}, gpus={ctx.gpus}, "
        f"smoke_pairs={ctx.smoke_pairs})"
    )
    if env.get(NUM_WORKERS_ENV):
        run_ray_train(handle, ctx, scripts, env)
    else:
        run_in_process(handle, ctx, env)
    return 0


def main() -> int:
    """The script's entry: a WrapperError is one line on stderr and exit 1."""
    try:
        return run()
    except WrapperError as exc:
        sys.stderr.write(f"tau-py wrapper: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
