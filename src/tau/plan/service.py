"""`tau serve deploy` flags → ServeSpec: every flag checked, every problem reported at once.

Pure. The preset catalog arrives as an argument (the CLI loads it), so the same flags always
give the same spec. Messages name the flag, quote the bad value and say how to fix it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from tau.errors import ConfigError, Diagnostic
from tau.intent.presets import Catalog, Preset
from tau.k8s import meta, paths
from tau.k8s.names import DNS_1035_LABEL, DNS_1123_SUBDOMAIN, ENV_NAME, SECRET_KEY
from tau.plan import pod_parts
from tau.plan.model import UNRESOLVED_NAMESPACE, SecretRef
from tau.plan.pod_parts import DATA_ROOT, Container, Mount, Volume, image_problem

KINDS = ("rayservice", "deployment")
DEFAULT_IMPORT_PATH = "serve:app"
DEFAULT_RAY_VERSION = "2.40.0"
DEFAULT_CHECKPOINT_PVC = "blob-training"
DEFAULT_PORT = 8000
DEFAULT_STARTUP_FAILURE_THRESHOLD = 60
CHECKPOINTS_ROOT = paths.DURABLE_CHECKPOINTS
#: Env vars --checkpoint owns; setting them with --env as well would be ambiguous.
CHECKPOINT_ENV = ("TAU_MODEL_PATH", "TAU_DATA_DIR", "TAU_DURABLE_CHECKPOINTS_DIR")

# The run resolver's GPU-class aliases and Kueue-managed GPU series (tau.plan.resolve), so a service
# lands on the nodes a run of the same preset does; tests/test_serve_render.py compares the two.
_GPU_CLASS_ALIASES = {
    "a100-nvlink-80gb": "a100-80gb",
    "h100-standalone-95gb": "h100-95gb",
    "h200-nvlink-141gb": "h200-141gb",
}
_MANAGED_SERIES = ("ndm-a100-v4", "nd-h200-v5")

_RAY_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


@dataclass(frozen=True)
class DeployFlags:
    """The raw `tau serve deploy` flag values; None means "not given" (defaults apply later)."""

    name: str
    kind: str = "rayservice"
    profile: str | None = None
    image: str | None = None
    namespace: str | None = None
    import_path: str | None = None
    replicas: int | None = None
    min_replicas: int | None = None
    max_replicas: int = 0
    env: tuple[str, ...] = ()
    env_secret: tuple[str, ...] = ()
    checkpoint: str | None = None
    checkpoint_pvc: str | None = None
    readiness_path: str | None = None
    startup_path: str | None = None
    liveness_path: str | None = None
    startup_failure_threshold: int | None = None
    port: int | None = None
    service_port: int | None = None
    service_target_port: int | None = None
    gpus: int | None = None
    runtime_pip: tuple[str, ...] = ()
    ray_version: str | None = None
    init: tuple[str, ...] = ()
    sidecar: tuple[str, ...] = ()
    volume: tuple[str, ...] = ()
    mount: tuple[str, ...] = ()
    args: str | None = None
    command: tuple[str, ...] = ()
    arg: tuple[str, ...] = ()


@dataclass(frozen=True)
class Probes:
    """HTTP probe paths on the serving port; None leaves a probe out."""

    readiness: str | None = None
    startup: str | None = None
    liveness: str | None = None
    startup_failure_threshold: int = DEFAULT_STARTUP_FAILURE_THRESHOLD


@dataclass(frozen=True)
class Checkpoint:
    """The model checkpoint: the PVC mounted at /data and the resolved in-pod path."""

    pvc: str
    path: str

    @property
    def uri(self) -> str | None:
        """pvc://CLAIM/PATH when the path lies on the PVC; None for a path outside /data."""
        if self.path != DATA_ROOT and not self.path.startswith(DATA_ROOT + "/"):
            return None
        return f"pvc://{self.pvc}/{self.path[len(DATA_ROOT) :].lstrip('/')}"


