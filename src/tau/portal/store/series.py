"""Column reads of one metric for many runs, for charts (Stellar, plot, the series API).

Performs I/O (Parquet). `read.metric_series` returns one run's rows as records, which is right
for exports but costs an object per point; a chart of 100 runs × 10,000 steps needs only two
columns, so this reads the metric files filtered by metric and keeps steps and values as plain
lists. A process decodes each file once: the chart columns of every metric it read are kept
(bounded), so a served page and the charts it fetches next never decode a file twice.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from tau.portal.store import read
from tau.portal.store.interface import Store
from tau.portal.store.recent import Recent
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
    import pyarrow.compute as pc

    wanted = set(run_ids)
    files = [f for f in read.metric_files(store, list(run_ids)) if f.run_id in wanted]
    out: dict[str, Columns] = {}
    # Files decoded before (by the page, for the charts it fetches next) are not read again.
    keyed = [(f, key) for f in files if (key := _file_key(store, f)) is not None]
    tables = [_DECODED.peek((key, metric_name)) for _, key in keyed]
    missing = [i for i, t in enumerate(tables) if t is None]

    def load(i: int) -> Any:
        return _metric_rows(store, *keyed[i], metric_name)

    for i, table in zip(
        missing, _each(load, missing, remote=store.filesystem is not None), strict=True
    ):
        tables[i] = table
    for table in tables:
        if table is None or table.num_rows == 0:
            continue
        runs = pc.unique(table.column("run_id")).to_pylist()
        for run_id in runs:
            if run_id not in wanted:
                continue
            # A file holds one run's rows (but for a hand-built packet's).
            part = table if len(runs) == 1 else table.filter(pc.equal(table["run_id"], run_id))
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


#: The columns a chart reads (`metric_name` only to split what was read by metric).
_COLUMNS = ["metric_name", "run_id", "step", "value", "wall_time"]
#: One metric's rows of one file (`_COLUMNS` less the metric name), by file and metric name.
_DECODED: Recent[Any] = Recent(256 << 20, lambda t: max(64, int(t.nbytes)))


def _metric_rows(store: Store, f: MetricFile, key: FileKey, metric_name: str) -> Any:
    """The rows of `metric_name` in the metric file `f` (an empty table when it holds none);
    None when the file is missing or unreadable (its runs then come back short, and Stellar
    says "metrics unreadable for <run>" of runs whose summaries promise points).

    Each file is decoded once per process: the row groups that may hold the metric (by their
    `metric_name` statistics) are read whole, and every metric they hold entirely is kept
    (`_DECODED`), so the page's chart and the charts it fetches next share one read.
    """
    import pyarrow as pa

    try:
        return _decode(key, _source(store, f), metric_name)
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None


#: Where a metric file is, and a local file's (mtime, size): a rewritten file is read afresh.
FileKey = tuple[str, tuple[int, int] | None]


def _source(store: Store, f: MetricFile) -> Any:
    """What pyarrow reads the metric file `f` from: its local path, or an object store's copy
    of it fetched whole, once (see `Store.file_bytes`); a file that cannot be fetched is a
    source pyarrow cannot read either.
    """
    import pyarrow as pa

    if store.filesystem is None:
        return store.path_of(f.path)
    try:
        return pa.BufferReader(store.file_bytes(f.path))
    except OSError:
        return pa.BufferReader(b"")


def _file_key(store: Store, f: MetricFile) -> FileKey | None:
    """The file's `FileKey`; None when a local file is missing."""
    path = store.path_of(f.path)
    if store.filesystem is not None:
        return path, None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return path, (st.st_mtime_ns, st.st_size)


def _decode(key: FileKey, source: Any, metric_name: str) -> Any:
    """Read the row groups of `source` that may hold `metric_name`; keep each metric they hold
    entirely (no row group left unread has it); the rows of `metric_name`.
    """
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(source, read_dictionary=["metric_name", "run_id"])
    index = pf.schema_arrow.get_field_index("metric_name")
    ranges: list[tuple[str, str] | None] = []
    for i in range(pf.metadata.num_row_groups):
        stats = pf.metadata.row_group(i).column(index).statistics
        ranges.append((stats.min, stats.max) if stats is not None and stats.has_min_max else None)

    def may_hold(i: int, name: str) -> bool:
        r = ranges[i]
        return r is None or r[0] <= name <= r[1]

    groups = [i for i in range(len(ranges)) if may_hold(i, metric_name)]
    table = pf.read_row_groups(groups, columns=_COLUMNS, use_threads=False)
    wanted = None
    for name, rows in _by_metric(table):
        if name == metric_name:
            wanted = rows
        if all(i in groups for i in range(len(ranges)) if may_hold(i, name)):
            _DECODED.put((key, name), rows)
    if wanted is None:
        wanted = table.schema.empty_table().drop_columns(["metric_name"])
        _DECODED.put((key, metric_name), wanted)
    return wanted


def _by_metric(table: Any) -> list[tuple[str, Any]]:
    """The rows of each metric in `table` (without the metric name column). Files are written
    sorted by metric, so each metric's rows are one slice of the table (no copy); a metric
    whose rows are spread out is gathered by a filter.
    """
    import pyarrow.compute as pc

    names = table.column("metric_name")
    rest = table.drop_columns(["metric_name"])
    if names.num_chunks == 1:
        chunk = names.chunk(0)
        runs = pc.run_end_encode(chunk.indices)
        codes = runs.values.to_pylist()
        if None not in codes and len(set(codes)) == len(codes):
            labels = chunk.dictionary.to_pylist()
            out, start = [], 0
            for end, code in zip(runs.run_ends.to_pylist(), codes, strict=True):
                out.append((str(labels[code]), rest.slice(start, end - start)))
                start = end
            return out
    return [
        (name, rest.filter(pc.equal(names, name)))
        for name in pc.unique(names).to_pylist()
        if name is not None
    ]


def prefetch(store: Store, run_ids: Sequence[str]) -> None:
    """Start fetching the runs' metric files from an object store in the background (a local
    store: nothing): the charts that read them next find them fetched or on the way, so the
    fetching overlaps the index reads before them.
    """
    if store.filesystem is None or not run_ids:
        return
    for f in read.metric_files(store, list(run_ids)):
        _fetcher().submit(_fetch, store, f.path)


@functools.cache
def _fetcher() -> Any:
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=REMOTE_READERS, thread_name_prefix="metric-files")


def _fetch(store: Store, rel: str) -> None:
    with contextlib.suppress(OSError):  # its reader meets the same error, and says so
        store.file_bytes(rel)


def _each(load: Callable[[int], Any], files: list[int], *, remote: bool) -> Any:
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
    tags = first_row_tags((_source(store, f) for f in files), names)
    cards = {
        n: t[CARD_TAG] for n, t in tags.items() if isinstance(t.get(CARD_TAG), str) and t[CARD_TAG]
    }
    directions = {n: d for n, t in tags.items() if (d := recorded(t))}
    return cards, directions


def metric_cards(store: Store, run_ids: Sequence[str], names: Sequence[str]) -> dict[str, str]:
    """Each metric's `tau.metric.card` tag as recorded in the runs' metric files."""
    return metric_tags(store, run_ids, names)[0]
