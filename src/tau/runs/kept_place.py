"""Where a run's kept logs live: the experiment store the platform names, else a local folder.

Performs I/O (the TauWorkspace, files, and the team store's object storage when one is named).
The layout: in a folder store `<store>/runs/<run_id>/logs/attempt-<N>/<pod>/<container>.log`,
in a team store the same key under its object prefix, and with no store named
`$XDG_STATE_HOME/tau/evidence/<namespace>/<run>/logs/...` (default `~/.local/state`). The store
comes only from the workspace (`spec.experiments.store`), never from the project's tau.yaml.
Writing a folder is plain files; the team store's S3 client (`tau.objectstore`, over pyarrow) is
imported only when a team store is the place, so nothing heavy loads otherwise.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

#: The folder of a run's kept logs, relative to its evidence root.
LOGS = "logs"


class PlaceError(Exception):
    """A place that cannot be written or read; the message names the place and why."""


def state_home(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_STATE_HOME`, else `~/.local/state` (the XDG default)."""
    environ = os.environ if env is None else env
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base).expanduser()


def shown_store(store: str) -> str:
    """The store as it may be printed: a URL's password (which a store URL must not hold, but a
    mistyped workspace may) never reaches a message.
    """
    if "://" not in store:
        return store
    parts = urlsplit(store)
    if parts.password is None:
        return store
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:<redacted>@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


@dataclass
class Place:
    """A run's evidence root: the files of its kept logs live under `<root>/logs/`.

    `kind` is "folder" (a folder store), "team" (a team store's objects) or "local" (tau's
    state folder); `where` is how a message names it.
    """

    kind: str
    where: str
    root: str
    _fs: Any = field(default=None, repr=False)

    def _filesystem(self) -> Any:
        if self._fs is None:
            from tau.objectstore import ObjectStoreError, filesystem

            try:
                self._fs = filesystem()
            except ObjectStoreError as exc:
                raise PlaceError(exc.message) from None
        return self._fs

    def path(self, rel: str) -> str:
        return posixpath.join(self.root, rel) if self.kind == "team" else str(Path(self.root) / rel)

    def write(self, rel: str, data: bytes) -> None:
        """Write one file (replacing it).

        Raises:
            PlaceError: the folder or the object store refused.
        """
        try:
            if self.kind == "team":
                with self._filesystem().open_output_stream(self.path(rel)) as out:
                    out.write(data)
                return
            from tau.connection.files import write_private

            # Private (0600): a container may have printed what only its owner should read.
            write_private(Path(self.path(rel)), data)
        except PlaceError:
            raise
        except Exception as exc:  # OSError, and pyarrow's own errors for the object store
            raise PlaceError(_first_line(exc)) from None

    def read(self, rel: str) -> bytes | None:
        """A file's bytes, or None when it is not there.

        Raises:
            PlaceError: the place cannot be read.
        """
        try:
            if self.kind == "team":
                from tau.objectstore import read_file

                return read_file(self._filesystem(), self.path(rel))
            return Path(self.path(rel)).read_bytes()
        except FileNotFoundError:
            return None
        except PlaceError:
            raise
        except Exception as exc:
            raise PlaceError(_first_line(exc)) from None

    def files(self, rel: str) -> list[str]:
        """Every file under `rel`, as paths relative to `rel` ('/'-separated), sorted.

        Raises:
            PlaceError: the place cannot be listed.
        """
        try:
            if self.kind == "team":
                from tau.objectstore import list_files

                return list_files(self._filesystem(), self.path(rel).rstrip("/"))
            top_dir = Path(self.path(rel))
            if not top_dir.is_dir():
                return []
            return sorted(
                p.relative_to(top_dir).as_posix() for p in top_dir.rglob("*") if p.is_file()
            )
        except PlaceError:
            raise
        except Exception as exc:
            raise PlaceError(_first_line(exc)) from None


def local_root(namespace: str, run: str, env: Mapping[str, str] | None = None) -> Path:
    """A run's folder in tau's state folder."""
    return state_home(env) / "tau" / "evidence" / namespace / run


def local_place(namespace: str, run: str, env: Mapping[str, str] | None = None) -> Place:
    """The state folder of tau for a run whose workspace names no store."""
    root = local_root(namespace, run, env)
    return Place("local", str(root), str(root))


def store_place(store: str, run_id: str) -> Place:
    """The run's root in the store the platform names.

    Raises:
        PlaceError: the value is neither an absolute folder nor a team store URL.
    """
    from tau.objectstore import ObjectStoreError, is_team_url, objects_root

    if is_team_url(store):
        try:
            prefix = objects_root(store)
        except ObjectStoreError as exc:
            raise PlaceError(f"spec.experiments.store: {exc.message}") from None
        return Place("team", shown_store(store), f"{prefix}/runs/{run_id}")
    folder = os.path.expanduser(store)
    if not os.path.isabs(folder):
        raise PlaceError(f'"{store}" is neither an absolute folder nor a postgresql:// store URL')
    root = Path(os.path.normpath(folder))
    if not root.is_dir():
        raise PlaceError(f"folder store {root} does not exist on this machine")
    return Place("folder", str(root), str(root / "runs" / run_id))


def workspace_store(
    api: Any,
    namespace: str,
    env: Mapping[str, str] | None = None,
    system_namespace: str | None = None,
) -> str | None:
    """`spec.experiments.store` of the TauWorkspace whose namespace is `namespace`; None when
    no workspace targets it, it names no store, or the workspaces cannot be read (a
    --namespace-only run on a cluster without TauWorkspaces keeps its logs locally).

    The TauWorkspaces are read in `system_namespace`, the session's (the connection
    descriptor's `cluster.systemNamespace`); without one, `$TAU_SYSTEM_NAMESPACE` or the
    default, as a connection without a descriptor has it.
    """
    from tau.connection.descriptor import DEFAULT_SYSTEM_NAMESPACE
    from tau.errors import TauError
    from tau.k8s.kinds import TAU_WORKSPACE
    from tau.kube import resources
    from tau.workspaces.readiness import view

    environ = os.environ if env is None else env
    system = system_namespace or environ.get("TAU_SYSTEM_NAMESPACE") or DEFAULT_SYSTEM_NAMESPACE
    try:
        items = resources.list_items(api, TAU_WORKSPACE, namespace=system, missing_ok=True)
    except TauError:
        return None
    for item in sorted(items, key=lambda o: str((o.get("metadata") or {}).get("name", ""))):
        if view(item).namespace != namespace:
            continue
        experiments = (item.get("spec") or {}).get("experiments") or {}
        store = experiments.get("store") if isinstance(experiments, dict) else None
        if isinstance(store, str) and store.strip():
            return store.strip()
    return None


def run_id_of(obj: Mapping[str, Any]) -> str:
    """The store's id of a run: its `tau.azure.com/run-id` label, else its name (portal §4.3)."""
    from tau.k8s import meta

    md = obj.get("metadata") or {}
    return str((md.get("labels") or {}).get(meta.LABEL_RUN_ID) or md.get("name") or "")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
