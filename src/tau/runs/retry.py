"""Automatic retry as configuration: watch, classify, back off, delete, resubmit.

Pure control flow over injected hooks (the cluster, the clock and the terminal are
arguments), so the loop is tested without a cluster and without sleeping. A failure whose
reason is not in `resilience.retry_on` ends the loop with an error naming it, so an
unexpected failure surfaces instead of looping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from tau.errors import TauError
from tau.intent.duration import format_duration, parse_duration
from tau.intent.runconfig import DEFAULT_BACKOFF_INITIAL, DEFAULT_BACKOFF_MAX
from tau.intent.validate import ValidConfig
from tau.status import classify

CANONICAL_REASONS = {str(r).lower(): str(r) for r in classify.RETRYABLE}
EVENT_REPORTER = "tau-cli"


@dataclass(frozen=True)
class Policy:
    max_retries: int
    retry_on: tuple[str, ...]
    backoff_initial: float
    backoff_max: float
    checkpoint_path: str


@dataclass(frozen=True)
class Outcome:
    """A terminal workload: whether it succeeded, its classified reason, a short signature."""

    succeeded: bool
    reason: str = "Completed"
    signature: str = ""


class Hooks(Protocol):
    """What the loop needs from the world."""

    def wait_terminal(self) -> Outcome: ...
    def delete_and_wait(self) -> None: ...
    def resubmit(self, env: dict[str, str]) -> None: ...
    def event(self, name: str, reason: str, message: str) -> None: ...
    def sleep(self, seconds: float) -> None: ...
    def echo(self, line: str) -> None: ...


def policy_of(valid: ValidConfig) -> Policy:
    """The retry policy of a validated config (its defaults are the RunConfig's)."""
    resilience = valid.config.resilience
    retry_on = tuple(CANONICAL_REASONS.get(r.lower(), r) for r in resilience.retry_on)
    # A zero backoff would retry in a tight loop: it reads as the default instead.
    initial = parse_duration(resilience.backoff_initial) or parse_duration(DEFAULT_BACKOFF_INITIAL)
    most = parse_duration(resilience.backoff_max) or parse_duration(DEFAULT_BACKOFF_MAX)
    return Policy(resilience.max_retries, retry_on, initial, most, valid.config.checkpoint_path)


def backoff(policy: Policy, attempt: int) -> float:
    """Initial × 2^(attempt−1), capped at backoff_max."""
    return min(policy.backoff_initial * (2 ** (attempt - 1)), policy.backoff_max)


def retry_env(policy: Policy, attempt: int, reason: str) -> dict[str, str]:
    """The four variables a resubmitted attempt sees (the first submit gets none)."""
    return {
        "TAU_RESUME_FROM": policy.checkpoint_path,
        "TAU_RETRY_ATTEMPT": str(attempt),
        "TAU_RETRY_MAX": str(policy.max_retries),
        "TAU_RETRY_REASON": reason,
    }


def signature(text: str) -> str:
    """Whitespace-collapsed, at most 160 characters: what an Event records of a failure."""
    return re.sub(r"\s+", " ", text).strip()[:160]


def run(policy: Policy, namespace: str, name: str, hooks: Hooks) -> int:
    """Watch the submitted run and retry it per the policy.

    Returns:
        0 once the run succeeds.

    Raises:
        TauError: the failure is not retryable under the policy, or retries ran out.
    """
    where = f"{namespace}/{name}"
    hooks.echo(
        f"resilience: watching {where} (max {policy.max_retries} retries, retry on: "
        f"{', '.join(policy.retry_on)})"
    )
    attempt = 0
    last_reason = ""
    while True:
        outcome = hooks.wait_terminal()
        if outcome.succeeded:
            hooks.echo(f"workload {where} completed successfully")
            if attempt > 0:
                hooks.event(
                    f"{name}-retry-succeeded-{attempt}",
                    "RayJobRetrySucceeded",
                    f"submission_id={name} recovered_after_attempt={attempt} "
                    f"last_failure={last_reason} signature={signature(outcome.signature)}",
                )
            return 0
        reason = outcome.reason
        if not classify.should_retry(reason, policy.retry_on):
            raise TauError(
                f"workload {where} failed ({reason}) — not in retry_on list "
                f"[{', '.join(policy.retry_on)}]",
                hint=_hint(reason, name, namespace),
            )
        attempt += 1
        last_reason = reason
        if attempt > policy.max_retries:
            hooks.event(
                f"{name}-retries-exhausted-{attempt - 1}",
                "RayJobRetriesExhausted",
                f"submission_id={name} retries_exhausted={policy.max_retries} "
                f"final_failure={reason} signature={signature(outcome.signature)}",
            )
            raise TauError(
                f"workload {where} exhausted all {policy.max_retries} retries",
                hint=f"find the cause with `tau run status {name} -n {namespace}`",
            )
        delay = backoff(policy, attempt)
        hooks.echo(
            f"attempt {attempt}/{policy.max_retries} failed ({reason}) — retrying in "
            f"{format_duration(delay)}"
        )
        hooks.sleep(delay)
        hooks.event(
            f"{name}-retry-{attempt}",
            "RayJobAttempt",
            f"submission_id={name} attempt={attempt}/{policy.max_retries} "
            f"failure={reason} signature={signature(outcome.signature)}",
        )
        hooks.delete_and_wait()
        hooks.resubmit(retry_env(policy, attempt, reason))
        hooks.echo(f"retry {attempt}/{policy.max_retries} submitted, watching...")


def _hint(reason: str, name: str, namespace: str) -> str:
    if reason == "OOMKilled":
        return (
            "the same memory usually reproduces the same OOM: raise compute memory, then "
            "add OOMKilled to resilience.retry_on or `tau run resume --force`"
        )
    if reason == "Unknown":
        return f"tau could not classify it: `tau run status {name} -n {namespace}` shows the layer"
    return f"add {reason} to resilience.retry_on to retry it automatically"