@dataclass(frozen=True)
class ServeSpec:
    """A service, resolved: what render needs and nothing it has to look up."""

    name: str
    kind: str
    namespace: str
    profile: str
    image: str
    preset: Preset | None = None
    import_path: str = DEFAULT_IMPORT_PATH
    replicas: int = 1
    min_replicas: int = 1
    max_replicas: int = 0
    env: tuple[tuple[str, str], ...] = ()
    secrets: tuple[SecretRef, ...] = ()
    checkpoint: Checkpoint | None = None
    probes: Probes = field(default_factory=Probes)
    port: int = DEFAULT_PORT
    service_port: int = DEFAULT_PORT
    service_target_port: int = DEFAULT_PORT
    gpus: int = 0
    runtime_pip: tuple[str, ...] = ()
    ray_version: str = DEFAULT_RAY_VERSION
    init_containers: tuple[Container, ...] = ()
    sidecars: tuple[Container, ...] = ()
    volumes: tuple[Volume, ...] = ()
    mounts: tuple[Mount, ...] = ()
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()

    @property
    def autoscaling(self) -> bool:
        return self.max_replicas > 0

    @property
    def gpu_class(self) -> str:
        """The preset's GPU class under its node-label name ("" without a preset)."""
        raw = self.preset.gpu_class if self.preset else ""
        return _GPU_CLASS_ALIASES.get(raw, raw)

    @property
    def node_selector(self) -> dict[str, str]:
        """The preset's GPU series and GPU class node labels ("any" class selects none)."""
        out: dict[str, str] = {}
        series = self.preset.resource_flavor.removesuffix("-dra") if self.preset else ""
        if series in _MANAGED_SERIES:
            out[meta.AZURE_GPU_SERIES] = series
        if self.gpu_class and self.gpu_class != "any":
            out[meta.NODE_GPU_CLASS] = self.gpu_class
        return out


class _Problems:
    """Collects flag problems so one run reports all of them."""

    def __init__(self) -> None:
        self.items: list[Diagnostic] = []

    def add(self, message: str, hint: str | None = None) -> None:
        self.items.append(Diagnostic("", message, hint))

    def raise_any(self) -> None:
        if self.items:
            raise FlagError(self.items)


