"""The README's first steps as a new user meets them (issue: what a new user still finds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
README = (ROOT / "README.md").read_text()


def test_the_local_python_example_leaves_nothing_in_the_work_tree(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(EXAMPLES / "python" / "regression.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "'mse'" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no checkpoints/ where it was run


@pytest.mark.parametrize(
    ("target", "placeholders"),
    [
        ("train", {"<unresolved-service-account>"}),
        ("sft", {"<unresolved-namespace>", "<unresolved-queue>", "<unresolved-service-account>"}),
    ],
)
def test_the_placeholders_the_readme_describes(
    monkeypatch: pytest.MonkeyPatch, capsys, target: str, placeholders: set[str]
) -> None:
    import re

    monkeypatch.chdir(EXAMPLES)
    assert main(["run", target, "--dry-run=client"]) == 0
    out = capsys.readouterr().out
    assert set(re.findall(r"<unresolved-[a-z-]+>", out)) == placeholders
    for placeholder in placeholders:
        assert f"`{placeholder}`" in README
    if target == "train":
        assert "namespace: taugrid-default" in out and "queue-name: jobqueue" in out
        assert "(`taugrid-default`) and queue (`jobqueue`)" in README


def test_the_example_connection_says_its_values_are_placeholders() -> None:
    text = (EXAMPLES / "tau" / "workspace.connection.yaml").read_text()
    assert "placeholders" in text and "make cluster-up" in text
    assert "ends in an Azure sign-in failure" in README


def test_the_aks_extra_hint_names_this_projects_install() -> None:
    from tau.build_info import extra_install_hint

    hint = extra_install_hint("aks")
    assert "`tau[aks]`" in hint and "pip install 'tau[aks] @ git+" in hint
    assert "pip install 'tau[aks]'`" not in hint  # not the public index's tau
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "aks" in extras["optional-dependencies"]
