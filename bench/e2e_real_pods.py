"""From `tau run` to the first real log line of a torchrun job on the e2e control plane's real node.

    .venv/bin/python bench/e2e_real_pods.py [--runs 3]

Starts the control plane of tests/e2e with its real node (building binaries and images on first
use), connects a repository to the workspace whose runs land there, then, --runs times: submits
a two-pod × two-process torchrun Job in the runtime image and times, from the start of `tau run`,
the moment `tau run logs` first shows a rank's line (pods scheduled, sandboxes and containers
started, torch imported, the gloo process group joined), and the run's end. Prints medians.
Skips (exit 0, saying why) where the control plane cannot run (no Go toolchain, not root).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRIPT = """\
import torch.distributed as dist
dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} joined", flush=True)
dist.destroy_process_group()
"""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("go") is None or os.geteuid() != 0:
        print("skipped: the real node needs the Go toolchain and root (see README, make e2e)")
        return 0

    import yaml

    from tests.e2e.conftest import connected_repo
    from tests.e2e.controlplane import session

    root = Path(tempfile.mkdtemp(prefix="tau-bench-real-"))
    current = session.start(root / "cluster")
    try:
        researcher = current.researcher
        assert researcher.real_workspace and researcher.image
        shell = connected_repo(
            root / "repo", researcher.real_workspace, researcher.context, researcher.kubeconfig
        )
        repo = shell.cwd

        def run(*argv: str) -> subprocess.CompletedProcess[str]:
            return shell.tau(*argv, timeout=900)

        (repo / "tau" / "bench.py").write_text(SCRIPT)
        first_lines, ends = [], []
        for i in range(args.runs):
            name = f"bench-ddp-{i}"
            config = {
                "name": name,
                "engine": "job",
                "entrypoint": "bench.py",
                "runtime": {"image": researcher.image},
                "execution": {"launcher": "torchrun", "nodes": 2, "processes_per_node": 2},
                "policy": {"preset": "azure.research.training.2x"},
            }
            (repo / "tau" / f"{name}.yaml").write_text(yaml.safe_dump(config))
            started = time.perf_counter()
            submitted = run("run", name)
            if submitted.returncode != 0:
                raise SystemExit(f"tau run {name}: {submitted.returncode}: {submitted.stderr}")
            first = None
            deadline = time.monotonic() + 900
            while time.monotonic() < deadline:
                if first is None and "joined" in run("run", "logs", name).stdout:
                    first = time.perf_counter() - started
                if first is not None:
                    state = run("run", "status", name, "-o", "json").stdout
                    if '"succeeded"' in state or '"failed"' in state:
                        ends.append(time.perf_counter() - started)
                        break
                time.sleep(0.5)
            if first is None:
                raise SystemExit(f"{name}: no log line after 15 minutes")
            first_lines.append(first)
            run("run", "cancel", name)
        s = lambda xs: f"{statistics.median(xs):.1f} s"  # noqa: E731
        print(
            f"tau run → first real log line of a 2×2 torchrun Job: {s(first_lines)} median "
            f"(runs: {', '.join(f'{x:.1f}' for x in first_lines)}); "
            f"→ run ended: {s(ends) if ends else 'n/a'}"
        )
    finally:
        current.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
