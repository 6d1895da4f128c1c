"""What Stellar reads from the store for one target: plain records plus a series loader. Pure.

`tau.portal.stellar.source` fills it from the store's read API; tests build it by hand. Records
are the store's rows as dicts (the contract's column names), so a fixture and a live store look
alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Record = Mapping[str, Any]


@dataclass(frozen=True)
class Series:
    """One run's points of one metric, as stored (not yet downsampled).

    `wall_times` are the points' wall-clock times in microseconds since the epoch (0 where the
    writer recorded none); empty when the loader has no times at all.
    """

    run_id: str
    metric_name: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    wall_times: tuple[int, ...] = ()


#: (metric name, run ids) -> that metric's series of those runs.
SeriesLoader = Callable[[str, Sequence[str]], list[Series]]


def _no_series(metric: str, run_ids: Sequence[str]) -> list[Series]:
    return []


#: run ids -> per run with `tau.attempt` tags: (attempt, first step, first wall time in
#: microseconds or 0) of each attempt, ordered by attempt.
AttemptLoader = Callable[[Sequence[str]], Mapping[str, Sequence[tuple[int, int, int]]]]


def _no_attempts(run_ids: Sequence[str]) -> Mapping[str, Sequence[tuple[int, int, int]]]:
    return {}


@dataclass(frozen=True)
class Evidence:
    """Everything a snapshot is built from.

    Attributes:
        store_path: the store root.
        target: what the user asked for.
        target_type: ``run_group``, ``run`` or ``experiment``.
        manifest: the store's manifest.json.
        status: the store's status record of the target (contract §6).
        experiment: the experiment row, when the target has one.
        run_groups: run group rows of the target's runs.
        runs: run rows, newest first, each with ``tags`` and ``context`` (run_context) dicts.
        total_runs: runs matching the target before the `runs` bound.
        configs: config rows by run id (``normalized_json`` as stored).
        summaries: metric_summaries rows of the runs.
        events: event rows of the runs, oldest first.
        artifacts: artifact rows of the runs.
        observations: observation rows scoped to the target or its runs.
        warnings: what the reader could not read.
        metric_cards: metric name -> the card its rows' `tau.metric.card` tag names (contract
            §7.1: the tag first, else the name rules); metrics without the tag are absent.
        metric_directions: metric name -> `max`/`min` its rows' `tau.metric.direction` tag
            records; metrics without the tag are absent (the name rule decides).
        load_series: reads one metric's series for some runs.
        attempt_starts: where each attempt of the runs starts (rows tagged `tau.attempt`, as
            the metrics collector delivers them); runs without the tag are absent.
    """

    store_path: str
    target: str
    target_type: str
    manifest: Record
    status: Record
    experiment: Record | None
    run_groups: Sequence[Record]
    runs: Sequence[Record]
    total_runs: int
    configs: Mapping[str, Sequence[Record]] = field(default_factory=dict)
    summaries: Sequence[Record] = ()
    events: Sequence[Record] = ()
    artifacts: Sequence[Record] = ()
    observations: Sequence[Record] = ()
    warnings: Sequence[str] = ()
    metric_cards: Mapping[str, str] = field(default_factory=dict)
    metric_directions: Mapping[str, str] = field(default_factory=dict)
    load_series: SeriesLoader = _no_series
    attempt_starts: AttemptLoader = _no_attempts
