"""Median wall time of `tau run --diff --all` on a 50-target monorepo (target < 2 s).

    .venv/bin/python bench/review_diff.py [--projects N] [--targets N] [--runs N]

The monorepo is a scratch Git repository with a tau.projects.yaml of N projects, each with its
own targets: alternately a two-worker Ray training run and a CPU Job, each with its script. A
commit holds them all; then the work tree changes a fifth of them (GPUs, an env var, a script
line), so the diff renders every target twice (HEAD and the work tree) and reports the changed
ones. The time is the whole CLI as a user runs it (`tau run --diff --all`, a fresh process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TAU = [sys.executable, "-m", "tau"]
TARGET_SECONDS = 2.0

DESCRIPTOR = """\
schema: tau.workspace.connection.v1
workspace: {name}
cluster:
  contextName: bench
access:
  method: kubeconfig
authorization:
  mode: cluster-wide
requirements:
  minTauVersion: 0.1.0
"""
RAY = """\
name: {name}
engine: rayjob
entrypoint: {name}.py
runtime:
  image: ghcr.io/acme/ray:2.56.0
  env:
    EPOCHS: "3"
compute:
  workers: 2
  gpus_per_worker: {gpus}
policy:
  preset: azure.research.training.xl
"""
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
SCRIPT = """\
import os

for epoch in range(int(os.environ["EPOCHS"])):
    print({{"epoch": epoch, "step": {step}}})
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def build(root: Path, projects: int, per_project: int) -> int:
    """Write and commit the monorepo, then change a fifth of its targets; the count changed."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com"}
    env.update(GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.com")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    catalog = ["schema: tau.projects.v1", "projects:"]
    targets: list[tuple[Path, str, bool]] = []
    for p in range(projects):
        project = f"p{p}"
        connection = f"projects/{project}/tau/workspace.connection.yaml"
        catalog += [
            f"  {project}:",
            f"    path: projects/{project}",
            f"    connection: {connection}",
        ]
        _write(root / connection, DESCRIPTOR.format(name=f"{project}-team"))
        for t in range(per_project):
            name, ray = f"{project}-t{t}", t % 2 == 0
            folder = root / "projects" / project / "tau"
            config = (RAY if ray else JOB).format(name=name, gpus=8)
            _write(folder / f"{name}.yaml", config)
            _write(folder / f"{name}.py", SCRIPT.format(step=0))
            targets.append((folder, name, ray))
    _write(root / "tau.projects.yaml", "\n".join(catalog) + "\n")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "commit", "-qm", "base"], check=True, env=env)
    changed = targets[::5]
    for folder, name, ray in changed:
        config = (RAY if ray else JOB).format(name=name, gpus=4)
        _write(folder / f"{name}.yaml", config.replace('EPOCHS: "3"', 'EPOCHS: "3"\n    LR: "0.1"'))
        _write(folder / f"{name}.py", SCRIPT.format(step=1))
    return len(changed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=5)
    parser.add_argument("--targets", type=int, default=10, help="targets per project")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tau-bench-review-") as scratch:
        root = Path(scratch)
        changed = build(root, args.projects, args.targets)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        env.pop("TAU_TOPOLOGY_POLICY", None)
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            done = subprocess.run(
                [*TAU, "run", "--diff", "--all"], cwd=root, env=env, capture_output=True, text=True
            )
            times.append(time.perf_counter() - start)
            if done.returncode != 1:
                print(done.stdout, done.stderr, file=sys.stderr)
                return 1
        total = args.projects * args.targets
        last = done.stdout.splitlines()[-1]
        assert last.startswith(f"{changed} of {total} targets changed"), last
        median = statistics.median(times)
    print(
        f"tau run --diff --all, {total} targets ({changed} changed): median {median:.2f} s "
        f"over {args.runs} runs (min {min(times):.2f} s, max {max(times):.2f} s); "
        f"target < {TARGET_SECONDS:.0f} s: {'ok' if median < TARGET_SECONDS else 'MISSED'}"
    )
    return 0 if median < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
