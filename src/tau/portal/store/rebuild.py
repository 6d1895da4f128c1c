"""`experiment rebuild-index`: a new `index.sqlite` from the store's own files. Performs I/O.

The index is derived data. Every committed row of a mirrored table is also a line of
`append-log/<table>.jsonl` (a full row, in commit order, so replaying with INSERT OR REPLACE
gives the final state), and metric summaries are recomputed from the metric files. So a corrupt
or truncated index is rebuilt without loss: the new index is built aside, the damaged file is
kept next to it (`index.sqlite.damaged-<time>`), and only then is the new one moved in.

A commit that a killed writer left half done (its journal is present) is replayed only up to
the mirror sizes the journal recorded, which is what `recover` would keep.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from tau.portal.errors import StoreError
from tau.portal.store import schema
from tau.portal.store.lock import WriterLock


def rebuild_index(root: Path) -> dict[str, Any]:
    """Rebuild `root`'s index from its append-log and metric files; what was done."""
    from tau.portal.store.core import Store, _create_schema, now_rfc3339
    from tau.portal.store.summaries import ensure_summaries

    if not (root / schema.MANIFEST).is_file():
        raise StoreError(
            f"experiment store {root} has no manifest.json",
            hint="rebuild-index needs the store's folder (manifest.json, append-log/, metrics/)",
        )
    log_dir = root / schema.APPEND_LOG
    if not log_dir.is_dir():
        raise StoreError(
            f"experiment store {root} has no {schema.APPEND_LOG}/ to rebuild from",
            hint="restore index.sqlite from a backup or an `experiment export` packet",
        )
    index = root / schema.INDEX
    stamp = now_rfc3339().replace(":", "")
    counts: dict[str, int] = {}
    skipped = 0
    with WriterLock(root / schema.LOCK):
        limits = _journal_limits(root)
        (root / schema.TMP).mkdir(exist_ok=True)
        fresh = root / schema.TMP / f"index.rebuild-{os.getpid()}.sqlite"
        fresh.unlink(missing_ok=True)
        conn = sqlite3.connect(fresh, isolation_level=None)
        try:
            _create_schema(conn)
            conn.execute("BEGIN")
            for table in schema.MIRRORED:
                path = log_dir / f"{table}.jsonl"
                if not path.is_file():
                    continue
                n, bad = _replay(conn, table, path, limits.get(table))
                counts[table] = n
                skipped += bad
            conn.execute("COMMIT")
        finally:
            conn.close()
        kept = None
        if index.exists():
            kept = index.with_name(f"{schema.INDEX}.damaged-{stamp}")
            os.replace(index, kept)
        for suffix in ("-wal", "-shm", "-journal"):
            index.with_name(schema.INDEX + suffix).unlink(missing_ok=True)
        os.replace(fresh, index)
    store = Store.open(root)
    try:
        warnings = ensure_summaries(store)
        summaries = int(store.conn.execute("SELECT count(*) FROM metric_summaries").fetchone()[0])
    finally:
        store.close()
    if skipped:
        warnings.insert(0, f"skipped {skipped} unreadable append-log lines (cut short or not JSON)")
    return {
        "index": str(index),
        "kept": str(kept) if kept else None,
        "rows": counts,
        "metric_summaries": summaries,
        "skipped_lines": skipped,
        "warnings": warnings,
    }


def _journal_limits(root: Path) -> dict[str, int]:
    """Mirror sizes a half-done commit's journal recorded (nothing past them was committed)."""
    try:
        journal = json.loads((root / schema.JOURNAL).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    mirrors = journal.get("mirrors") if isinstance(journal, dict) else None
    return {str(k): int(v) for k, v in (mirrors or {}).items() if isinstance(v, int)}


def _replay(conn: sqlite3.Connection, table: str, path: Path, limit: int | None) -> tuple[int, int]:
    """(rows written, lines skipped) of one mirror file."""
    _, columns = schema.TABLES[table]
    with open(path, "rb") as fh:
        data = fh.read() if limit is None else fh.read(limit)
    written = skipped = 0
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            skipped += 1
            continue
        if not isinstance(row, dict):
            skipped += 1
            continue
        full = {c: row.get(c) for c in columns}
        if table == "runs" and full["experiment_id"] is None:
            full["experiment_id"] = ""
        names = ", ".join(f'"{c}"' for c in full)
        marks = ", ".join("?" for _ in full)
        values = tuple(json.dumps(v) if isinstance(v, dict | list) else v for v in full.values())
        conn.execute(f'INSERT OR REPLACE INTO "{table}" ({names}) VALUES ({marks})', values)
        written += 1
    return written, skipped
