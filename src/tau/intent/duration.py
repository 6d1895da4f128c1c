"""Parse Go-style durations ("30s", "1h30m", "1.5h", "300ms") as used in tau.yaml. Pure."""

from __future__ import annotations

import re

# Go accepts both micro signs: U+00B5 and U+03BC.
_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "\u00b5s": 1e-6,
    "\u03bcs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_UNIT = re.compile(r"[^0-9.]*")


class DurationError(ValueError):
    """The text is not a Go duration; the message says why."""


def parse_duration(text: str) -> float:
    """Seconds in a Go duration string.

    Raises:
        DurationError: with the reason, worded like Go's time.ParseDuration.
    """
    body = text.strip()
    sign = 1.0
    if body[:1] in "+-" and body:
        sign = -1.0 if body[0] == "-" else 1.0
        body = body[1:]
    if body == "0":
        return 0.0
    if not body:
        raise DurationError(f'invalid duration "{text}"')
    total, pos = 0.0, 0
    while pos < len(body):
        number = _NUMBER.match(body, pos)
        if number is None:
            raise DurationError(f'invalid duration "{text}" (use forms like 30s, 5m, 1h30m)')
        pos = number.end()
        unit = _UNIT.match(body, pos)
        if unit is None or not unit.group():
            raise DurationError(f'missing unit in duration "{text}" (use ns, us, ms, s, m or h)')
        if unit.group() not in _UNITS:
            raise DurationError(
                f'unknown unit "{unit.group()}" in duration "{text}" (use ns, us, ms, s, m or h)'
            )
        total += float(number.group()) * _UNITS[unit.group()]
        pos = unit.end()
    return sign * total


def format_duration(seconds: float) -> str:
    """Render seconds compactly in Go style: 10ms, 30s, 5m0s, 1h2m3s."""
    if 0 < seconds < 1:
        return f"{round(seconds * 1000)}ms"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"
