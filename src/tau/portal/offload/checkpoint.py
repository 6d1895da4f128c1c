"""What the collector has read and delivered, kept under `--out` so a restart resumes exactly.

Performs I/O (one JSON file, replaced atomically). The invariants a restart relies on:

- `spool_size`: the spool's length when the history offsets were recorded. Bytes of the spool
  past it were appended by a process killed before it recorded them: the restart cuts them off
  and reads those history lines again, so no row is spooled twice.
- `pending`: the one delivery in flight, a fixed spool range with its sequence number, chosen
  (and recorded) before the store is written. Until it is confirmed, every attempt delivers the
  same range under the same file id, so a delivery the store committed just before a kill is
  found there, not written twice; rows spooled meanwhile wait for the next sequence number.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tau.portal.errors import UsageError

NAME = "checkpoint.json"
LOCK = ".collector.lock"
VERSION = 1


@dataclass
class Pending:
    """A delivery chosen but not yet confirmed: spool bytes [start, end) as number `seq`."""

    seq: int
    start: int
    end: int
    session: str
    attempt: str
    #: Rows in the range (kept so counts never re-read the spool).
    rows: int = 0


@dataclass
class Checkpoint:
    session: str
    #: Per history file: {"offset": bytes read, "line": lines read, "inode": its inode}.
    files: dict[str, dict[str, int]] = field(default_factory=dict)
    spool_size: int = 0
    #: Spool bytes delivered into the store (everything before this offset).
    delivered: int = 0
    #: Rows in the spool up to `spool_size`, and up to `delivered`.
    spool_rows: int = 0
    delivered_rows: int = 0
    #: The next delivery's sequence number.
    seq: int = 0
    pending: Pending | None = None
    #: Terminal markers spooled, by "session/attempt": the completion, the marker row and its
    #: spool range ("start", "end"), so the delivery holding it also finishes the run.
    markers: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **asdict(self)}


def load(out: Path, session: str | None) -> Checkpoint:
    """The checkpoint under `out`, or a fresh one (its session: `session`, else a new one)."""
    path = out / NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Checkpoint(session=session or "local-" + secrets.token_hex(6))
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"--out {out}: {NAME} is not readable JSON ({exc})",
            hint=f"restore it, or move {out} aside to start over (its rows would be delivered "
            "again under new file ids)",
        ) from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise UsageError(
            f"--out {out}: {NAME} is not a version {VERSION} collector checkpoint",
            hint=f"pass an --out of its own to this collector (move {out} aside)",
        )
    pending = data.get("pending")
    return Checkpoint(
        session=session or str(data.get("session") or ""),
        files={str(k): dict(v) for k, v in (data.get("files") or {}).items()},
        spool_size=int(data.get("spool_size") or 0),
        delivered=int(data.get("delivered") or 0),
        spool_rows=int(data.get("spool_rows") or 0),
        delivered_rows=int(data.get("delivered_rows") or 0),
        seq=int(data.get("seq") or 0),
        pending=Pending(**pending) if isinstance(pending, dict) else None,
        markers=dict(data.get("markers") or {}),
    )


def hold(out: Path) -> int:
    """Take `<out>/.collector.lock` for this process (the kernel drops it when it dies);
    a second collector on the same --out would interleave two spools: refused.
    """
    import fcntl

    fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(
            f"--out {out}: another collector is using this folder",
            hint="stop it first, or give this one an --out of its own",
        ) from None
    return fd


def save(out: Path, point: Checkpoint) -> None:
    """Replace the checkpoint atomically (write a dotfile, fsync, rename, fsync the folder)."""
    write_atomic(out / NAME, json.dumps(point.to_json(), sort_keys=True, indent=1) + "\n")


def write_atomic(path: Path, text: str) -> None:
    """`text` at `path` whole or not at all, surviving a power cut once this returns."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
