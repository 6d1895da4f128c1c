"""`tau run --diff --against REV`: renders from a Git revision without touching the work tree.

Also home of `Repo`, the scratch Git repository the review tests build their targets in.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tau.cli import main
from tau.errors import UsageError
from tau.review import against, revision
from tests.projects_helpers import monorepo

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}

JOB = """\
name: {name}
engine: job
entrypoint: {name}.py
runtime:
  image: ghcr.io/acme/train:1.0
  env:
    EPOCHS: "3"
compute:
  gpus: 0
"""


class Repo:
    """A Git repository in a temporary folder: write files, commit, run git."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(self.root), *args],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **GIT_ENV},
        )
        return done.stdout

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def job(self, name: str, folder: str = "") -> None:
        """A CPU Job target tau/NAME.yaml with its entrypoint (under `folder`)."""
        self.write(f"{folder}tau/{name}.yaml", JOB.format(name=name))
        self.write(f"{folder}tau/{name}.py", f"print('{name}')\n")

    def commit(self, message: str = "change") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    return Repo(tmp_path)


def tau(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_unchanged_target_exits_0(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.job("train")
    repo.commit()
    assert tau(capsys, "run", "--diff", "train") == (
        0,
        "no change (1 target, HEAD → work tree)\n",
        "",
    )


def test_a_change_in_the_work_tree_exits_1_and_names_the_field(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.commit()
    repo.write("tau/train.yaml", JOB.format(name="train").replace('"3"', '"5"'))
    code, out, err = tau(capsys, "run", "--diff", "train")
    assert code == 1 and err == ""
    assert 'spec.template.spec.containers[main].env[EPOCHS].value: "3" → "5"' in out


def test_the_work_tree_index_and_head_are_untouched(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.commit()
    repo.write("tau/train.py", "print('edited')\n")
    repo.write("untracked.txt", "x\n")
    repo.git("add", "tau/train.py")
    repo.write("tau/train.py", "print('edited again')\n")
    before = (repo.git("status", "--porcelain"), repo.git("rev-parse", "HEAD"))
    files = {
        p: p.read_bytes() for p in repo.root.rglob("*") if p.is_file() and ".git" not in p.parts
    }
    assert tau(capsys, "run", "--diff", "train")[0] == 1
    assert (repo.git("status", "--porcelain"), repo.git("rev-parse", "HEAD")) == before
    assert {p: p.read_bytes() for p in files} == files
    assert repo.git("diff", "--cached", "--name-only") == "tau/train.py\n"


def test_a_target_that_did_not_exist_at_the_revision_is_added(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.commit()
    repo.job("eval")
    code, out, _ = tau(capsys, "run", "--diff", "eval")
    assert code == 1
    assert out.splitlines()[:2] == ["eval: new target (not in HEAD)", "  + Job/eval"]
    code, out, _ = tau(capsys, "run", "--diff", "--all")
    assert code == 1 and "1 of 2 targets changed" in out


def test_a_target_removed_since_the_revision_is_removed(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.job("old")
    repo.commit()
    (repo.root / "tau/old.yaml").unlink()
    code, out, _ = tau(capsys, "run", "--diff", "old")
    assert code == 1
    assert out.splitlines()[:2] == ["old: target removed (not in work tree)", "  - Job/old"]


def test_an_older_revision_is_read_by_name(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.job("train")
    repo.commit("first")
    repo.write("tau/train.yaml", JOB.format(name="train").replace("1.0", "2.0"))
    repo.commit("second")
    assert tau(capsys, "run", "--diff", "train")[0] == 0
    code, out, _ = tau(capsys, "run", "--diff", "train", "--against", "HEAD~1")
    assert code == 1 and "image tag" in out and "(HEAD~1 → work tree)" in out


def test_a_target_that_fails_to_render_at_the_revision_shows_that_sides_located_error(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.write("tau/train.yaml", JOB.format(name="train") + "compute:\n  gpus: 1\n")
    repo.write("tau/train.py", "print(1)\n")
    repo.commit()
    repo.job("train")
    code, out, err = tau(capsys, "run", "--diff", "train")
    assert code == 1 and err == "" and "Traceback" not in out
    lines = out.splitlines()
    assert lines[0] == "train: does not render (HEAD)"
    assert lines[1] == "  at HEAD:"
    assert lines[2].startswith("    HEAD:tau/train.yaml:10:1: error:")
    assert "tau-review-" not in out  # the scratch directory never shows


def test_a_target_that_fails_to_render_in_the_work_tree_names_its_file(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.commit()
    (repo.root / "tau/train.py").unlink()
    code, out, _ = tau(capsys, "run", "--diff", "train", "-o", "json")
    assert code == 1
    assert '"status": "error"' in out and '"side": "work tree"' in out
    assert "tau/train.yaml" in out and "train.py" in out


def test_an_unknown_revision_is_a_usage_error(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.commit()
    code, out, err = tau(capsys, "run", "--diff", "train", "--against", "origin/main")
    assert (code, out) == (1, "")
    assert err.startswith('error: --against "origin/main": no such commit in ')
    assert "git fetch origin main" in err


def test_outside_git_the_against_mode_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="not inside a Git work tree"):
        revision.git_root(tmp_path)


def test_all_covers_every_project_of_a_monorepo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    root = monorepo(tmp_path)
    repo = Repo.__new__(Repo)
    repo.root = root
    repo.commit()
    repo.job("segment", "projects/vision/")
    result = against.review([], root / "projects/language", "HEAD", {})
    assert [(t.target, t.op) for t in result.targets] == [
        ("language/eval", "unchanged"),
        ("language/train", "unchanged"),
        ("vision/detect", "unchanged"),
        ("vision/segment", "added"),
        ("vision/train", "unchanged"),
    ]


def test_the_tree_keeps_modes_symlinks_and_stands_in_for_large_blobs(repo: Repo) -> None:
    script = repo.write("run.sh", "#!/bin/sh\n")
    script.chmod(0o755)
    os.symlink("run.sh", repo.root / "link.sh")
    big = repo.root / "big.bin"
    big.write_bytes(b"\1" * (revision.LARGE_BLOB + 1))
    repo.commit()
    dest = repo.root.parent / "out"
    dest.mkdir()
    revision.write_tree(repo.root, revision.commit_of(repo.root, "HEAD"), dest)
    assert (dest / "run.sh").read_text() == "#!/bin/sh\n"
    assert os.access(dest / "run.sh", os.X_OK)
    assert os.readlink(dest / "link.sh") == "run.sh"
    assert (dest / "big.bin").stat().st_size == revision.LARGE_BLOB + 1
