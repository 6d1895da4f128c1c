"""The Kubernetes name grammars are written once, in tau.k8s.names, and mean what the API means."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tau.k8s import names

SRC = Path(__file__).resolve().parents[1] / "src" / "tau"
# The distinctive core of each grammar as it would be spelled in a regex literal.
GRAMMAR_SPELLINGS = ("[-a-z0-9]*[a-z0-9]", "[-A-Za-z0-9_.]*[A-Za-z0-9]", "[A-Za-z_][A-Za-z0-9_]*$")


def test_name_grammars_are_spelled_only_in_the_vocabulary_module() -> None:
    offenders = [
        f"{path.relative_to(SRC)}: {spelling}"
        for path in SRC.rglob("*.py")
        if path.name != "names.py" or path.parent.name != "k8s"
        for spelling in GRAMMAR_SPELLINGS
        if spelling in path.read_text()
    ]
    assert offenders == []


@pytest.mark.parametrize(
    ("pattern", "good", "bad"),
    [
        (names.DNS_1123_LABEL, ["a", "train-1", "0x"], ["-a", "a-", "A", "a.b", ""]),
        (names.DNS_1123_SUBDOMAIN, ["a.b", "my-secret.v1"], ["a..b", ".a", "A.b"]),
        (names.DNS_1035_LABEL, ["svc", "a-1"], ["1svc", "svc-", "Svc"]),
        (names.ENV_NAME, ["HF_TOKEN", "_x1"], ["1X", "A-B", ""]),
        (names.SECRET_KEY, ["token", ".env", "a_b-c.d"], ["a/b", "", "a b"]),
        (names.LABEL_VALUE, ["", "v1.2_x", "A"], ["-v", "v-", "a b"]),
        (names.LABEL_NAME, ["gpu-class", "a.b_c"], ["", "-x"]),
    ],
)
def test_grammars_accept_and_reject_as_the_api_does(
    pattern: re.Pattern[str], good: list[str], bad: list[str]
) -> None:
    assert [v for v in good if not pattern.match(v)] == []
    assert [v for v in bad if pattern.match(v)] == []
