"""Kubernetes timestamps and the one-unit ages tau prints beside objects. Pure."""

from __future__ import annotations

from datetime import datetime


def parse_timestamp(text: str | None) -> datetime | None:
    """An RFC 3339 timestamp as the API writes it (`2026-12-02T10:00:00Z`), or None."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def age(since: str | None, now: datetime | str, missing: str = "<unknown>") -> str:
    """Elapsed time in one truncated unit (`30s`, `45m`, `2h`, `3d`); `missing` when unknown."""
    start = parse_timestamp(since)
    end = parse_timestamp(now) if isinstance(now, str) else now
    if start is None or end is None:
        return missing
    seconds = max(0, int((end - start).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
