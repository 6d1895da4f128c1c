"""A monorepo on disk for the --project tests: a Git root, a catalog, projects and descriptors."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tau.cli import main

#: A descriptor that copies a context of the user's kubeconfig (no cloud access needed).
DESCRIPTOR = """\
schema: tau.workspace.connection.v1
workspace: {workspace}
cluster:
  contextName: emulator
access:
  method: kubeconfig
authorization:
  mode: cluster-wide
requirements:
  minTauVersion: 0.1.0
"""

CONFIG = "name: {name}\nengine: job\nentrypoint: train.py\ncompute:\n  gpus: 0\n"

CATALOG = """\
schema: tau.projects.v1
projects:
  vision:
    path: projects/vision
    connection: projects/vision/tau/workspace.connection.yaml
  language:
    path: projects/language
    connection: connections/shared.yaml
    workspace: language-team
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def git_init(root: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def config(root: Path, project: str, file: str, name: str) -> Path:
    """A valid run config `file` (relative to the project) named `name`, with its entrypoint."""
    path = write(root / "projects" / project / file, CONFIG.format(name=name))
    write(path.parent / "train.py", "print('hi')\n")
    return path


def monorepo(root: Path, catalog: str = CATALOG) -> Path:
    """Two projects: vision (its own descriptor) and language (a shared one, a workspace).

    Both have tau/train.yaml; only vision has tau/detect.yaml, only language tau/eval.yaml and
    a default tau.yaml.
    """
    git_init(root)
    write(root / "tau.projects.yaml", catalog)
    write(
        root / "projects/vision/tau/workspace.connection.yaml",
        DESCRIPTOR.format(workspace="vision-team"),
    )
    write(root / "connections/shared.yaml", DESCRIPTOR.format(workspace="shared"))
    config(root, "vision", "tau/train.yaml", "vision-train")
    config(root, "vision", "tau/detect.yaml", "vision-detect")
    config(root, "language", "tau/train.yaml", "language-train")
    config(root, "language", "tau/eval.yaml", "language-eval")
    config(root, "language", "tau.yaml", "language-default")
    return root


def tau(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
