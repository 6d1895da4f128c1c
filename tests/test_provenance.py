"""Provenance annotations of a run: code-sha from Git (with -dirty), tau-command without secrets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from tau import provenance
from tau.cli import main
from tau.k8s import meta
from tests.test_cli_lifecycle import project  # noqa: F401  (fixture)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@e",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@e",
            "PATH": "/usr/bin:/bin",
            "HOME": str(repo),
        },
    )
    return done.stdout.strip()


def _commit_all(repo: Path) -> str:
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "initial")
    return _git(repo, "rev-parse", "HEAD")


def test_code_sha_is_head_and_dirty_only_for_changed_tracked_files(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    head = _commit_all(tmp_path)
    assert provenance.code_sha(tmp_path) == head
    (tmp_path / "untracked.txt").write_text("x\n")
    assert provenance.code_sha(tmp_path) == head
    (tmp_path / "a.txt").write_text("two\n")
    assert provenance.code_sha(tmp_path) == f"{head}-dirty"


def test_a_staged_change_a_deletion_and_a_detached_head_are_seen(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "b.txt").write_text("two\n")
    head = _commit_all(tmp_path)
    _git(tmp_path, "checkout", "-q", "--detach")
    assert provenance.code_sha(tmp_path) == head
    (tmp_path / "b.txt").unlink()
    assert provenance.code_sha(tmp_path) == f"{head}-dirty"
    _git(tmp_path, "checkout", "-q", "--", "b.txt")
    (tmp_path / "a.txt").write_text("changed\n")
    _git(tmp_path, "add", "a.txt")
    assert provenance.code_sha(tmp_path) == f"{head}-dirty"


def test_a_repository_without_a_commit_has_no_code_sha(tmp_path):
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    assert provenance.code_sha(tmp_path) is None


def test_outside_git_there_is_no_code_sha(tmp_path):
    assert provenance.code_sha(tmp_path) is None
    assert meta.ANNOTATION_CODE_SHA not in provenance.Provenance(None, "tau run").annotations()


def test_the_command_line_never_carries_a_secret():
    argv = [
        "run",
        "train",
        "--token",
        "s3cr3t",
        "--api-key=abc",
        "HF_TOKEN=hf_xyz",
        "--registry",
        "https://user:pass@example.com/x",
        "--namespace",
        "team a",
    ]
    line = provenance.command_line(argv)
    assert line == (
        "tau run train --token '<redacted>' '--api-key=<redacted>' 'HF_TOKEN=<redacted>' "
        "--registry 'https://<redacted>@example.com/x' --namespace 'team a'"
    )
    assert (
        "s3cr3t" not in line and "abc" not in line and "hf_xyz" not in line and "pass" not in line
    )


def test_a_submit_from_a_git_repository_records_commit_and_command(project, kube_api, capsys):  # noqa: F811
    head = _commit_all(project)
    assert main(["run", "eval", "-n", "team"]) == 0
    notes = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")["metadata"][
        "annotations"
    ]
    assert notes[meta.ANNOTATION_CODE_SHA] == head
    assert notes[meta.ANNOTATION_TAU_COMMAND] == "tau run eval -n team"


def test_client_dry_run_shows_the_dirty_mark_and_the_command(project, capsys):  # noqa: F811
    head = _commit_all(project)
    (project / "tau" / "eval.yaml").write_text(
        (project / "tau" / "eval.yaml").read_text() + "\n# edited\n"
    )
    assert main(["run", "eval", "--dry-run=client"]) == 0
    (job,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d["kind"] == "Job"]
    notes = job["metadata"]["annotations"]
    assert notes[meta.ANNOTATION_CODE_SHA] == f"{head}-dirty"
    assert notes[meta.ANNOTATION_TAU_COMMAND] == "tau run eval --dry-run=client"


def test_outside_git_a_dry_run_has_the_command_but_no_code_sha(project, capsys):  # noqa: F811
    assert main(["run", "eval", "--dry-run=client"]) == 0
    (job,) = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d["kind"] == "Job"]
    assert meta.ANNOTATION_CODE_SHA not in job["metadata"]["annotations"]
    assert meta.ANNOTATION_TAU_COMMAND in job["metadata"]["annotations"]
