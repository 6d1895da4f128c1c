"""The store's typed read API: runs, groups, experiments, metric summaries and series, events.

Performs I/O (SQLite reads; Parquet only in `metric_series`). Every list is bounded by a
`limit` and says whether it was `truncated`; this module never takes the writer lock.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tau.portal.errors import NotFound
from tau.portal.store.interface import Store
from tau.portal.store.records import (
    Artifact,
    Config,
    Event,
    Experiment,
    MetricFile,
    MetricPoint,
    MetricSummary,
    Observation,
    Run,
    RunContext,
    RunGroup,
)

T = TypeVar("T")

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000


@dataclass(frozen=True)
class Page(Generic[T]):
    """A bounded list: the items and whether more matched than were returned."""

    items: list[T]
    truncated: bool


@dataclass(frozen=True)
class Target:
    """A status/search target resolved to its record: run group, then run, then experiment."""

    name: str
    #: `run_group` | `run` | `experiment`.
    type: str
    id: str


def clamp_limit(limit: int | None) -> int:
    if limit is None or limit <= 0:
        return DEFAULT_LIMIT
    return min(limit, MAX_LIMIT)


def _page(rows: list[dict[str, object]], limit: int, make: Any) -> Page:
    return Page([make.from_row(r) for r in rows[:limit]], len(rows) > limit)


def resolve_target(store: Store, name: str) -> Target:
    """Resolve `name` as a run group id, then a run id, then an experiment id, then its name."""
    if not name:
        from tau.portal.errors import UsageError

        raise UsageError("status target is required")
    q = store.scalar
    if q("SELECT 1 FROM run_groups WHERE run_group_id = ?", (name,)):
        return Target(name, "run_group", name)
    if q("SELECT 1 FROM runs WHERE run_id = ?", (name,)):
        return Target(name, "run", name)
    if q("SELECT 1 FROM experiments WHERE experiment_id = ?", (name,)):
        return Target(name, "experiment", name)
    found = q(
        "SELECT experiment_id FROM experiments WHERE name = ? ORDER BY experiment_id", (name,)
    )
    if found is not None:
        return Target(name, "experiment", str(found))
    raise NotFound(
        name, hint="list what the store holds with `taugrid-portal experiment list --kind groups`"
    )


def target_where(target: Target, alias: str = "r") -> tuple[str, tuple[str]]:
    """The SQL condition (over `runs AS alias`) that selects a target's runs."""
    column = {"run_group": "run_group_id", "run": "run_id", "experiment": "experiment_id"}
    return f"{alias}.{column[target.type]} = ?", (target.id,)


def get_run(store: Store, run_id: str) -> Run:
    rows = store.query("SELECT * FROM runs WHERE run_id = ?", (run_id,))
    if not rows:
        raise NotFound(run_id)
    return Run.from_row(rows[0])


def list_runs(
    store: Store,
    *,
    project: str | None = None,
    group: str | None = None,
    experiment: str | None = None,
    state: str | None = None,
    tags: Sequence[tuple[str, str]] = (),
    limit: int | None = None,
) -> Page[Run]:
    """Runs, newest first (`created_at DESC, run_id`)."""
    where, params = ["1=1"], []
    for column, value in (
        ("project", project),
        ("run_group_id", group),
        ("experiment_id", experiment),
    ):
        if value:
            where.append(f"r.{column} = ?")
            params.append(value)
    if state:
        where.append("lower(r.state) = lower(?)")
        params.append(state)
    for key, value in tags:
        where.append(
            "EXISTS (SELECT 1 FROM tags t WHERE t.scope_type = 'run' AND t.scope_id = r.run_id "
            "AND t.key = ? AND t.value = ?)"
        )
        params += [key, value]
    n = clamp_limit(limit)
    rows = store.query(
        f"SELECT r.* FROM runs r WHERE {' AND '.join(where)} "
        "ORDER BY r.created_at DESC, r.run_id LIMIT ?",
        (*params, n + 1),
    )
    return _page(rows, n, Run)


def _newest_of_project(
    store: Store,
    table: str,
    order_by: str,
    record: Any,
    project: str | None,
    limit: int | None,
) -> Page[Any]:
    """A bounded page of one table's rows in `order_by` order, optionally of one project."""
    n = clamp_limit(limit)
    where, params = (" WHERE project = ?", (project,)) if project else ("", ())
    # `table` and `order_by` are constants of this module, never user input.
    rows = store.query(
        f"SELECT * FROM {table}{where} ORDER BY {order_by} LIMIT ?", (*params, n + 1)
    )
    return _page(rows, n, record)


def list_groups(
    store: Store, *, project: str | None = None, limit: int | None = None
) -> Page[RunGroup]:
    return _newest_of_project(
        store, "run_groups", "created_at DESC, run_group_id", RunGroup, project, limit
    )


def get_group(store: Store, group: str) -> RunGroup:
    rows = store.query("SELECT * FROM run_groups WHERE run_group_id = ?", (group,))
    if not rows:
        raise NotFound(group)
    return RunGroup.from_row(rows[0])


def list_experiments(
    store: Store, *, project: str | None = None, limit: int | None = None
) -> Page[Experiment]:
    return _newest_of_project(
        store, "experiments", "updated_at DESC, experiment_id", Experiment, project, limit
    )


def get_experiment(store: Store, experiment: str) -> Experiment:
    rows = store.query("SELECT * FROM experiments WHERE experiment_id = ?", (experiment,))
    if not rows:
        raise NotFound(experiment)
    return Experiment.from_row(rows[0])


