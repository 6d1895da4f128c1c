"""Which way a metric improves: `max` (higher is better) or `min` (lower is better). Pure.

Every surface that names a best group, a best run, a ranking or a winner asks this module, so
`train/loss` is never "won" by its highest value. A metric's direction is, first match wins:

1. an explicit override (`--direction`, or the page's `direction` query parameter);
2. what the run recorded: the metric rows' `tau.metric.direction` tag (`min`/`max`, or the
   registry's `lower`/`higher`);
3. the name rule: the registry's rule (`tau.registry.records.metric_direction`: "loss" goes
   lower), widened with the other names that are lower-is-better (error, perplexity, …);
   everything else goes higher.

The values are the compare command's `max`/`min` (contract §2.2); `higher`/`lower` are accepted
wherever a direction is read, as the registry writes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tau.portal.errors import UsageError

MAX, MIN = "max", "min"
#: The metric-row tag a writer sets to record a metric's direction (read like `tau.metric.card`).
DIRECTION_TAG = "tau.metric.direction"
#: Where a direction came from, as shown in the page data and JSON.
FROM_FLAG, FROM_RECORD, FROM_NAME = "--direction", "recorded", "name rule"
_ALIASES = {"max": MAX, "higher": MAX, "min": MIN, "lower": MIN}
#: Lower-is-better words found anywhere in a name (the registry's "loss" comes first).
_LOWER_PARTS = (
    "loss",
    "error",
    "perplexity",
    "cross_entropy",
    "cross-entropy",
    "regret",
    "latency",
    "bits_per_byte",
    "step_time",
)
#: Short lower-is-better words, matched as whole name tokens ("wer" must not match "power").
_LOWER_TOKENS = frozenset(
    {"err", "ppl", "nll", "mse", "mae", "rmse", "wer", "cer", "bpb", "fid", "kl", "divergence"}
)
_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Direction:
    """A metric's direction and where it came from."""

    value: str
    source: str

    @property
    def goal(self) -> str:
        """`higher` or `lower`, for sentences."""
        return "higher" if self.value == MAX else "lower"

    def as_dict(self) -> dict[str, str]:
        return {"direction": self.value, "goal": self.goal, "direction_source": self.source}


def normalize(text: Any) -> str | None:
    """`max`/`min` for any accepted spelling, else None."""
    return _ALIASES.get(str(text).strip().lower()) if text is not None else None


def parse(text: str, flag: str = "--direction") -> str:
    """A user-given direction; anything else is one located line with the fix."""
    value = normalize(text)
    if value is None:
        raise UsageError(
            f'{flag} "{text}" is invalid', hint="use max or min (higher or lower also work)"
        )
    return value


def parse_overrides(values: Iterable[str], flag: str = "--direction") -> dict[str, str]:
    """Repeatable `--direction [METRIC=]max|min` → {metric: direction}.

    A bare value applies to the metric the command decides on and is keyed by "".
    """
    out: dict[str, str] = {}
    for raw in values:
        metric, sep, value = raw.rpartition("=")
        if sep and not metric.strip():
            raise UsageError(f'{flag} "{raw}" names no metric', hint="use METRIC=max or METRIC=min")
        out[metric.strip()] = parse(value if sep else raw, flag)
    return out


def by_name(name: str) -> str:
    """The name rule: the registry's rule, widened with the other lower-is-better names."""
    from tau.registry.records import metric_direction

    lower = name.lower()
    if metric_direction(name) == "lower" or any(p in lower for p in _LOWER_PARTS):
        return MIN
    return MIN if _LOWER_TOKENS.intersection(_TOKEN.findall(lower)) else MAX


def recorded(tags: Mapping[str, Any] | None) -> str | None:
    """The direction a metric row's tags record, if any."""
    return normalize((tags or {}).get(DIRECTION_TAG))


def direction_of(name: str, *, override: str | None = None, record: str | None = None) -> Direction:
    """The direction of `name`: the override, else what was recorded, else the name rule."""
    if override:
        return Direction(parse(override), FROM_FLAG)
    chosen = normalize(record)
    if chosen:
        return Direction(chosen, FROM_RECORD)
    return Direction(by_name(name), FROM_NAME)


def sort_key(direction: str) -> float:
    """Multiply a value by this to sort best first with an ascending sort."""
    return -1.0 if direction == MAX else 1.0


def best_value(values: Iterable[float], direction: str) -> float:
    """The best of `values` (non-empty) in `direction`."""
    return max(values) if direction == MAX else min(values)


def flag(direction: str) -> str:
    """The CLI flag that reproduces `direction` (for suggested commands)."""
    return f"--direction {direction}"
