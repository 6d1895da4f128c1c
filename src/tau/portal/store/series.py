"""Column reads of one metric for many runs, for charts (Stellar, plot, the series API).

Performs I/O (Parquet). `read.metric_series` returns one run's rows as records, which is right
for exports but costs an object per point; a chart of 100 runs × 10,000 steps needs only two
columns, so this reads the metric files once, filtered by metric, and keeps steps and values
as plain lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tau.portal.store import read
from tau.portal.store.interface import Store
from tau.portal.store.records import MetricFile

#: Metric files read at once from an object store.
REMOTE_READERS = 16
#: (steps, values, wall times in microseconds since the epoch; 0 where none was recorded).
Columns = tuple[list[int], list[float], list[int]]


def metric_columns(store: Store, run_ids: Sequence[str], metric_name: str) -> dict[str, Columns]:
    """(steps, values, wall_times) of `metric_name` per run, ordered by step; runs without it
    are absent.

    Rows without a step are placed by their order in the file (their row index), as the
    reference's charts do; rows without a wall time get 0 (charts show "no time"). A missing or
    unreadable file is skipped (its runs come back short).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    wanted = set(run_ids)
    files = [f for f in read.metric_files(store, list(run_ids)) if f.run_id in wanted]
    out: dict[str, Columns] = {}

    remote = store.filesystem is not None

    def load(f: MetricFile) -> Any:
        try:
            return pq.read_table(
                # An object store's file is fetched whole, once (see `Store.file_bytes`).
                pa.BufferReader(store.file_bytes(f.path)) if remote else store.path_of(f.path),
                columns=["run_id", "step", "value", "wall_time"],
                filters=[("metric_name", "=", metric_name)],
            )
        except (OSError, ValueError, pa.ArrowException):
            # A missing or damaged file degrades its run only: Stellar says "metrics unreadable
            # for <run>" for runs whose summaries promise points that did not come back.
            return None

    for table in _each(load, files, remote=remote):
        if table is None or table.num_rows == 0:
            continue
        for run_id in pc.unique(table.column("run_id")).to_pylist():
            if run_id not in wanted:
                continue
            part = table.filter(pc.equal(table.column("run_id"), run_id))
            step_column = part.column("step")
            steps = step_column.to_pylist()
            xs, ys, ts = out.setdefault(run_id, ([], [], []))
            if step_column.null_count:
                base = len(xs)
                steps = [s if s is not None else base + i for i, s in enumerate(steps)]
            xs.extend(steps)
            ys.extend(part.column("value").to_pylist())  # float64 column: Python floats
            ts.extend(pc.fill_null(part.column("wall_time"), 0).to_pylist())
    for run_id, (xs, ys, ts) in out.items():
        if xs != sorted(xs):
            rows = sorted(zip(xs, ys, ts, strict=True), key=lambda p: p[0])
            out[run_id] = ([p[0] for p in rows], [p[1] for p in rows], [p[2] for p in rows])
    return out


def _each(load: Callable[[MetricFile], Any], files: list[MetricFile], *, remote: bool) -> Any:
    """`load` of each file in order: one by one from a local disk; from an object store, a few
    at a time (each file costs round trips there, and pyarrow reads without the GIL).
    """
    if not remote or len(files) < 2:
        return map(load, files)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=REMOTE_READERS) as pool:
        return list(pool.map(load, files))


def metric_tags(
    store: Store, run_ids: Sequence[str], names: Sequence[str]
) -> tuple[dict[str, str], dict[str, str]]:
    """(cards, directions): each metric's `tau.metric.card` and `tau.metric.direction` tags as
    recorded in the runs' metric files, in one read.

    Files are read in the order of `run_ids` (newest runs first); untagged metrics are absent.
    """
    from tau.portal.store.cards import CARD_TAG
    from tau.portal.store.direction import recorded
    from tau.portal.store.metrics import first_row_tags

    order = {rid: i for i, rid in enumerate(run_ids)}
    files = sorted(
        (f for f in read.metric_files(store, list(run_ids)) if f.run_id in order),
        key=lambda f: order[str(f.run_id)],
    )
    tags = first_row_tags(
        (store.path_of(f.path) for f in files), names, filesystem=store.filesystem
    )
    cards = {
        n: t[CARD_TAG] for n, t in tags.items() if isinstance(t.get(CARD_TAG), str) and t[CARD_TAG]
    }
    directions = {n: d for n, t in tags.items() if (d := recorded(t))}
    return cards, directions


def metric_cards(store: Store, run_ids: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """Each metric's `tau.metric.card` tag as recorded in the runs' metric files."""
    return metric_tags(store, run_ids, names)[0]
