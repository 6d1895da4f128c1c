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
from typing import Any

from tau.portal.store import read
from tau.portal.store.interface import Store

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


def attempt_starts(store: Store, run_ids: Sequence[str]) -> dict[str, list[Start]]:
    """Per run that has `tau.attempt` tags: each attempt's first step, ordered by attempt.

    Runs without the tag are absent; unreadable files are skipped (the chart then marks what
    the readable ones tell).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = set(run_ids)
    first: dict[tuple[str, int], tuple[int, int]] = {}

    def take(run: str, attempt: int | None, step: Any, wall: Any) -> None:
        if attempt is None or step is None or run not in wanted:
            return
        key = (run, attempt)
        seen = first.get(key)
        here = (int(step), int(wall or 0))
        if seen is None or here < seen:
            first[key] = here

    for f in read.metric_files(store, list(run_ids)):
        if f.run_id not in wanted:
            continue
        try:
            pf = pq.ParquetFile(store.path_of(f.path), filesystem=store.filesystem)
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
            continue
    out: dict[str, list[Start]] = {}
    for (run, attempt), (step, wall) in sorted(first.items()):
        out.setdefault(run, []).append((attempt, step, wall))
    return out
