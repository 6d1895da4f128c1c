"""Scalar metric files: Parquet with the `MetricRow` columns (pyarrow), and their summaries.

Performs I/O (Parquet files). pyarrow is imported here only, and only when a metric file is
written or read, so listing and searching never load it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.portal.store import schema
from tau.portal.store.records import MetricPoint

if TYPE_CHECKING:
    import pyarrow as pa


def arrow_schema() -> pa.Schema:
    """The Parquet schema of a metric file (portal-contract.md §3.4)."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("project", pa.string(), nullable=False),
            pa.field("run_group_id", pa.string(), nullable=False),
            pa.field("run_id", pa.string(), nullable=False),
            pa.field("metric_name", pa.string(), nullable=False),
            pa.field("step", pa.int64()),
            pa.field("wall_time", pa.int64()),  # microseconds since the epoch
            pa.field("value", pa.float64(), nullable=False),
            pa.field("unit", pa.string()),
            pa.field("source", pa.string(), nullable=False),
            pa.field("split", pa.string()),
            pa.field("tags", pa.string(), nullable=False),
        ]
    )


def write_parquet(table: pa.Table, path: Path) -> str:
    """Write `table` (sorted by metric and step) to `path`; returns the file's SHA-256."""
    import pyarrow.parquet as pq

    table = table.sort_by([("metric_name", "ascending"), ("step", "ascending")])
    pq.write_table(
        table.cast(arrow_schema()),
        path,
        compression="zstd",
        use_dictionary=[
            "project",
            "run_group_id",
            "run_id",
            "metric_name",
            "source",
            "unit",
            "split",
        ],
    )
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def rows_table(rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """A metric table from a few row dicts (the `track` path)."""
    import pyarrow as pa

    columns = {name: [r.get(name) for r in rows] for name in schema.METRIC_COLUMNS}
    return pa.Table.from_pydict(columns, schema=arrow_schema())


@dataclass
class Summary:
    """The per (run, metric) summary the index keeps so search never reads metric files."""

    count: int
    finite_count: int
    non_finite_count: int
    min_step: int | None
    max_step: int | None
    latest_step: int | None
    latest_wall_time: int | None  # microseconds
    latest_value: float | None
    min_value: float | None
    max_value: float | None

    def merge(self, other: Summary) -> Summary:
        newer = self if _order(self) >= _order(other) else other
        return Summary(
            count=self.count + other.count,
            finite_count=self.finite_count + other.finite_count,
            non_finite_count=self.non_finite_count + other.non_finite_count,
            min_step=_pick(min, self.min_step, other.min_step),
            max_step=_pick(max, self.max_step, other.max_step),
            latest_step=newer.latest_step,
            latest_wall_time=newer.latest_wall_time,
            latest_value=newer.latest_value,
            min_value=_pick(min, self.min_value, other.min_value),
            max_value=_pick(max, self.max_value, other.max_value),
        )


def _order(s: Summary) -> tuple[int, int]:
    return (s.latest_step if s.latest_step is not None else -1, s.latest_wall_time or 0)


def _pick(fn: Any, a: Any, b: Any) -> Any:
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def summarize(table: pa.Table) -> dict[str, Summary]:
    """Summaries per metric name of one metric table (latest = the highest step, then time)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if table.num_rows == 0:
        return {}
    finite = pc.is_finite(table["value"])
    work = pa.table(
        {
            "metric_name": table["metric_name"],
            "step": pc.fill_null(table["step"], -1),
            "wall_time": pc.fill_null(table["wall_time"], 0),
            "value": table["value"],
            "finite": pc.cast(finite, pa.int64()),
            "finite_value": pc.if_else(finite, table["value"], None),
            "raw_step": table["step"],
        }
    ).sort_by([("metric_name", "ascending"), ("step", "ascending"), ("wall_time", "ascending")])
    grouped = work.group_by("metric_name", use_threads=False).aggregate(
        [
            ("value", "count"),
            ("finite", "sum"),
            ("raw_step", "min"),
            ("raw_step", "max"),
            ("raw_step", "last"),
            ("wall_time", "last"),
            ("value", "last"),
            ("finite_value", "min"),
            ("finite_value", "max"),
        ]
    )
    out: dict[str, Summary] = {}
    for row in grouped.to_pylist():
        count = int(row["value_count"])
        finite_count = int(row["finite_sum"] or 0)
        out[row["metric_name"]] = Summary(
            count=count,
            finite_count=finite_count,
            non_finite_count=count - finite_count,
            min_step=row["raw_step_min"],
            max_step=row["raw_step_max"],
            latest_step=row["raw_step_last"],
            latest_wall_time=row["wall_time_last"] or None,
            latest_value=row["value_last"],
            min_value=row["finite_value_min"],
            max_value=row["finite_value_max"],
        )
    return out


def micros_to_rfc3339(micros: int | None) -> str | None:
    if micros is None:
        return None
    stamp = datetime.fromtimestamp(micros / 1_000_000, UTC)
    text = stamp.strftime("%Y-%m-%dT%H:%M:%S.%f").rstrip("0").rstrip(".")
    return text + "Z"


def rfc3339_to_micros(text: str | None) -> int | None:
    if not text:
        return None
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return round(stamp.timestamp() * 1_000_000)


def read_points(
    paths: Iterable[Path | str],
    *,
    run_id: str | None = None,
    metric_name: str | None = None,
    start_step: int | None = None,
    end_step: int | None = None,
    filesystem: Any = None,
) -> list[MetricPoint]:
    """The rows of the given metric files, filtered, ordered by metric, run and step.

    `filesystem` is the store's (None for local files; see `interface.Store.filesystem`).
    """
    import pyarrow.parquet as pq

    filters: list[tuple[str, str, Any]] = []
    if run_id is not None:
        filters.append(("run_id", "=", run_id))
    if metric_name is not None:
        filters.append(("metric_name", "=", metric_name))
    if start_step is not None:
        filters.append(("step", ">=", start_step))
    if end_step is not None:
        filters.append(("step", "<=", end_step))
    points: list[MetricPoint] = []
    for path in paths:
        # One file: its folders (run=R/...) look like Hive partitions to pyarrow before 23,
        # whose inferred columns would clash with the file's own.
        table = pq.read_table(
            path, filters=filters or None, filesystem=filesystem, partitioning=None
        )
        for row in table.to_pylist():
            points.append(MetricPoint(**{c: row.get(c) for c in schema.METRIC_COLUMNS}))
    points.sort(
        key=lambda p: (p.metric_name, p.run_id, -1 if p.step is None else p.step, p.wall_time or 0)
    )
    return points


def tag_cards(paths: Iterable[Path], names: Iterable[str]) -> dict[str, str]:
    """The `tau.metric.card` tag of each of `names`, from the first row of it that is read.

    See `first_row_tags`; metrics whose first row has no card tag are absent (the caller falls
    back to the name rules).
    """
    from tau.portal.store.cards import CARD_TAG

    found = {}
    for name, tags in first_row_tags(paths, names).items():
        card = tags.get(CARD_TAG)
        if isinstance(card, str) and card:
            found[name] = card
    return found


def first_row_tags(
    paths: Iterable[Path | str], names: Iterable[str], *, filesystem: Any = None
) -> dict[str, dict[str, Any]]:
    """The tags of the first row of each of `names` (the card and direction tags live there).

    Files are read in the given order and only as far as needed: a row group whose
    metric_name statistics say it holds one metric (the importer writes those) gives that
    metric's tags from its first row; a mixed row group (a `track` file) is read in batches
    until every name has been seen. Reading stops once every name has been seen, so a metric
    whose first row has no tag keeps the name rules even if a later file tags it.
    Unreadable files are skipped; the caller falls back to the name rules.
    """
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    wanted = set(names)
    found: dict[str, dict[str, Any]] = {}
    done: set[str] = set()  # names whose first row was read (tagged or not)

    def take(name: str, tags_json: str | None) -> None:
        if name in done or name not in wanted:
            return
        done.add(name)
        try:
            tags = json.loads(tags_json or "{}")
        except ValueError:
            return
        if isinstance(tags, dict) and tags:
            found[name] = tags

    for path in paths:
        if not wanted - done:
            break
        try:
            pf = pq.ParquetFile(path, filesystem=filesystem)
            index = pf.schema_arrow.get_field_index("metric_name")
            for i in range(pf.metadata.num_row_groups):
                stats = pf.metadata.row_group(i).column(index).statistics
                single = stats is not None and stats.has_min_max and stats.min == stats.max
                if single and (stats.min in done or stats.min not in wanted):
                    continue
                batches = pf.iter_batches(
                    batch_size=1 if single else 65_536,
                    row_groups=[i],
                    columns=["metric_name", "tags"],
                )
                for batch in batches:
                    for row in batch.to_pylist():
                        take(str(row["metric_name"]), row["tags"])
                    if single or not wanted - done:
                        break
        except (OSError, ValueError, pa.ArrowException):
            continue
    return found


def finite(value: float) -> bool:
    return math.isfinite(value)
