"""`tau run --render`: one deterministic file per target, and `--check` as a CI gate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.projects_helpers import monorepo
from tests.test_review_revision import JOB, Repo, repo, tau

__all__ = ["repo"]  # the fixture, used by name

SECRET_JOB = JOB.replace("  env:\n", "  env_secret:\n    HF_TOKEN: hf-credentials:token\n  env:\n")


def test_render_writes_one_file_per_target_under_tau_rendered(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.job("eval")
    code, out, err = tau(capsys, "run", "--render", "--all")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "wrote tau/rendered/eval.yaml",
        "wrote tau/rendered/train.yaml",
        "2 targets rendered, 2 files written",
    ]
    text = (repo.root / "tau/rendered/train.yaml").read_text()
    assert text.startswith("# Rendered by `tau run --render` from tau/train.yaml; do not edit.\n")
    [job] = [d for d in yaml.safe_load_all(text) if d]
    assert (job["kind"], job["metadata"]["name"]) == ("Job", "train")
    assert tau(capsys, "run", "--render", "--all")[1].splitlines() == [
        "2 targets rendered, 0 files written"
    ]


def test_a_render_is_the_client_render_without_provenance_and_with_secrets_redacted(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.write("tau/train.yaml", SECRET_JOB.format(name="train"))
    repo.commit()
    assert tau(capsys, "run", "--render", "train")[0] == 0
    text = (repo.root / "tau/rendered/train.yaml").read_text()
    code, preview, _ = tau(capsys, "run", "train", "--dry-run=client")
    assert code == 0
    body = text.split("\n", 2)[2]
    dropped = [line for line in preview.splitlines() if line not in body.splitlines()]
    assert [line.split(":")[0].strip() for line in dropped] == [
        "tau.azure.com/code-sha",
        "tau.azure.com/tau-command",
    ]
    assert "hf-credentials" not in text and "<redacted>" in text
    assert "<unresolved-namespace>" in text or "<unresolved-service-account>" in text


def test_a_render_is_byte_identical_across_runs_and_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = []
    for place in ("one", "two/deeper"):
        root = tmp_path / place
        r = Repo.__new__(Repo)
        r.root = root
        root.mkdir(parents=True)
        r.job("train")
        r.write("tau/train.yaml", SECRET_JOB.format(name="train"))
        monkeypatch.chdir(root)
        assert tau(capsys, "run", "--render", "train")[0] == 0
        texts.append((root / "tau/rendered/train.yaml").read_bytes())
    # A fresh interpreter (no cache, another process) renders the same bytes too.
    subprocess.run(
        [sys.executable, "-m", "tau", "run", "--render", "train", "--out", str(tmp_path / "x")],
        cwd=tmp_path / "one",
        check=True,
        capture_output=True,
    )
    texts.append((tmp_path / "x/train.yaml").read_bytes())
    assert texts[0] == texts[1] == texts[2]


def test_check_on_fresh_renders_exits_0_and_writes_nothing(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    tau(capsys, "run", "--render", "--all")
    stamp = (repo.root / "tau/rendered/train.yaml").stat().st_mtime_ns
    assert tau(capsys, "run", "--render", "--all", "--check") == (0, "1 renders fresh\n", "")
    assert (repo.root / "tau/rendered/train.yaml").stat().st_mtime_ns == stamp


def test_check_on_a_stale_render_exits_1_with_the_semantic_diff_and_writes_nothing(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    tau(capsys, "run", "--render", "train")
    before = (repo.root / "tau/rendered/train.yaml").read_text()
    repo.write("tau/train.yaml", JOB.format(name="train").replace('"3"', '"4"'))
    code, out, err = tau(capsys, "run", "--render", "train", "--check")
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "stale: tau/rendered/train.yaml (train)",
        "  Job/train",
        '    spec.template.spec.containers[main].env[EPOCHS].value: "3" → "4"',
        "1 of 1 renders stale",
    ]
    assert (repo.root / "tau/rendered/train.yaml").read_text() == before


def test_check_finds_a_missing_file_and_a_file_no_target_renders(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.write("tau/rendered/gone.yaml", "kind: Job\n")
    code, out, _ = tau(capsys, "run", "--render", "--all", "--check")
    assert code == 1
    assert out.splitlines() == [
        "stale: tau/rendered/train.yaml (train)",
        "  missing: run `tau run --render train` to write it",
        "stale: tau/rendered/gone.yaml (gone)",
        "  no target renders this file any more: delete it",
        "2 of 2 renders stale",
    ]
    code, out, _ = tau(capsys, "run", "--render", "--all")
    assert "removed tau/rendered/gone.yaml (no target renders it)" in out
    assert not (repo.root / "tau/rendered/gone.yaml").exists()
    assert tau(capsys, "run", "--render", "--all", "--check")[0] == 0


def test_a_reformatted_file_with_the_same_objects_is_stale_in_form_only(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    tau(capsys, "run", "--render", "train")
    path = repo.root / "tau/rendered/train.yaml"
    path.write_text(yaml.safe_dump_all(yaml.safe_load_all(path.read_text())))
    code, out, _ = tau(capsys, "run", "--render", "train", "--check")
    assert code == 1 and "  only the file's layout differs" in out.splitlines()


def test_a_target_that_does_not_render_is_reported_and_the_others_still_written(
    repo: Repo, capsys: pytest.CaptureFixture[str]
) -> None:
    repo.job("train")
    repo.write("tau/bad.yaml", "name: bad\nengine: job\ncompute: {gpus: x}\n")
    code, out, err = tau(capsys, "run", "--render", "--all")
    assert code == 1 and "Traceback" not in err
    assert err.startswith("bad: does not render\n  tau/bad.yaml:")
    assert "wrote tau/rendered/train.yaml" in out
    assert not (repo.root / "tau/rendered/bad.yaml").exists()


def test_out_folder_and_monorepo_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    root = monorepo(tmp_path)
    code, out, _ = tau(capsys, "run", "--render", "--all")
    assert code == 0
    assert out.splitlines() == [
        "wrote projects/language/tau/rendered/eval.yaml",
        "wrote projects/language/tau/rendered/train.yaml",
        "wrote projects/vision/tau/rendered/detect.yaml",
        "wrote projects/vision/tau/rendered/train.yaml",
        "4 targets rendered, 4 files written",
    ]
    assert tau(capsys, "run", "--render", "--all", "--out", "r")[0] == 0
    assert sorted(p.relative_to(root / "r").as_posix() for p in (root / "r").rglob("*.yaml")) == [
        "language/eval.yaml",
        "language/train.yaml",
        "vision/detect.yaml",
        "vision/train.yaml",
    ]
    code, out, _ = tau(capsys, "run", "--render", "--all", "--project", "vision", "--check")
    assert (code, out) == (0, "2 renders fresh\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--render"], "error: name the targets or pass --all"),
        (["run", "--render", "train", "--all"], "error: pass TARGET names or --all, not both"),
        (["run", "--diff"], "error: name the targets or pass --all"),
        (["run", "--render", "--all"], "error: --all found no targets: no tau/NAME.yaml in "),
        (["run", "--diff", "x", "--live", "--against", "HEAD"], "error: --against and --live"),
    ],
)
def test_bad_selections_are_one_line_errors(
    repo: Repo, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = tau(capsys, *argv)
    assert (code, out) == (1, "")
    assert err.startswith(message)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--check"], "error: --check belongs to --render\n"),
        (["--render", "--diff", "train"], "error: --render and --diff are two reviews; pass one\n"),
        (["--render", "--live", "train"], "error: --live belongs to --diff, not --render\n"),
        (["--diff", "--out", "x", "train"], "error: --out belongs to --render, not --diff\n"),
        (["--render", "--dry-run=client", "train"], "error: --dry-run submits or previews"),
        (["--render", "-o", "json", "train"], "error: --output belongs to --dry-run and --diff"),
        (["--render", "-n", "team", "train"], "error: --namespace does nothing with --render"),
        (["--diff", "--service-account", "sa", "train"], "error: --service-account does nothing"),
        (["train", "eval"], "error: tau run takes one TARGET, got 2: train eval\n"),
    ],
)
def test_review_flags_out_of_place_are_usage_errors(
    repo: Repo, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    repo.job("train")
    code, out, err = tau(capsys, "run", *argv)
    assert (code, out) == (1, "") and err.startswith(message)
