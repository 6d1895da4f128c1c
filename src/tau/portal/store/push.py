"""`experiment push`: copy runs from a folder store to the team store, idempotently.

Performs I/O (the folder's SQLite and files; PostgreSQL; the object store). Runs go in batches;
each batch is one PostgreSQL transaction that:

1. takes a transaction-scoped advisory lock per run, in run-id order (pushers of overlapping
   runs wait for each other, never deadlock, and a killed pusher's locks go with its session);
2. reads `tau_pushes`: a run pushed before with the same content digest is skipped, a run
   pushed with a different digest is a conflict that names both sides;
3. uploads the new runs' metric and artifact files to their final keys (several at a time);
4. inserts their index rows and their `tau_pushes` rows, and commits.

Readers see a run only when its index rows commit, after its files are in place. A push killed
or cut off anywhere leaves at most unreferenced objects, which the rerun overwrites with the
same bytes, so every rerun ends with exactly one copy of each run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tau.portal.errors import StoreError, WriteConflict
from tau.portal.store import read, schema, teamschema
from tau.portal.store.core import Store as FolderStore
from tau.portal.store.objects import first_line
from tau.portal.store.team import TeamStore, unreachable
from tau.portal.store.teamwrite import cell

#: Runs per transaction: large enough to amortize round trips, small enough that a batch's
#: uploads finish well within any statement timeout.
BATCH = 50
#: Files uploaded at once: each costs an object store round trip, and pyarrow writes without
#: holding the GIL.
UPLOADERS = 16

#: Tables whose rows belong to one run (their digest is the run's content).
RUN_TABLES = (
    "runs",
    "run_context",
    "configs",
    "artifacts",
    "events",
    "metric_files",
    "metric_summaries",
    "metric_summary_files",
)
#: Rows several runs share (their experiment, group, tags and notes on those): the first
#: pusher's copy stays; another folder's copy of the same row is not a conflict.
SHARED_TABLES = ("experiments", "run_groups")


@dataclass
class PushResult:
    source: str
    target: str
    pushed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    files: int = 0
    bytes: int = 0


@dataclass
class _Bundle:
    """One run's rows (by table), the files it names, and its content digest."""

    run_id: str
    rows: dict[str, list[dict[str, Any]]]
    files: list[str]
    digest: str = ""


def select_runs(source: FolderStore, targets: Sequence[str], *, all_runs: bool) -> list[str]:
    """Run ids of the targets (each a run group, run or experiment), or every run."""
    if all_runs:
        return [str(r["run_id"]) for r in source.query("SELECT run_id FROM runs ORDER BY run_id")]
    ids: set[str] = set()
    for name in targets:
        where, params = read.target_where(read.resolve_target(source, name))
        ids.update(
            str(r["run_id"])
            for r in source.query(f"SELECT r.run_id FROM runs r WHERE {where}", params)
        )
    return sorted(ids)


def named_scopes(
    source: FolderStore, targets: Sequence[str], *, all_runs: bool
) -> tuple[list[str], list[str]]:
    """(run groups, experiments) pushed even when they hold no run: every one with `--all`,
    else the targets that name one.
    """
    if all_runs:
        groups = source.query("SELECT run_group_id FROM run_groups ORDER BY run_group_id")
        exps = source.query("SELECT experiment_id FROM experiments ORDER BY experiment_id")
        return [str(r["run_group_id"]) for r in groups], [str(r["experiment_id"]) for r in exps]
    resolved = [read.resolve_target(source, name) for name in targets]
    return (
        sorted({t.id for t in resolved if t.type == "run_group"}),
        sorted({t.id for t in resolved if t.type == "experiment"}),
    )


