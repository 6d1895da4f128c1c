"""What `autocapture --watch` prints: one row (table) or one JSON object per line for each pass
that changed the store, flushed at once so a pipe sees it live. Performs I/O (the streams given).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from tau.portal.errors import UsageError

#: The contract's columns, in order (`Counts` fields, upper-cased).
COLUMNS = (
    "runs",
    "created_runs",
    "updated_runs",
    "created_contexts",
    "updated_contexts",
    "events",
    "tags",
    "reused",
)


def interval_seconds(text: str) -> float:
    """--interval as seconds (> 0), parsed as every tau duration is.

    Raises:
        UsageError: not a duration, or not positive.
    """
    from tau.intent.duration import DurationError, parse_duration

    try:
        seconds = parse_duration(text)
    except DurationError as exc:
        raise UsageError(f"--interval: {exc}", hint="e.g. --interval 30s or 2m") from None
    if seconds <= 0:
        raise UsageError(f'--interval "{text}" must be more than 0', hint="e.g. --interval 30s")
    return seconds


class WatchPrinter:
    """Prints each reported pass; the table header once, before the first row."""

    def __init__(self, fmt: str, namespace: str | None, out: TextIO, err: TextIO) -> None:
        self.fmt = fmt
        self.namespace = namespace or "*"
        self.out = out
        self.err = err
        self._header = False

    def __call__(self, done: Any) -> None:
        row = vars(done.counts)
        if done.number == 1 or done.changed:
            if self.fmt == "json":
                body = {c: row[c] for c in COLUMNS}
                body |= {"pass": done.number, "namespace": self.namespace}
                self.out.write(json.dumps(body | {"warnings": done.warnings}) + "\n")
            else:
                self._row([str(row[c]) for c in COLUMNS])
            self.out.flush()
        if self.fmt != "json" or not (done.number == 1 or done.changed):
            for warning in done.warnings:
                self.err.write(f"warning: {warning}\n")
            self.err.flush()

    def _row(self, cells: list[str]) -> None:
        # Fixed widths (the headers'), so rows printed minutes apart still line up.
        if not self._header:
            self._header = True
            self._row([c.upper() for c in COLUMNS])
            return self._row(cells)
        widths = [len(c) for c in COLUMNS]
        parts = [v.ljust(w) for v, w in zip(cells[:-1], widths, strict=False)] + [cells[-1]]
        self.out.write("  ".join(parts).rstrip() + "\n")
        return None
