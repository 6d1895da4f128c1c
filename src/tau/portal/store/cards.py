"""The metric-name vocabulary: which evidence card a metric belongs to, and which names are
standard research metrics. Pure.

It lives in the store layer because the importer writes both as metric-row tags
(`tau.metric.card`, `tau.metric.standard`, contract §3.4), and Stellar, a layer above, reads the
tag first and falls back to these same rules (contract §7.1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

#: Card order on every surface (contract §7.1, plus "Loss": the reference put every loss under
#: "World model", which misnames a supervised run's train/eval loss).
CARD_ORDER = (
    "Outcome",
    "Loss",
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

#: The metric-row tag naming a metric's card; Stellar prefers it to the name rules.
CARD_TAG = "tau.metric.card"
#: The metric-row tag saying whether the name is a standard research metric ("true"/"false").
STANDARD_TAG = "tau.metric.standard"

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

#: Names every surface treats as first-class research signals. The contract lists the
#: `tau.metric.standard` tag without defining it; the reference importer writes "true" or
#: "false" for membership in a fixed set of well-known names (plus any `feature/` metric),
#: so this set holds those names and the tag keeps that boolean form for packets to agree.
STANDARD_METRICS = frozenset(
    {
        "train/return",
        "train/loss",
        "train/lr",
        "train/learning_rate",
        "train/grad_norm",
        "train/gradient_norm",
        "train/step_time",
        "train/step_time_s",
        "train/examples_seen",
        "train/input_tokens",
        "train/tokens",
        "train/perplexity",
        "eval/score",
        "eval/loss",
        "eval/perplexity",
        "wm/loss",
        "wm/perplexity",
        "wm/cross_entropy",
        "wm/cross-entropy",
        "world_model/loss",
        "world_model/perplexity",
        "world_model/cross_entropy",
        "world_model/cross-entropy",
        "model/loss",
        "model/perplexity",
        "model/cross_entropy",
        "model/cross-entropy",
        "model/kl",
        "policy/entropy",
        "gpu/memory_allocated_gb",
        "gpu/memory_reserved_gb",
        "gpu/max_memory_allocated_gb",
        "system/gpu_util",
        "checkpoint/file_count",
        "checkpoint/bytes",
        "inference/time_s",
    }
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
    if lower.startswith(("world/", "wm/", "world_model/")):
        return "World model"
    if "loss" in lower or "perplexity" in lower or "cross_entropy" in lower:
        # Supervised training and eval losses: not a world model's (that card keeps its
        # prefixes), and not an outcome either.
        return "Loss"
    if lower.startswith(_OUTCOME_PREFIXES):
        return "Outcome"
    return "Other metrics"


def is_standard(name: str) -> bool:
    """Whether `name` is a standard research metric (the `tau.metric.standard` tag)."""
    lower = name.strip().lower()
    return lower in STANDARD_METRICS or lower.startswith("feature/")


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


def default_metric(
    names: Iterable[str], requested: str | None = None, card: Callable[[str], str] = card_of
) -> str | None:
    """The chart metric: the requested one, the reference's favourites, an outcome, else first.

    `card` gives a metric's card (Stellar passes one that prefers the `tau.metric.card` tag).
    """
    available = sorted(n for n in set(names) if n != RUN_STATUS_METRIC)
    if not available:
        return None
    if requested and requested in available:
        return requested
    for name in (*_CHART_FIRST, *_OUTCOME_PRIORITY):
        if name in available:
            return name
    outcome = [n for n in available if card(n) == "Outcome"]
    return outcome[0] if outcome else available[0]


def card_from_tags(tags: Mapping[str, Any] | None, name: str) -> str:
    """The card of a metric row: its `tau.metric.card` tag when it names a card, else by name."""
    card = (tags or {}).get(CARD_TAG)
    return card if isinstance(card, str) and card in CARD_ORDER else card_of(name)
