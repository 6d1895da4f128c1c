"""A filesystem failure is one located line and exit 1 in both CLIs, never a traceback."""

from __future__ import annotations

from pathlib import Path

from tau.cli import main as tau_main
from tau.intent import load
from tau.portal.cli import main as portal_main
from tests.portal_capture_seed import new_store


def _denied(path: object, *_args: object, **_kwargs: object) -> None:
    raise PermissionError(13, "Permission denied", str(path))


def test_tau_names_the_file_it_could_not_use(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "tau.yaml").write_text("name: demo\nengine: job\nentrypoint: train.py\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load, "parse", lambda *_a, **_k: _denied("/locked/tau.yaml"))
    assert tau_main(["run", "validate", "--config", "tau.yaml"]) == 1
    assert capsys.readouterr().err == "error: Permission denied: /locked/tau.yaml\n"


def test_export_to_a_directory_that_cannot_exist_names_out(tmp_path: Path, capsys) -> None:
    store = new_store(tmp_path, capsys)
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    for argv in (["export"], ["export", "adx"]):
        code = portal_main(
            ["experiment", *argv, "--out", str(blocker / "out"), "--store", str(store)]
        )
        err = capsys.readouterr().err
        assert code == 1 and f'--out "{blocker / "out"}": cannot create the directory' in err
        assert "Traceback" not in err


def test_the_portal_names_the_file_it_could_not_use(tmp_path: Path, monkeypatch, capsys) -> None:
    from tau.portal.store import resolve

    monkeypatch.setattr(resolve, "resolve_root", lambda *_a, **_k: _denied("/locked/store"))
    assert portal_main(["experiment", "list", "--store", str(tmp_path)]) == 1
    assert capsys.readouterr().err == "error: Permission denied: /locked/store\n"


def test_a_closed_stdout_pipe_ends_both_clis_quietly(tmp_path: Path, monkeypatch, capsys) -> None:
    # `tau … | head`: the reader has what it wanted; no error line, exit 0.
    def closed(*_a: object, **_k: object) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    (tmp_path / "tau.yaml").write_text("name: demo\nengine: job\nentrypoint: train.py\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load, "parse", closed)
    assert tau_main(["run", "validate", "--config", "tau.yaml"]) == 0
    from tau.portal.store import resolve

    monkeypatch.setattr(resolve, "resolve_root", closed)
    assert portal_main(["experiment", "list", "--store", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""
