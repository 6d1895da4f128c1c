"""Where each attempt of a retried run starts: the first step (and time) of its rows per
`tau.attempt` tag, which the metrics collector puts on every row it delivers.

Performs I/O (Parquet footers; row data only where a footer cannot tell). A delivery is one
metric file per (run, session, attempt, sequence), so every row group of it holds one tags value:
its column statistics (min == max) name the attempt and the step statistics its first step,
without decoding a row. A row group with mixed tags (a hand-built file, the marker's own) is
read, two columns of it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from typing import Any

from tau.portal.store import read
from tau.portal.store.interface import Store
from tau.portal.store.recent import Recent
from tau.portal.store.records import MetricFile
from tau.portal.store.series import _file_key, _source

ATTEMPT_TAG = "tau.attempt"
#: (attempt, first step, first wall time in microseconds or 0).
Start = tuple[int, int, int]


def _attempt(tags_json: Any) -> int | None:
    """The `tau.attempt` tag of a row's tags JSON, None when it has none (or not a number)."""
    if not isinstance(tags_json, str) or ATTEMPT_TAG not in tags_json:
        return None
    try:
        value = json.loads(tags_json).get(ATTEMPT_TAG)
    except (ValueError, AttributeError):
        return None
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else None


#: One metric file's (run, attempt, first step, first wall time) per attempt it holds.
FileStarts = tuple[tuple[str, int, int, int], ...]
#: Per metric file (its key and digest): what it says of attempts. A live page rebuilds on every
#: delivery; only the new files are read again.
_READ: Recent[FileStarts] = Recent(8 << 20, lambda v: 64 + 64 * len(v))


def attempt_starts(store: Store, run_ids: Sequence[str]) -> dict[str, list[Start]]:
    """Per run that has `tau.attempt` tags: each attempt's first step, ordered by attempt.

    Runs without the tag are absent; unreadable files are skipped (the chart then marks what
    the readable ones tell).
    """
    wanted = set(run_ids)
    first: dict[tuple[str, int], tuple[int, int]] = {}
    for f in read.metric_files(store, list(run_ids)):
        if f.run_id not in wanted:
            continue
        key = _file_key(store, f)
        if key is None:
            continue
        for run, attempt, step, wall in _READ.get((key, f.digest), partial(_file, store, f)):
            seen = first.get((run, attempt))
            if run in wanted and (seen is None or (step, wall) < seen):
                first[(run, attempt)] = (step, wall)
    out: dict[str, list[Start]] = {}
    for (run, attempt), (step, wall) in sorted(first.items()):
        out.setdefault(run, []).append((attempt, step, wall))
    return out


def _file(store: Store, f: MetricFile) -> FileStarts:
    """What one metric file says of attempts: from its footer when each row group holds one
    tags value, else from two columns of the mixed row groups; () when unreadable.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    first: dict[tuple[str, int], tuple[int, int]] = {}

    def take(run: str, attempt: int | None, step: Any, wall: Any) -> None:
        if attempt is None or step is None:
            return
        here = (int(step), int(wall or 0))
        seen = first.get((run, attempt))
        if seen is None or here < seen:
            first[(run, attempt)] = here

    try:
        pf = pq.ParquetFile(_source(store, f))
        names = pf.schema_arrow.names
        cols = {c: names.index(c) for c in ("tags", "step", "wall_time")}
        for i in range(pf.metadata.num_row_groups):
            group = pf.metadata.row_group(i)
            stats = {c: group.column(j).statistics for c, j in cols.items()}
            tags, steps = stats["tags"], stats["step"]
            if (
                tags is not None
                and tags.has_min_max
                and tags.min == tags.max
                and steps is not None
                and steps.has_min_max
            ):
                wall = stats["wall_time"]
                low = wall.min if wall is not None and wall.has_min_max else 0
                take(str(f.run_id), _attempt(tags.min), steps.min, low)
                continue
            table = pf.read_row_group(i, columns=["run_id", "step", "wall_time", "tags"])
            for row in table.to_pylist():
                take(str(row["run_id"]), _attempt(row["tags"]), row["step"], row["wall_time"])
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return ()
    return tuple((run, attempt, step, wall) for (run, attempt), (step, wall) in first.items())
