"""Kubernetes resource quantities ("500m", "16Gi", "2"): syntax check and comparison. Pure."""

from __future__ import annotations

import re
from decimal import Decimal

_QUANTITY = re.compile(
    r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))"  # the number
    r"(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E))?$"  # exponent or suffix
)
_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


def parse_quantity(text: str) -> Decimal | None:
    """The value of a quantity in base units, or None when it is not a quantity."""
    match = _QUANTITY.match(text.strip()) if text.strip() == text else None
    if match is None:
        return None
    number = Decimal(match.group(1))
    if match.group(2):
        return number * (Decimal(10) ** int(match.group(2)[1:]))
    return number * _SUFFIX[match.group(3) or ""]
