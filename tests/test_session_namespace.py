"""A namespace that cannot exist is bad input, named before tau reads any kubeconfig."""

from __future__ import annotations

import pytest

from tau.cli import main
from tau.errors import UsageError
from tau.session import check_namespace


@pytest.mark.parametrize("name", ["team-a", "a", "x" * 63, None])
def test_a_valid_namespace_passes(name: str | None) -> None:
    check_namespace(name)


@pytest.mark.parametrize("name", ["Bad_NS", "-lead", "trail-", "a.b", "x" * 64, ""])
def test_an_impossible_namespace_is_refused(name: str) -> None:
    with pytest.raises(UsageError, match="is not a valid namespace name"):
        check_namespace(name)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "list", "-n", "Bad_NS"],
        ["run", "status", "train", "-n", "Bad_NS"],
        ["serve", "status", "chat", "-n", "Bad_NS"],
    ],
)
def test_commands_refuse_it_before_connecting(argv, capsys, monkeypatch, tmp_path) -> None:
    # No kubeconfig at all: the namespace error must come first.
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main([*argv, "--context", "nowhere"]) == 1
    err = capsys.readouterr().err
    assert 'namespace "Bad_NS" is not a valid namespace name' in err
    assert "kubeconfig" not in err
