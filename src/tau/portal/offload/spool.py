"""The spool: the metric rows the collector has read, in order, one JSON object per line.

Performs I/O (`<out>/TauExpMetrics.jsonl`, appended). A line is a metric row of the store
(contract §3.4 columns: project, run_group_id, run_id, metric_name, step, wall_time, value,
unit, source, split, tags), so a delivery is a slice of the spool and what is not delivered
yet can be delivered later from the spool alone (`offload metrics` without `--watch`). Once
all of it is delivered and it is large, the collector starts it afresh (`collector.ROTATE`).
NaN and ±Infinity are written as Python's json writes them (`NaN`, `Infinity`) and read back
as such.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

NAME = "TauExpMetrics.jsonl"
#: One encoder for every row (json.dumps with options builds one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"))


class Spool:
    def __init__(self, out: Path) -> None:
        self.path = out / NAME

    def size(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def cut(self, size: int) -> None:
        """Drop what lies past `size` (appended by a process killed before it checkpointed)."""
        if self.size() > size:
            os.truncate(self.path, size)

    def append(self, rows: Iterable[Mapping[str, Any]]) -> int:
        """Append rows (fsynced); the spool's new size."""
        encode = _ENCODER.encode
        with open(self.path, "a", encoding="utf-8") as fh:
            lines: list[str] = []
            for row in rows:
                lines.append(encode(row))
                if len(lines) == 4096:
                    fh.write("\n".join(lines) + "\n")
                    lines = []
            if lines:
                fh.write("\n".join(lines) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        return self.size()

    def read(self, start: int, end: int) -> list[dict[str, Any]]:
        """The rows of spool bytes [start, end) (both at line boundaries)."""
        return [json.loads(line) for line in self._bytes(start, end).splitlines() if line.strip()]

    def table(self, start: int, end: int) -> pa.Table:
        """The rows of spool bytes [start, end) as a metric table (contract §3.4 columns).

        pyarrow's JSON reader parses them in C (a tenth of the time of a line at a time); it
        knows no `NaN` or `Infinity` token, so a range holding one is read line by line.
        """
        import pyarrow as pa
        import pyarrow.json as pj

        from tau.portal.store.metrics import arrow_schema, rows_table

        data = self._bytes(start, end)
        if not data.strip():
            return arrow_schema().empty_table()
        if b"NaN" not in data and b"Infinity" not in data:
            options = pj.ParseOptions(explicit_schema=arrow_schema())
            try:
                table = pj.read_json(pa.BufferReader(data), parse_options=options)
                return table.select(arrow_schema().names).cast(arrow_schema())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                pass  # a row pyarrow reads otherwise than Python: the reference parse decides
        rows = [json.loads(line) for line in data.splitlines() if line.strip()]
        return rows_table(rows)

    def _bytes(self, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with open(self.path, "rb") as fh:
            fh.seek(start)
            return fh.read(end - start)

    def count(self, start: int, end: int) -> int:
        """Rows in spool bytes [start, end)."""
        if end <= start:
            return 0
        total = 0
        with open(self.path, "rb") as fh:
            fh.seek(start)
            left = end - start
            while left > 0:
                block = fh.read(min(left, 1 << 20))
                if not block:
                    break
                total += block.count(b"\n")
                left -= len(block)
        return total

    def boundary(self, start: int, end: int, limit: int) -> int:
        """The end of the last whole line within `limit` bytes of `start` (at most `end`); a
        first line longer than `limit` is taken whole.
        """
        if end - start <= limit:
            return end
        with open(self.path, "rb") as fh:
            fh.seek(start)
            block = fh.read(limit)
            cut = block.rfind(b"\n") + 1
            if cut:
                return start + cut
            fh.seek(start)
            while True:
                line = fh.readline()
                if not line or line.endswith(b"\n"):
                    return min(end, fh.tell())