def run_context(store: Store, run_id: str) -> RunContext | None:
    rows = store.query("SELECT * FROM run_context WHERE run_id = ?", (run_id,))
    return RunContext.from_row(rows[0]) if rows else None


def run_contexts(store: Store, run_ids: Sequence[str]) -> dict[str, RunContext]:
    """The run context of each run that has one (one query per 500 runs)."""
    out: dict[str, RunContext] = {}
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        for row in store.query(f"SELECT * FROM run_context WHERE run_id IN ({marks})", chunk):
            out[str(row["run_id"])] = RunContext.from_row(row)
    return out


def run_tags(store: Store, run_ids: Sequence[str]) -> dict[str, dict[str, str]]:
    """Tags of each run (runs without tags map to {})."""
    out: dict[str, dict[str, str]] = {r: {} for r in run_ids}
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        for row in store.query(
            f"SELECT scope_id, key, value FROM tags WHERE scope_type = 'run' "
            f"AND scope_id IN ({marks}) ORDER BY scope_id, key",
            chunk,
        ):
            out[row["scope_id"]][row["key"]] = row["value"]
    return out


def metric_summaries(
    store: Store,
    *,
    run_ids: Sequence[str] | None = None,
    group: str | None = None,
    metric_name: str | None = None,
) -> list[MetricSummary]:
    """Summaries per (run, metric), ordered by run then metric; filtered by runs/group/metric."""
    where, params = ["1=1"], []
    if group:
        where.append("run_group_id = ?")
        params.append(group)
    if metric_name:
        where.append("metric_name = ?")
        params.append(metric_name)
    sql = f"SELECT * FROM metric_summaries WHERE {' AND '.join(where)}"
    if run_ids is None:
        rows = store.query(sql + " ORDER BY run_id, metric_name", params)
        return [MetricSummary.from_row(r) for r in rows]
    out: list[MetricSummary] = []
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        rows = store.query(sql + f" AND run_id IN ({marks})", (*params, *chunk))
        out += [MetricSummary.from_row(r) for r in rows]
    out.sort(key=lambda s: (s.run_id, s.metric_name))
    return out


def metric_files(store: Store, run_ids: Sequence[str]) -> list[MetricFile]:
    out: list[MetricFile] = []
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        rows = store.query(f"SELECT * FROM metric_files WHERE run_id IN ({marks})", chunk)
        out += [MetricFile.from_row(r) for r in rows]
    out.sort(key=lambda f: (f.run_id or "", f.created_at or "", f.file_id))
    return out


def metric_series(
    store: Store,
    run_id: str,
    metric_name: str,
    *,
    start_step: int | None = None,
    end_step: int | None = None,
) -> list[MetricPoint]:
    """Every recorded point of one run's metric, from its Parquet files, ordered by step."""
    from tau.portal.store.metrics import read_points

    paths = [store.path_of(f.path) for f in metric_files(store, [run_id])]
    return read_points(
        paths,
        run_id=run_id,
        metric_name=metric_name,
        start_step=start_step,
        end_step=end_step,
        filesystem=store.filesystem,
    )


def events(store: Store, run_ids: Sequence[str], *, limit: int | None = None) -> Page[Event]:
    """Lifecycle events of the runs, newest first."""
    n = clamp_limit(limit)
    rows: list[dict[str, object]] = []
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        rows += store.query(f"SELECT * FROM events WHERE run_id IN ({marks})", chunk)
    rows.sort(key=lambda r: (str(r["time"] or ""), str(r["event_id"])), reverse=True)
    return _page(rows, n, Event)


def configs(store: Store, run_ids: Sequence[str]) -> list[Config]:
    out: list[Config] = []
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        rows = store.query(
            f"SELECT * FROM configs WHERE run_id IN ({marks}) ORDER BY run_id, config_hash", chunk
        )
        out += [Config.from_row(r) for r in rows]
    return out


def artifacts(store: Store, run_ids: Sequence[str]) -> list[Artifact]:
    out: list[Artifact] = []
    for chunk in _chunks(run_ids):
        marks = ",".join("?" * len(chunk))
        rows = store.query(
            f"SELECT * FROM artifacts WHERE run_id IN ({marks}) ORDER BY run_id, artifact_id",
            chunk,
        )
        out += [Artifact.from_row(r) for r in rows]
    return out


def observations(
    store: Store, scopes: Sequence[tuple[str, str]], *, limit: int | None = None
) -> Page[Observation]:
    """Observations on any of the (scope_type, scope_id) pairs, newest first (a pair named twice
    lists its observations twice). One query per scope type and 500 scopes.
    """
    n = clamp_limit(limit)
    named = Counter(scopes)
    ids: dict[str, list[str]] = {}
    for scope_type, scope_id in named:
        ids.setdefault(scope_type, []).append(scope_id)
    rows: list[dict[str, object]] = []
    for scope_type, scope_ids in ids.items():
        for chunk in _chunks(scope_ids):
            marks = ",".join("?" * len(chunk))
            for row in store.query(
                f"SELECT * FROM observations WHERE scope_type = ? AND scope_id IN ({marks})",
                (scope_type, *chunk),
            ):
                rows += [row] * named[(scope_type, str(row["scope_id"]))]
    rows.sort(key=lambda r: (str(r["created_at"] or ""), str(r["observation_id"])), reverse=True)
    return _page(rows, n, Observation)


def _chunks(items: Sequence[str], size: int = 500) -> list[tuple[str, ...]]:
    return [tuple(items[i : i + size]) for i in range(0, len(items), size)]
