"""The completion sentinel the workload's wrapper writes, and the terminal `tau/run_status` marker.

Performs I/O (reads the sentinel, writes the status file). The sentinel is
`{"state":"succeeded|failed|cancelled","reason":"...","message":"...","completed_at":"RFC3339"}`
(written as a dotfile, then renamed). The marker is one metric row `tau/run_status` with value
1 / -1 / -2 for succeeded / failed / cancelled and the `tau.status.*` tags (contract §4.5), also
written to `<out>/metrics-status/run-status-<run>-<hash>.jsonl`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.portal.offload.checkpoint import write_atomic
from tau.portal.store.cards import CARD_TAG, RUN_STATUS_METRIC, STANDARD_TAG, card_of

VALUES = {"succeeded": 1.0, "failed": -1.0, "cancelled": -2.0}
#: The tags the marker row carries, also set as the run's tags (the last attempt's win).
TAG_KEYS = (
    "tau.status.state",
    "tau.status.reason",
    "tau.status.message",
    "tau.status.artifact_uri",
    "tau.status.checkpoint_uri",
    "tau.attempt",
)
STATUS_DIR = "metrics-status"


@dataclass(frozen=True)
class Completion:
    state: str
    reason: str
    message: str
    completed_at: str


def read_sentinel(path: Path) -> tuple[Completion | None, str | None]:
    """(the completion, None) once the sentinel is there; (None, None) before; a sentinel that
    is not the expected JSON gives (a `failed` completion naming the problem, a note).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"--completion-file {path}: not readable ({exc.strerror or exc})"
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("state"), str):
        bad = f"--completion-file {path}: not a completion sentinel ({text.strip()[:80]!r})"
        return Completion("failed", "invalid-completion-file", bad, now()), bad
    state = str(data["state"]).lower()
    note = None
    if state not in VALUES:
        note = f"--completion-file {path}: unknown state {state!r}; recorded as failed"
    return (
        Completion(
            state if state in VALUES else "failed",
            str(data.get("reason") or ""),
            str(data.get("message") or ""),
            str(data.get("completed_at") or now()),
        ),
        note,
    )


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micros(stamp: str) -> int:
    """Epoch microseconds of an RFC3339 time (now when it is not one)."""
    try:
        parsed = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        parsed = datetime.now(UTC)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return round(parsed.timestamp() * 1_000_000)


def status_tags(
    done: Completion, *, attempt: str, artifact_uri: str, checkpoint_uri: str
) -> dict[str, str]:
    return {
        "tau.status.state": done.state,
        "tau.status.reason": done.reason,
        "tau.status.message": done.message,
        "tau.status.artifact_uri": artifact_uri,
        "tau.status.checkpoint_uri": checkpoint_uri,
        "tau.attempt": attempt,
    }


def marker_row(
    done: Completion,
    tags: dict[str, str],
    *,
    project: str,
    group: str,
    run: str,
    source: str,
) -> dict[str, Any]:
    """The `tau/run_status` metric row (no step: it sits at the run's end by its time)."""
    row_tags = {
        **tags,
        CARD_TAG: card_of(RUN_STATUS_METRIC),
        STANDARD_TAG: "false",
    }
    return {
        "project": project,
        "run_group_id": group,
        "run_id": run,
        "metric_name": RUN_STATUS_METRIC,
        "step": None,
        "wall_time": micros(done.completed_at),
        "value": VALUES[done.state],
        "unit": None,
        "source": source,
        "split": None,
        "tags": json.dumps(row_tags, sort_keys=True),
    }


def status_path(out: Path, run: str, session: str, attempt: str) -> Path:
    digest = hashlib.sha256(f"{run}\0{session}\0{attempt}".encode()).hexdigest()[:12]
    return out / STATUS_DIR / f"run-status-{run}-{digest}.jsonl"


def write_status(path: Path, row: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(row, separators=(",", ":")) + "\n")
