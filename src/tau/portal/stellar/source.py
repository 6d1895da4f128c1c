"""Stellar's view of the experiment store, through the store's read API. Performs I/O.

One `Store` per thread (SQLite and PostgreSQL connections are per thread; the web server reads
from a pool), a folder store or a team store alike. `version()` changes whenever a writer
commits (or a push lands), so caches and ETags follow the store.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.portal.stellar.evidence import Evidence, Series
from tau.portal.store.records import as_row

if TYPE_CHECKING:
    from tau.portal.store.location import TeamURL

#: Lifecycle events shown per target (newest kept).
MAX_EVENTS = 1000


class StoreSource:
    """A `StellarSource` over one store: a folder root or a team store URL."""

    def __init__(self, root: Path | TeamURL) -> None:
        self.root = root
        self._local = threading.local()

    @property
    def store_path(self) -> str:
        return str(self.root)

    def _store(self) -> Any:
        from tau.portal.store.opener import open_location

        store = getattr(self._local, "store", None)
        if store is None:
            store = open_location(self.root)
            self._local.store = store
        return store

    def version(self) -> str:
        if isinstance(self.root, Path):
            from tau.portal.store.core import folder_version

            return folder_version(self.root)  # no open: the servers poll it on every request
        return str(self._store().version())

    def stored_artifact(self, uri: str, *, content: bool = True) -> tuple[str, bytes] | None:
        """(name, bytes) of a store-relative artifact a team store holds in its object store;
        None for a folder store (its artifacts are served as local files) or an unknown path.
        """
        if isinstance(self.root, Path):
            return None
        from tau.portal.store.objects import read_stored

        return read_stored(self._store(), uri, content=content)

    def _target(self, name: str, kind: str = "") -> Any:
        """The record `name` resolves to; with `kind`, only a record of that kind."""
        from tau.portal.errors import NotFound
        from tau.portal.store import read

        if kind:
            table, column = _KIND_TABLES[kind]
            found = self._store().scalar(f"SELECT 1 FROM {table} WHERE {column} = ?", (name,))
            if found is None:
                raise LookupError(name)
            return read.Target(name, kind, name)
        try:
            return read.resolve_target(self._store(), name)
        except NotFound:
            raise LookupError(name) from None

    def evidence(self, target: str, *, max_runs: int, kind: str = "") -> Evidence:
        from tau.portal.store import attempts, read, series
        from tau.portal.store.status import status

        store = self._store()
        t = self._target(target, kind)
        where, params = read.target_where(t)
        total = int(store.scalar(f"SELECT count(*) FROM runs r WHERE {where}", params))
        rows = store.query(
            f"SELECT r.* FROM runs r WHERE {where} ORDER BY r.created_at DESC, r.run_id LIMIT ?",
            (*params, max_runs),
        )
        ids = [str(r["run_id"]) for r in rows]
        series.prefetch(store, ids)  # the chart reads them after the index reads below
        tags = read.run_tags(store, ids)
        contexts = read.run_contexts(store, ids)
        runs = []
        for row in rows:
            context = contexts.get(str(row["run_id"]))
            ctx = (
                {k: v for k, v in as_row(context).items() if v not in (None, "")} if context else {}
            )
            runs.append({**row, "tags": tags.get(str(row["run_id"]), {}), "context": ctx})
        configs: dict[str, list[dict[str, Any]]] = {}
        for c in read.configs(store, ids):
            configs.setdefault(c.run_id, []).append(as_row(c))
        experiment_id = (
            t.id
            if t.type == "experiment"
            else next((str(r["experiment_id"]) for r in rows if r.get("experiment_id")), "")
        )
        experiment = None
        if experiment_id:
            try:
                experiment = as_row(read.get_experiment(store, experiment_id))
            except Exception:  # an implicit experiment may have no row yet
                experiment = None
        groups = []
        for gid in sorted({str(r["run_group_id"]) for r in rows if r.get("run_group_id")}):
            try:
                groups.append(as_row(read.get_group(store, gid)))
            except Exception:
                groups.append({"run_group_id": gid, "name": gid})
        events = read.events(store, ids, limit=MAX_EVENTS)
        warnings = [f"events truncated to the latest {MAX_EVENTS}"] if events.truncated else []
        scopes = [(t.type, t.id), *(("run", r) for r in ids)]

        def load_series(metric: str, run_ids: Sequence[str]) -> list[Series]:
            columns = series.metric_columns(store_for_thread(), run_ids, metric)
            return [
                Series(rid, metric, tuple(steps), tuple(values), tuple(times))
                for rid in run_ids
                if rid in columns
                for steps, values, times in (columns[rid],)
            ]

        def store_for_thread() -> Any:
            return self._store()

        summaries = [as_row(s) for s in read.metric_summaries(store, run_ids=ids)]
        cards, directions = series.metric_tags(
            store, ids, sorted({str(s["metric_name"]) for s in summaries})
        )
        return Evidence(
            store_path=self.store_path,
            target=target,
            target_type=t.type,
            manifest=dict(store.manifest),
            status=status(store, target, t),
            experiment=experiment,
            run_groups=groups,
            runs=runs,
            total_runs=total,
            configs=configs,
            summaries=summaries,
            metric_cards=cards,
            metric_directions=directions,
            events=[as_row(e) for e in reversed(events.items)],
            artifacts=[as_row(a) for a in read.artifacts(store, ids)],
            observations=[as_row(o) for o in read.observations(store, scopes).items],
            warnings=warnings,
            load_series=load_series,
            attempt_starts=lambda run_ids: attempts.attempt_starts(store_for_thread(), run_ids),
        )

    def status(self, target: str) -> Mapping[str, Any]:
        from tau.portal.store.status import status

        self._target(target)
        return status(self._store(), target)

    def search_runs(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]:
        from tau.portal.store import read

        group = filters.get("group") or None
        experiment = None
        if filters.get("target"):
            t = self._target(filters["target"])
            if t.type == "run":
                run = as_row(read.get_run(self._store(), t.id))
                return {
                    "schema_version": "tau.exp.run_search.v0",
                    "total": 1,
                    "truncated": False,
                    "runs": [run],
                }
            group, experiment = (t.id, None) if t.type == "run_group" else (group, t.id)
        page = read.list_runs(
            self._store(),
            project=filters.get("project") or None,
            group=group,
            experiment=experiment,
            state=filters.get("state") or None,
            limit=limit,
        )
        return {
            "schema_version": "tau.exp.run_search.v0",
            "store_path": self.store_path,
            "total": len(page.items),
            "truncated": page.truncated,
            "runs": [as_row(r) for r in page.items],
            "warnings": [],
        }

    def search_experiments(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]:
        from tau.portal.store import read

        store = self._store()
        page = read.list_experiments(store, project=filters.get("project") or None, limit=limit)
        ids = [e.experiment_id for e in page.items]
        counts = experiment_counts(store, ids)
        return {
            "schema_version": "tau.exp.experiment_search.v0",
            "store_path": self.store_path,
            "truncated": page.truncated,
            "experiments": [
                {**as_row(e), **counts.get(e.experiment_id, _NO_RUNS)} for e in page.items
            ],
        }


#: The table and id column of each target kind (a `kind=` link names one of them).
_KIND_TABLES = {
    "run_group": ("run_groups", "run_group_id"),
    "run": ("runs", "run_id"),
    "experiment": ("experiments", "experiment_id"),
}

_NO_RUNS = {"run_count": 0, "run_group_count": 0, "latest_run_id": None, "latest_run_at": None}


def experiment_counts(store: Any, experiment_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Per experiment: its runs, run groups, and newest run (by `created_at`, then run id).

    Two grouped queries over the runs index whatever the number of experiments (the landing
    page lists up to 50); experiments without runs are absent.
    """
    out: dict[str, dict[str, Any]] = {}
    for start in range(0, len(experiment_ids), 500):
        chunk = tuple(experiment_ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        for row in store.query(
            "SELECT experiment_id, count(*) AS runs, count(DISTINCT run_group_id) AS groups "
            f"FROM runs WHERE experiment_id IN ({marks}) GROUP BY experiment_id",
            chunk,
        ):
            out[str(row["experiment_id"])] = {
                **_NO_RUNS,
                "run_count": int(row["runs"]),
                "run_group_count": int(row["groups"]),
            }
        # The newest run of each experiment: the first by (created_at DESC, run_id), the
        # order every run list of the store uses.
        for row in store.query(
            "SELECT experiment_id, run_id, created_at FROM ("
            "SELECT experiment_id, run_id, created_at, row_number() OVER ("
            "PARTITION BY experiment_id ORDER BY created_at DESC, run_id) AS n "
            f"FROM runs WHERE experiment_id IN ({marks})) AS newest WHERE n = 1",
            chunk,
        ):
            exp = str(row["experiment_id"])
            if exp in out:
                out[exp].update(latest_run_id=str(row["run_id"]), latest_run_at=row["created_at"])
    return out
