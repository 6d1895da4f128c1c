"""JSON that stays JSON when a metric is NaN or ±Infinity. Pure.

A diverged run's history holds NaN and infinities; the store keeps them as such (Parquet
doubles, SQLite reals), but JSON has no spelling for them (Python's `NaN`/`Infinity` are not
JSON, and browsers' `JSON.parse` refuses them). Every JSON the portal prints or serves writes
a non-finite number as `null`; the `non_finite_count` of the metric's summary (and the
`non_finite_points` of a series) says how many there were.

The document is walked only when it holds such a number: the strict encoder finds out at C
speed, so a snapshot of millions of finite points pays nothing.
"""

from __future__ import annotations

import json
import math
from typing import Any


def scrub(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (containers copied as needed)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps(value, **options)`, with NaN and ±Infinity written as null."""
    try:
        return json.dumps(value, allow_nan=False, **options)
    except ValueError:
        return json.dumps(scrub(value), allow_nan=False, **options)
