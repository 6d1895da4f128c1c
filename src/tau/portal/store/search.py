"""`experiment search` and `experiment experiments search`: SQL over the index (§5).

Performs I/O (SQLite reads). There is no separate full-text index: runs are filtered with
`EXISTS` sub-queries over `tags` and `metric_summaries`, so search never reads metric files.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tau.portal.errors import UsageError
from tau.portal.store import read
from tau.portal.store.interface import Store
from tau.portal.store.lifecycle import LIFECYCLES, MetricFilter, classify
from tau.portal.store.records import MetricSummary, Run, as_row
from tau.portal.store.summaries import ensure_summaries

RUN_SEARCH_SCHEMA = "tau.exp.run_search.v0"
EXPERIMENT_SEARCH_SCHEMA = "tau.exp.experiment_search.v0"
_PAGE = 200


@dataclass(frozen=True)
class RunQuery:
    q: str = ""
    target: str = ""
    project: str = ""
    group: str = ""
    state: str = ""
    lifecycle: str = ""
    tags: Sequence[tuple[str, str]] = ()
    metric_names: Sequence[str] = ()
    metric_filters: Sequence[MetricFilter] = ()
    since: str = ""  # RFC3339, already parsed
    min_step: int | None = None
    limit: int = read.DEFAULT_LIMIT


@dataclass
class RunSearchResult:
    schema_version: str
    generated_at: str
    store_path: str
    target: str
    total: int
    truncated: bool
    runs: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


def _like(q: str) -> str:
    return "%" + q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _run_where(store: Store, query: RunQuery) -> tuple[list[str], list[Any]]:
    where: list[str] = []
    params: list[Any] = []
    if query.target:
        cond, args = read.target_where(read.resolve_target(store, query.target))
        where.append(cond)
        params += args
    if query.project:
        where.append("r.project = ?")
        params.append(query.project)
    if query.group:
        where.append("r.run_group_id = ?")
        params.append(query.group)
    if query.state:
        where.append("lower(r.state) = lower(?)")
        params.append(query.state)
    if query.since:
        where.append("r.created_at >= ?")
        params.append(query.since)
    if query.q:
        like = _like(query.q)
        cols = ("r.run_id", "r.project", "r.run_group_id", "r.owner", "r.result_uri", "g.name")
        parts = [f"lower(coalesce({c}, '')) LIKE ? ESCAPE '\\'" for c in cols]
        parts.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id = r.run_id "
            "AND (lower(t.key) LIKE ? ESCAPE '\\' OR lower(t.value) LIKE ? ESCAPE '\\'))"
        )
        parts.append(
            "EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id = r.run_id "
            "AND lower(m.metric_name) LIKE ? ESCAPE '\\')"
        )
        where.append("(" + " OR ".join(parts) + ")")
        params += [like] * (len(cols) + 3)
    for key, value in query.tags:
        where.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id = r.run_id "
            "AND t.key = ? AND t.value = ?)"
        )
        params += [key, value]
    for name in query.metric_names:
        where.append(
            "EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id = r.run_id "
            "AND m.metric_name = ?)"
        )
        params.append(name)
    for f in query.metric_filters:
        where.append(
            "EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id = r.run_id "
            f'AND m.metric_name = ? AND m."{f.column}" {f.op if f.op != "=" else "="} ?)'
        )
        params += [f.metric, f.value]
    return where or ["1=1"], params


def search_runs(store: Store, query: RunQuery) -> RunSearchResult:
    """Runs matching `query`, newest first, bounded by `limit` (max 1000)."""
    if query.lifecycle and query.lifecycle not in LIFECYCLES:
        raise UsageError(
            f"--lifecycle must be one of: {', '.join(LIFECYCLES)}; got {query.lifecycle!r}"
        )
    warnings = ensure_summaries(store)
    limit = read.clamp_limit(query.limit)
    where, params = _run_where(store, query)
    base = (
        "SELECT r.* FROM runs r LEFT JOIN run_groups g ON g.run_group_id = r.run_group_id "
        f"WHERE {' AND '.join(where)} ORDER BY r.created_at DESC, r.run_id"
    )
    picked: list[tuple[Run, dict[str, Any]]] = []
    truncated = False
    offset = 0
    while True:
        batch = limit + 1 if not query.lifecycle else _PAGE
        rows = store.query(base + " LIMIT ? OFFSET ?", (*params, batch, offset))
        runs = [Run.from_row(r) for r in rows]
        details = _details(store, runs, query)
        for run, detail in zip(runs, details, strict=True):
            if query.lifecycle and detail["lifecycle_state"] != query.lifecycle:
                continue
            picked.append((run, detail))
        if not query.lifecycle or len(rows) < batch or len(picked) > limit:
            break
        offset += batch
    if len(picked) > limit:
        truncated = True
        picked = picked[:limit]
    return RunSearchResult(
        schema_version=RUN_SEARCH_SCHEMA,
        generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        store_path=store.location,
        target=query.target,
        total=len(picked),
        truncated=truncated,
        runs=[detail for _, detail in picked],
        warnings=warnings,
    )


def _details(store: Store, runs: list[Run], query: RunQuery) -> list[dict[str, Any]]:
    ids = [r.run_id for r in runs]
    tags = read.run_tags(store, ids)
    summaries: dict[str, list[MetricSummary]] = {}
    for s in read.metric_summaries(store, run_ids=ids):
        summaries.setdefault(s.run_id, []).append(s)
    out = []
    for run in runs:
        mine = summaries.get(run.run_id, [])
        life = classify(
            run,
            tags[run.run_id],
            mine,
            min_step=query.min_step,
            filters=query.metric_filters,
        )
        out.append(
            as_row(run)
            | {
                "lifecycle_state": life.state,
                "successful": life.successful,
                "success_reasons": life.reasons,
                "tags": tags[run.run_id],
                "metric_names": [s.metric_name for s in mine],
                "metrics": [as_row(s) for s in mine],
            }
        )
    return out


@dataclass(frozen=True)
class ExperimentQuery:
    q: str = ""
    project: str = ""
    lifecycle: str = ""
    tags: Sequence[tuple[str, str]] = ()
    metric_names: Sequence[str] = ()
    metric_filters: Sequence[MetricFilter] = ()
    since: str = ""
    limit: int = read.DEFAULT_LIMIT


def search_experiments(store: Store, query: ExperimentQuery) -> dict[str, Any]:
    """Experiments with their run summary, ordered by latest run activity (§5)."""
    if query.lifecycle and query.lifecycle not in LIFECYCLES:
        raise UsageError(
            f"--lifecycle must be one of: {', '.join(LIFECYCLES)}; got {query.lifecycle!r}"
        )
    warnings = ensure_summaries(store)
    where: list[str] = ["1=1"]
    params: list[Any] = []
    runs_of = "SELECT r.run_id FROM runs r WHERE r.experiment_id = e.experiment_id"
    if query.project:
        where.append("e.project = ?")
        params.append(query.project)
    if query.q:
        like = _like(query.q)
        cols = ("e.experiment_id", "e.name", "e.description", "e.project")
        parts = [f"lower(coalesce({c}, '')) LIKE ? ESCAPE '\\'" for c in cols]
        parts.append(
            f"EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id IN "
            f"({runs_of}) AND (lower(t.key) LIKE ? ESCAPE '\\' OR lower(t.value) LIKE ? "
            "ESCAPE '\\'))"
        )
        parts.append(
            f"EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id IN ({runs_of}) "
            "AND lower(m.metric_name) LIKE ? ESCAPE '\\')"
        )
        where.append("(" + " OR ".join(parts) + ")")
        params += [like] * (len(cols) + 3)
    for key, value in query.tags:
        where.append(
            f"EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id IN "
            f"({runs_of}) AND t.key = ? AND t.value = ?)"
        )
        params += [key, value]
    for name in query.metric_names:
        where.append(
            f"EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id IN ({runs_of}) "
            "AND m.metric_name = ?)"
        )
        params.append(name)
    for f in query.metric_filters:
        where.append(
            f"EXISTS (SELECT 1 FROM metric_summaries m WHERE m.run_id IN ({runs_of}) "
            f'AND m.metric_name = ? AND m."{f.column}" {f.op} ?)'
        )
        params += [f.metric, f.value]
    if query.since:
        where.append(
            f"(e.updated_at >= ? OR EXISTS (SELECT 1 FROM runs r WHERE r.experiment_id = "
            "e.experiment_id AND (r.created_at >= ? OR r.started_at >= ? OR r.completed_at >= ?))"
            f" OR EXISTS (SELECT 1 FROM events v WHERE v.run_id IN ({runs_of}) AND v.time >= ?))"
        )
        params += [query.since] * 5
    limit = read.clamp_limit(query.limit)
    # Ordered outside the inner select: PostgreSQL sorts by an output column only by its bare
    # name, and the team store runs this same SQL.
    rows = store.query(
        "SELECT * FROM (SELECT e.*, (SELECT max(coalesce(r.completed_at, r.started_at, "
        "r.created_at)) FROM runs r WHERE r.experiment_id = e.experiment_id) AS latest_run_at "
        f"FROM experiments e WHERE {' AND '.join(where)}) AS found "
        "ORDER BY coalesce(latest_run_at, updated_at, '') DESC, experiment_id",
        params,
    )
    out: list[dict[str, Any]] = []
    truncated = False
    for row in rows:
        summary = experiment_summary(store, str(row["experiment_id"]))
        if query.lifecycle and not summary["lifecycle_counts"].get(query.lifecycle):
            continue
        if len(out) == limit:
            truncated = True
            break
        row.pop("latest_run_at", None)
        out.append(row | summary)
    return {
        "schema_version": EXPERIMENT_SEARCH_SCHEMA,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "store_path": store.location,
        "total": len(out),
        "truncated": truncated,
        "experiments": out,
        "warnings": warnings,
    }


def experiment_summary(store: Store, experiment_id: str) -> dict[str, Any]:
    runs = [
        Run.from_row(r)
        for r in store.query("SELECT * FROM runs WHERE experiment_id = ?", (experiment_id,))
    ]
    ids = [r.run_id for r in runs]
    tags = read.run_tags(store, ids)
    summaries: dict[str, list[MetricSummary]] = {}
    for s in read.metric_summaries(store, run_ids=ids):
        summaries.setdefault(s.run_id, []).append(s)
    lifecycle = Counter(
        classify(r, tags[r.run_id], summaries.get(r.run_id, [])).state for r in runs
    )
    stamps = [r.completed_at or r.started_at or r.created_at or "" for r in runs]
    return {
        "run_count": len(runs),
        "run_group_count": len({r.run_group_id for r in runs if r.run_group_id}),
        "state_counts": dict(sorted(Counter(r.state or "" for r in runs).items())),
        "lifecycle_counts": dict(sorted(lifecycle.items())),
        "latest_run_at": max(stamps) if stamps else "",
        "metric_names": sorted({s.metric_name for v in summaries.values() for s in v}),
    }
