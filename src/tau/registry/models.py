"""The model registry: per-run records, aliases, ``best`` selection and the index rebuild.

Performs I/O through a `Backend`. Run records are derived from each run's
``checkpoints/finetunes/<run>/artifacts.json`` (and ``metrics.json`` when present), so a rebuild
is deterministic: the same inputs give byte-identical records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from tau.registry import artifact_index, layout, records
from tau.registry.backend import Backend
from tau.registry.datasets import Clock, cas_alias, load_json, rfc3339, utc_now
from tau.registry.errors import ConflictError, NotFoundError, RegistryError
from tau.registry.format import to_json

UNKNOWN_MODEL = "unknown"


def model_record(
    index: Mapping[str, Any],
    model: str,
    metrics: Mapping[str, Any],
    backend: Backend,
    *,
    metrics_path: str | None,
    tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Build a run record from an artifact index. Pure apart from path display."""
    run = str(index["run"])
    artifacts = [dict(a) for a in index.get("artifacts") or []]
    stamps = [str(a[k]) for a in artifacts for k in ("upload_completed_at", "mtime") if a.get(k)]
    flat = records.flatten_metrics(metrics)
    return {
        "schema_version": records.SCHEMA_VERSION,
        "kind": records.MODEL_KIND,
        "model": model,
        "run": run,
        "namespace": index.get("namespace", ""),
        "resource_name": index.get("resource_name", ""),
        "created_at": index.get("created_at", ""),
        "completed_at": index.get("completed_at") or (max(stamps) if stamps else ""),
        "record_path": backend.display(layout.model_run(model, run)),
        "registry_path": backend.display(layout.MODELS),
        "artifacts_index": backend.display(layout.finetune_file(run, "artifacts.json")),
        "model_metadata": dict(index.get("model_metadata") or {}),
        "tags": dict(tags or index.get("tags") or {}),
        "metrics_path": backend.display(metrics_path) if metrics_path else "",
        "metrics": flat,
        "primary_metric": records.primary_metric(flat),
        "artifacts": artifacts,
        "storage_probe": {
            "artifacts_ready": sum(a.get("status") == "ready" for a in artifacts),
            "artifacts_total": len(artifacts),
        },
    }


def metric_of(rec: Mapping[str, Any], metric: str | None) -> tuple[str, float, str] | None:
    """``(name, value, direction)`` of `metric` (or the primary metric) in a run, or None."""
    pm = rec.get("primary_metric") or None
    if metric is None:
        if not pm:
            return None
        return (
            pm["name"],
            float(pm["value"]),
            pm.get("direction") or records.metric_direction(pm["name"]),
        )
    value = (rec.get("metrics") or {}).get(metric)
    if value is None:
        return None
    direction = pm.get("direction") if pm and pm.get("name") == metric else None
    return metric, float(value), direction or records.metric_direction(metric)


