"""Storage, source-tree, image-asset and metrics rules that need no cluster and no disk.

Pure. Whether the output sits under a mounted PVC is decided at render, where the
mounts are known; here only the shape of each path is checked.
"""

from __future__ import annotations

import posixpath
import re

from tau.intent.validate.context import Context
from tau.k8s import paths
from tau.k8s.names import DNS_1123_LABEL

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

_DIGEST_REF = re.compile(
    # registry host[:port]/, the host a DNS name or a bracketed IPv6 address
    r"^(?:(?:[a-z0-9]+(?:[._-][a-z0-9]+)*|\[[0-9a-f:.]+\])(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?@sha256:[a-f0-9]{64}$"
)
_TELEMETRY_ID = re.compile(r"^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$")
_TELEMETRY_CHARS = re.compile(r"^[a-z0-9._-]*$")
_ASSETS = "storage.image_assets"
#: Where a run.source tree is mounted, and so the container's working directory.
SOURCE_MOUNT = "/tau/source"
RESERVED_MOUNTS = (
    paths.DATA_ROOT,
    paths.HOT_ROOT,
    "/script",
    "/manifest",
    "/tmp",
    "/dev/shm",
    "/var/run/tau",
    SOURCE_MOUNT,
)


def is_clean_absolute(path: str) -> bool:
    """Absolute, normalized, and not the root itself."""
    return path.startswith("/") and path != "/" and posixpath.normpath(path) == path


def is_pinned(ref: str) -> bool:
    """A complete lowercase OCI reference pinned by an @sha256 digest."""
    if not _DIGEST_REF.match(ref):
        return False
    # Normalization must not change the reference: the first component is a registry host
    # (`foo/bar@...` would normalize to docker.io/foo/bar@...).
    host, sep, _ = ref.split("@", 1)[0].partition("/")
    if host.startswith("["):
        return bool(sep) and _is_ipv6(host[1 : host.index("]")])
    return bool(sep) and ("." in host or ":" in host or host == "localhost")


def _is_ipv6(text: str) -> bool:
    import ipaddress

    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check(ctx: Context) -> None:
    _working_dir(ctx)
    _source(ctx)
    _assets(ctx)
    _outputs(ctx)
    _metrics(ctx)


def _working_dir(ctx: Context) -> None:
    wd = ctx.get("runtime.working_dir")
    if isinstance(wd, str) and not is_clean_absolute(wd):
        ctx.error(
            "runtime.working_dir",
            f'runtime.working_dir "{wd}" must be a clean absolute container path',
        )
    if wd and ctx.has("run.source"):
        ctx.error(
            "runtime.working_dir",
            "runtime.working_dir and run.source cannot be used together; run.source fixes the "
            f"container working directory at {SOURCE_MOUNT}",
            "remove runtime.working_dir",
        )
    if wd and ctx.has("run.working_dir"):
        ctx.error(
            "runtime.working_dir",
            "runtime.working_dir and run.working_dir cannot be used together; "
            "runtime.working_dir sets a Job container path while run.working_dir ships a "
            "local project through Ray",
            "keep the one that matches the engine: runtime.working_dir for a Job, "
            "run.working_dir for a RayJob",
        )
    if ctx.has("run.source") and ctx.has("run.working_dir"):
        ctx.error(
            "run.working_dir",
            "run.source and run.working_dir cannot be used together",
            "choose one way to ship the project: run.source for a Job, run.working_dir for a "
            "RayJob",
        )


def _clean_below_root(ctx: Context, path: str, value: str) -> None:
    ctx.error(path, f'{path} must be a clean absolute path below / (got "{value}")')


def _source(ctx: Context) -> None:
    if not ctx.has("run.source"):
        return
    image, path = ctx.get("run.source.image"), ctx.get("run.source.path")
    if not image:
        ctx.error("run.source", "run.source.image is required with run.source")
    elif not is_pinned(image):
        ctx.error(
            "run.source.image",
            "run.source.image must be a complete lowercase OCI image "
            "reference pinned by an @sha256:<64 lowercase hex> digest",
        )
    if not path:
        ctx.error("run.source", "run.source.path is required with run.source")
    elif not is_clean_absolute(path):
        _clean_below_root(ctx, "run.source.path", path)
    elif _under(path, "/tau-source"):
        ctx.error(
            "run.source.path",
            f'run.source.path "{path}" is hidden by Tau\'s staging volume',
            "the source image is staged through /tau-source; copy from a path outside it",
        )
    entry_path, entry = ctx.entry_path, ctx.entrypoint
    if not entry:
        ctx.error(
            "entrypoint",
            "run.source requires entrypoint",
            "set `entrypoint:` to the script's path inside the source tree",
        )
    elif (
        entry.startswith("/")
        or "\\" in entry
        or posixpath.normpath(entry) != entry
        or entry in (".", "..")
        or entry.startswith("../")
    ):
        ctx.error(
            entry_path, f'entrypoint "{entry}" must be a clean relative path inside run.source.path'
        )


