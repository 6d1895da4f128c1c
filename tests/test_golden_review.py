"""Goldens of `tau run --diff` (text, markdown, json) and `tau run --render --check`.

One scenario, built in a scratch Git repository: at HEAD a Ray training run, three CPU Jobs
and their checked-in renders; in the work tree the training run takes fewer GPUs per worker, a
newer image, one more env var and an edited script, one Job is gone, one is new and one no
longer renders. golden/review/<file> is the exact stdout (`make golden` rewrites it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.golden_plugin import assert_golden
from tests.test_review_revision import JOB, Repo, tau

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "review"

TRAIN = """\
name: train
engine: rayjob
entrypoint: train.py
runtime:
  image: ghcr.io/acme/ray:2.56.0
  env:
    EPOCHS: "3"
  env_secret:
    HF_TOKEN: "hf-credentials:token"
compute:
  workers: 2
  gpus_per_worker: 8
policy:
  preset: azure.research.training.xl
"""
SCRIPT = """\
import os

for epoch in range(int(os.environ["EPOCHS"])):
    print({"epoch": epoch})
"""


@pytest.fixture
def scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    repo = Repo(tmp_path)
    repo.write("tau/train.yaml", TRAIN)
    repo.write("tau/train.py", SCRIPT)
    for name in ("eval", "old", "broken"):
        repo.job(name)
    assert tau(capsys, "run", "--render", "--all")[0] == 0
    repo.commit("base")
    repo.write(
        "tau/train.yaml",
        TRAIN.replace("gpus_per_worker: 8", "gpus_per_worker: 4")
        .replace("2.56.0", "2.57.0")
        .replace('EPOCHS: "3"', 'EPOCHS: "3"\n    LR: "0.1"'),
    )
    repo.write("tau/train.py", SCRIPT.replace('{"epoch": epoch}', '{"epoch": epoch, "lr": 0.1}'))
    (tmp_path / "tau/old.yaml").unlink()
    repo.job("new")
    repo.write("tau/broken.yaml", JOB.format(name="broken").replace("gpus: 0", "gpus: many"))
    return repo


@pytest.mark.parametrize(
    ("output", "golden"),
    [("text", "diff.txt"), ("markdown", "diff.md"), ("json", "diff.json")],
)
def test_diff_against_head_in_each_output_format(
    scenario: Repo,
    capsys: pytest.CaptureFixture[str],
    update_golden: bool,
    output: str,
    golden: str,
) -> None:
    code, out, err = tau(capsys, "run", "--diff", "--all", "-o", output)
    assert (code, err) == (1, "")
    assert_golden(out, GOLDEN / golden, update_golden)


def test_render_check_on_the_same_change(
    scenario: Repo, capsys: pytest.CaptureFixture[str], update_golden: bool
) -> None:
    code, out, err = tau(capsys, "run", "--render", "--all", "--check")
    assert code == 1
    assert_golden(f"{out}--- stderr\n{err}", GOLDEN / "render-check.txt", update_golden)
