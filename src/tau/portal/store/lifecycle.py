"""Lifecycle classification of a run from its state, tags and metric summaries (§5). Pure."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tau.portal.errors import UsageError
from tau.portal.store.records import MetricSummary, Run

LIFECYCLES = ("pending", "running", "failed", "succeeded", "incomplete")
_MIN_STEP_TAGS = ("tau.success.min_step", "success.min_step", "expected_max_step", "max_step")
_FAILURE_MARKERS = (
    "collapse_bad_steps",
    "bad_steps",
    "nan_steps",
    "inf_steps",
    "oom",
    "failed",
    "failure",
    "error_count",
    "errors",
)
FIELDS = (
    "latest",
    "min",
    "max",
    "count",
    "finite_count",
    "non_finite_count",
    "latest_step",
    "min_step",
    "max_step",
)
_OPS = (">=", "<=", "!=", ">", "<", "=")
_COLUMN = {
    "latest": "latest_value",
    "min": "min_value",
    "max": "max_value",
    "count": "count",
    "finite_count": "finite_count",
    "non_finite_count": "non_finite_count",
    "latest_step": "latest_step",
    "min_step": "min_step",
    "max_step": "max_step",
}


@dataclass(frozen=True)
class MetricFilter:
    """`<metric>[@field|:field]<op><number>`, e.g. `eval/score>=0.8` or `loss@max<1`."""

    text: str
    metric: str
    field: str
    op: str
    value: float

    @property
    def column(self) -> str:
        """The `metric_summaries` column the filter compares."""
        return _COLUMN[self.field]

    def matches(self, summary: MetricSummary) -> bool:
        actual = getattr(summary, self.column)
        if actual is None:
            return False
        return compare(float(actual), self.op, self.value)


def compare(actual: float, op: str, value: float) -> bool:
    return {
        ">=": actual >= value,
        "<=": actual <= value,
        "!=": actual != value,
        ">": actual > value,
        "<": actual < value,
        "=": actual == value,
    }[op]


def parse_metric_filter(text: str) -> MetricFilter:
    op_match = re.search(r">=|<=|!=|>|<|=", text)
    if op_match is None:
        raise UsageError(
            f'metric filter "{text}" must contain one of >=, <=, !=, >, <, =',
            hint="e.g. --metric-filter 'eval/score>=0.8' or 'loss@max<1'",
        )
    left, op, right = text[: op_match.start()], op_match.group(0), text[op_match.end() :]
    field = "latest"
    metric = left.strip()
    for sep in ("@", ":"):
        if sep in metric:
            metric, field = metric.rsplit(sep, 1)
            break
    if field not in FIELDS:
        raise UsageError(
            f'metric filter "{text}" field must be ' + ", ".join(FIELDS[:-1]) + f", or {FIELDS[-1]}"
        )
    if not metric:
        raise UsageError(f'metric filter "{text}" names no metric')
    try:
        value = float(right.strip())
    except ValueError:
        raise UsageError(f'metric filter "{text}" value must be a number') from None
    if not math.isfinite(value):
        raise UsageError(f'metric filter "{text}" value must be finite')
    return MetricFilter(text, metric, field, op, value)


@dataclass(frozen=True)
class Lifecycle:
    state: str
    successful: bool
    reasons: list[str]


def is_failure_metric(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in _FAILURE_MARKERS)


def classify(
    run: Run,
    tags: Mapping[str, str],
    summaries: Sequence[MetricSummary],
    *,
    min_step: int | None = None,
    filters: Sequence[MetricFilter] = (),
) -> Lifecycle:
    """`ClassifyRun`: the run's lifecycle state, whether it succeeded, and why."""
    state = (run.state or "").lower()
    if state in ("pending", "running"):
        return Lifecycle(state, False, [f"run is {state}"])
    if state == "failed":
        return Lifecycle("failed", False, ["run state is failed"])
    if state in ("succeeded", "completed"):
        reasons = []
        required = min_step if min_step is not None else _tag_min_step(tags)
        if required is not None:
            steps = [s.max_step for s in summaries if s.max_step is not None]
            top = max(steps) if steps else None
            if top is None or top < required:
                reasons.append(
                    f"max step {'none' if top is None else top} is below required step {required}"
                )
        for s in summaries:
            if s.non_finite_count:
                reasons.append(f"{s.metric_name} has {s.non_finite_count} non-finite values")
        for s in summaries:
            if is_failure_metric(s.metric_name) and (s.max_value or 0) > 0:
                reasons.append(
                    f"{s.metric_name} indicates failure with max value {_num(s.max_value)}"
                )
        by_name = {s.metric_name: s for s in summaries}
        for f in filters:
            found = by_name.get(f.metric)
            if found is None or not f.matches(found):
                reasons.append(f"{f.metric} does not satisfy {f.field}{f.op}{_num(f.value)}")
        if reasons:
            return Lifecycle("incomplete", False, reasons)
        return Lifecycle("succeeded", True, ["run state succeeded and success gates passed"])
    if not run.completed_at:
        return Lifecycle("pending", False, [f"run state is {state or 'empty'}"])
    return Lifecycle("incomplete", False, [f"run state is {state or 'empty'}"])


def _tag_min_step(tags: Mapping[str, str]) -> int | None:
    for key in _MIN_STEP_TAGS:
        if key in tags:
            try:
                return int(tags[key])
            except ValueError:
                continue
    return None


def _num(value: float | None) -> str:
    if value is None:
        return "none"
    return f"{value:g}"
