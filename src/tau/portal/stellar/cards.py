"""Which metric a chart shows first, and the card rules (from the store's vocabulary). Pure."""

from __future__ import annotations

from collections.abc import Iterable

# The name rules live with the store, whose importer writes them as metric tags.
from tau.portal.store.cards import CARD_ORDER, RUN_STATUS_METRIC, card_of

__all__ = ["CARD_ORDER", "RUN_STATUS_METRIC", "card_of", "default_metric"]

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
