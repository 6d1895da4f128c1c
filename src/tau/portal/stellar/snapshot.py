"""Build the Stellar snapshot document (`tau.exp.cockpit.v0`) from Evidence. Pure.

No clock and no I/O: `now` is an argument and series come through `Evidence.load_series`, so the
same store gives the same document (the goldens rely on it). Every list is bounded; what was
cut is said in `warnings`.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from tau.portal.stellar import chartdata, svg, table
from tau.portal.stellar import configs as configs_
from tau.portal.stellar.cards import CARD_ORDER, RUN_STATUS_METRIC, default_metric
from tau.portal.stellar.downsample import DEFAULT_BUDGET, METHOD, downsample, ema
from tau.portal.stellar.evidence import Evidence, Record, Series, SeriesLoader
from tau.portal.store import direction as directions_
from tau.portal.store.cards import card_from_tags
from tau.portal.store.direction import Direction, direction_of
from tau.portal.store.schema import TABLES

SCHEMA_VERSION = "tau.exp.cockpit.v0"
CLI = "taugrid-portal experiment"
NOT_COLLECTED = "not collected"
#: Rendered points for all series of one chart together; keeps a 100-run page well under 2 MB.
TOTAL_POINT_BUDGET = 60_000
#: Smoothing applies to dense training scalars only (the reference's rule).
EMA_ALPHA = 0.12
EMA_MIN_POINTS = 800
MAX_EVENT_MARKERS = 12
MAX_CONFIG_DIFFS = 16
MAX_EVENTS = 500
MAX_ARTIFACTS = 500
_PINNED_KEYS = ("lr", "learning_rate", "batch_size", "model", "model_name", "rank", "seed")
_MARKER_TYPES = {"restart", "preempted", "oom", "failed", "checkpoint", "artifact"}
_FAILURE_WORDS = (
    "collapse_bad_steps",
    "bad_steps",
    "nan_steps",
    "inf_steps",
    "oom",
    "failed",
    "failure",
    "error_count",
    "errors",
)
#: (label, run column or run_context key) shown as a run's systems facts.
_SYSTEMS = (
    ("Queue wait", "context.queue_wait_seconds"),
    ("GPU class", "context.gpu_class"),
    ("GPU count", "context.gpu_count"),
    ("Local queue", "context.local_queue"),
    ("Cluster queue", "context.cluster_queue"),
    ("Kueue workload", "context.kueue_workload"),
    ("Pod UID", "context.pod_uid"),
    ("Nodes", "context.node_names"),
    ("Resource claims", "context.resource_claims"),
    ("GPU hours", "context.gpu_hours"),
    ("Estimated cost", "context.estimated_cost"),
    ("Cluster", "context.cluster"),
    ("Namespace", "context.namespace"),
    ("Team", "context.team"),
    ("Profile", "context.profile"),
    ("Lane", "context.lane"),
    ("Runtime", "context.runtime"),
    ("Dependencies", "context.dependencies"),
    ("Log URI", "context.log_uri"),
    ("Config hash", "config_hash"),
    ("Code SHA", "code_sha"),
    ("Image digest", "image_digest"),
    ("Tau command", "tau_command"),
)
# The run fields of the snapshot are the store's run columns, less its own bookkeeping.
_RUN_FIELDS = tuple(c for c in TABLES["runs"][1] if c != "index_version")
_RUN_STATUS_VALUES = {1.0: "succeeded", -1.0: "failed", -2.0: "cancelled"}
#: Outcomes after which a run writes nothing more (live refresh stops when every run has one).
TERMINAL_OUTCOMES = frozenset({"succeeded", "failed", "cancelled"})
#: Tags that may record how a run was started, when the run row has no `tau_command`.
_COMMAND_TAGS = ("tau.command", "command", "entrypoint", "tau.entrypoint")


def quote(value: str) -> str:
    """Single-quote for a POSIX shell."""
    return "'" + value.replace("'", "'\\''") + "'"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _parse_time(value: Any) -> datetime | None:
    text = _text(value)
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def distribution(values: Sequence[float], direction: str = directions_.MAX) -> dict[str, float]:
    """min/p25/median/p75/max of `values` (non-empty), and the best one in `direction`."""
    ordered = sorted(values)
    return {
        "min": ordered[0],
        "p25": percentile(ordered, 0.25),
        "median": percentile(ordered, 0.5),
        "p75": percentile(ordered, 0.75),
        "max": ordered[-1],
        "best": ordered[-1] if direction == directions_.MAX else ordered[0],
    }


def is_failed(run: Mapping[str, Any]) -> bool:
    """A run doc that failed: its state, or its terminal `tau/run_status` marker, says so."""
    return run.get("lifecycle_state") == "failed" or run.get("outcome_state") == "failed"


# --- per-run facts -------------------------------------------------------------------------


def classify(run: Record, summaries: Mapping[str, Record]) -> tuple[str, bool, list[str]]:
    """(lifecycle_state, successful, reasons): the search rules of contract §5."""
    state = _text(run.get("state")).lower()
    if state in ("pending", "running"):
        return state, False, [f"run is {state}"]
    if state == "failed":
        return "failed", False, ["run state is failed"]
    if state in ("succeeded", "completed"):
        reasons = []
        tags = run.get("tags") or {}
        required = next(
            (
                tags[k]
                for k in (
                    "tau.success.min_step",
                    "success.min_step",
                    "expected_max_step",
                    "max_step",
                )
                if k in tags
            ),
            None,
        )
        steps = [int(s["max_step"]) for s in summaries.values() if s.get("max_step") is not None]
        if required is not None and _text(required).isdigit():
            top = max(steps) if steps else None
            if top is None or top < int(_text(required)):
                shown = "none" if top is None else str(top)
                reasons.append(f"max step {shown} is below required step {required}")
        for name, s in sorted(summaries.items()):
            bad = int(s.get("non_finite_count") or 0)
            if bad:
                reasons.append(f"{name} has {bad} non-finite values")
            top_value = s.get("max_value")
            if (
                any(w in name.lower() for w in _FAILURE_WORDS)
                and top_value is not None
                and float(top_value) > 0
            ):
                reasons.append(f"{name} indicates failure with max value {_text(top_value)}")
        if reasons:
            return "incomplete", False, reasons
        return "succeeded", True, ["run state succeeded and success gates passed"]
    return (
        ("incomplete" if run.get("completed_at") else "pending"),
        False,
        [f"run state is {state}"],
    )


def liveness(
    run: Record, summaries: Mapping[str, Record], now: datetime, retry: int | None = None
) -> dict[str, Any]:
    """Outcome and liveness of one run (contract §6): a terminal outcome wins, else freshness.

    `retry`: the attempt whose rows arrived after the last marker's attempt (a retried run):
    that marker, and the terminal state it wrote, end an attempt, not the run.
    """
    marker = summaries.get(RUN_STATUS_METRIC)
    marker_state = (
        _RUN_STATUS_VALUES.get(float(marker["latest_value"]))
        if marker and marker.get("latest_value") is not None and retry is None
        else None
    )
    state = _text(run.get("state")).lower()
    outcome = marker_state or (
        {"completed": "succeeded", "canceled": "cancelled"}.get(state, state)
        if state in ("succeeded", "completed", "failed", "cancelled", "canceled") and retry is None
        else ""
    )
    times = [
        t
        for t in (
            *(_parse_time(s.get("latest_wall_time")) for s in summaries.values()),
            _parse_time(run.get("completed_at")),
            _parse_time(run.get("started_at")),
            _parse_time(run.get("created_at")),
        )
        if t is not None
    ]
    last = max(times) if times else None
    fresh = int((now - last).total_seconds()) if last else None
    if outcome:
        live, reason = (
            outcome,
            ("terminal tau/run_status marker" if marker_state else f"run state is {state}"),
        )
        source = "metrics" if marker_state else "store"
    elif fresh is not None and fresh <= 15 * 60:
        live, reason, source = "running", "evidence within 15m", "store"
        if retry is not None:
            reason = f"attempt {retry} running after an earlier attempt's marker"
    else:
        live, reason, source = "not_responding", "no evidence within 15m", "store"
    return {
        "outcome_state": outcome,
        "liveness_state": live,
        "lifecycle_reason": reason,
        "lifecycle_source": source,
        "last_evidence_at": last.isoformat().replace("+00:00", "Z") if last else "",
        "freshness_seconds": fresh,
        "lifecycle_explicit": bool(outcome),
        "workload_absence_confirmed": False,
    }


def _fact(run: Record, path: str) -> str:
    if path.startswith("context."):
        return _text((run.get("context") or {}).get(path.removeprefix("context.")))
    return _text(run.get(path))


def systems(run: Record) -> list[dict[str, str]]:
    out = []
    for label, path in _SYSTEMS:
        value = _fact(run, path)
        out.append(
            {
                "name": label,
                "value": value or NOT_COLLECTED,
                "collection_state": "collected" if value else NOT_COLLECTED,
            }
        )
    return out


# --- the document --------------------------------------------------------------------------


def build(
    ev: Evidence,
    *,
    now: datetime,
    metric: str | None = None,
    mode: str = "full",
    include_points: bool = True,
    directions: Mapping[str, str] | None = None,
    include_failed: bool = False,
    embedded_charts: int | None = None,
    polylines: bool | None = None,
) -> dict[str, Any]:
    """The snapshot document of `ev`.

    Args:
        ev: what the store holds for the target.
        now: the generation time (injected; makes output reproducible).
        metric: the requested chart metric (`--metric`); falls back as the contract says.
        mode: ``full``, ``summary`` (no chart series) or ``metric`` (chart only).
        include_points: keep SVG polyline coordinates in chart series (the API strips them).
        directions: `--direction` overrides, metric -> ``max``/``min``; the key "" names the
            decision (chart) metric. Other metrics follow their recorded tag or the name rule.
        include_failed: count failed runs in group statistics, best run and ranking (they are
            excluded by default, and always marked).
        embedded_charts: read the series of this many interactive charts only (a served page:
            the others are fetched from the series API when seen); None reads them all.
        polylines: keep the SVG polyline coordinates in chart series; None follows
            `include_points`. A served page leaves them out: its charts are drawn from `charts`,
            and its fallback image from the series' values.
    """
    ev = replace(ev, load_series=_read_once(ev.load_series))
    warnings = list(ev.warnings)
    by_run: dict[str, dict[str, Record]] = {}
    for s in ev.summaries:
        by_run.setdefault(str(s["run_id"]), {})[str(s["metric_name"])] = s
    if ev.total_runs > len(ev.runs):
        warnings.append(f"runs truncated to {len(ev.runs)} of {ev.total_runs} matching runs")

    metric_names = sorted({name for m in by_run.values() for name in m})

    def card(name: str) -> str:
        return card_from_tags({"tau.metric.card": ev.metric_cards.get(name)}, name)

    chart_metric = default_metric(metric_names, metric, card)
    if metric and metric not in metric_names:
        warnings.append(f"metric {metric} was not found for this target")
    decision = chart_metric or ""
    overrides = {k: directions_.parse(v) for k, v in (directions or {}).items()}
    bare = overrides.pop("", None)
    if bare and decision:
        overrides.setdefault(decision, bare)
    for name in sorted(set(overrides) - set(metric_names)):
        warnings.append(f"--direction for {name} ignored: the target has no metric {name}")

    def direction(name: str) -> Direction:
        return direction_of(
            name, override=overrides.get(name), record=ev.metric_directions.get(name)
        )

    if not [n for n in metric_names if n != RUN_STATUS_METRIC]:
        warnings.append("no scalar metrics were found for this target")

    retries = retried(ev, by_run)
    runs = [
        _run_doc(ev, run, by_run.get(str(run["run_id"]), {}), now, retries.get(str(run["run_id"])))
        for run in ev.runs
    ]
    failed = [r["run_id"] for r in runs if is_failed(r)]
    for r in runs:
        r["failed"] = r["run_id"] in failed
        r["in_group_stats"] = include_failed or not r["failed"]
    counted = [r for r in runs if r["in_group_stats"]]
    colors = {r["run_id"]: r["color"] for r in runs}
    groups = _groups(ev, runs)
    cards = _cards(counted, by_run, card, direction)
    chart = (
        _chart(ev, runs, chart_metric, colors, include_points if polylines is None else polylines)
        if mode != "summary"
        else {"has_data": False, "metric_name": chart_metric or "", "series": []}
    )
    way = direction(decision)
    stats = _group_stats(counted, by_run, decision, way.value)
    sign = directions_.sort_key(way.value)
    best_group = min(stats, key=lambda g: (sign * stats[g]["best"], g), default="")
    excluded = [] if include_failed else failed
    if excluded:
        shown = ", ".join(excluded[:5]) + (
            f" (+{len(excluded) - 5} more)" if len(excluded) > 5 else ""
        )
        warnings.append(
            f"{len(excluded)} failed runs left out of group statistics: {shown} "
            "(--include-failed counts them)"
        )
    observations = list(ev.observations)
    coverage = _seed_coverage(runs)
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "payload_mode": "" if mode == "full" else mode,
        "generated_at": now.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        "store_path": ev.store_path,
        "target": ev.target,
        "target_type": ev.target_type,
        "manifest": dict(ev.manifest),
        "status": dict(ev.status),
        "summary": _summary(
            ev,
            runs,
            stats,
            best_group,
            way,
            decision,
            observations,
            coverage,
            card(decision),
            include_failed,
        ),
        "experiment": dict(ev.experiment) if ev.experiment else None,
        "run_groups": groups,
        "runs": runs,
        "cards": cards,
        "chart": chart,
        "charts": (
            chartdata.build(ev, runs, decision, embedded=embedded_charts)
            if include_points and mode == "full"
            else None
        ),
        "metric_options": [
            {"name": n, "card": card(n), **direction(n).as_dict()} for n in metric_names
        ],
        "direction": {"metric_name": decision, **way.as_dict()},
        "include_failed": include_failed,
        "excluded_failed_runs": excluded,
        "sweep": _sweep(ev, runs, counted, by_run, decision, way.value),
        "compare": _compare(ev, counted, by_run, stats, best_group, decision, way),
        "artifacts": [dict(a) for a in ev.artifacts[:MAX_ARTIFACTS]],
        "events": [dict(e) for e in ev.events[-MAX_EVENTS:]],
        "observations": [dict(o) for o in observations],
        "actions": actions(ev.store_path, ev.target, ev.target_type, decision, way, include_failed),
        "best_group_id": best_group,
        "seed_coverage": coverage,
        "warnings": warnings,
        "live": {**live_state(runs), **settled(runs)},
        "config_diff": configs_.diff(runs, ev.configs),
        "table": table.build(runs, by_run, direction, decision=decision, full=include_points),
    }
    unreadable = chart.get("unreadable_runs")
    for rid in unreadable if isinstance(unreadable, list) else ():
        # The summaries promise points the metric files did not give: missing or damaged.
        warnings.append(f"metrics unreadable for {rid} (its metric file is missing or damaged)")
    if len(ev.events) > MAX_EVENTS:
        warnings.append(f"events truncated to the latest {MAX_EVENTS} of {len(ev.events)}")
    if len(ev.artifacts) > MAX_ARTIFACTS:
        warnings.append(f"artifacts truncated to {MAX_ARTIFACTS} of {len(ev.artifacts)}")
    return doc


def _read_once(load: SeriesLoader) -> SeriesLoader:
    """`load`, remembering each (metric, runs) answer for one build.

    The SVG chart and the interactive charts both read the decision metric's series of the same
    runs; without this the Parquet files are read twice per page.
    """
    seen: dict[tuple[str, tuple[str, ...]], list[Series]] = {}

    def read(metric: str, run_ids: Sequence[str]) -> list[Series]:
        key = (metric, tuple(run_ids))
        if key not in seen:
            seen[key] = load(metric, run_ids)
        return list(seen[key])

    return read


#: Runs with a marker (in page order) checked for a later attempt's rows (`retried`).
MAX_RETRY_CHECKS = 20


def retried(ev: Evidence, by_run: Mapping[str, Mapping[str, Record]]) -> dict[str, int]:
    """Runs whose rows of a later attempt arrived after their last `tau/run_status` marker
    (its `tau.attempt` run tag): run id -> that attempt. A retried run's first attempt ends
    with a marker, and the run goes on; only the metric files' `tau.attempt` tags tell.
    """
    marked = {
        str(r["run_id"]): _text((r.get("tags") or {}).get("tau.attempt"))
        for r in ev.runs
        if RUN_STATUS_METRIC in by_run.get(str(r["run_id"]), {})
    }
    checked = [rid for rid, attempt in marked.items() if attempt.isdigit()][:MAX_RETRY_CHECKS]
    if not checked:
        return {}
    starts = ev.attempt_starts(checked)
    out = {}
    for rid in checked:
        latest = max((a for a, _, _ in starts.get(rid, ())), default=-1)
        if latest > int(marked[rid]):
            out[rid] = latest
    return out


def _run_doc(
    ev: Evidence,
    run: Record,
    summaries: Mapping[str, Record],
    now: datetime,
    retry: int | None = None,
) -> dict[str, Any]:
    run_id = str(run["run_id"])
    lifecycle, successful, reasons = classify(run, summaries)
    doc: dict[str, Any] = {k: _text(run.get(k)) for k in _RUN_FIELDS}
    doc["source"] = _text((run.get("tags") or {}).get("source")) or "local"
    doc.update(
        {
            "lifecycle_state": lifecycle,
            "successful": successful,
            "success_reasons": reasons,
            **liveness(run, summaries, now, retry),
            "color": svg.run_color(run_id),
            "tags": dict(sorted((run.get("tags") or {}).items())),
            "metric_names": sorted(summaries),
            "systems": systems(run),
            "configs": [dict(c) for c in ev.configs.get(run_id, ())],
            "config_values": configs_.values(ev.configs.get(run_id, ())),
            "artifacts": [dict(a) for a in ev.artifacts if a.get("run_id") == run_id],
            "events": [dict(e) for e in ev.events if e.get("run_id") == run_id][-50:],
            "observations": [
                dict(o)
                for o in ev.observations
                if o.get("scope_type") == "run" and o.get("scope_id") == run_id
            ],
            "observe_cli": observe_cli(ev.store_path, "run", run_id),
        }
    )
    doc["state_legacy"] = "stale" if doc["liveness_state"] == "not_responding" else doc["state"]
    doc["terminal"] = doc["outcome_state"] in TERMINAL_OUTCOMES
    tags = doc["tags"]
    doc["command"] = doc["tau_command"] or next(
        (_text(tags[k]) for k in _COMMAND_TAGS if _text(tags.get(k))), ""
    )
    marker = summaries.get(RUN_STATUS_METRIC)
    doc["run_status_marker"] = (
        _RUN_STATUS_VALUES.get(float(marker["latest_value"]), NOT_COLLECTED)
        if marker and marker.get("latest_value") is not None
        else NOT_COLLECTED
    )
    return doc


def _groups(ev: Evidence, runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    known = {str(g["run_group_id"]): dict(g) for g in ev.run_groups}
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["run_group_id"]] = counts.get(r["run_group_id"], 0) + 1
    out = []
    for gid in sorted(set(known) | set(counts)):
        row = known.get(gid, {"run_group_id": gid, "name": gid})
        row["run_count"] = counts.get(gid, 0)
        out.append(row)
    return out


def _latest(by_run: Mapping[str, Mapping[str, Record]], run_id: str, metric: str) -> float | None:
    s = by_run.get(run_id, {}).get(metric)
    if not s or s.get("latest_value") is None:
        return None
    value = float(s["latest_value"])
    return value if math.isfinite(value) else None


def _group_stats(
    runs: Sequence[Mapping[str, Any]],
    by_run: Mapping[str, Mapping[str, Record]],
    metric: str,
    direction: str = directions_.MAX,
) -> dict[str, dict[str, Any]]:
    """Per group: the distribution of the runs' latest values and the best run in `direction`."""
    sign = directions_.sort_key(direction)
    values: dict[str, list[float]] = {}
    steps: dict[str, int] = {}
    best_run: dict[str, tuple[float, str]] = {}
    for r in runs:
        v = _latest(by_run, r["run_id"], metric)
        if v is None:
            continue
        g = r["run_group_id"]
        values.setdefault(g, []).append(v)
        step = by_run[r["run_id"]][metric].get("latest_step")
        steps[g] = max(steps.get(g, 0), int(step or 0))
        if g not in best_run or (sign * v, r["run_id"]) < (sign * best_run[g][0], best_run[g][1]):
            best_run[g] = (v, r["run_id"])
    return {
        g: {
            "run_group_id": g,
            "run_count": len(vs),
            "latest_step": steps[g],
            **distribution(vs, direction),
            "best_run_id": best_run[g][1],
        }
        for g, vs in sorted(values.items())
    }