def _assets(ctx: Context) -> None:
    assets = ctx.get("storage.image_assets") or []
    names: set[str] = set()
    mounts: list[str] = []
    for i, asset in enumerate(assets):
        base = f"storage.image_assets[{i}]"
        name = asset.get("name")
        if not name or not DNS_1123_LABEL.match(name) or len(name) > 50:
            ctx.error(
                f"{base}.name",
                f"{base}.name must be a lowercase DNS label no longer than 50 characters "
                f'(got "{name or ""}")',
            )
        elif name in names:
            ctx.error(
                f"{base}.name",
                f'storage.image_assets name "{name}" is declared more than once',
                shown=_ASSETS,
            )
        names.add(name or "")
        image = asset.get("image") or ""
        if not is_pinned(image):
            ctx.error(
                f"{base}.image",
                f"{base}.image must be a complete lowercase OCI image "
                "reference pinned by an @sha256:<64 lowercase hex> digest",
            )
        src = asset.get("source_path") or ""
        if not is_clean_absolute(src):
            _clean_below_root(ctx, f"{base}.source_path", src)
        elif _under(src, "/tau-asset"):
            ctx.error(
                f"{base}.source_path",
                f'{base}.source_path "{src}" is hidden by Tau\'s staging volume',
                "assets are staged through /tau-asset; copy from a path outside it",
            )
        mount = asset.get("mount_path") or ""
        if not is_clean_absolute(mount):
            _clean_below_root(ctx, f"{base}.mount_path", mount)
            continue
        reserved = next((m for m in RESERVED_MOUNTS if _under(mount, m) or _under(m, mount)), None)
        other = next((m for m in mounts if _under(mount, m) or _under(m, mount)), None)
        if reserved:
            ctx.error(
                f"{base}.mount_path",
                f'{base}.mount_path "{mount}" overlaps Tau-reserved path {reserved}',
                f"reserved paths: {', '.join(RESERVED_MOUNTS)}",
            )
        elif other == mount:
            ctx.error(
                f"{base}.mount_path",
                f'storage.image_assets mount_path "{mount}" is declared more than once',
                shown=_ASSETS,
            )
        elif other:
            ctx.error(
                f"{base}.mount_path",
                f'storage.image_assets mount paths "{other}" and "{mount}" overlap',
                shown=_ASSETS,
            )
        mounts.append(mount)


def _outputs(ctx: Context) -> None:
    output = ctx.get("storage.output")
    if isinstance(output, str) and not output.startswith("/"):
        ctx.error(
            "storage.output",
            f'storage.output "{output}": must be an absolute path',
            "use a path under the data PVC mount, e.g. /data/checkpoints/workflows/<name>",
        )
    checkpoint = ctx.get("storage.checkpoint")
    if isinstance(checkpoint, str):
        parts = checkpoint.split("/")
        if checkpoint != checkpoint.strip():
            ctx.error(
                "storage.checkpoint",
                f'storage.checkpoint: must not have surrounding whitespace (got "{checkpoint}")',
            )
        elif (
            not checkpoint
            or checkpoint.startswith("/")
            or "\\" in checkpoint
            or any(p in ("", ".", "..") for p in parts)
        ):
            ctx.error(
                "storage.checkpoint",
                "storage.checkpoint: must be a relative path inside the run's checkpoint dir, "
                f"without '.' or '..' segments (got \"{checkpoint}\")",
            )


def _metrics(ctx: Context) -> None:
    history = ctx.get("metrics.history") or []
    for i, entry in enumerate(history):
        path = f"metrics.history[{i}]"
        if not entry.strip():
            ctx.error(path, f"{path} must not be empty")
        elif entry.startswith("/"):
            if not paths.under_data(entry):
                ctx.error(path, f'{path} "{entry}": absolute paths must be under /data')
        elif posixpath.normpath(entry) == ".." or posixpath.normpath(entry).startswith("../"):
            ctx.error(path, f'{path} "{entry}": relative paths must not escape storage.output')
    if ctx.get("metrics.offload.enabled"):
        _offload(ctx, history)


def _offload(ctx: Context, history: list[str]) -> None:
    if not history:
        ctx.error(
            "metrics.offload.enabled",
            "metrics.history requires at least one JSONL path when metrics.offload.enabled is true",
            "list the JSONL file(s) the trainer writes under metrics.history",
            shown="metrics.history",
        )
    experiment = (
        ctx.get("experiment.name") or ctx.get("experiment.title") or ctx.get("experiment.group")
    )
    if not ctx.get("experiment.project"):
        ctx.error(
            "metrics.offload.enabled",
            "experiment.project is required when metrics.offload.enabled is true",
            shown="experiment.project",
        )
    if not experiment:
        ctx.error(
            "metrics.offload.enabled",
            "experiment.name is required when metrics.offload.enabled is true",
            "set experiment.name (or experiment.title or experiment.group)",
            shown="experiment.name",
        )
    # The offloaded metrics are stored under these ids; without offload they are free labels.
    for field, kind in (("project", "project"), ("name", "experiment"), ("group", "group")):
        value = ctx.get(f"experiment.{field}")
        if isinstance(value, str) and (problem := telemetry_id_problem(kind, value)):
            ctx.error(f"experiment.{field}", problem)


def telemetry_id_problem(kind: str, value: str) -> str | None:
    """Why `value` is not a telemetry id (project, experiment or group), or None.

    Lowercase alphanumerics with internal '-', '_' or '.', as the metrics store names them.
    """
    if _TELEMETRY_ID.match(value):
        return None
    if not value:
        return f"{kind} is required"
    if _TELEMETRY_CHARS.match(value):
        return f'{kind} "{value}" is invalid (must start and end with an alphanumeric)'
    return (
        f"{kind} \"{value}\" is invalid (use lowercase alphanumerics with internal '-', '_' or '.')"
    )
