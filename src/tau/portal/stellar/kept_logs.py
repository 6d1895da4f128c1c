"""A run's kept logs in the experiment store, for the served run page. Performs I/O.

`tau` keeps each container's log of an attempt before it deletes the attempt's workload
(`tau.runs.kept_logs`): in a folder store under `runs/<run_id>/logs/attempt-<N>/<pod>/`, in a
team store under the same key of its object prefix. The run page lists them; one route serves a
log's text, escaped into a page and capped (the end of a log is where a failure says what it
is, so a long one shows its last part, with a note).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

if TYPE_CHECKING:
    from tau.portal.store.location import TeamURL

#: The route serving one kept log's text.
ROUTE = "/stellar/kept-log"
#: Bytes of a log shown on its page (its end).
MAX_SHOWN = 256 * 1024
#: Listed per run (a run with more attempts × containers than this is cut, and says so).
MAX_LISTED = 500
#: The only relative paths served: attempt, a pod name, a container name (DNS labels).
_LOG = re.compile(
    r"^attempt-(\d{1,6})/([a-z0-9][a-z0-9.-]{0,252})/([a-z0-9][a-z0-9-]{0,62})"
    r"(\.previous)?\.log$"
)


@dataclass(frozen=True)
class KeptLog:
    attempt: int
    pod: str
    container: str
    previous: bool
    path: str

    def url(self, run_id: str) -> str:
        return f"{ROUTE}?" + urlencode({"run": run_id, "path": self.path})


def _place(root: Path | TeamURL, run_id: str) -> Any:
    from tau.runs.kept_place import store_place

    return store_place(str(root), run_id)


def listing(root: Path | TeamURL, run_id: str) -> tuple[list[KeptLog], bool]:
    """(the run's kept logs by attempt, pod and container; whether the list was cut). A store
    whose logs cannot be listed lists none (the page says there are none kept).
    """
    from tau.runs.kept_place import PlaceError

    try:
        files = _place(root, run_id).files("logs")
    except PlaceError:
        return [], False
    found = []
    for rel in files:
        match = _LOG.match(rel)
        if match:
            attempt, pod, container, previous = match.groups()
            found.append(KeptLog(int(attempt), pod, container, bool(previous), rel))
    found.sort(key=lambda k: (k.attempt, k.pod, k.container, k.previous))
    return found[:MAX_LISTED], len(found) > MAX_LISTED


def as_rows(root: Path | TeamURL, run_id: str) -> dict[str, Any]:
    """What the run page's kept-logs block shows: attempts, each with its logs and links."""
    logs, cut = listing(root, run_id)
    attempts: dict[int, list[dict[str, Any]]] = {}
    for log in logs:
        attempts.setdefault(log.attempt, []).append(
            {
                "pod": log.pod,
                "container": log.container,
                "previous": log.previous,
                "url": log.url(run_id),
            }
        )
    return {
        "attempts": [{"attempt": n, "logs": rows} for n, rows in sorted(attempts.items())],
        "truncated": cut,
    }


def valid_path(path: str) -> bool:
    return _LOG.match(path) is not None


def read(root: Path | TeamURL, run_id: str, path: str) -> tuple[str, int] | None:
    """(the text shown, the log's whole size in bytes) of one kept log; None when absent.

    Only paths of the kept-log shape are read (nothing else of the store is handed out).
    """
    from tau.runs.kept_place import PlaceError

    if not valid_path(path):
        return None
    try:
        data = _place(root, run_id).read(f"logs/{path}")
    except PlaceError:
        return None
    if data is None:
        return None
    shown = data[-MAX_SHOWN:]
    if len(shown) < len(data):
        # Start at a whole line: the cut may fall mid-line (or mid-character).
        newline = shown.find(b"\n")
        shown = shown[newline + 1 :] if 0 <= newline < len(shown) - 1 else shown
    return shown.decode("utf-8", "replace"), len(data)
