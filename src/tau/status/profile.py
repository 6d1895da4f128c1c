"""`tau run status --run-profile`: where a run's time went, phase by phase, and its results.

Pure. Each phase that has begun is charged the time until the next phase began (the last one
until the snapshot was taken), so queueing (Submitted → Kueue admission), startup (scheduling,
image pull, container start) and running show up as separate lines. The results line repeats
where the run said its outputs go; tau has not checked the bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau.k8s.timefmt import parse_timestamp
from tau.status.model import RunStatus


@dataclass(frozen=True)
class Span:
    """Seconds spent in one phase (from its start to the next phase's)."""

    phase: str
    seconds: int


def spans(status: RunStatus) -> list[Span]:
    """The phases with a known start, in order, each with its share of the time."""
    begun = [(p.name.value, parse_timestamp(p.started_at)) for p in status.phases]
    timed = [(name, at) for name, at in begun if at is not None]
    end = parse_timestamp(status.observed_at)
    out = []
    for i, (name, at) in enumerate(timed):
        until = timed[i + 1][1] if i + 1 < len(timed) else end
        if until is not None:
            out.append(Span(name, max(0, int((until - at).total_seconds()))))
    return out


def duration(seconds: int) -> str:
    """`1h02m`, `3m05s`, `42s`."""
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def lines(status: RunStatus) -> list[str]:
    """The text section (without its title)."""
    found = spans(status)
    if not found:
        return ["(no phase has started yet)"]
    width = max(len(s.phase) for s in found)
    out = [f"{s.phase.ljust(width)}  {duration(s.seconds)}" for s in found]
    out.append(f"{'total'.ljust(width)}  {duration(sum(s.seconds for s in found))}")
    e = status.evidence
    if e and e.result_path:
        where = f" on PVC {e.result_pvc}" if e.result_pvc else ""
        checkpoint = f" (checkpoint {e.checkpoint_artifact})" if e.checkpoint_artifact else ""
        out.append(f"results: {e.result_path}{where}{checkpoint}")
    return out


def as_dict(status: RunStatus) -> dict[str, Any]:
    """The `profile` key of the RunStatus document."""
    found = spans(status)
    return {
        "phases": [{"name": s.phase, "seconds": s.seconds} for s in found],
        "totalSeconds": sum(s.seconds for s in found),
    }
