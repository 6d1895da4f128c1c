"""Which evidence card a metric belongs to, and which metric a chart shows first. Pure.

The rules live with the store (`tau.portal.store.cards`), whose importer writes the card as a
metric tag and whose `compare` picks the default metric; Stellar uses them from here.
"""

from __future__ import annotations

from tau.portal.store.cards import CARD_ORDER, RUN_STATUS_METRIC, card_of, default_metric

__all__ = ["CARD_ORDER", "RUN_STATUS_METRIC", "card_of", "default_metric"]
