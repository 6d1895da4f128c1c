"""`--since`: RFC3339, a Go duration such as `24h` or `1h30m`, or `Nd`. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from tau.portal.errors import UsageError

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_GO = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")


def parse_since(text: str, now: datetime | None = None) -> str:
    """The RFC3339 UTC instant `--since` names (compared as text against stored stamps)."""
    current = now or datetime.now(UTC)
    value = text.strip()
    days = re.fullmatch(r"(\d+)d", value)
    if days:
        return _fmt(current - timedelta(days=int(days.group(1))))
    if value and _GO.sub("", value) == "" and _GO.search(value):
        seconds = sum(float(n) * _UNITS[u] for n, u in _GO.findall(value))
        return _fmt(current - timedelta(seconds=seconds))
    try:
        stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"since must be RFC3339, Go duration, or Nd: got {text!r}",
            hint="e.g. --since 2026-01-02T00:00:00Z, --since 24h or --since 7d",
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return _fmt(stamp.astimezone(UTC))


def _fmt(stamp: datetime) -> str:
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