def push(
    source: FolderStore,
    team: TeamStore,
    run_ids: Sequence[str],
    *,
    scopes: tuple[Sequence[str], Sequence[str]] = ((), ()),
    batch: int = BATCH,
    progress: Callable[[PushResult], None] | None = None,
) -> PushResult:
    """Copy `run_ids` from `source` to `team`, and the run groups and experiments of `scopes`
    (with their tags and observations); see the module docstring.
    """
    from tau.portal.store.summaries import ensure_summaries

    ensure_summaries(source)  # a hand-built packet's files get their summaries first
    result = PushResult(source.location, team.location)
    conflicts: list[str] = []
    for start in range(0, len(run_ids), batch):
        bundles = _bundles(source, run_ids[start : start + batch])
        conflicts += _push_batch(source, team, bundles, result)
        if progress is not None:
            progress(result)
    if scopes[0] or scopes[1]:
        _push_scopes(team, _scope_rows(source, scopes[0], scopes[1]))
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise WriteConflict(
            conflicts[0] + more,
            hint="a run id names one run: push each run from the folder that produced it",
        )
    return result


def _bundles(source: FolderStore, run_ids: Sequence[str]) -> list[_Bundle]:
    marks = ",".join("?" * len(run_ids))
    bundles = {
        rid: _Bundle(rid, {t: [] for t in (*RUN_TABLES, "tags", "observations")}, [])
        for rid in run_ids
    }
    for table in RUN_TABLES:
        for row in source.query(f'SELECT * FROM "{table}" WHERE run_id IN ({marks})', run_ids):
            bundles[str(row["run_id"])].rows[table].append(row)
    for table in ("tags", "observations"):
        for row in source.query(
            f"SELECT * FROM {table} WHERE scope_type = 'run' AND scope_id IN ({marks})", run_ids
        ):
            bundles[str(row["scope_id"])].rows[table].append(row)
    for bundle in bundles.values():
        for row in bundle.rows["metric_files"]:
            bundle.files.append(str(row["path"]))
        for row in bundle.rows["artifacts"]:
            uri = str(row.get("uri") or "")
            if uri.startswith(f"{schema.ARTIFACTS}/") and (source.root / uri).is_file():
                bundle.files.append(uri)
        for rows in bundle.rows.values():
            rows.sort(key=lambda r: json.dumps(r, sort_keys=True, default=str))
        bundle.digest = hashlib.sha256(
            json.dumps(bundle.rows, sort_keys=True, default=str).encode()
        ).hexdigest()
    return [bundles[rid] for rid in run_ids if bundles[rid].rows["runs"]]


def _shared_rows(
    source: FolderStore, bundles: Iterable[_Bundle]
) -> dict[str, list[dict[str, Any]]]:
    groups = sorted(
        {str(r["run_group_id"]) for b in bundles for r in b.rows["runs"] if r.get("run_group_id")}
    )
    exps = sorted(
        {str(r["experiment_id"]) for b in bundles for r in b.rows["runs"] if r.get("experiment_id")}
    )
    return _scope_rows(source, groups, exps)


def _scope_rows(
    source: FolderStore, groups: Sequence[str], exps: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """The rows of these run groups and experiments, with the tags and observations on them."""
    out: dict[str, list[dict[str, Any]]] = {
        "experiments": [],
        "run_groups": [],
        "tags": [],
        "observations": [],
    }
    for table, column, scope, ids in (
        ("run_groups", "run_group_id", "run_group", groups),
        ("experiments", "experiment_id", "experiment", exps),
    ):
        if not ids:
            continue
        marks = ",".join("?" * len(ids))
        out[table] += source.query(f'SELECT * FROM "{table}" WHERE "{column}" IN ({marks})', ids)
        for extra in ("tags", "observations"):
            out[extra] += source.query(
                f"SELECT * FROM {extra} WHERE scope_type = ? AND scope_id IN ({marks})",
                (scope, *ids),
            )
    return out


def _push_batch(
    source: FolderStore, team: TeamStore, bundles: list[_Bundle], result: PushResult
) -> list[str]:
    import psycopg

    if not bundles:
        return []
    conflicts: list[str] = []
    conn = team.conn
    try:
        with conn.transaction():
            for b in sorted(bundles, key=lambda b: b.run_id):
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))", (b.run_id,))
            ids = [b.run_id for b in bundles]
            pushed = {
                str(r["run_id"]): r
                for r in conn.execute(
                    f"SELECT run_id, digest, source, pushed_at FROM {teamschema.PUSHES} "
                    "WHERE run_id = ANY(%s)",
                    (ids,),
                )
            }
            fresh: list[_Bundle] = []
            for b in bundles:
                old = pushed.get(b.run_id)
                if old is None:
                    fresh.append(b)
                elif old["digest"] == b.digest:
                    result.unchanged.append(b.run_id)
                else:
                    conflicts.append(
                        f'run "{b.run_id}" differs: the team store {team.location} holds the copy '
                        f"pushed from {old['source']} at {old['pushed_at']}, the folder "
                        f"{source.location} holds another"
                    )
            if fresh:
                _upload(source, team, fresh, result)
                _insert(conn, fresh, _shared_rows(source, fresh), source.location)
                result.pushed += [b.run_id for b in fresh]
    except psycopg.OperationalError as exc:
        raise unreachable(team.url, exc) from None
    except psycopg.Error as exc:
        raise StoreError(f"team store push failed: {first_line(exc)}") from None
    return conflicts


