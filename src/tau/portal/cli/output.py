"""Output formats shared by the `taugrid-portal` commands: table, json, jsonl, csv.

Performs I/O (stdout). Tables have upper-cased headers padded by two spaces and print
`(none)` when there are no rows; JSON is indented by two spaces.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tau.portal import jsonsafe
from tau.portal.errors import UsageError


def choose(output: str, allowed: Sequence[str], *, json_flag: bool = False) -> str:
    """The output format: `--json` forces json; anything outside `allowed` is a usage error."""
    if json_flag:
        return "json"
    if output not in allowed:
        raise UsageError(f"--output must be one of: {', '.join(allowed)} (got {output!r})")
    return output


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ",".join(cell(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={cell(v)}" for k, v in sorted(value.items()))
    return str(value)


def table_text(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A tabwriter-style table (padding 2) with upper-cased headers, or `(none)`."""
    body = [[cell(v) for v in row] for row in rows]
    if not body:
        return "(none)\n"
    grid = [[c.upper() for c in columns], *body]
    widths = [max(len(r[i]) for r in grid) for i in range(len(columns))]
    lines = []
    for r in grid:
        parts = [v.ljust(widths[i]) for i, v in enumerate(r[:-1])] + [r[-1]]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines) + "\n"


def pairs_text(rows: Sequence[tuple[str, Any]]) -> str:
    """`key: value` rows aligned on the colon (the single-record table form)."""
    width = max(len(k) for k, _ in rows) + 1
    return "".join(f"{(k + ':').ljust(width)}  {cell(v)}\n" for k, v in rows)


def json_text(data: Any) -> str:
    return jsonsafe.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n"


def emit_rows(
    fmt: str,
    columns: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    *,
    whole: Any = None,
) -> None:
    """Print `rows` in `fmt`; `json` prints `whole` (the full result object) when given."""
    out = sys.stdout
    if fmt == "json":
        out.write(json_text(whole if whole is not None else list(rows)))
    elif fmt == "jsonl":
        for row in rows:
            out.write(jsonsafe.dumps({c: row.get(c) for c in columns}, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([cell(row.get(c)) for c in columns])
        out.write(buf.getvalue())
    else:
        out.write(table_text(columns, [[row.get(c) for c in columns] for row in rows]))
