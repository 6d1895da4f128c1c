"""Ctrl-C during a command: one plain line and exit 130 from both CLIs, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.cli import main as tau_main
from tau.intent import load
from tau.portal.cli import main as portal_main


def _interrupt(*_args: object, **_kwargs: object) -> None:
    raise KeyboardInterrupt


def test_tau_says_interrupted_and_exits_130(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "tau.yaml").write_text("name: demo\nengine: job\nentrypoint: train.py\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load, "parse", _interrupt)
    assert tau_main(["run", "validate", "--config", "tau.yaml"]) == 130
    err = capsys.readouterr().err
    assert err == "error: interrupted\n"


def test_the_portal_says_interrupted_and_exits_130(tmp_path: Path, monkeypatch, capsys) -> None:
    from tau.portal.store import resolve

    monkeypatch.setattr(resolve, "resolve_root", _interrupt)
    code = portal_main(["experiment", "list", "--store", str(tmp_path / "store")])
    assert code == 130
    assert capsys.readouterr().err == "error: interrupted\n"


@pytest.mark.parametrize("main", [tau_main, portal_main])
def test_help_is_not_affected(main, capsys) -> None:
    assert main(["--help"]) == 0
    assert "Usage:" in capsys.readouterr().out
