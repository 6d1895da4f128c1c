"""`stellar -o tui`: the snapshot as terminal tables and sparklines (rich). Pure.

Rendering goes to a rich Console the caller provides; the goldens use a fixed-width console
without colour, so the text is stable. Sections and bounds follow contract §7.3.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tau.portal.stellar.html import num

SPARK_LEVELS = "_.:-=+*#%@"
SPARK_WIDTH = 48
MAX_METRIC_ROWS = 24
MAX_CHART_ROWS = 8
MAX_RUN_ROWS = 16


def sparkline(values: Sequence[float], lo: float, hi: float, width: int = SPARK_WIDTH) -> str:
    """Bucket means scaled to ten levels between lo and hi (the chart's common range)."""
    if not values:
        return ""
    n = min(width, len(values))
    out = []
    for b in range(n):
        chunk = values[b * len(values) // n : (b + 1) * len(values) // n] or values[-1:]
        mean = sum(chunk) / len(chunk)
        level = 0 if hi == lo else round((mean - lo) / (hi - lo) * (len(SPARK_LEVELS) - 1))
        out.append(SPARK_LEVELS[max(0, min(len(SPARK_LEVELS) - 1, level))])
    return "".join(out)


def _table(*columns: str) -> Table:
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _row(table: Table, *cells: str) -> None:
    # Text, not str: run ids and messages are data, never rich markup.
    table.add_row(*(Text(c) for c in cells))


def _section(console: Console, title: str) -> None:
    console.print()
    console.print(f"[bold]{title}[/bold]")


def render(snapshot: Mapping[str, Any], console: Console) -> None:
    s = snapshot
    experiment = s.get("experiment") or {}
    console.print(f"Stellar dashboard: {s['target']} ({s['target_type']})", markup=False)
    console.print(f"store: {s['store_path']}", markup=False)
    console.print(
        f"experiment: {experiment.get('name') or 'not collected'} "
        f"({experiment.get('experiment_id') or '-'})",
        markup=False,
    )

    _section(console, "SUMMARY")
    summary = s["summary"]
    facts = _table("FIELD", "VALUE")
    for key in ("status", "current_answer", "best_evidence", "confidence", "seed_coverage"):
        _row(facts, key, str(summary[key]))
    way = s.get("direction") or {}
    if way.get("metric_name"):
        _row(
            facts,
            "direction",
            f"{way['direction']} ({way['goal']} is better) for {way['metric_name']}; "
            f"from {way['direction_source']}",
        )
    if s.get("excluded_failed_runs"):
        _row(
            facts,
            "failed_runs",
            f"left out of group statistics: {', '.join(s['excluded_failed_runs'])} "
            "(--include-failed counts them)",
        )
    _row(facts, "next_action", summary["next_action"])
    _row(facts, "next_command", summary["next_command"])
    console.print(facts)

    _section(console, "STATUS")
    status = s.get("status") or {}
    table = _table(
        "RUNS", "GROUPS", "CONFIGS", "METRIC_FILES", "ARTIFACTS", "OBSERVATIONS", "LATEST_EVENT"
    )
    _row(
        table,
        *(
            str(status.get(k, 0))
            for k in ("runs", "run_groups", "configs", "metric_files", "artifacts", "observations")
        ),
        str(status.get("latest_event_at") or "-"),
    )
    console.print(table)
    console.print(f"states:  {_counts(status.get('state_counts'))}", markup=False)
    console.print(f"lifecycle:  {_counts(_lifecycle(s['runs']))}", markup=False)

    _section(console, "METRICS")
    rows = [
        (card["card"], metric["metric_name"], group)
        for card in s["cards"]
        for metric in card["metrics"]
        for group in metric["groups"]
    ]
    if rows:
        table = _table("CARD", "METRIC", "GROUP", "RUNS", "LATEST_STEP", "BEST", "RANGE")
        for card, name, g in rows[:MAX_METRIC_ROWS]:
            _row(
                table,
                card,
                name,
                g["run_group_id"],
                str(g["run_count"]),
                str(g["latest_step"]),
                num(g["best"]),
                f"{num(g['min'])}..{num(g['max'])}",
            )
        console.print(table)
        if len(rows) > MAX_METRIC_ROWS:
            console.print(f"... {len(rows) - MAX_METRIC_ROWS} more metric group rows")
    else:
        console.print("(no scalar metrics)")

    _section(console, "CHART")
    chart = s["chart"]
    if chart.get("has_data"):
        console.print(
            f"CHART {chart['metric_name']} (step {num(chart['x_min'])}..{num(chart['x_max'])}, "
            f"value {num(chart['y_min'])}..{num(chart['y_max'])})",
            markup=False,
        )
        if chart.get("smoothing"):
            console.print("smoothing: ema alpha=0.12 (dense training scalar)")
        console.print(chart.get("sampling_note", ""), markup=False)
        table = _table("RUN", "GROUP", "POINTS", "TREND")
        for series in chart["series"][:MAX_CHART_ROWS]:
            values = [p["value"] for p in series["values"]]
            _row(
                table,
                series["run_id"],
                series["run_group_id"],
                f"{series['rendered_points']}/{series['point_count']}",
                sparkline(values, chart["y_min"], chart["y_max"]),
            )
        console.print(table)
        if len(chart["series"]) > MAX_CHART_ROWS:
            console.print(f"... {len(chart['series']) - MAX_CHART_ROWS} more series")
    else:
        console.print("(no chart data)")

    _section(console, "RUNS")
    if s["runs"]:
        table = _table("RUN", "LIFECYCLE", "STATE", "GROUP", "METRICS", "COMMAND")
        for run in s["runs"][:MAX_RUN_ROWS]:
            names = run["metric_names"]
            shown = ", ".join(names[:4]) + (f" +{len(names) - 4}" if len(names) > 4 else "")
            _row(
                table,
                run["run_id"],
                run["lifecycle_state"],
                run["state"],
                run["run_group_id"],
                shown,
                run["observe_cli"],
            )
        console.print(table)
        if len(s["runs"]) > MAX_RUN_ROWS:
            console.print(f"... {len(s['runs']) - MAX_RUN_ROWS} more runs")
    else:
        console.print("(no runs)")

    _section(console, "ACTIONS")
    a = s["actions"]
    table = _table("ACTION", "COMMAND")
    for key, value in (
        ("open_dashboard", a["open_cli"]),
        ("save_html", a["copy_cli"]),
        ("next", a["next_command"]),
        ("query", a["copy_sql"]),
        ("export", a["export_packet"]),
    ):
        _row(table, key, value)
    console.print(table)

    if s["warnings"]:
        _section(console, "WARNINGS")
        for w in s["warnings"]:
            console.print(f"- {w}", markup=False)


def _counts(counts: Mapping[str, int] | None) -> str:
    if not counts:
        return "(none)"
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def _lifecycle(runs: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in runs:
        out[r["lifecycle_state"]] = out.get(r["lifecycle_state"], 0) + 1
    return out
