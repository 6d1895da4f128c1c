"""Kubernetes resource quantities compared by value: `1000m` is `1`, `1Gi` is `1024Mi`.

Pure. The API server stores a quantity in its canonical form (`1024Mi` comes back as `1Gi`,
`1000m` as `1`), so a live object and a render only agree when quantities are read as numbers.
The grammar is the one tau.k8s.quantity already reads for validation; this adds what a
rendered or live value can also be: a bare number, or a string with surrounding spaces.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tau.k8s.quantity import parse_quantity


def parse(value: Any) -> Decimal | None:
    """The value of a quantity (a string such as `500m` or a number), or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(value)
    if not isinstance(value, str):
        return None
    return parse_quantity(value.strip())


def same(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are the same quantity (both must parse)."""
    left, right = parse(a), parse(b)
    return left is not None and left == right
