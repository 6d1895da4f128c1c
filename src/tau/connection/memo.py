"""The outcome of a lifecycle read's connection, kept until one of its inputs changes.

Performs I/O (stat, and one private JSON file under the config dir). Connecting a read-only
lifecycle verb (`tau run status|list|get|logs`) means parsing the repository descriptor and the
user's kubeconfig, cutting the context out, comparing it with the dedicated copy and the trust
record, and reading the workspace target the last verification recorded: all local files, and
more CPU than the API requests that follow. When that work asked the cluster nothing, its
outcome (the namespace, the system namespace, and the dedicated kubeconfig's cluster and user
for `tau.kube.direct`) is a function of the command line, the environment, the working
directory, the clock (the verification's freshness) and the files it read. The memo records
that outcome with the identity (device, inode, size, mtime) of every one of those files,
present or absent, and is used only while all of them are unchanged and the verification is
fresh; anything else goes through the full connection, which writes the memo again. A file
changed while the full path ran, or less than a second before it started, is not trusted to
the memo (its mtime may not tell two writes apart), so such a run writes none.

The memo holds the dedicated kubeconfig's credential, so it is as private as that file (0600
in the same config dir). Nothing here imports YAML or the connection layer: a hit costs a few
stats and one small JSON read.
"""

from __future__ import annotations

import binascii
import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tau.connection.files import config_dir, write_private

SCHEMA = "tau.connection-memo.v2"
#: Environment variables a connection may read (all of tau's own, and the kubeconfig's).
_ENV = ("KUBECONFIG", "HOME", "XDG_CONFIG_HOME")
#: A file whose mtime is this close to the run's start may hide a second write (nanoseconds).
_SETTLE_NS = 1_000_000_000

Stat = list[int] | None


def key(flags: Iterable[str | None], env: Mapping[str, str]) -> dict[str, Any]:
    """What, besides files, decides a connection: the flags, the environment, the working
    directory and tau's version (a descriptor may require a newer one).
    """
    import tau

    return {
        "flags": list(flags),
        "cwd": os.getcwd(),
        "env": {k: v for k, v in sorted(env.items()) if k.startswith("TAU_") or k in _ENV},
        "version": tau.__version__,
    }


def _path(memo_key: dict[str, Any], env: Mapping[str, str]) -> Path:
    # A checksum names the file (hashlib's OpenSSL start-up would cost more than the rest of a
    # hit); two keys that share it only take turns, as the key inside is compared.
    text = json.dumps(memo_key, sort_keys=True).encode()
    return config_dir(env) / "memos" / f"read-{binascii.crc32(text):08x}-{len(text)}.json"


def _stat(path: str, marker: bool) -> Stat:
    """A file's identity; for a `marker`, whose presence alone counts, [] when present."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return [] if marker else [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def recall(
    memo_key: dict[str, Any], env: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any], str, str] | None:
    """(cluster, user, namespace, system namespace) recorded for `memo_key`, while every input
    is unchanged and the verification it relied on is fresh; None otherwise (also for a memo
    it cannot read).
    """
    try:
        memo = json.loads(_path(memo_key, env).read_bytes())
        if memo["schema"] != SCHEMA or memo["key"] != memo_key or not _current(memo):
            return None
        cluster, user, namespace = memo["cluster"], memo["user"], memo["namespace"]
        system = memo["system_namespace"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not (isinstance(cluster, dict) and isinstance(user, dict)):
        return None
    if not (isinstance(namespace, str) and isinstance(system, str)):
        return None
    return cluster, user, namespace, system


def _current(memo: dict[str, Any]) -> bool:
    """Whether the memo's verification is fresh and all of its inputs are unchanged.

    Raises:
        ValueError, TypeError: the memo is malformed.
    """
    if memo["fresh"] is not None:
        start, end = memo["fresh"]
        if not start <= time.time() < end:
            return False
    return all(_stat(path, marker) == stat for path, marker, stat in memo["files"])


def remember(
    memo_key: dict[str, Any],
    env: Mapping[str, str],
    *,
    started_ns: int,
    files: Iterable[tuple[Path, bool]],
    fresh: tuple[float, float] | None,
    entries: tuple[dict[str, Any], dict[str, Any]],
    namespace: str,
    system_namespace: str,
) -> None:
    """Record a connection made from `files` alone (no API request), fresh during `fresh`
    (epoch seconds; None: not time-bound); nothing when one of them changed too late.

    Args:
        files: each input and whether it is a marker (only its presence counts).
    """
    stats = [(str(p), marker, _stat(str(p), marker)) for p, marker in dict.fromkeys(files)]
    if any(s and s[3] >= started_ns - _SETTLE_NS for _, _, s in stats):
        return
    memo = {
        "schema": SCHEMA,
        "key": memo_key,
        "fresh": list(fresh) if fresh else None,
        "files": stats,
        "cluster": entries[0],
        "user": entries[1],
        "namespace": namespace,
        "system_namespace": system_namespace,
    }
    # A memo is only ever a shortcut: one that cannot be written (or a kubeconfig entry JSON
    # cannot hold, such as a YAML timestamp in an extension) is simply not kept.
    with contextlib.suppress(OSError, TypeError, ValueError):
        write_private(_path(memo_key, env), json.dumps(memo, sort_keys=True).encode())


def inputs(
    connection: Any, cluster: Mapping[str, Any], env: Mapping[str, str], cwd: Path
) -> list[tuple[Path, bool]]:
    """Every file a connection from `cwd` read, or whose appearance would change it, and
    whether only its presence counts: the Git markers, descriptors and catalog from `cwd` up to
    the repository root, the user's kubeconfig files, the dedicated copy and its trust record,
    and the CA file the cluster identity is pinned to.
    """
    from tau.connection.descriptor import RELATIVE_PATH
    from tau.connection.kubeconfig import user_kubeconfig_paths
    from tau.intent.gitroot import FILENAME

    found: list[tuple[Path, bool]] = []
    for directory in (cwd, *cwd.parents):
        found += [(directory / ".git", True), (directory / RELATIVE_PATH, False)]
        found.append((directory / FILENAME, False))
        if (directory / ".git").exists():
            break
    files = [*user_kubeconfig_paths(env), connection.kubeconfig, connection.state_file]
    if cluster.get("certificate-authority"):
        files.append(Path(str(cluster["certificate-authority"])))
    return found + [(p, False) for p in files if p is not None]
