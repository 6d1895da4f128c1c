"""`tau run` submit and `tau run status` against the real apiserver of the e2e control plane.

    .venv/bin/python bench/e2e_cluster.py [--pods 1000] [--runs 5]

Starts the control plane of tests/e2e (building its binaries on first use), adds CPU nodes
for the pods, then measures as the researcher identity, in fresh processes:
  - submit: the wall time of `tau run TARGET` for a small Job (median of --runs targets);
  - status: the wall time of `tau run status` (text and `-o json`) of a running Indexed Job of
    --pods pods, and the API requests one status makes (counted in the apiserver's audit log).
Skips (exit 0, saying why) where the control plane cannot run (no Go toolchain).
"""

from __future__ import annotations

import argparse
import json
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


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr}")
    return elapsed, proc.stdout


def audit_lines(path: Path) -> int:
    try:
        with path.open() as handle:
            return sum(1 for _ in handle)
    except FileNotFoundError:
        return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("go") is None:
        print("skipped: no Go toolchain for the control plane (see README, make e2e)")
        return 0

    import yaml

    from tests.e2e.conftest import connection_descriptor
    from tests.e2e.controlplane import objects, session
    from tests.e2e.controlplane.researcher import tau_binary

    root = Path(tempfile.mkdtemp(prefix="tau-bench-"))
    current = session.start(root / "cluster")
    try:
        plane, researcher = current.plane, current.researcher
        # Room for the pods: CPU nodes of 110 pods each (the kubelet's default).
        for i in range(args.pods // 100 + 1):
            plane.api.apply(objects.gpu_node(f"cpu-bench-{i}", 0))
        repo = root / "repo"
        (repo / "tau").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "tau" / "workspace.connection.yaml").write_text(
            yaml.safe_dump(connection_descriptor(researcher.workspace, researcher.context))
        )
        env = {
            **os.environ,
            "KUBECONFIG": str(researcher.kubeconfig),
            "TAU_CONFIG_DIR": str(repo / ".tau-config"),
            "NO_COLOR": "1",
        }
        tau = tau_binary()
        subprocess.run(
            [tau, "workspace", "connection", "--trust"],
            env=env,
            cwd=repo,
            check=True,
            capture_output=True,
        )
        small = {
            "engine": "job",
            "runtime": {"image": "python:3.12-slim", "env": {"E2E_OUTCOME": "hold"}},
            "compute": {"gpus": 0, "cpu_request": "100m", "memory_request": "64Mi"},
        }
        submits = []
        for i in range(args.runs):
            name = f"bench-submit-{i}"
            (repo / "tau" / f"{name}.yaml").write_text(
                yaml.safe_dump({"name": name, "entrypoint": "bench.py", **small})
            )
            (repo / "tau" / "bench.py").write_text("print('bench')\n")
            submits.append(timed([tau, "run", name], env, repo)[0])
            subprocess.run(
                [tau, "run", "cancel", name], env=env, cwd=repo, check=True, capture_output=True
            )

        wide = {
            "name": "bench-wide",
            "entrypoint": "bench.py",
            **small,
            "execution": {"launcher": "torchrun", "nodes": args.pods, "processes_per_node": 1},
        }
        (repo / "tau" / "bench-wide.yaml").write_text(yaml.safe_dump(wide))
        timed([tau, "run", "bench-wide"], env, repo)
        deadline = time.monotonic() + 900
        while True:
            pods = plane.api.list(
                "v1",
                "Pod",
                researcher.namespace,
                label_selector="batch.kubernetes.io/job-name=bench-wide",
            )
            running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
            if running >= args.pods:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"only {running}/{args.pods} pods Running after 15 minutes")
            time.sleep(1)

        text_times, json_times, calls = [], [], []
        for _ in range(args.runs):
            before = audit_lines(plane.audit_log)
            elapsed, out = timed([tau, "run", "status", "bench-wide", "-o", "json"], env, repo)
            json_times.append(elapsed)
            doc = json.loads(out)
            assert len(doc["pods"]) == args.pods, len(doc["pods"])
            # The audit log backend is in blocking mode: every event is written before the
            # answer, so the count is complete when the process ends.
            calls.append(audit_lines(plane.audit_log) - before)
            text_times.append(timed([tau, "run", "status", "bench-wide"], env, repo)[0])
        ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} ms"  # noqa: E731
        print(f"submit (tau run TARGET, 1-pod Job, real apiserver + Kueue webhooks): {ms(submits)}")
        print(f"status of {args.pods} running pods (tau run status): {ms(text_times)}")
        print(f"status of {args.pods} running pods (tau run status -o json): {ms(json_times)}")
        print(f"API requests per status: {statistics.median(calls):.0f}")
    finally:
        current.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
