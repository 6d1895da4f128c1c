"""Quantities compare by value, with the API's grammar (tau.review.quantity)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tau.review import quantity


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1000m", "1"),
        ("1", 1),
        ("0.5", "500m"),
        ("1Gi", "1024Mi"),
        ("1Mi", "1024Ki"),
        ("1k", "1000"),
        ("1e3", "1k"),
        ("1E-3", "1m"),
        ("2G", "2000M"),
        ("1500u", "1.5m"),
        ("+1", "1"),
        (".5", "500m"),
    ],
)
def test_equal_values_in_other_units_are_the_same_quantity(a: object, b: object) -> None:
    assert quantity.same(a, b)
    assert quantity.same(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [("1Gi", "1G"), ("1", "2"), ("100m", "1"), ("1Ki", "1k"), ("8", "4")],
)
def test_different_values_are_different_quantities(a: str, b: str) -> None:
    assert not quantity.same(a, b)


@pytest.mark.parametrize("text", ["", "abc", "1Xi", "1.2.3", "Gi", "1 Gi", "1e", True, None, [1]])
def test_what_is_not_a_quantity_parses_to_none_and_is_never_the_same(text: object) -> None:
    assert quantity.parse(text) is None
    assert not quantity.same(text, text)


def test_parse_gives_the_exact_value() -> None:
    assert quantity.parse("1.5Gi") == Fraction(3 * 2**29)
    assert quantity.parse("250m") == Fraction(1, 4)
    assert quantity.parse("-2") == -2