class ModelRegistry:
    """Model operations over one backend."""

    def __init__(self, backend: Backend, clock: Clock = utc_now) -> None:
        self.backend = backend
        self.clock = clock

    def models(self) -> list[str]:
        """Every model name."""
        return [m for m in self.backend.list(layout.MODELS) if not m.startswith(".")]

    def runs(self, model: str) -> list[str]:
        """Every run recorded for a model."""
        return [
            n.removesuffix(".json")
            for n in self.backend.list(layout.model_runs(model))
            if n.endswith(".json") and not n.startswith(".")
        ]

    def record(self, model: str, run: str) -> dict[str, Any] | None:
        """One run record, or None."""
        return load_json(self.backend, layout.model_run(model, run))

    def records(self, model: str | None = None) -> list[dict[str, Any]]:
        """Every run record (of one model), sorted by model and run."""
        if model is not None:
            records.check_slug("model name", model)
        found = []
        for name in [model] if model else self.models():
            found += [r for run in self.runs(name) if (r := self.record(name, run))]
        return found

    def list(
        self,
        *,
        model: str | None = None,
        tags: Mapping[str, str] | None = None,
        metric: str | None = None,
        sort: str | None = None,
    ) -> list[dict[str, Any]]:
        """Rows ``{record, metric_name, metric_value, metric_direction}`` for ``model list``."""
        if sort not in (None, "asc", "desc"):
            raise RegistryError("--sort must be one of: asc, desc")
        rows = []
        for rec in self.records(model):
            if tags and not records.tags_match(rec.get("tags") or {}, tags):
                continue
            got = metric_of(rec, metric)
            rows.append(
                {
                    "record": rec,
                    "metric_name": got[0] if got else None,
                    "metric_value": got[1] if got else None,
                    "metric_direction": got[2] if got else None,
                }
            )
        if sort:
            with_value = [r for r in rows if r["metric_value"] is not None]
            with_value.sort(key=lambda r: cast(float, r["metric_value"]), reverse=sort == "desc")
            rows = with_value + [r for r in rows if r["metric_value"] is None]
        return rows

    def alias(self, model: str, alias: str) -> dict[str, Any]:
        """One alias record, or NotFoundError saying how to set it."""
        records.check_slug("model name", model)
        records.check_slug("model alias", alias)
        doc = load_json(self.backend, layout.model_alias(model, alias))
        if doc is None:
            raise NotFoundError(
                f'model "{model}" has no alias "{alias}"',
                hint=f"set it with: tau data model alias set {model} {alias} RUN",
            )
        return doc

    def resolve(self, text: str) -> dict[str, Any]:
        """The run a ``MODEL/RUN``, ``MODEL@RUN``, ``MODEL:ALIAS`` or bare name refers to.

        A bare token is a run name searched across models; if no run has that name and a model
        does, it resolves through that model's ``default`` alias.
        """
        ref = records.parse_model_ref(text)
        if ref.sep in ("/", "@"):
            return self._run(ref.name, str(ref.token))
        if ref.sep == ":":
            return self._run(ref.name, str(self.alias(ref.name, str(ref.token))["run"]))
        owners = [m for m in self.models() if self.record(m, ref.name) is not None]
        if len(owners) > 1:
            raise RegistryError(
                f'run "{ref.name}" is recorded under several models: {", ".join(owners)}',
                hint=f"write it as MODEL/{ref.name}",
            )
        if owners:
            return self._run(owners[0], ref.name)
        if ref.name in self.models():
            run = self.alias(ref.name, records.DEFAULT_MODEL_ALIAS)["run"]
            return self._run(ref.name, str(run))
        raise NotFoundError(
            f'no model or run named "{ref.name}"', hint="list runs with: tau data model list"
        )

    def _run(self, model: str, run: str) -> dict[str, Any]:
        rec = self.record(model, run)
        if rec is None:
            raise NotFoundError(
                f"model {model} has no run {run}",
                hint=f"list its runs with: tau data model list --model {model}",
            )
        return rec

    def best(
        self, model: str, *, metric: str | None = None, direction: str | None = None
    ) -> dict[str, Any]:
        """The run with the best value of `metric` (default: the shared primary metric).

        Raises:
            RegistryError: mixed primary metrics without --metric, or no run has the metric.
        """
        if direction not in (None, *records.DIRECTIONS):
            raise RegistryError(f"--direction must be one of: {', '.join(records.DIRECTIONS)}")
        recs = self.records(model)
        if not recs:
            raise NotFoundError(
                f'model "{model}" has no runs', hint="index runs with: tau data model index rebuild"
            )
        if metric is None:
            names = sorted(
                {str(n) for r in recs if (n := (r.get("primary_metric") or {}).get("name"))}
            )
            if len(names) > 1:
                raise RegistryError(
                    f"model {model} has mixed primary metrics ({', '.join(names)})",
                    hint="choose one with --metric NAME",
                )
        scored = [(got, r) for r in recs if (got := metric_of(r, metric))]
        if not scored:
            raise NotFoundError(f"no run of model {model} has metric {metric or '(primary)'}")
        way = direction or scored[0][0][2]
        # min/max return the first of equal values; scored is in run order, so ties are stable.
        pick = min if way == "lower" else max
        return pick(scored, key=lambda s: s[0][1])[1]

    def set_alias(
        self,
        model: str,
        alias: str,
        run: str,
        *,
        expect: str | None = None,
        expect_absent: bool = False,
    ) -> dict[str, Any]:
        """Point a model alias at an existing run, optionally compare-and-swap."""
        records.check_slug("model name", model)
        records.check_slug("model alias", alias)
        records.check_slug("run name", run, dots=True)
        if expect is not None and expect_absent:
            raise RegistryError("--expect and --expect-absent cannot be used together")
        self._run(model, run)
        doc = records.model_alias_record(
            model,
            alias,
            run,
            self.backend.display(layout.model_run(model, run)),
            rfc3339(self.clock()),
        )
        return cas_alias(
            self.backend,
            layout.model_alias(model, alias),
            doc,
            "run",
            f"{model}:{alias}",
            expect=expect,
            expect_absent=expect_absent,
        )

    def rebuild(
        self,
        *,
        model: str | None = None,
        run: str | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> tuple[int, int]:
        """Index run records from ``finetunes/<run>/artifacts.json``: (indexed, refused).

        A run whose record is registered already is indexed again only when the record it
        gives is byte-identical (records are immutable; only aliases move). Over all runs, a
        corrupt index or a record that would change is skipped and reported through `warn`
        (refused counts the latter) so one run does not block the others; with `run`, either
        is an error.

        Raises:
            NotFoundError: `run` has no index.
            CorruptIndex: `run`'s index cannot be read.
            ConflictError: `run`'s record is registered and would change.
        """
        if model is not None:
            records.check_slug("model name", model)
        if run is not None:
            records.check_slug("run name", run, dots=True)
        runs = (
            [run]
            if run
            else [r for r in self.backend.list(layout.FINETUNES) if not r.startswith(".")]
        )
        count = refused = 0
        for name in runs:
            try:
                index = artifact_index.read(self.backend, name)
            except artifact_index.CorruptIndex as exc:
                if run or warn is None:
                    raise
                warn(f"skipped run {name}: {exc.message}")
                continue
            if index is None:
                if run:
                    where = self.backend.display(artifact_index.index_path(run))
                    raise NotFoundError(
                        f"run {run} has no artifacts.json", hint=f"expected {where}"
                    )
                continue
            try:
                self._index_one(index, model)
            except ConflictError as exc:
                if run or warn is None:
                    raise
                warn(f"refused run {name}: {exc.message}")
                refused += 1
                continue
            count += 1
        return count, refused

    def _index_one(self, index: dict[str, Any], model: str | None) -> None:
        run = str(index["run"])
        previous = load_json(self.backend, layout.finetune_file(run, "model.json")) or {}
        name = model or previous.get("model") or index.get("model") or UNKNOWN_MODEL
        records.check_slug("model name", str(name))
        metrics_path = layout.finetune_file(run, "metrics.json")
        metrics = load_json(self.backend, metrics_path)
        rec = model_record(
            index,
            str(name),
            metrics or {},
            self.backend,
            metrics_path=metrics_path if metrics is not None else None,
            tags=previous.get("tags"),
        )
        data = to_json(rec).encode()
        path = layout.model_run(str(name), run)
        existing = self.backend.read(path)
        # Never rewritten in place: the same inputs give the same bytes, so an unchanged run is
        # indexed again as a no-op; a record that would change is refused, as a dataset
        # version registered twice is.
        if existing is None and not self.backend.write(path, data, overwrite=False):
            existing = self.backend.read(path)  # lost a race with another rebuild
        if existing is not None and existing != data:
            raise ConflictError(
                f"model run {name}/{run} is already registered and its artifacts.json or "
                "metrics.json now gives a different record (records are immutable; only "
                "aliases move)",
                hint=f"the registered record stays as it is ({self.backend.display(path)}); "
                "register the new state under a new run name",
            )
        # The run's own copy says which record indexes it.
        self.backend.write(layout.finetune_file(run, "model.json"), data, overwrite=True)