class FlagError(ConfigError):
    """Bad `tau serve` flags; kept in the order the checks ran (flag order), not sorted."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        super().__init__(diagnostics)
        self.diagnostics = tuple(diagnostics)


def parse_numbers(raw: dict[str, str | None]) -> dict[str, int | None]:
    """Integer flags from their text ({"--replicas": "2"} → {"--replicas": 2}); None stays None.

    Raises:
        FlagError: every value that is not a whole number.
    """
    p = _Problems()
    out: dict[str, int | None] = {}
    for flag, text in raw.items():
        try:
            out[flag] = None if text is None else int(text.strip())
        except ValueError:
            p.add(f'{flag} "{text}" must be a whole number', f"e.g. {flag} 2")
    p.raise_any()
    return out


def checkpoint_path(raw: str) -> str:
    """The in-pod path of --checkpoint: absolute kept, `projects/...` under /data, else under
    /data/checkpoints. Raises ValueError on an empty path or a `..` segment.
    """
    path = PurePosixPath(raw)
    if not raw.strip() or ".." in path.parts:
        raise ValueError(raw)
    if path.is_absolute():
        return str(path)
    if path.parts[0] == "projects":
        return str(PurePosixPath(DATA_ROOT) / path)
    return str(PurePosixPath(CHECKPOINTS_ROOT) / path)


def _env(values: tuple[str, ...], p: _Problems) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not ENV_NAME.match(key):
            p.add(
                f'--env "{item}" must be KEY=VALUE with KEY a valid env name',
                "e.g. --env LOG_LEVEL=info",
            )
        elif key in out:
            p.add(f'--env "{key}" is given twice', "keep one --env per variable")
        else:
            out[key] = value
    return out


def _secrets(
    values: tuple[str, ...], literal: dict[str, str], p: _Problems
) -> tuple[SecretRef, ...]:
    out: dict[str, SecretRef] = {}
    for item in values:
        env, sep, ref = item.partition("=")
        secret, colon, key = ref.partition(":")
        if not (
            sep
            and colon
            and ENV_NAME.match(env)
            and DNS_1123_SUBDOMAIN.match(secret)
            and SECRET_KEY.match(key)
        ):
            p.add(
                f'--env-secret "{item}" must be KEY=SECRET:KEY',
                "e.g. --env-secret HF_TOKEN=hf-credentials:token (SECRET is the Secret's name)",
            )
        elif env in out or env in literal:
            p.add(
                f'--env-secret "{env}" is also set by another --env or --env-secret',
                "set each variable once",
            )
        else:
            out[env] = SecretRef(env, secret, key)
    return tuple(out[k] for k in sorted(out))


def _preset_gpus(preset: Preset | None, gpus: int | None, p: _Problems) -> int:
    """--gpus, or the preset's shape count; a mismatch between the two is an error."""
    from tau.intent.validate.dryrun import shape_gpus

    count: int | None = None
    if preset and preset.shape:
        try:
            count = shape_gpus(preset.shape)
        except ValueError:
            count = None
    if gpus is not None and gpus < 0:
        p.add(f"--gpus {gpus} must be 0 or more")
        return 0
    if gpus is not None and count is not None and gpus != count:
        p.add(
            f'--gpus {gpus} conflicts with --profile "{preset.name}" '  # type: ignore[union-attr]
            f'(shape "{preset.shape}", {count} GPUs)',  # type: ignore[union-attr]
            "drop --gpus to use the preset's count, or choose a preset with that shape",
        )
    return gpus if gpus is not None else (count or 0)


def _profile(flags: DeployFlags, catalog: Catalog, p: _Problems) -> Preset | None:
    profile = flags.profile
    if not profile:
        p.add(
            "--profile is required",
            "pass a preset name (e.g. azure.research.eval.gpu) "
            "or the name of a ready TauCluster workload profile",
        )
        return None
    preset = catalog.find(profile)
    if preset is not None and preset.disabled:
        p.add(
            f'--profile "{profile}": preset is disabled: {preset.disabled_reason}',
            "choose another preset from the catalog",
        )
        return None
    if preset is None and meta.label_value(profile) != profile:
        p.add(
            f'--profile "{profile}" is neither a catalog preset nor a valid profile name',
            "use lower-case letters, digits, '-', '.' or '_' (at most 63), or a preset "
            f"from {catalog.source}",
        )
    return preset


def _kind_rules(flags: DeployFlags, p: _Problems) -> None:
    """Flags that only one kind understands."""
    if flags.kind not in KINDS:
        p.add(f'--kind "{flags.kind}" must be one of: {", ".join(KINDS)}')
        return
    ray_only = (
        ("--import-path", flags.import_path),
        ("--runtime-pip", flags.runtime_pip),
        ("--ray-version", flags.ray_version),
        ("--min-replicas", flags.min_replicas),
        ("--max-replicas", flags.max_replicas or None),
    )
    deploy_only = (
        ("--service-port", flags.service_port),
        ("--service-target-port", flags.service_target_port),
        ("--init", flags.init),
        ("--sidecar", flags.sidecar),
        ("--command", flags.command),
        ("--arg", flags.arg),
        ("--args", flags.args),
    )
    wrong = deploy_only if flags.kind == "rayservice" else ray_only
    other = "deployment" if flags.kind == "rayservice" else "rayservice"
    for flag, value in wrong:
        if value not in (None, ()):
            p.add(
                f"{flag} applies to --kind {other} only (got --kind {flags.kind})",
                f"drop {flag}, or deploy with --kind {other}"
                + (
                    "; KubeRay owns how RayService pods start (use --import-path and "
                    "--runtime-pip for the Serve app)"
                    if flag in ("--init", "--sidecar", "--command", "--arg", "--args")
                    else ""
                ),
            )


