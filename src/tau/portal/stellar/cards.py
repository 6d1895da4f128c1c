"""Which evidence card a metric belongs to, and which metric a chart shows first. Pure."""

from __future__ import annotations

from collections.abc import Iterable

#: Card order on every surface (contract §7.1).
CARD_ORDER = (
    "Outcome",
    "Optimization",
    "Throughput",
    "Systems",
    "Checkpoint",
    "Model diagnostics",
    "Behavior",
    "World model",
    "Other metrics",
)

#: The terminal marker the metrics path writes; evidence, not a chart candidate.
RUN_STATUS_METRIC = "tau/run_status"

_OUTCOME_PREFIXES = ("final/", "eval/", "test/", "val/", "detect/")
_OUTCOME_MEASURES = (
    "return",
    "reward",
    "accuracy",
    "acc",
    "score",
    "auprc",
    "auroc",
    "f1",
    "precision",
    "recall",
    "success",
    "win_rate",
)
_OPTIMIZATION = ("train/lr", "train/learning_rate", "train/grad_norm", "train/step_time")
#: Chart defaults the reference tries before any ranking.
_CHART_FIRST = ("train/return", "eval/mean_episode_return", "eval/score")
_OUTCOME_PRIORITY = (
    "final/macro_auprc",
    "final/accuracy",
    "final/score",
    "eval/accuracy",
    "eval/return",
    "eval/score",
)


def card_of(name: str) -> str:
    """The card of a metric name (the reference's name rules)."""
    lower = name.lower()
    if lower == RUN_STATUS_METRIC:
        return "Other metrics"
    if lower.startswith(("gpu/", "system/", "sys/")):
        return "Systems"
    if lower.startswith("checkpoint/"):
        return "Checkpoint"
    if lower.startswith(_OUTCOME_PREFIXES) and any(m in lower for m in _OUTCOME_MEASURES):
        return "Outcome"
    if lower in _OPTIMIZATION or lower.startswith(("optim/", "lr")):
        return "Optimization"
    if "tokens" in lower or "throughput" in lower or lower.endswith("/samples_per_sec"):
        return "Throughput"
    if lower.startswith(("grad/", "weights/", "activations/", "diag/")):
        return "Model diagnostics"
    if lower.startswith(("behavior/", "policy/", "episode/")):
        return "Behavior"
    if "loss" in lower or lower.startswith(("world/", "wm/")):
        return "World model"
    if lower.startswith(_OUTCOME_PREFIXES):
        return "Outcome"
    return "Other metrics"


def default_metric(names: Iterable[str], requested: str | None = None) -> str | None:
    """The chart metric: the requested one, the reference's favourites, an outcome, else first."""
    available = sorted(n for n in set(names) if n != RUN_STATUS_METRIC)
    if not available:
        return None
    if requested and requested in available:
        return requested
    for name in (*_CHART_FIRST, *_OUTCOME_PRIORITY):
        if name in available:
            return name
    outcome = [n for n in available if card_of(n) == "Outcome"]
    return outcome[0] if outcome else available[0]
