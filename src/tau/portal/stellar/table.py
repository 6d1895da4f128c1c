"""The run table of a Stellar snapshot: one row per run, for sorting, searching and comparing. Pure.

The page's table (`_runs_table.html.j2` + `assets/compare.js`) reads this payload; the JSON API
carries it too. Per run it holds the lifecycle status, the failed mark, group, tags, times, every
metric's summary (so the page's query box can evaluate the CLI's `--metric-filter` language on
the same numbers `experiment search` compares) and the key config fields. With ``full`` it also
holds each run's whole flattened config, for the side-by-side view.

Which way is "best" follows the snapshot's direction per metric (`store/direction.py`): the best
of `train/loss` is its minimum, the best of `eval/score` its maximum.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tau.portal.stellar import configs as configs_
from tau.portal.stellar.cards import RUN_STATUS_METRIC
from tau.portal.stellar.evidence import Record
from tau.portal.store.direction import MIN, Direction
from tau.portal.store.lifecycle import FIELDS

#: Key config columns a row carries (varying fields first); the rest are in the side-by-side data.
MAX_CONFIG_COLUMNS = 24
#: Columns the page shows before the user picks others.
DEFAULT_METRIC_COLUMNS = 3
DEFAULT_CONFIG_COLUMNS = 6
#: The order of a row's per-metric numbers: the CLI filter's fields (`lifecycle.FIELDS`), then
#: `best`. An array per metric keeps a 100-run × 30-metric payload small.
STAT_FIELDS = (*FIELDS, "best")
#: What the JSON API (``full=False``) keeps per metric: the table's two columns.
COMPACT_FIELDS = ("latest", "best")
#: metric_summaries column of each CLI filter field (`latest` is the table's "last").
_SUMMARY_COLUMN = {
    "latest": "latest_value",
    "min": "min_value",
    "max": "max_value",
}
#: Config keys people look for first when several fields vary.
_PINNED = ("lr", "learning_rate", "batch_size", "model", "model_name", "optimizer", "seed")


def _number(value: Any) -> float | int | None:
    """A JSON-safe number: NaN and infinities become None (JSON has no spelling for them)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    return int(number) if isinstance(value, int) else number


def _scalar(value: Any) -> Any:
    """A config value kept as data, but valid JSON (`nan` stays visible as the text "nan")."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def metric_stats(
    summary: Record, direction: str, fields: Sequence[str] = STAT_FIELDS
) -> list[float | int | None]:
    """One metric's numbers in `fields` order; best is min or max by `direction`."""
    values = {f: _number(summary.get(_SUMMARY_COLUMN.get(f, f))) for f in FIELDS}
    values["best"] = values["min"] if direction == MIN else values["max"]
    return [values[f] for f in fields]


def key_config_fields(configs: Mapping[str, Mapping[str, Any]]) -> tuple[list[str], list[str]]:
    """(all config keys ordered for columns, the keys whose value varies across runs).

    Varying keys come first (they are what a comparison is about), the usual hyper-parameter
    names first among them, then the constant keys; a run without the key counts as a value.
    """
    keys = sorted({k for c in configs.values() for k in c})
    configured = [c for c in configs.values() if c]

    def varies(key: str) -> bool:
        return len({json.dumps(c.get(key), sort_keys=True) for c in configured}) > 1

    varying = [k for k in keys if varies(k)]

    def rank(key: str) -> tuple[int, int, str]:
        leaf = key.rsplit(".", 1)[-1]
        pinned = _PINNED.index(leaf) if leaf in _PINNED else len(_PINNED)
        return (0 if key in varying else 1, pinned, key)

    return sorted(keys, key=rank), varying


def build(
    runs: Sequence[Mapping[str, Any]],
    by_run: Mapping[str, Mapping[str, Record]],
    direction: Callable[[str], Direction],
    *,
    decision: str = "",
    full: bool = True,
) -> dict[str, Any]:
    """The run-table payload of the snapshot's `runs` (run docs, in page order).

    Args:
        runs: the snapshot's run docs (they carry lifecycle, failed, color, tags, configs).
        by_run: run id -> metric name -> its metric_summaries row.
        direction: the snapshot's direction of a metric (override, recorded tag, name rule).
        decision: the snapshot's decision metric; shown first and used by default.
        full: every CLI filter field per metric and each run's whole flattened config (for
            the page's query box and side-by-side view); the JSON API keeps last and best only
            (200 runs × 10 metrics × 34 config keys: 390 kB full, 210 kB compact).
    """
    names = sorted({n for r in runs for n in by_run.get(r["run_id"], {})} - {RUN_STATUS_METRIC})
    names.sort(key=lambda n: (n != decision, n))
    ways = {n: direction(n) for n in names}
    fields = STAT_FIELDS if full else COMPACT_FIELDS
    configs = {r["run_id"]: configs_.run_config(r.get("configs") or ()) for r in runs}
    keys, varying = key_config_fields(configs)
    columns = keys[:MAX_CONFIG_COLUMNS]
    rows = []
    for r in runs:
        rid = r["run_id"]
        summaries = by_run.get(rid, {})
        config = configs[rid]
        rows.append(
            {
                "run_id": rid,
                "run_group_id": r.get("run_group_id", ""),
                "status": r.get("lifecycle_state", ""),
                "failed": bool(r.get("failed")),
                "color": r.get("color", ""),
                "tags": {str(k): str(v) for k, v in (r.get("tags") or {}).items()},
                "created_at": r.get("created_at", ""),
                "completed_at": r.get("completed_at", ""),
                "metrics": {
                    n: metric_stats(summaries[n], ways[n].value, fields)
                    for n in names
                    if n in summaries
                },
                "config": {k: _scalar(config[k]) for k in columns if k in config},
            }
        )
    doc: dict[str, Any] = {
        "stat_fields": list(fields),
        "metrics": [{"name": n, **ways[n].as_dict()} for n in names],
        "decision_metric": decision if decision in ways else (names[0] if names else ""),
        "config_keys": columns,
        "varying_config_keys": [k for k in columns if k in varying],
        "config_keys_total": len(keys),
        "default_metrics": names[:DEFAULT_METRIC_COLUMNS],
        "default_config": [k for k in columns if k in varying][:DEFAULT_CONFIG_COLUMNS],
        "rows": rows,
    }
    if full:
        doc["side_by_side"] = {
            r["run_id"]: {k: _scalar(v) for k, v in configs[r["run_id"]].items()} for r in runs
        }
    return doc


def cell(
    row: Mapping[str, Any], metric: str, field: str, fields: Sequence[str] = STAT_FIELDS
) -> float | int | None:
    """A row's `field` of `metric` (rows built with `fields`), or None."""
    stats = row["metrics"].get(metric)
    return None if stats is None else stats[list(fields).index(field)]
