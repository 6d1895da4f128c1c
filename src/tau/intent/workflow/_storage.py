"""storage.* and artifacts.checkpoint of a manifest: the data PVC, extra mounts, the checkpoint.

Pure. The renderer owns five volumes and their paths in every pod (the script and manifest
payloads, /data, the hot emptyDir at /mnt and /dev/shm), so an extra mount may reuse neither
their names nor their paths.
"""

from __future__ import annotations

import posixpath
import re

from tau.intent.load import PathKey
from tau.intent.workflow._read import Reader
from tau.intent.workflow.model import ManifestStorage, Mount
from tau.intent.workflow.problems import quote
from tau.k8s.names import DNS_1123_LABEL

#: The reference's volume-name grammar (its payload file-name pattern).
_VOLUME_NAME = re.compile(r"^[A-Za-z0-9._-]+$")
RESERVED_NAMES = ("script", "manifest", "data", "tau-hot", "dshm")
RESERVED_PATHS = ("/script", "/manifest", "/data", "/mnt", "/dev/shm")
CHECKPOINT_MESSAGE = (
    "artifacts.checkpoint: must be a relative pod path without '.' or '..' segments (got {})"
)


def read_storage(r: Reader) -> ManifestStorage:
    r.mapping(("storage",))
    data_pvc = r.string(("storage", "data_pvc"))
    if data_pvc is not None and data_pvc.strip() != data_pvc:
        r.error(
            ("storage", "data_pvc"),
            "storage.data_pvc: must not have surrounding whitespace",
            "remove the spaces around the PVC name",
        )
    return ManifestStorage(data_pvc or None, _mounts(r))


def _mounts(r: Reader) -> tuple[Mount, ...]:
    path: PathKey = ("storage", "mounts")
    items = r.sequence(path, "a list of {name, mountPath, pvc} entries")
    out: list[Mount] = []
    names: set[str] = set()
    paths: set[str] = set()
    for i, item in enumerate(items or ()):
        here = (*path, i)
        if not isinstance(item, dict):
            r.wrong_type(here, "a mapping with name, mountPath and pvc", item)
            continue
        name = _name(r, here, i, names)
        mount_path = _mount_path(r, here, i, paths)
        pvc = r.string((*here, "pvc"))
        read_only = r.boolean((*here, "readOnly")) or False
        wrong_type = pvc is None and r.raw((*here, "pvc")) is not None
        if pvc is None or not pvc.strip():
            if not wrong_type:  # a wrong type is reported already
                r.error(
                    (*here, "pvc"),
                    f"storage.mounts[{i}].pvc: required",
                    "name the PersistentVolumeClaim to mount",
                )
            continue
        if name is not None and mount_path is not None:
            out.append(Mount(name, mount_path, pvc.strip(), read_only))
    return tuple(out)


def _name(r: Reader, here: PathKey, i: int, seen: set[str]) -> str | None:
    where = (*here, "name")
    name = r.string(where)
    if name is None and r.raw(where) is not None:
        return None  # the wrong type is reported already
    name = name or ""
    if not _VOLUME_NAME.fullmatch(name) or name in (".", ".."):
        r.error(
            where,
            f"storage.mounts[{i}].name: invalid volume name {quote(name)}",
            "use lowercase letters, digits and inner '-', e.g. dataset",
        )
        return None
    if name in RESERVED_NAMES:
        r.error(
            where,
            f"storage.mounts[{i}].name: {quote(name)} is reserved by Tau",
            f"tau's own volumes are {', '.join(RESERVED_NAMES)}; pick another name",
        )
        return None
    if name in seen:
        message = f"storage.mounts[{i}].name: duplicate volume name {quote(name)}"
        r.error(where, message, "give each mount its own name")
        return None
    seen.add(name)
    if not DNS_1123_LABEL.fullmatch(name) or len(name) > 63:
        # Beyond the reference: Kubernetes takes only DNS labels as volume names, so a name the
        # reference lets through would fail at submit.
        r.error(
            where,
            f"storage.mounts[{i}].name: {quote(name)} is not a valid Kubernetes volume name",
            "use lowercase letters, digits and inner '-', at most 63 characters",
        )
        return None
    return name


def _mount_path(r: Reader, here: PathKey, i: int, seen: set[str]) -> str | None:
    where = (*here, "mountPath")
    mount_path = r.string(where)
    if mount_path is None and r.raw(where) is not None:
        return None
    mount_path = mount_path or ""
    if not mount_path.startswith("/"):
        r.error(
            where,
            f"storage.mounts[{i}].mountPath: must be an absolute pod path",
            'start it with "/", e.g. /datasets',
        )
        return None
    # "/data/" and "/data" are one directory in the pod.
    normal = posixpath.normpath(mount_path)
    if normal in RESERVED_PATHS:
        r.error(
            where,
            f"storage.mounts[{i}].mountPath: {quote(mount_path)} is reserved by Tau",
            f"tau mounts its own volumes at {', '.join(RESERVED_PATHS)}; pick another path",
        )
        return None
    if normal in seen:
        message = f"storage.mounts[{i}].mountPath: duplicate mount path {quote(mount_path)}"
        r.error(where, message, "give each mount its own path")
        return None
    seen.add(normal)
    return mount_path


def read_checkpoint(r: Reader) -> str | None:
    """artifacts.checkpoint: a relative pod path, None when unset."""
    r.mapping(("artifacts",))
    path: PathKey = ("artifacts", "checkpoint")
    value = r.string(path)
    if value is None:
        return None
    checkpoint = value.strip()
    if not checkpoint:
        r.error(path, "artifacts.checkpoint: must not be empty", "remove it or name a file")
        return None
    parts = checkpoint.split("/")
    if checkpoint.startswith("/") or any(p in ("", ".", "..") for p in parts):
        r.error(
            path,
            CHECKPOINT_MESSAGE.format(quote(value)),
            "name the file relative to the run's checkpoint directory, e.g. last.safetensors",
        )
        return None
    return checkpoint
