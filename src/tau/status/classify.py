"""Classify why a run failed, for retry (`resilience.retry_on`) and resume (cli-contract 3.2).

Pure. Rules are checked in the contract's order, first match wins:

1. the run succeeded → ``Completed``;
2. it has not failed → ``Running``;
3. a container terminated (now or last time) with reason ``OOMKilled`` → ``OOMKilled``;
4. a pod has ``DisruptionTarget=True``, or an event reason contains "preempt" → ``Preempted``;
5. a Failed pod with reason ``Evicted``, or an event reason ``Evicted`` → ``Evicted``;

One refinement of rule 4, from what a real kubelet does: a node-pressure eviction also marks
the pod ``DisruptionTarget=True`` (reason ``TerminationByKubelet``), and the contract's order
would read it as ``Preempted``. A pod the kubelet itself ended is ``Evicted``, so a
``retry_on: [Evicted]`` policy retries it and status names the node, not the queue.
6. anything else → ``Unknown``.

Only OOMKilled, Preempted and Evicted are retryable; Unknown never is.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from tau.status.facts import Facts, PodFacts, read_facts
from tau.status.model import State
from tau.status.snapshot import Snapshot


class FailureReason(enum.StrEnum):
    """The classification values; the strings are what `retry_on` lists."""

    COMPLETED = "Completed"
    RUNNING = "Running"
    OOM_KILLED = "OOMKilled"
    PREEMPTED = "Preempted"
    EVICTED = "Evicted"
    UNKNOWN = "Unknown"


#: Reasons a retry may help; OOMKilled is retryable but not in the default `retry_on`.
RETRYABLE: frozenset[FailureReason] = frozenset(
    {FailureReason.OOM_KILLED, FailureReason.PREEMPTED, FailureReason.EVICTED}
)

#: `resilience.retry_on` when `max_retries > 0` and the list is empty (OOMKilled is opt-in).
DEFAULT_RETRY_ON: tuple[FailureReason, ...] = (FailureReason.PREEMPTED, FailureReason.EVICTED)


def _oom_killed(f: Facts) -> bool:
    return any(
        c.reason == "OOMKilled" or c.last_reason == "OOMKilled"
        for p in f.pods
        for c in (*p.init, *p.app)
    )


#: DisruptionTarget's reason when the kubelet ended the pod (node-pressure eviction).
BY_KUBELET = "TerminationByKubelet"


def _ended_by_kubelet(p: PodFacts) -> bool:
    return (p.phase == "Failed" and p.status_reason == "Evicted") or (
        p.disruption_target and p.disruption_reason == BY_KUBELET
    )


def _preempted(f: Facts) -> bool:
    return any(p.disruption_target and not _ended_by_kubelet(p) for p in f.pods) or any(
        "preempt" in e.reason.lower() for e in f.events
    )


def _evicted(f: Facts) -> bool:
    return any(_ended_by_kubelet(p) for p in f.pods) or any(e.reason == "Evicted" for e in f.events)


#: The failure rules after the two non-failure ones, in precedence order.
FAILURE_RULES: tuple[tuple[FailureReason, Callable[[Facts], bool]], ...] = (
    (FailureReason.OOM_KILLED, _oom_killed),
    (FailureReason.PREEMPTED, _preempted),
    (FailureReason.EVICTED, _evicted),
)


def classify_facts(f: Facts, state: State) -> FailureReason:
    """Classify from already-read facts and the run's state (see the module docstring)."""
    if state is State.SUCCEEDED:
        return FailureReason.COMPLETED
    if state is not State.FAILED:
        return FailureReason.RUNNING
    for reason, rule in FAILURE_RULES:
        if rule(f):
            return reason
    return FailureReason.UNKNOWN


def classify(snapshot: Snapshot, state: State | None = None) -> FailureReason:
    """Classify a run's failure.

    Args:
        snapshot: what the cluster held for the run.
        state: the run's canonical state; derived from the snapshot when omitted.

    Returns:
        The first matching FailureReason.
    """
    from tau.status.state import run_state

    facts = read_facts(snapshot)
    return classify_facts(facts, state if state is not None else run_state(facts))


def is_retryable(reason: FailureReason | str) -> bool:
    """Whether a retry can help at all (Unknown, Completed and Running never are)."""
    # retry_on matching is case-insensitive, so the reason is too.
    return str(reason).lower() in {str(r).lower() for r in RETRYABLE}


def should_retry(reason: FailureReason | str, retry_on: tuple[str, ...] | list[str]) -> bool:
    """Whether `reason` is retryable and listed in `retry_on` (case-insensitive)."""
    wanted = {r.lower() for r in retry_on} if retry_on else {r.lower() for r in DEFAULT_RETRY_ON}
    return is_retryable(reason) and str(reason).lower() in wanted
