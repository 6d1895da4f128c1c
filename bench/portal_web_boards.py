"""`portal serve` boards against the local API emulation with 1,000 tau pods (target: one
refresh ≤ 300 ms with a constant number of API calls).

    .venv/bin/python bench/portal_web_boards.py [--pods N] [--repeat N]

The cluster holds 125 tau Jobs of 8 pods each (plus Workloads, queues, 128 GPU nodes); a refresh
is the reader's eight list calls plus every board built from them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from tau.portal.web import boards  # noqa: E402
from tau.portal.web.cluster import ClusterReader  # noqa: E402
from tests.kubeapi import KubeApiServer  # noqa: E402
from tests.kubeapi.fixtures import api_client_for  # noqa: E402


def populate(server: KubeApiServer, pods: int) -> None:
    server.register_kueue_kuberay_tau_kinds()
    per_job = 8
    for j in range(pods // per_job):
        name = f"train-{j:04d}"
        job = server.put(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": name,
                    "namespace": "research",
                    "labels": {"tau.azure.com/managed-by": "tau", "tau.azure.com/run-id": name},
                },
                "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "x"}]}}},
                "status": {"active": per_job},
            }
        )
        server.put(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {
                    "name": f"job-{name}",
                    "namespace": "research",
                    "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
                },
                "spec": {"queueName": "jobqueue"},
                "status": {"conditions": [{"type": "Admitted", "status": "True"}]},
            }
        )
        for p in range(per_job):
            server.put(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"{name}-{p}",
                        "namespace": "research",
                        "labels": {"job-name": name, "tau.azure.com/managed-by": "tau"},
                    },
                    "spec": {"nodeName": f"gpu-{j % 128}", "containers": [{"name": "main"}]},
                    "status": {
                        "phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True"}],
                        "containerStatuses": [
                            {
                                "name": "main",
                                "ready": True,
                                "restartCount": 0,
                                "state": {"running": {"startedAt": "2026-12-02T10:00:00Z"}},
                            }
                        ],
                    },
                }
            )
    for n in range(128):
        server.put(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"gpu-{n}", "labels": {"tau.azure.com/gpu-class": "h100"}},
                "status": {
                    "capacity": {"nvidia.com/gpu": "8"},
                    "allocatable": {"nvidia.com/gpu": "8"},
                },
            }
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    server = KubeApiServer().start()
    try:
        populate(server, args.pods)
        client = api_client_for(server, Path(tempfile.mkdtemp()))
        ClusterReader(client, ttl=0).view()  # warm the emulator and the client
        times, calls = [], []
        for _ in range(args.repeat):
            reader = ClusterReader(client, ttl=0)
            server.reset_requests()
            start = time.perf_counter()
            view = reader.view()
            runs = boards.runs_board(view)
            boards.queues_board(view)
            boards.nodes_board(view)
            boards.ray_board(view)
            boards.overview(view)
            times.append(time.perf_counter() - start)
            calls.append(server.count_requests("GET"))
        print(f"pods={args.pods} runs={runs['total']} api_calls_per_refresh={sorted(set(calls))}")
        print(f"refresh median {statistics.median(times) * 1000:.0f} ms (target ≤ 300 ms)")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
