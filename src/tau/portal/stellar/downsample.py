"""Honest downsampling of metric series for charts. Pure and deterministic.

A chart of 10,000 steps drawn 800 px wide cannot show every point, but reservoir sampling
(TensorBoard's choice) drops spikes and makes curves look discontinuous. Here each bucket keeps
its extremes (the minimum and the maximum, in step order), plus the first and last point, so a
loss spike or a collapse survives; the caller states on the chart that it was downsampled and
from how many points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: The reference's budget: 800 px × 1.5 rendered points per series.
DEFAULT_BUDGET = 1200
METHOD = "bucket-extremes"


@dataclass(frozen=True)
class Sampled:
    """A series after downsampling.

    Attributes:
        steps: the kept steps, ascending.
        values: the kept values (finite only).
        source_points: finite points before downsampling.
        non_finite: points dropped because the value was NaN or infinite.
    """

    steps: tuple[int, ...]
    values: tuple[float, ...]
    source_points: int
    non_finite: int

    @property
    def rendered_points(self) -> int:
        return len(self.steps)

    @property
    def decimated(self) -> bool:
        return self.rendered_points < self.source_points


def finite_points(
    steps: Sequence[int], values: Sequence[float]
) -> tuple[list[int], list[float], int]:
    """Points sorted by step with NaN/inf removed, and how many were removed."""
    xs, ys = list(steps), list(values)
    # The common case (a stored series: sorted, all finite) is checked at C speed.
    if all(map(math.isfinite, ys)) and xs == sorted(xs):
        return xs, ys, 0
    pairs = sorted(
        ((s, v) for s, v in zip(xs, ys, strict=True) if math.isfinite(v)), key=lambda p: p[0]
    )
    return [p[0] for p in pairs], [p[1] for p in pairs], len(ys) - len(pairs)


def downsample(
    steps: Sequence[int], values: Sequence[float], budget: int = DEFAULT_BUDGET
) -> Sampled:
    """At most `budget` points of the series, keeping each bucket's extremes.

    Args:
        steps: the step of each point (any order; sorted here).
        values: the value of each point; non-finite values are dropped and counted.
        budget: the most points to keep (at least 4).

    Returns:
        The kept points in step order; unchanged when the series already fits.
    """
    xs, ys, dropped = finite_points(steps, values)
    keep = kept(ys, budget)
    if len(keep) == len(ys):
        return Sampled(tuple(xs), tuple(ys), len(ys), dropped)
    return Sampled(tuple(xs[i] for i in keep), tuple(ys[i] for i in keep), len(ys), dropped)


def kept(ys: Sequence[float], budget: int = DEFAULT_BUDGET) -> Sequence[int]:
    """The indices `downsample` keeps of finite values in step order (all when they fit).

    The first and last point are kept apart; the interior is split into buckets of two kept
    points, each bucket's minimum and maximum (in index order).
    """
    budget = max(4, budget)
    n = len(ys)
    if n <= budget:
        return range(n)
    buckets = (budget - 2) // 2
    keep: list[int] = [0]
    interior = n - 2
    for b in range(buckets):
        lo = 1 + (b * interior) // buckets
        hi = 1 + ((b + 1) * interior) // buckets
        if lo >= hi:
            continue
        window = ys[lo:hi]
        i_min = lo + window.index(min(window))
        i_max = lo + window.index(max(window))
        if i_min < i_max:
            keep += (i_min, i_max)
        elif i_max < i_min:
            keep += (i_max, i_min)
        else:
            keep.append(i_min)
    keep.append(n - 1)
    return keep


def ema(values: Sequence[float], alpha: float) -> tuple[float, ...]:
    """Exponential moving average, seeded with the first value."""
    out: list[float] = []
    acc = 0.0
    for i, v in enumerate(values):
        acc = v if i == 0 else alpha * v + (1 - alpha) * acc
        out.append(acc)
    return tuple(out)
