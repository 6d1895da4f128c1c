"""`tau cluster validate nodes` probe orchestration: 64 nodes, 8 probes in flight.

    .venv/bin/python bench/cluster_nodes.py [--nodes N] [--parallel N] [--runs N]

A fake kubelet answers each probe pod from a recorded nvidia-smi/ibstat output after the node's
probe duration. Scenario "one slow node": every probe takes 50 ms except one that takes 1.5 s;
target: the whole run finishes within the slowest probe + 2 s. Scenario "uniform": every probe
takes 0.3 s, so 8 waves are unavoidable; reported against the ideal 8-wide schedule.
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "generated"), str(ROOT)]

from tau.cluster import nodes as n  # noqa: E402
from tests.cluster_objects import probe_log  # noqa: E402
from tests.kubeapi.fixtures import api_client_for  # noqa: E402
from tests.kubeapi.probe_kubelet import ProbeKubelet  # noqa: E402
from tests.kubeapi.server import KubeApiServer  # noqa: E402

LOG = probe_log("healthy")


def ideal(durations: list[float], parallel: int) -> float:
    """Makespan of a perfect `parallel`-wide FIFO schedule (no API or polling cost)."""
    lanes = [0.0] * parallel
    for d in durations:
        heapq.heappush(lanes, heapq.heappop(lanes) + d)
    return max(lanes)


def run(durations: dict[str, float], parallel: int, tmp: Path) -> float:
    with KubeApiServer() as api:
        client = api_client_for(api, tmp)
        targets = [n.GpuNode(name, 8, "device-plugin") for name in sorted(durations)]
        with ProbeKubelet(api, lambda _node: LOG, delay=lambda node: durations[node]):
            start = time.perf_counter()
            outcomes = n.probe_nodes(client, targets, timeout=60, parallel=parallel)
            elapsed = time.perf_counter() - start
        assert all(o.log for o in outcomes.values()) and len(outcomes) == len(targets)
        client.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    names = [f"aks-gpu-{i:03d}" for i in range(args.nodes)]
    slow = {name: 0.05 for name in names} | {names[len(names) // 2]: 1.5}
    uniform = dict.fromkeys(names, 0.3)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for label, durations in (("one slow node", slow), ("uniform", uniform)):
            walls = [run(durations, args.parallel, Path(tmp)) for _ in range(args.runs)]
            wall = statistics.median(walls)
            best = ideal([durations[k] for k in sorted(durations)], args.parallel)
            slowest = max(durations.values())
            print(
                f"validate nodes, {args.nodes} nodes, {args.parallel} in flight, {label}: "
                f"median {wall:.2f} s over {args.runs} runs; slowest probe {slowest:.2f} s, "
                f"ideal schedule {best:.2f} s, overhead {wall - best:.2f} s"
            )
            if label == "one slow node":
                met = wall <= slowest + 2.0
                ok &= met
                print("target ≤ slowest probe + 2 s:", "met" if met else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
