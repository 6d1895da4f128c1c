"""`tau serve deploy`'s pod extras: --init/--sidecar containers, --volume/--mount, --command/--args.

Pure. Each parser checks its flags, reports every problem through `add` (the caller's collector,
so one run reports all problems in flag order) and returns what render needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from tau.k8s import images, paths
from tau.k8s.names import DNS_1123_LABEL, DNS_1123_SUBDOMAIN

DATA_ROOT = paths.DATA_ROOT
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
#: --volume kinds as the contract spells them, by their lower-case form.
VOLUME_KINDS = {"pvc": "pvc", "emptydir": "emptyDir", "configmap": "configMap", "secret": "secret"}
#: The volume name --checkpoint uses for the PVC at /data (render.service.DATA_VOLUME).
CHECKPOINT_VOLUME = "tau-data"
#: The Deployment's serving container (render.service.DEPLOYMENT_CONTAINER).
SERVER_CONTAINER = "server"


class Problems(Protocol):
    """Where a parser reports a problem (plan.service's collector)."""

    def add(self, message: str, hint: str | None = None) -> None: ...


@dataclass(frozen=True)
class Container:
    """An extra container of a Deployment pod (--init, --sidecar): the image's own entrypoint."""

    name: str
    image: str


@dataclass(frozen=True)
class Volume:
    """A pod volume from --volume NAME=KIND[:SOURCE]; `source` is "" for emptyDir."""

    name: str
    kind: str
    source: str = ""


@dataclass(frozen=True)
class Mount:
    """A --mount NAME:PATH[:ro|rw] on the serving container(s)."""

    name: str
    path: str
    read_only: bool = False


def image_problem(image: str) -> tuple[str, str] | None:
    """Why `image` is not pinned (message, hint), or None when it is a tag or a digest."""
    fix = "pin a version tag (e.g. ghcr.io/org/server:1.4.2) or a digest (@sha256:...)"
    if not images.is_reference(image):
        return f'--image "{image}" is not an image reference', fix
    _, _, digest = image.partition("@")
    if digest and not _DIGEST.match(digest):
        return f'--image "{image}": digest must be sha256 and 64 hex digits', fix
    found = images.floating(image)
    if found == images.UNTAGGED:
        return f'--image "{image}" is not pinned: it has no tag, so it means :latest', fix
    if found == images.LATEST:
        return f'--image "{image}" is not pinned: :latest moves under a running service', fix
    return None


def containers(
    flag: str, values: tuple[str, ...], taken: set[str], p: Problems
) -> tuple[Container, ...]:
    """--init / --sidecar NAME=IMAGE: a DNS-1123 label, a pinned image, names unique in the pod."""
    out = []
    for item in values:
        name, sep, image = item.partition("=")
        if not sep or not name or not image:
            p.add(
                f'{flag} "{item}" must be NAME=IMAGE', f"e.g. {flag} fetch=ghcr.io/org/fetch:1.0.0"
            )
            continue
        if not DNS_1123_LABEL.match(name) or len(name) > 63:
            p.add(
                f'{flag} "{item}": container name "{name}" must be a DNS-1123 label',
                "lower-case letters, digits and '-', at most 63 characters",
            )
        elif name in taken:
            p.add(f'{flag} "{item}": container name "{name}" is already used in the pod')
        problem = image_problem(image)
        if problem is not None:
            p.add(problem[0].replace("--image", f"{flag} {name}", 1), problem[1])
        taken.add(name)
        out.append(Container(name, image))
    return tuple(out)


def volumes(values: tuple[str, ...], p: Problems) -> tuple[Volume, ...]:
    """--volume NAME=KIND[:SOURCE] with KIND pvc|emptyDir|configMap|secret."""
    out: dict[str, Volume] = {}
    kinds = "|".join(VOLUME_KINDS.values())
    for item in values:
        name, sep, body = item.partition("=")
        raw_kind, colon, source = body.partition(":")
        kind = VOLUME_KINDS.get(raw_kind.lower())
        if not sep or not name or kind is None:
            p.add(
                f'--volume "{item}" must be NAME=KIND[:SOURCE] with KIND one of {kinds}',
                "e.g. --volume cache=emptyDir or --volume weights=pvc:model-store",
            )
            continue
        if not DNS_1123_LABEL.match(name) or len(name) > 63:
            p.add(f'--volume "{item}": volume name "{name}" must be a DNS-1123 label')
            continue
        if name == CHECKPOINT_VOLUME:
            p.add(
                f'--volume "{item}": the name "{CHECKPOINT_VOLUME}" is reserved for the '
                "--checkpoint PVC",
                "choose another volume name",
            )
            continue
        if name in out:
            p.add(f'--volume "{name}" is given twice', "declare each volume once")
        if kind == "emptyDir" and colon:
            p.add(f'--volume "{item}": emptyDir takes no source', f"write --volume {name}=emptyDir")
        elif kind != "emptyDir" and not DNS_1123_SUBDOMAIN.match(source):
            p.add(
                f'--volume "{item}": {kind} needs the name of its source',
                f"e.g. --volume {name}={kind}:my-{kind.lower()}",
            )
        out.setdefault(name, Volume(name, kind, source if kind != "emptyDir" else ""))
    return tuple(out.values())


def mounts(
    values: tuple[str, ...], volumes: tuple[Volume, ...], checkpoint: bool, p: Problems
) -> tuple[Mount, ...]:
    """--mount NAME:PATH[:ro|rw] of a declared --volume; every volume must be mounted."""
    declared = {v.name for v in volumes}
    out: list[Mount] = []
    # A volume named by a malformed --mount is reported there, not again as never mounted.
    named: set[str] = set()
    for item in values:
        name, _, rest = item.partition(":")
        named.add(name)
        path, _, mode = rest.partition(":")
        clean = PurePosixPath(path)
        if not name or not path or mode not in ("", "ro", "rw"):
            p.add(f'--mount "{item}" must be NAME:PATH[:ro|rw]', "e.g. --mount cache:/cache")
            continue
        if name not in declared:
            p.add(
                f'--mount "{item}": no --volume named "{name}"',
                f"declare it, e.g. --volume {name}=emptyDir",
            )
        if not clean.is_absolute() or ".." in clean.parts or str(clean) != path:
            p.add(f'--mount "{item}": path "{path}" must be a clean absolute path')
        elif any(m.path == path for m in out):
            p.add(f'--mount "{item}": path "{path}" is mounted twice')
        elif checkpoint and (path == DATA_ROOT or path.startswith(DATA_ROOT + "/")):
            p.add(
                f'--mount "{item}": {DATA_ROOT} holds the --checkpoint PVC',
                "mount the volume somewhere else",
            )
        out.append(Mount(name, path, mode == "ro"))
    for volume in volumes:
        if volume.name not in named:
            p.add(
                f'--volume "{volume.name}" is never mounted',
                f"add --mount {volume.name}:PATH, or drop the --volume",
            )
    return tuple(out)


def command(
    command: tuple[str, ...], args: str | None, arg: tuple[str, ...], p: Problems
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(command, args) of the Deployment's server container: --command elements, then the
    literal --arg values or the legacy --args string split on whitespace.
    """
    if command and not command[0].strip():
        p.add("--command needs a non-empty executable as its first value")
    if args is not None and arg:
        p.add(
            "--arg conflicts with --args",
            "use repeated --arg values for literal arguments (--args splits on whitespace)",
        )
    return tuple(command), tuple(arg) if arg else tuple((args or "").split())