def _replicas(flags: DeployFlags, p: _Problems) -> tuple[int, int, int]:
    """(replicas, min, max); max > 0 turns on autoscaling and excludes --replicas."""
    min_r = 1 if flags.min_replicas is None else flags.min_replicas
    max_r = flags.max_replicas
    if flags.replicas is not None and flags.replicas < 1:
        p.add(
            f"--replicas {flags.replicas} must be at least 1",
            "delete the service with `tau serve delete` to stop it",
        )
    if max_r < 0:
        p.add(f"--max-replicas {max_r} must be 0 (no autoscaling) or more")
    if max_r > 0 and flags.replicas is not None:
        p.add(
            "--replicas and --max-replicas are mutually exclusive",
            "autoscale with --min-replicas/--max-replicas, or fix the size with --replicas",
        )
    if max_r > 0 and not 0 <= min_r <= max_r:
        p.add(f"--min-replicas {min_r} must be between 0 and --max-replicas {max_r}")
    if max_r == 0 and flags.min_replicas is not None and flags.kind == "rayservice":
        p.add(
            "--min-replicas needs --max-replicas greater than 0 (autoscaling)",
            "add --max-replicas N, or use --replicas for a fixed size",
        )
    replicas = flags.replicas if flags.replicas is not None else (min_r if max_r > 0 else 1)
    return replicas, min_r, max_r


def _port(
    flag: str, value: int | None, default: int, p: _Problems, *, zero_ok: bool = False
) -> int:
    if value is None:
        return default
    if not (0 if zero_ok else 1) <= value <= 65535:
        p.add(
            f"{flag} {value} must be between {0 if zero_ok else 1} and 65535"
            + (" (0: no Service)" if zero_ok else "")
        )
    return value


def _probes(flags: DeployFlags, p: _Problems) -> Probes:
    for flag, path in (
        ("--readiness-path", flags.readiness_path),
        ("--startup-path", flags.startup_path),
        ("--liveness-path", flags.liveness_path),
    ):
        if path is not None and not path.startswith("/"):
            p.add(f'{flag} "{path}" must be an absolute HTTP path', f"e.g. {flag} /healthz")
    threshold = flags.startup_failure_threshold
    if threshold is not None and flags.startup_path is None:
        p.add("--startup-failure-threshold needs --startup-path", "add --startup-path /healthz")
    if threshold is not None and threshold < 1:
        p.add(f"--startup-failure-threshold {threshold} must be at least 1")
    return Probes(
        flags.readiness_path,
        flags.startup_path,
        flags.liveness_path,
        threshold or DEFAULT_STARTUP_FAILURE_THRESHOLD,
    )


def _checkpoint(flags: DeployFlags, env: dict[str, str], p: _Problems) -> Checkpoint | None:
    if flags.checkpoint is None:
        if flags.checkpoint_pvc is not None:
            p.add("--checkpoint-pvc needs --checkpoint", "add --checkpoint PATH")
        return None
    pvc = flags.checkpoint_pvc or DEFAULT_CHECKPOINT_PVC
    if not DNS_1123_SUBDOMAIN.match(pvc):
        p.add(f'--checkpoint-pvc "{pvc}" is not a valid PersistentVolumeClaim name')
    try:
        path = checkpoint_path(flags.checkpoint)
    except ValueError:
        p.add(
            f'--checkpoint "{flags.checkpoint}" must be a non-empty path without ".."',
            "relative paths resolve under /data/checkpoints (projects/... under /data)",
        )
        return None
    for key in CHECKPOINT_ENV:
        if key in env:
            p.add(f"--env {key} conflicts with --checkpoint, which sets it", f"drop --env {key}")
    return Checkpoint(pvc, path)


