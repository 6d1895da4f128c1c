"""`experiment offload metrics`: the metrics collector (see `tau.portal.offload`).

Performs I/O (terminal, files, the store). Imported only when the command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from cyclopts import Parameter

from tau.portal import jsonsafe
from tau.portal.cli.output import cell, choose, json_text, table_text

Store = Annotated[str | None, Parameter(name="--store", help="experiment store root or URL")]
Output = Annotated[str, Parameter(name=["--output", "-o"])]
Many = Annotated[list[str] | None, Parameter(negative="")]
Flag = Annotated[bool, Parameter(negative="")]

COLUMNS = [
    "pass",
    "rows_read",
    "system_rows",
    "delivered_rows",
    "deliveries",
    "pending_rows",
    "store",
    "marker",
]


def metrics(
    *,
    store: Store = None,
    out: str | None = None,
    history: Many = None,
    run: str | None = None,
    project: str | None = None,
    experiment: str | None = None,
    group: str | None = None,
    source: str | None = None,
    tag: Many = None,
    completion_file: str | None = None,
    baseline_existing_history: Flag = False,
    ready_file: str | None = None,
    done_file: str | None = None,
    status_artifact_uri: str | None = None,
    status_checkpoint_uri: str | None = None,
    watch: Flag = False,
    interval: str | None = None,
    max_iterations: int = 0,
    remote_write_endpoint: str | None = None,
    remote_write_batch_size: int | None = None,
    remote_write_max_attempts: int | None = None,
    remote_write_retry_backoff: str | None = None,
    output: Output = "table",
) -> int:
    """Tail metrics.history files, spool them under --out and deliver them into the store.

    Without --watch: one pass (an offline or recovery import of what is there). With --watch
    (the run's sidecar): a pass every --interval until the completion file appears or SIGTERM;
    then the last rows, the terminal tau/run_status marker and the done file.

    Args:
        out: Folder of the spool (TauExpMetrics.jsonl) and checkpoint; it must outlive restarts.
        history: JSONL history file or glob of chunk files (repeatable; env TAU_METRICS_HISTORY).
        run: Run id (default: tau.yaml run.name, else its top-level name).
        project: Project (default: tau.yaml experiment.project, the store's, else default).
        experiment: Experiment id (default: tau.yaml experiment.name).
        group: Run group (default: tau.yaml experiment.group, else default).
        source: Metric source (default stellar-online).
        tag: key=value run tag (repeatable).
        completion_file: The workload wrapper's completion sentinel.
        baseline_existing_history: On a first start, skip what the histories already hold.
        ready_file: Written once the collector runs.
        done_file: Written after the terminal marker.
        status_artifact_uri: The marker's tau.status.artifact_uri.
        status_checkpoint_uri: The marker's tau.status.checkpoint_uri.
        watch: Keep collecting every --interval (flags fall back to TAU_METRICS_OFFLOAD_*).
        interval: With --watch: the time between passes, a Go duration (default 1m).
        max_iterations: With --watch: stop after this many passes (0: no limit).
        remote_write_endpoint: Not built yet (refused).
        remote_write_batch_size: Not built yet (refused).
        remote_write_max_attempts: Not built yet (refused).
        remote_write_retry_backoff: Not built yet (refused).
        output: table or json (with --watch: a line per pass that changed something).
    """
    from tau.portal.offload.collector import Collector, PassReport
    from tau.portal.offload.options import Flags, resolve

    fmt = choose(output, ("table", "json"))
    settings = resolve(
        Flags(
            store=store,
            out=out,
            history=history,
            run=run,
            project=project,
            experiment=experiment,
            group=group,
            source=source,
            tag=tag,
            completion_file=completion_file,
            baseline_existing_history=baseline_existing_history,
            ready_file=ready_file,
            done_file=done_file,
            status_artifact_uri=status_artifact_uri,
            status_checkpoint_uri=status_checkpoint_uri,
            watch=watch,
            interval=interval,
            max_iterations=max_iterations,
            remote_write_endpoint=remote_write_endpoint,
            remote_write_batch_size=remote_write_batch_size,
            remote_write_max_attempts=remote_write_max_attempts,
            remote_write_retry_backoff=remote_write_retry_backoff,
        ),
        os.environ,
        Path.cwd(),
    )
    printed: list[PassReport] = []
    header: list[bool] = []

    def report(done: PassReport) -> None:
        if not watch:
            printed.append(done)
            return
        if done.number != 1 and not done.changed:
            return
        row = _row(done)
        if fmt == "json":
            sys.stdout.write(jsonsafe.dumps(row, separators=(",", ":")) + "\n")
        else:
            if not header:
                header.append(True)
                sys.stdout.write(_line([c.upper() for c in COLUMNS]))
            sys.stdout.write(_line([cell(row[c]) for c in COLUMNS]))
        sys.stdout.flush()

    try:
        code = Collector(settings, sys.stderr, report).run()
    finally:
        if not watch and printed:
            _summary(printed, fmt)
    return code


def _line(cells: list[str]) -> str:
    """One table line; each column as wide as its header (a watch prints lines as it goes)."""
    return (
        "  ".join(v.ljust(max(len(c), 6)) for v, c in zip(cells, COLUMNS, strict=True)).rstrip()
        + "\n"
    )


def _row(done: object) -> dict[str, object]:
    row = dict(vars(done))
    row["pass"] = row.pop("number")
    return {c: row[c] for c in COLUMNS}


def _summary(reports: Sequence[object], fmt: str) -> None:
    """One row for the whole command without --watch (the pass, and the finish when there)."""
    rows = [_row(r) for r in reports]
    total = dict(rows[-1])
    for key in ("rows_read", "system_rows", "delivered_rows", "deliveries"):
        total[key] = sum(int(r[key]) for r in rows)  # type: ignore[call-overload]
    total["marker"] = next((r["marker"] for r in reversed(rows) if r["marker"]), "")
    if fmt == "json":
        sys.stdout.write(json_text(total))
    else:
        sys.stdout.write(table_text(COLUMNS, [[total[c] for c in COLUMNS]]))
