"""Lifecycle flags that cannot mean anything are refused before tau connects anywhere."""

from __future__ import annotations

import pytest

from tau.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "cancel", "train", "--timeout", "-1"], "--timeout -1 must be a positive"),
        (["run", "cancel", "train", "--timeout", "0"], "--timeout 0 must be a positive"),
        (["run", "cancel", "train", "--timeout", "nan"], "--timeout nan must be a positive"),
        (["run", "logs", "train", "--tail", "-5"], "--tail -5 must be -1 (every line)"),
    ],
)
def test_a_meaningless_value_is_named(argv, message, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main([*argv, "-n", "team", "--context", "nowhere"]) == 1
    err = capsys.readouterr().err
    assert message in err and "kubeconfig" not in err and "Traceback" not in err
