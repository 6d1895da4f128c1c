"""Kubernetes resource quantities compared by value: `1000m` is `1`, `1Gi` is `1024Mi`.

Pure. The API server stores a quantity in its canonical form (`1024Mi` comes back as `1Gi`,
`1000m` as `1`), so a live object and a render only agree when quantities are read as numbers.
The grammar is the API's: a signed decimal number, then a binary suffix (Ki Mi Gi Ti Pi Ei), a
decimal one (n u m k M G T P E) or an exponent (`e3`, `E-2`).
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

_NUMBER = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")
_SUFFIX: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


def parse(value: Any) -> Fraction | None:
    """The value of a quantity (a string such as `500m` or a number), or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Fraction(value)
    if not isinstance(value, str):
        return None
    match = _NUMBER.match(value.strip())
    if match is None:
        return None
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix in _SUFFIX:
        return number * _SUFFIX[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is None:
        return None
    return number * Fraction(10) ** int(exponent.group(1))


def same(a: Any, b: Any) -> bool:
    """Whether `a` and `b` are the same quantity (both must parse)."""
    left, right = parse(a), parse(b)
    return left is not None and left == right