def _misc(flags: DeployFlags, p: _Problems) -> None:
    if not DNS_1035_LABEL.match(flags.name) or len(flags.name) > 63:
        p.add(
            f'service name "{flags.name}" must be a DNS-1035 label: lower-case letters, '
            "digits and '-', starting with a letter, at most 63 characters"
        )
    if flags.import_path is not None and not _IMPORT_PATH.match(flags.import_path):
        p.add(
            f'--import-path "{flags.import_path}" must be MODULE:ATTRIBUTE',
            f"e.g. --import-path {DEFAULT_IMPORT_PATH}",
        )
    if flags.ray_version is not None and not _RAY_VERSION.match(flags.ray_version):
        p.add(
            f'--ray-version "{flags.ray_version}" must be X.Y.Z',
            f"e.g. --ray-version {DEFAULT_RAY_VERSION}",
        )
    if flags.image is None:
        p.add("--image is required", "pass a pinned image, e.g. ghcr.io/org/server:1.4.2")
    elif (problem := image_problem(flags.image)) is not None:
        p.add(*problem)
    if flags.namespace is not None and not DNS_1123_SUBDOMAIN.match(flags.namespace):
        p.add(f'--namespace "{flags.namespace}" is not a valid namespace name')


def build_spec(flags: DeployFlags, catalog: Catalog) -> ServeSpec:
    """Check every flag and resolve defaults.

    Args:
        flags: the raw flag values.
        catalog: the preset catalog `--profile` is looked up in.

    Raises:
        ConfigError: every problem found, in flag order.
    """
    p = _Problems()
    _misc(flags, p)
    _kind_rules(flags, p)
    preset = _profile(flags, catalog, p)
    gpus = _preset_gpus(preset, flags.gpus, p)
    replicas, min_r, max_r = _replicas(flags, p)
    env = _env(flags.env, p)
    secrets = _secrets(flags.env_secret, env, p)
    checkpoint = _checkpoint(flags, env, p)
    probes = _probes(flags, p)
    port = _port("--port", flags.port, DEFAULT_PORT, p)
    service_port = _port("--service-port", flags.service_port, port, p, zero_ok=True)
    target = _port("--service-target-port", flags.service_target_port, port, p)
    if flags.service_target_port is not None and service_port == 0:
        p.add("--service-target-port needs a Service (--service-port is 0)")
    taken = {pod_parts.SERVER_CONTAINER}
    inits = pod_parts.containers("--init", flags.init, taken, p)
    sidecars = pod_parts.containers("--sidecar", flags.sidecar, taken, p)
    volumes = pod_parts.volumes(flags.volume, p)
    mounts = pod_parts.mounts(flags.mount, volumes, checkpoint is not None, p)
    command, args = pod_parts.command(flags.command, flags.args, flags.arg, p)
    p.raise_any()
    return ServeSpec(
        name=flags.name,
        kind=flags.kind,
        namespace=flags.namespace or UNRESOLVED_NAMESPACE,
        profile=flags.profile or "",
        image=flags.image or "",
        preset=preset,
        import_path=flags.import_path or DEFAULT_IMPORT_PATH,
        replicas=replicas,
        min_replicas=min_r,
        max_replicas=max_r,
        env=tuple(sorted(env.items())),
        secrets=secrets,
        checkpoint=checkpoint,
        probes=probes,
        port=port,
        service_port=service_port,
        service_target_port=target,
        gpus=gpus,
        runtime_pip=tuple(flags.runtime_pip),
        ray_version=flags.ray_version or DEFAULT_RAY_VERSION,
        init_containers=inits,
        sidecars=sidecars,
        volumes=volumes,
        mounts=mounts,
        command=command,
        args=args,
    )