def _cards(
    runs: Sequence[Mapping[str, Any]],
    by_run: Mapping[str, Mapping[str, Record]],
    card: Callable[[str], str],
    direction: Callable[[str], Direction],
) -> list[dict[str, Any]]:
    names = sorted({n for m in by_run.values() for n in m if n != RUN_STATUS_METRIC})
    cards: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        way = direction(name)
        groups = list(_group_stats(runs, by_run, name, way.value).values())
        if groups:
            cards.setdefault(card(name), []).append(
                {"metric_name": name, **way.as_dict(), "groups": groups}
            )
    return [{"card": c, "metrics": cards[c]} for c in CARD_ORDER if c in cards]


def _chart(
    ev: Evidence,
    runs: Sequence[Mapping[str, Any]],
    metric: str | None,
    colors: Mapping[str, str],
    include_points: bool,
) -> dict[str, Any]:
    empty = {"has_data": False, "metric_name": metric or "", "series": [], "smoothing": None}
    if not metric:
        return empty
    run_ids = [r["run_id"] for r in runs if metric in r["metric_names"]]
    group_of = {r["run_id"]: r["run_group_id"] for r in runs}
    loaded = sorted(ev.load_series(metric, run_ids), key=lambda s: run_ids.index(s.run_id))
    got = {s.run_id for s in loaded}
    unreadable = [rid for rid in run_ids if rid not in got]
    if not loaded:
        return {**empty, "unreadable_runs": unreadable}
    budget = max(50, min(DEFAULT_BUDGET, TOTAL_POINT_BUDGET // len(loaded)))
    sampled = [(s, downsample(s.steps, s.values, budget)) for s in loaded]
    smooth = (metric.startswith("train/") or "loss" in metric) and any(
        d.source_points >= EMA_MIN_POINTS for _, d in sampled
    )
    lines = [
        svg.Line(
            s.run_id,
            group_of.get(s.run_id, ""),
            colors.get(s.run_id, "#000"),
            d.steps,
            d.values,
            d.source_points,
        )
        for s, d in sampled
    ]
    frame = svg.Frame.of(lines)
    series = []
    for line, (_, d) in zip(lines, sampled, strict=True):
        entry: dict[str, Any] = {
            "run_id": line.run_id,
            "run_group_id": line.group,
            "group_class": f"group-{sorted(set(group_of.values())).index(line.group)}"
            if line.group in group_of.values()
            else "group-0",
            "color": line.color,
            "values": [{"step": x, "value": y} for x, y in zip(d.steps, d.values, strict=True)],
            "smoothed_values": (
                [
                    {"step": x, "value": y}
                    for x, y in zip(d.steps, ema(d.values, EMA_ALPHA), strict=True)
                ]
                if smooth
                else []
            ),
            "point_count": d.source_points,
            "rendered_points": d.rendered_points,
            "decimated": d.decimated,
            "non_finite_points": d.non_finite,
            "overlay": False,
            "sampling": {"method": METHOD if d.decimated else "all", "budget": budget},
        }
        if include_points and frame is not None:
            entry["points"] = svg.polyline_points(line, frame)
        series.append(entry)
    return {
        "has_data": frame is not None,
        "metric_name": metric,
        "x_min": frame.x_min if frame else None,
        "x_max": frame.x_max if frame else None,
        "y_min": frame.y_min if frame else None,
        "y_max": frame.y_max if frame else None,
        "series": series,
        "sampling_note": svg.sampling_note(lines),
        "smoothing": {"method": "ema", "alpha": EMA_ALPHA} if smooth else None,
        "unreadable_runs": unreadable,
    }


def live_state(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Whether the target is done changing: every run has a terminal outcome.

    A target with no runs is not finished (its first run may be on the way), and neither is one
    with a run that is running or has gone quiet without an outcome (it may come back).
    """
    open_runs = [r["run_id"] for r in runs if not r.get("terminal")]
    finished = bool(runs) and not open_runs
    if finished:
        reason = "all runs finished"
    elif not runs:
        reason = "no runs yet"
    else:
        reason = f"{len(open_runs)} of {len(runs)} runs not finished"
    return {
        "finished": finished,
        "terminal_runs": len(runs) - len(open_runs),
        "open_runs": len(open_runs),
        "reason": reason,
    }


#: Seconds after a run failed or was cancelled during which a live page keeps looking for its
#: retry (resilience.retry_on resubmits it; the next attempt's rows then follow).
RETRY_WINDOW = 10 * 60


def settled(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Whether a live page may stop refreshing: every run is terminal, and none failed or was
    cancelled so recently that a retry may still come (its first attempt's marker ends an
    attempt; `retried` tells once the retry's rows arrive).
    """
    finished = live_state(runs)["finished"]
    waiting = [
        str(r["run_id"])
        for r in runs
        if r.get("outcome_state") in ("failed", "cancelled")
        and r.get("freshness_seconds") is not None
        and int(r["freshness_seconds"]) <= RETRY_WINDOW
    ]
    return {"settled": finished and not waiting, "retry_watch": waiting}


def _seed_coverage(runs: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in runs:
        counts[r["run_group_id"]] = counts.get(r["run_group_id"], 0) + 1
    parts = ", ".join(f"{g}={n}" for g, n in sorted(counts.items()))
    return f"{len(runs)} runs across {len(counts)} run groups" + (f" ({parts})" if parts else "")


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def _summary(
    ev: Evidence,
    runs: Sequence[Mapping[str, Any]],
    stats: Mapping[str, Mapping[str, Any]],
    best_group: str,
    way: Direction,
    metric: str,
    observations: Sequence[Record],
    coverage: str,
    card: str,
    include_failed: bool,
) -> dict[str, Any]:
    decisions = [o for o in observations if o.get("type") == "decision"]
    blockers = [o for o in observations if o.get("type") == "blocker"]
    if not runs:
        status = "empty"
    elif blockers:
        status = "blocked"
    elif decisions:
        status = "answered"
    elif live_state(runs)["finished"]:
        status = "finished"
    else:
        status = "active"
    if decisions:
        answer = _text(sorted(decisions, key=lambda o: _text(o.get("created_at")))[-1].get("text"))
    elif best_group:
        answer = f"Current best evidence favors {best_group} on {metric} ({way.goal} is better)."
    else:
        answer = "No current answer yet."
    best = stats.get(best_group)
    evidence = (
        f"{card}: {metric} best={_fmt(best['best'])}, median={_fmt(best['median'])} "
        f"across {best['run_count']} runs at latest step {best['latest_step']}."
        if best
        else "No outcome evidence collected."
    )
    if blockers:
        confidence = "blocked - unresolved blockers"
    elif not stats:
        confidence = "low - no outcome evidence yet"
    elif len(stats) > 1 and all(s["run_count"] >= 3 for s in stats.values()):
        confidence = "high - at least 3 seeds per compared group"
    elif len(stats) > 1 and any(s["run_count"] > 1 for s in stats.values()):
        confidence = "medium - multiple groups with repeated seeds"
    else:
        confidence = "low - needs another group or more seeds"
    acts = actions(ev.store_path, ev.target, ev.target_type, metric, way, include_failed)
    if not runs:
        next_action = "Record a run: import a metrics history or track a run."
    elif confidence.startswith("low") or confidence.startswith("medium"):
        next_action = "Add seeds or another run group, then compare again."
    else:
        next_action = "Compare the groups and record a decision observation."
    return {
        "status": status,
        "current_answer": answer,
        "best_evidence": evidence,
        "confidence": confidence,
        "seed_coverage": coverage,
        "blockers": [_text(o.get("text")) for o in blockers],
        "decisions": [_text(o.get("text")) for o in decisions],
        "next_action": next_action,
        "next_command": acts["next_command"],
    }


def _sweep(
    ev: Evidence,
    runs: Sequence[Mapping[str, Any]],
    counted: Sequence[Mapping[str, Any]],
    by_run: Mapping[str, Mapping[str, Record]],
    metric: str,
    direction: str,
) -> dict[str, Any]:
    """Runs ranked best first in `direction` (failed runs only when counted), and importance."""
    sign = directions_.sort_key(direction)
    ranked = sorted(
        (
            {"run_id": r["run_id"], "run_group_id": r["run_group_id"], "value": v}
            for r in counted
            if (v := _latest(by_run, r["run_id"], metric)) is not None
        ),
        key=lambda x: (sign * x["value"], x["run_id"]),
    )
    configs = {r["run_id"]: configs_.run_config(ev.configs.get(r["run_id"], ())) for r in runs}
    configured = [rid for rid, c in configs.items() if c]
    keys = sorted({k for c in configs.values() for k in c})
    varying = [k for k in keys if len({json.dumps(configs[r].get(k)) for r in configured}) > 1]
    importance: list[dict[str, Any]] = []
    values_by_run = {x["run_id"]: x["value"] for x in ranked}
    for key in varying:
        pairs = [(configs[r].get(key), values_by_run[r]) for r in configured if r in values_by_run]
        score, kind = _importance(pairs)
        if score is not None:
            importance.append({"param": key, "importance": score, "kind": kind})
    importance.sort(key=lambda x: (-x["importance"], x["param"]))
    axes = [i["param"] for i in importance[:5]] + ([metric] if metric else [])
    return {
        "metric_name": metric,
        "direction": direction,
        "best_run": ranked[0] if ranked else None,
        "ranked_runs": ranked[:50],
        "axes": axes,
        "param_importance": importance[:16],
        "config_count": len(configured),
        "run_count": len(runs),
    }


def _importance(pairs: Sequence[tuple[Any, float]]) -> tuple[float | None, str]:
    if len(pairs) < 2:
        return None, ""
    numeric = [
        (float(p), v) for p, v in pairs if isinstance(p, int | float) and not isinstance(p, bool)
    ]
    if len(numeric) == len(pairs):
        xs, ys = [p for p, _ in numeric], [v for _, v in numeric]
        if len(set(xs)) < 2 or len(set(ys)) < 2:
            return 0.0, "numeric"
        return round(abs(statistics.correlation(xs, ys)), 6), "numeric"
    means: dict[str, list[float]] = {}
    for p, v in pairs:
        means.setdefault(_text(p), []).append(v)
    avg = [sum(vs) / len(vs) for vs in means.values()]
    return round(max(avg) - min(avg), 6), "categorical"


def _compare(
    ev: Evidence,
    runs: Sequence[Mapping[str, Any]],
    by_run: Mapping[str, Mapping[str, Record]],
    stats: Mapping[str, Mapping[str, Any]],
    best_group: str,
    metric: str,
    way: Direction,
) -> dict[str, Any]:
    outliers = []
    for g, s in stats.items():
        if s["run_count"] < 3:
            continue
        iqr = s["p75"] - s["p25"]
        lo, hi = s["p25"] - 1.5 * iqr, s["p75"] + 1.5 * iqr
        for r in runs:
            v = _latest(by_run, r["run_id"], metric)
            if r["run_group_id"] == g and v is not None and not lo <= v <= hi:
                outliers.append({"run_id": r["run_id"], "run_group_id": g, "value": v})
    markers = [
        dict(e)
        for e in ev.events
        if _text(e.get("severity")) in ("warning", "error") or _text(e.get("type")) in _MARKER_TYPES
    ][-MAX_EVENT_MARKERS:]
    return {
        "metric_name": metric,
        "direction": way.value,
        "summary": (
            f"Best current group is {best_group} on {metric} ({way.goal} is better); inspect "
            "outliers, event markers, and runtime diffs before recording a decision."
            if best_group
            else "No group has outcome evidence yet."
        ),
        "groups": list(stats.values()),
        "outliers": outliers,
        "event_markers": markers,
        "runtime_diffs": _runtime_diffs(ev, runs),
    }


_DIFF_FIELDS = (
    ("state", "state"),
    ("config hash", "config_hash"),
    ("code SHA", "code_sha"),
    ("image", "image_digest"),
    ("profile", "context.profile"),
    ("cluster queue", "context.cluster_queue"),
    ("GPU class", "context.gpu_class"),
    ("GPU count", "context.gpu_count"),
    ("lane", "context.lane"),
    ("runtime", "context.runtime"),
    ("dependencies", "context.dependencies"),
    ("log URI", "context.log_uri"),
)


def _runtime_diffs(ev: Evidence, runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Fields whose values differ across run groups ("diff only"), pinned config keys first."""
    by_id = {str(r["run_id"]): r for r in ev.runs}
    groups = sorted({r["run_group_id"] for r in runs})
    out = []

    def per_group(get: Any) -> dict[str, str]:
        vals: dict[str, set[str]] = {g: set() for g in groups}
        for r in runs:
            vals[r["run_group_id"]].add(get(r["run_id"]) or NOT_COLLECTED)
        return {g: ", ".join(sorted(v)) for g, v in vals.items()}

    for label, path in _DIFF_FIELDS:
        values = per_group(lambda rid, p=path: _fact(by_id[rid], p))
        if len(set(values.values())) > 1:
            out.append({"field": label, "values": values})
    configs = {r["run_id"]: configs_.run_config(ev.configs.get(r["run_id"], ())) for r in runs}
    keys = sorted(
        {k for c in configs.values() for k in c},
        key=lambda k: (
            _PINNED_KEYS.index(k.rsplit(".", 1)[-1])
            if k.rsplit(".", 1)[-1] in _PINNED_KEYS
            else 99,
            k,
        ),
    )
    shown = 0
    for key in keys:
        values = per_group(lambda rid, k=key: _text(configs[rid].get(k)))
        if len(set(values.values())) > 1:
            out.append({"field": f"config {key}", "values": values})
            shown += 1
            if shown >= MAX_CONFIG_DIFFS:
                break
    return out


def observe_cli(store: str, scope_type: str, target: str) -> str:
    return (
        f"{CLI} --store {quote(store)} observe --scope {quote(f'{scope_type}:{target}')} "
        f"--text 'note' --idempotency-key {quote(f'obs-{target}')}"
    )


def actions(
    store: str,
    target: str,
    target_type: str,
    metric: str,
    way: Direction | None = None,
    include_failed: bool = False,
) -> dict[str, str]:
    """Copy-paste commands for the target (contract §7.1 `actions`).

    Each reproduces what the page shows: `compare` always names the direction (a loss compared
    the wrong way names the worst group best), the Stellar commands name it when it was
    overridden, and all of them carry `--include-failed` when failed runs were counted.
    """
    base = f"{CLI} --store {quote(store)}"
    failed_flag = " --include-failed" if include_failed else ""
    way_flag = (
        f" {directions_.flag(way.value)}"
        if metric and way is not None and way.source == directions_.FROM_FLAG
        else ""
    )
    metric_flag = (f" --metric {quote(metric)}" if metric else "") + way_flag + failed_flag
    compare_way = directions_.flag(way.value if way else directions_.by_name(metric))
    stellar_flags = (f" --metric {quote(metric)}" + way_flag if way_flag else "") + failed_flag
    column = {"run_group": "run_group_id", "run": "run_id"}.get(target_type, "experiment_id")
    return {
        "copy_cli": (
            f"{base} stellar {quote(target)}{stellar_flags} -o html "
            f"> {quote(target + '-stellar.html')}"
        ),
        "open_cli": f"{base} open {quote(target)}{metric_flag}",
        "copy_sql": (
            f'{base} sql "select run_id, state, created_at, completed_at, result_uri from runs '
            f"where {column} = '{target.replace(chr(39), chr(39) * 2)}' order by created_at desc\""
        ),
        "export_packet": f"{base} export --out {quote(target + '-packet')}",
        "observe_cli": observe_cli(store, target_type, target),
        "next_command": (
            f"{base} compare {quote(target)} --metric {quote(metric)} {compare_way}"
            f"{failed_flag} --format jsonl"
            if metric
            else f"{base} status {quote(target)} --json"
        ),
    }
