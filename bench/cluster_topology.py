"""`tau cluster validate topology` on 500 nodes and 20 flavors against the API emulator.

    .venv/bin/python bench/cluster_topology.py [--nodes N] [--flavors N] [--runs N]

Target: ≤ 1 s per run and a number of API calls that does not grow with the cluster. Runs the
CLI in-process (flag parsing, connection, reads, checks, report) and prints the median.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "generated"), str(ROOT)]

from tau.cli import main as tau_main  # noqa: E402
from tests.cluster_objects import cluster_queue, flavor, node  # noqa: E402
from tests.kubeapi.fixtures import EMULATOR_CONTEXT, write_kubeconfig  # noqa: E402
from tests.kubeapi.server import KubeApiServer  # noqa: E402


def populate(api: KubeApiServer, nodes: int, flavors: int) -> None:
    api.register_kueue_kuberay_tau_kinds()
    for i in range(nodes):
        api.put(node(f"aks-gpu-{i:04d}", labels={"pool": f"pool-{i % flavors:02d}"}))
    for f in range(flavors):
        api.put(flavor(f"flavor-{f:02d}", {"pool": f"pool-{f:02d}"}))
    quotas = {
        f"flavor-{f:02d}": {"nvidia.com/gpu": str(8 * nodes // flavors)} for f in range(flavors)
    }
    api.put(cluster_queue("taugrid-cq", quotas))


def run_once(api: KubeApiServer) -> tuple[float, int, int]:
    api.reset_requests()
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = tau_main(["cluster", "validate", "topology", "--context", EMULATOR_CONTEXT])
    elapsed = time.perf_counter() - start
    return elapsed, len(api.requests), code


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--flavors", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["TAU_CONFIG_DIR"] = str(Path(tmp) / "cfg")
        os.environ.pop("TAU_CONTEXT", None)
        os.chdir(tmp)
        with KubeApiServer() as small:
            os.environ["KUBECONFIG"] = str(write_kubeconfig(small, Path(tmp) / "kubeconfig"))
            populate(small, 10, 2)
            _, small_calls, _ = run_once(small)
        with KubeApiServer() as api:
            os.environ["KUBECONFIG"] = str(write_kubeconfig(api, Path(tmp) / "kubeconfig"))
            populate(api, args.nodes, args.flavors)
            run_once(api)  # warm-up: imports, connection state
            results = [run_once(api) for _ in range(args.runs)]
    times = [r[0] for r in results]
    calls = {r[1] for r in results}
    median = statistics.median(times)
    print(
        f"validate topology, {args.nodes} nodes x {args.flavors} flavors: "
        f"median {median * 1000:.0f} ms over {args.runs} runs (min {min(times) * 1000:.0f} ms); "
        f"API calls per run {sorted(calls)} (10 nodes x 2 flavors: {small_calls}); "
        f"exit {results[0][2]}"
    )
    ok = median <= 1.0 and calls == {small_calls}
    print("target ≤ 1 s and constant call count:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
