"""The data behind Stellar's interactive charts (`charts.js`): every scalar metric of the target,
one downsampled series per run, with wall times. Pure.

The page draws small multiples (one canvas per metric) and explores them in the browser: hover,
zoom, log scale, smoothing and the x-axis choice need the points, not a picture. The points are
bounded here so a page of 200 runs × 10,000 steps × several metrics stays a few megabytes:

- each metric gets at most `METRIC_POINTS` rendered points, and the page at most `PAGE_POINTS`
  (so many metrics share the page budget), split evenly across the metric's runs, within
  [`MIN_SERIES_POINTS`, `MAX_SERIES_POINTS`] per series;
- downsampling keeps each bucket's minimum and maximum (`downsample.downsample`), so a spike
  survives and the chart's outlier marker can point at it;
- the columns are compact: steps and wall times as deltas from the previous point (integers),
  values rounded to 7 significant digits (what a float32 canvas coordinate resolves anyway).

Beyond `MAX_METRICS` metrics, the rest are listed as omitted (the page says so) rather than
shrinking every chart to a few points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tau.portal.stellar.cards import RUN_STATUS_METRIC
from tau.portal.stellar.downsample import METHOD, kept
from tau.portal.stellar.evidence import Evidence, Series

SCHEMA = "tau.stellar.charts.v1"
#: Metrics with points in the page; the others are named in `omitted_metrics`.
MAX_METRICS = 12
#: Rendered points of one metric (all its runs together).
METRIC_POINTS = 80_000
#: Rendered points of the whole page (all metrics together): ~22 bytes each in the HTML, so
#: about 4.5 MB of chart data at most (measured by bench/portal_browser_charts.py).
PAGE_POINTS = 200_000
#: Per-series bounds: enough to show a curve's shape, never more than a wide chart has pixels.
MIN_SERIES_POINTS = 64
MAX_SERIES_POINTS = 1500
#: Charts shown when the page opens (the decision metric first); the picker adds the others.
DEFAULT_VISIBLE = 6
#: Significant digits kept per value.
DIGITS = 7
#: The format that rounds a value to `DIGITS` significant digits (applied per point: inline).
_ROUNDED = f".{DIGITS}g"
#: Metrics whose series a served page carries in its HTML (the decision metric first); the
#: others are fetched from the series API when their chart is about to be seen, so a page of
#: 200 runs x 10 metrics opens at about a megabyte instead of five.
SERVED_EMBEDDED = 1
#: Rendered points per metric when a served chart fetches a zoomed step range, split across
#: the metric's runs within [MIN_SERIES_POINTS, MAX_SERIES_POINTS] (the browser computes it).
ZOOM_METRIC_POINTS = 60_000
#: Runs (in page order) whose attempt starts are read for the charts' marks: a retried run is
#: read on its own page or among a few; a sweep of hundreds does not pay for the footers.
MAX_ATTEMPT_RUNS = 20


def metric_order(metric_names: Sequence[str], decision: str) -> list[str]:
    """The charted metrics: all but the run-status marker, the decision metric first."""
    names = sorted({n for n in metric_names if n != RUN_STATUS_METRIC})
    if decision in names:
        names.remove(decision)
        names.insert(0, decision)
    return names


def series_budget(metric_count: int, run_count: int) -> tuple[int, int]:
    """(points per metric, points per series) for a page of `metric_count` charted metrics."""
    per_metric = min(METRIC_POINTS, PAGE_POINTS // max(1, metric_count))
    per_series = per_metric // max(1, run_count)
    return per_metric, max(MIN_SERIES_POINTS, min(MAX_SERIES_POINTS, per_series))


def _deltas(values: Sequence[int]) -> list[int]:
    out = []
    previous = 0
    for v in values:
        out.append(v - previous)
        previous = v
    return out


def encode(series: Series, budget: int) -> dict[str, Any]:
    """One run's series as the page's compact columns.

    `x` holds steps and `t` wall times in milliseconds, each as deltas from the previous point
    (the first from 0); `t` is null when any kept point has no recorded time, since a relative
    or wall-clock axis cannot place it. Non-finite values are dropped and counted.
    """
    xs, ys = list(series.steps), list(series.values)
    has_times = len(series.wall_times) == len(xs)
    ts = list(series.wall_times) if has_times else [0] * len(xs)
    # A stored series is sorted and finite: checked at C speed, so only odd ones pay the sort.
    if not (all(map(math.isfinite, ys)) and xs == sorted(xs)):
        rows = sorted(
            ((x, y, t) for x, y, t in zip(xs, ys, ts, strict=True) if math.isfinite(y)),
            key=lambda r: r[0],
        )
        xs, ys, ts = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    non_finite = len(series.values) - len(ys)
    # The one bucket-extremes rule (downsample.kept), applied to points that also carry a
    # wall time.
    keep = kept(ys, budget)
    times_ms = [ts[i] // 1000 for i in keep]
    return {
        "run_id": series.run_id,
        "x": _deltas([xs[i] for i in keep]),
        "y": [float(format(ys[i], _ROUNDED)) for i in keep],
        "t": _deltas(times_ms) if has_times and all(t > 0 for t in times_ms) else None,
        "source_points": len(ys),
        "non_finite_points": non_finite,
        "sampling": METHOD if len(keep) < len(ys) else "all",
    }


def build(
    ev: Evidence,
    runs: Sequence[Mapping[str, Any]],
    decision: str,
    *,
    embedded: int | None = None,
) -> dict[str, Any]:
    """The `charts` key of the snapshot.

    Args:
        ev: the evidence (its `load_series` reads the points).
        runs: the snapshot's run docs, in page order: `run_id`, `run_group_id`, `color`,
            `metric_names` and `failed` are used. Colours come from here, keyed by run id, so a
            run has the same colour in every chart, the legend and the run table.
        decision: the decision (default chart) metric, charted first.
        embedded: read the series of the first `embedded` charted metrics only (a served
            page); the others are `deferred`, their series fetched by the page from the series
            API (see `served`). None reads them all (the offline report).
    """
    names = metric_order([n for r in runs for n in r.get("metric_names") or ()], decision)
    charted, omitted = names[:MAX_METRICS], names[MAX_METRICS:]
    per_metric, per_series = series_budget(len(charted), len(runs))
    order = {str(r["run_id"]): i for i, r in enumerate(runs)}
    metrics: list[dict[str, Any]] = []
    for name in charted:
        wanted = [str(r["run_id"]) for r in runs if name in (r.get("metric_names") or ())]
        if embedded is not None and len(metrics) >= embedded:
            metrics.append(deferred(name, _decimated(ev, name, wanted, per_series)))
            continue
        loaded = sorted(ev.load_series(name, wanted), key=lambda s: order.get(s.run_id, len(order)))
        got = {s.run_id for s in loaded}
        encoded = [encode(s, per_series) for s in loaded]
        metrics.append(
            {
                "name": name,
                "series": encoded,
                "source_points": sum(e["source_points"] for e in encoded),
                "rendered_points": sum(len(e["y"]) for e in encoded),
                "unreadable_runs": [rid for rid in wanted if rid not in got],
            }
        )
    groups = sorted({str(r["run_group_id"]) for r in runs})
    return {
        "schema": SCHEMA,
        "attempts": attempt_marks(ev, [str(r["run_id"]) for r in runs[:MAX_ATTEMPT_RUNS]]),
        "decision_metric": decision if decision in charted else (charted[0] if charted else ""),
        "default_visible": charted[:DEFAULT_VISIBLE],
        "metrics": metrics,
        "omitted_metrics": omitted,
        "runs": [
            {
                "run_id": str(r["run_id"]),
                "group": str(r["run_group_id"]),
                "color": str(r["color"]),
                "failed": bool(r.get("failed")),
            }
            for r in runs
        ],
        "groups": groups,
        "budget": {
            "metric_points": per_metric,
            "series_points": per_series,
            "page_points": PAGE_POINTS,
            "method": METHOD,
        },
    }


def attempt_marks(ev: Evidence, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Where each retry of a run starts (attempt > 0): its first step and, when recorded, its
    first wall time in milliseconds; the charts draw a vertical mark there.
    """
    if not run_ids:
        return []
    starts = ev.attempt_starts(run_ids)
    return [
        {"run_id": rid, "attempt": attempt, "step": step, "t": wall // 1000 or None}
        for rid in run_ids
        for attempt, step, wall in starts.get(rid, ())
        if attempt > 0
    ]


def deferred(name: str, decimated: bool) -> dict[str, Any]:
    """A chart whose series a served page fetches when it is about to be seen (its point
    counts and unreadable runs come with them); `decimated`: whether they will be downsampled,
    for the page's note.
    """
    return {"name": name, "series": [], "deferred": True, "decimated": decimated}


def _decimated(ev: Evidence, metric: str, run_ids: Sequence[str], per_series: int) -> bool:
    """Whether the metric's series of these runs will be downsampled: some run's summary counts
    more finite points than a series keeps (the index says so without reading a point).
    """
    runs = set(run_ids)
    return any(
        int(s.get("finite_count") or 0) > per_series
        for s in ev.summaries
        if s.get("metric_name") == metric and str(s.get("run_id")) in runs
    )


def served(charts: Mapping[str, Any], series_url: str) -> dict[str, Any]:
    """The `charts` payload of a served page: series of the first `SERVED_EMBEDDED` metrics,
    the others `deferred` (their chart fetches them with `series_url`, the series API in
    compact columns, at the same per-series budget). A snapshot built for a served page
    (`build(embedded=SERVED_EMBEDDED)`) never read them; the offline report keeps them all.
    """
    metrics = [
        m
        if i < SERVED_EMBEDDED or m.get("deferred")
        else deferred(str(m["name"]), m["rendered_points"] < m["source_points"])
        for i, m in enumerate(charts.get("metrics") or ())
    ]
    return {
        **charts,
        "metrics": metrics,
        "served": {"series_url": series_url, "zoom_metric_points": ZOOM_METRIC_POINTS},
    }
