"""One checklist line (`  <ok|warn|error> <label>: <message>`) and the summary line. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

OK, WARN, ERROR = "ok", "warn", "error"


@dataclass(frozen=True)
class Check:
    """The outcome of one check."""

    level: str
    label: str
    message: str

    def line(self) -> str:
        return f"  {self.level} {self.label}: {self.message}"


def summary(checks: Iterable[Check]) -> str:
    """`summary: N passed, N warnings, N errors`."""
    items = list(checks)
    count = {level: sum(1 for c in items if c.level == level) for level in (OK, WARN, ERROR)}
    return f"summary: {count[OK]} passed, {count[WARN]} warnings, {count[ERROR]} errors"


def has_errors(checks: Iterable[Check]) -> bool:
    return any(c.level == ERROR for c in checks)
