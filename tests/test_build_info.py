"""What tau says it is: `tau version` / `tau --version` from the build's record (hatch_build.py),
or from Git in a source checkout; and `make dist`, the user install the README documents.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import tau
from tau import build_info
from tau.cli import main

ROOT = Path(__file__).resolve().parents[1]
Cap = pytest.CaptureFixture[str]


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_version_flag_and_command_print_the_same_three_lines(capsys: Cap) -> None:
    assert main(["version"]) == 0
    command = capsys.readouterr().out
    assert main(["--version"]) == 0
    flag = capsys.readouterr().out
    assert command == flag
    first, commit, built = command.splitlines()
    assert first == f"tau {tau.__version__}"
    # This checkout has no build record: the commit is Git's, the date says it was not built.
    head = _git(ROOT, "rev-parse", "HEAD")
    assert commit in (f"  commit: {head}", f"  commit: {head}+dirty")
    assert built == "  built:  not built (a source checkout)"


def test_a_built_tau_prints_its_record(monkeypatch: pytest.MonkeyPatch, capsys: Cap) -> None:
    record = types.ModuleType("tau._build_info")
    record.COMMIT = "0123456789abcdef0123456789abcdef01234567"  # type: ignore[attr-defined]
    record.BUILT = "2026-12-01T10:00:00Z"  # type: ignore[attr-defined]
    record.SOURCE = "https://git.example/team/tau.git"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tau._build_info", record)
    monkeypatch.setattr(tau, "_build_info", record, raising=False)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == (
        f"tau {tau.__version__}\n  commit: 0123456789abcdef0123456789abcdef01234567\n"
        "  built:  2026-12-01T10:00:00Z\n"
    )
    assert build_info.recorded_source() == "https://git.example/team/tau.git"


def _hook_module(monkeypatch: pytest.MonkeyPatch) -> Any:
    """hatch_build.py with a stand-in for hatchling's hook base class (a build dependency, not a
    development one): the hook's own logic is what is under test.
    """

    class BuildHookInterface:
        def __init__(self, root: str, target_name: str) -> None:
            self.root, self.target_name = root, target_name

    for name in ("hatchling", "hatchling.builders", "hatchling.builders.hooks",
                 "hatchling.builders.hooks.plugin"):  # fmt: skip
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    interface = types.ModuleType("hatchling.builders.hooks.plugin.interface")
    interface.BuildHookInterface = BuildHookInterface  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, interface.__name__, interface)
    spec = importlib.util.spec_from_file_location("hatch_build_under_test", ROOT / "hatch_build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checkout(path: Path) -> str:
    path.mkdir()
    origin = ["remote", "add", "origin", "https://git.example/t.git"]
    user = (["config", "user.email", "t@x"], ["config", "user.name", "t"])
    for args in (["init", "-q"], *user, origin):
        _git(path, *args)
    (path / "f").write_text("x\n")
    _git(path, "add", "f")
    _git(path, "commit", "-qm", "one")
    return _git(path, "rev-parse", "HEAD")


def test_the_build_hook_records_commit_date_and_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _hook_module(monkeypatch)
    head = _checkout(tmp_path / "repo")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1764583200")
    for target, where in (("wheel", "tau/_build_info.py"), ("sdist", "src/tau/_build_info.py")):
        data: dict[str, Any] = {"force_include": {}}
        hook.CustomBuildHook(str(tmp_path / "repo"), target).initialize("standard", data)
        [(written, destination)] = data["force_include"].items()
        assert destination == where
        values: dict[str, Any] = {}
        exec(Path(written).read_text(), values)
        assert (values["COMMIT"], values["BUILT"], values["SOURCE"]) == (
            head, "2025-12-01T10:00:00Z", "https://git.example/t.git"
        )  # fmt: skip
    (tmp_path / "repo" / "f").write_text("changed\n")
    data = {"force_include": {}}
    hook.CustomBuildHook(str(tmp_path / "repo"), "wheel").initialize("standard", data)
    assert f"COMMIT = '{head}+dirty'" in Path(next(iter(data["force_include"]))).read_text()


def test_a_wheel_from_an_sdist_keeps_the_sdist_record_and_editable_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = _hook_module(monkeypatch)
    unpacked = tmp_path / "tau-0.1.0"
    kept = unpacked / "src" / "tau" / "_build_info.py"
    kept.parent.mkdir(parents=True)
    kept.write_text("COMMIT = 'abc'\nBUILT = 'then'\nSOURCE = ''\n")
    data: dict[str, Any] = {"force_include": {}}
    hook.CustomBuildHook(str(unpacked), "wheel").initialize("standard", data)
    assert data["force_include"] == {str(kept): "tau/_build_info.py"}
    data = {"force_include": {}}
    hook.CustomBuildHook(str(tmp_path), "wheel").initialize("editable", data)
    assert data["force_include"] == {}


def test_make_dist_builds_wheel_sdist_and_their_checksums() -> None:
    recipe = subprocess.run(["make", "-n", "dist"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout  # fmt: skip
    assert "-m build --outdir dist ." in recipe
    assert "sha256sum *.whl *.tar.gz > SHA256SUMS" in recipe


def test_every_upgrade_hint_names_this_projects_install() -> None:
    from tau.connection.version import upgrade_hint

    hint = upgrade_hint("9.2.0")
    assert "pipx install --force tau-9.2.0-py3-none-any.whl" in hint
    assert "pip install --upgrade 'tau @ git+<tau's repository URL>'" in hint
    assert "git+https://git.example/t.git'" in upgrade_hint("9.2.0", "https://git.example/t.git")
    # Neither the Go project's installer nor a `tau` of the public index (another project).
    texts = [p.read_text() for p in (ROOT / "src").rglob("*.py")]
    texts += [(ROOT / "README.md").read_text()]
    texts += [p.read_text() for p in (ROOT / "examples").rglob("*.yaml")]
    for text in texts:
        assert "install.sh | sh" not in text
        assert "tau==" not in text and "pip install tau\n" not in text
