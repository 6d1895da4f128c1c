"""Incremental writes into the team store: the folder `Writer`'s record API over PostgreSQL.

Performs I/O (PostgreSQL, the object store). `experiment push` copies whole runs; the metrics
collector adds one metric file at a time to a run that is still running. `TeamWriter` gives
`tau.portal.store.write` (the record writers every folder command uses: runs, tags, metric
files and their merged summaries) the same `get`/`put`/`replace` inside one PostgreSQL
transaction, so both stores get the same rows from the same code. `transaction` takes the run's
advisory lock (the one `push` takes), and bumps the run's `tau_pushes` row so the store's
version changes with every delivery (caches and live pages follow it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from tau.portal.errors import StoreError, WriteConflict
from tau.portal.store import schema, teamschema
from tau.portal.store.core import _same
from tau.portal.store.objects import first_line
from tau.portal.store.team import TeamStore, unreachable


class TeamWriter:
    """`get`/`put`/`replace` of `core.Writer` on a psycopg connection in a transaction."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def get(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        where = " AND ".join(f'"{k}" = %s' for k in key)
        found = self.conn.execute(
            f'SELECT * FROM "{table}" WHERE {where}', tuple(key.values())
        ).fetchone()
        return dict(found) if found is not None else None

    def put(self, table: str, row: Mapping[str, Any], *, conflict: str | None = None) -> bool:
        keys, columns = schema.TABLES[table]
        full = {c: cell(table, c, row.get(c)) for c in columns}
        if table == "runs" and full["experiment_id"] is None:
            full["experiment_id"] = ""
        existing = self.get(table, {k: full[k] for k in keys})
        if existing is not None:
            if _same(existing, full):
                return False
            raise WriteConflict(conflict or f"{table} record already exists with different values")
        self._insert(table, full, replace=False)
        return True

    def replace(self, table: str, row: Mapping[str, Any]) -> bool:
        keys, columns = schema.TABLES[table]
        full = {c: cell(table, c, row.get(c)) for c in columns}
        existing = self.get(table, {k: full[k] for k in keys})
        if existing is not None and _same(existing, full):
            return False
        self._insert(table, full, replace=True)
        return True

    def _insert(self, table: str, full: dict[str, Any], *, replace: bool) -> None:
        keys, _ = schema.TABLES[table]
        names = ", ".join(f'"{c}"' for c in full)
        marks = ", ".join("%s" for _ in full)
        sql = f'INSERT INTO "{table}" ({names}) VALUES ({marks})'
        if replace:
            others = [c for c in full if c not in keys]
            sets = ", ".join(f'"{c}" = EXCLUDED."{c}"' for c in others)
            target = ", ".join(f'"{k}"' for k in keys)
            sql += f" ON CONFLICT ({target}) DO " + (f"UPDATE SET {sets}" if sets else "NOTHING")
        self.conn.execute(sql, tuple(full.values()))


def cell(table: str, column: str, value: Any) -> Any:
    """A value as the team schema's column type takes it."""
    if value is None:
        return None
    kind = schema.column_type(table, column)
    if kind == "INTEGER":
        return int(value) if not isinstance(value, float) or value.is_integer() else value
    if kind == "REAL":
        return float(value)
    if isinstance(value, dict | list):
        return json.dumps(value)
    return value if isinstance(value, str) else str(value)


@contextmanager
def transaction(team: TeamStore, run_id: str, source: str) -> Iterator[TeamWriter]:
    """One transaction writing `run_id`'s rows; commits when the block ends cleanly."""
    import psycopg

    try:
        conn = team.conn
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", (run_id,))
            writer = TeamWriter(conn)
            yield writer
            conn.execute(
                f"INSERT INTO {teamschema.PUSHES} (run_id, digest, source, pushed_at) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET "
                f"seq = nextval(pg_get_serial_sequence('{teamschema.PUSHES}', 'seq')), "
                "digest = EXCLUDED.digest, source = EXCLUDED.source, "
                "pushed_at = EXCLUDED.pushed_at",
                (run_id, f"offload:{source}", source, writer.stamp),
            )
    except psycopg.OperationalError as exc:
        raise unreachable(team.url, exc) from None
    except psycopg.Error as exc:
        raise StoreError(f"team store write failed: {first_line(exc)}") from None


def upload(team: TeamStore, rel: str, data: bytes) -> None:
    """Put the store-relative file `rel` into the object store."""
    target = team.path_of(rel)
    try:
        with team.filesystem.open_output_stream(target) as out:
            out.write(data)
    except OSError as exc:
        raise StoreError(
            f"team store objects s3://{target}: {first_line(exc)}",
            hint="check the object server is up (AWS_ENDPOINT_URL) and the credentials "
            "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile)",
        ) from None