def _push_scopes(team: TeamStore, rows: dict[str, list[dict[str, Any]]]) -> None:
    import psycopg

    conn = team.conn
    try:
        with conn.transaction():
            _insert_rows(conn, rows)
    except psycopg.OperationalError as exc:
        raise unreachable(team.url, exc) from None
    except psycopg.Error as exc:
        raise StoreError(f"team store push failed: {first_line(exc)}") from None


def _upload(
    source: FolderStore, team: TeamStore, bundles: list[_Bundle], result: PushResult
) -> None:
    """Copy the bundles' files to their keys, `UPLOADERS` at a time; the first failure stops
    the batch (its index rows are not written, so nothing refers to what was copied).
    """
    from concurrent.futures import ThreadPoolExecutor

    fs = team.filesystem

    def put(job: tuple[str, str]) -> int:
        run_id, rel = job
        local = source.root / rel
        try:
            data = local.read_bytes()
        except OSError as exc:
            raise StoreError(
                f"{local}: run {run_id} names this file but it is not readable: {exc.strerror}"
            ) from None
        target = team.path_of(rel)
        try:
            with fs.open_output_stream(target) as out:
                out.write(data)
        except OSError as exc:
            raise StoreError(
                f"team store objects s3://{target}: {first_line(exc)}",
                hint="check the object server is up (AWS_ENDPOINT_URL) and the credentials "
                "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile)",
            ) from None
        return len(data)

    jobs = [(b.run_id, rel) for b in bundles for rel in b.files]
    pool = ThreadPoolExecutor(max_workers=UPLOADERS)
    try:
        for size in pool.map(put, jobs):
            result.files += 1
            result.bytes += size
    finally:
        pool.shutdown(cancel_futures=True)


def _insert(
    conn: Any, bundles: list[_Bundle], shared: dict[str, list[dict[str, Any]]], source: str
) -> None:
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, rows in shared.items():
        tables.setdefault(table, []).extend(rows)
    for b in bundles:
        for table, rows in b.rows.items():
            tables.setdefault(table, []).extend(rows)
    _insert_rows(conn, tables)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {teamschema.PUSHES} (run_id, digest, source, pushed_at) "
            "VALUES (%s, %s, %s, %s)",
            [(b.run_id, b.digest, source, stamp) for b in bundles],
        )


def _insert_rows(conn: Any, tables: dict[str, list[dict[str, Any]]]) -> None:
    """Insert rows table by table; a row whose key is there already is left as it is."""
    for table in (*SHARED_TABLES, *RUN_TABLES, "tags", "observations"):
        rows = tables.get(table) or []
        if not rows:
            continue
        _, columns = schema.TABLES[table]
        names = ", ".join(f'"{c}"' for c in columns)
        marks = ", ".join("%s" for _ in columns)
        values = [tuple(cell(table, c, row.get(c)) for c in columns) for row in rows]
        with conn.cursor() as cur:
            cur.executemany(
                f'INSERT INTO "{table}" ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING', values
            )
