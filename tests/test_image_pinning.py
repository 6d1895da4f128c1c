"""A floating runtime.image (`:latest`, or no tag) is warned about on validate and dry-run.

The reference accepts one (so tau does not refuse it), while `tau serve deploy` refuses the
same images; one rule (tau.k8s.images) decides both. The built-in smoke run's image is pinned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tau.k8s import images
from tau.plan.pod_parts import image_problem

ROOT = Path(__file__).resolve().parents[1]
Cap = pytest.CaptureFixture[str]


def config(image: str) -> str:
    return (
        "name: demo\nengine: job\nentrypoint: main.py\n"
        f"runtime:\n  image: {image}\n"
        "policy:\n  profile: cpu\ncompute:\n  gpus: 0\n"
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "main.py").write_text("print('hi')\n")
    return tmp_path


@pytest.mark.parametrize(
    ("image", "why"),
    [("python:latest", ":latest moves"), ("python", "it has no tag, so it means :latest")],
)
@pytest.mark.parametrize("command", ["validate", "dry-run"])
def test_a_floating_image_is_warned_about(
    project: Path, capsys: Cap, image: str, why: str, command: str
) -> None:
    (project / "tau.yaml").write_text(config(image))
    argv = ["run", "validate", "--config", "tau.yaml"]
    if command == "dry-run":
        argv = ["run", "--config", "tau.yaml", "--dry-run=client"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert (
        f'tau.yaml:5:10: warning: runtime.image "{image}" is not pinned: {why}; a retry, a '
        "resume or another node may run a different image than this submit\n"
        "  hint: pin a version tag (e.g. ghcr.io/org/server:1.4.2) or a digest (@sha256:...); "
        "tau run accepts it, as the reference does, and tau serve deploy refuses it\n"
    ) in err


@pytest.mark.parametrize(
    "image",
    [
        "python:3.12.7",
        "localhost:5000/python:3.12",
        "ghcr.io/acme/trainer@sha256:" + "0" * 64,
        "ghcr.io/acme/trainer:latest@sha256:" + "1" * 64,
    ],
)
def test_a_pinned_image_is_not(project: Path, capsys: Cap, image: str) -> None:
    (project / "tau.yaml").write_text(config(f'"{image}"'))
    assert main(["run", "validate", "--config", "tau.yaml"]) == 0
    assert "not pinned" not in capsys.readouterr().err


def test_a_managed_manifests_floating_image_is_warned_about_in_the_manifest(
    project: Path, capsys: Cap
) -> None:
    (project / "train.py").write_text("print('hi')\n")
    (project / "manifest.yaml").write_text(
        "schema_version: 1\nname: floaty\ncompute:\n  gpus: 0\nruntime:\n"
        '  pip: ["torch==2.4.0"]\n  image: rayproject/ray\n'
    )
    (project / "tau.yaml").write_text(
        "run:\n  entrypoint: train.py\npolicy:\n  namespace: team\n  queue: q\n"
        "workflow:\n  file: manifest.yaml\n"
    )
    assert main(["run", "--config", "tau.yaml", "--dry-run=client"]) == 0
    err = capsys.readouterr().err
    assert 'manifest.yaml:7:10: warning: runtime.image "rayproject/ray" is not pinned' in err
    assert err.count("is not pinned") == 1


def test_serve_deploy_keeps_refusing_the_same_images() -> None:
    assert image_problem("python:latest") is not None
    assert image_problem("python") is not None
    assert image_problem("python:3.12.7") is None
    assert images.floating("localhost:5000/python") == images.UNTAGGED
    # Not a reference at all: serve says so; the run's rule leaves it to the kubelet.
    assert image_problem("<pinned-image>") == (
        '--image "<pinned-image>" is not an image reference',
        "pin a version tag (e.g. ghcr.io/org/server:1.4.2) or a digest (@sha256:...)",
    )
    assert images.floating("<pinned-image>") is None


def test_the_smoke_runs_image_is_pinned(tmp_path: Path, monkeypatch, capsys: Cap) -> None:
    """Debian's dated tags are never rebuilt, unlike bookworm-slim; a digest would do too."""
    image = yaml.safe_load((ROOT / "spec" / "smoke" / "tau.yaml").read_text())["runtime"]["image"]
    assert "@sha256:" in image or re.search(r":[a-z]+-20\d{6}(-slim)?$", image), image
    monkeypatch.chdir(tmp_path)
    assert main(["run", "smoke", "--dry-run=client"]) == 0
    out, err = capsys.readouterr()
    assert f"image: {image}" in out
    assert "not pinned" not in err
