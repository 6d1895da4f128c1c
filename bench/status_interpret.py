"""Median time of `tau.status.interpret` on a 1,000-pod snapshot (target ≤ 100 ms).

    .venv/bin/python bench/status_interpret.py [--pods N] [--runs N]

The snapshot is a running Indexed Job: one Workload, N ready pods (an init container and an app
container each) spread over N/8 nodes, and one event per pod. Also prints the text and JSON
presentation times, which the CLI adds on top.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tau.status import document, text  # noqa: E402
from tau.status.interpret import interpret  # noqa: E402
from tau.status.snapshot import Snapshot  # noqa: E402

NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)


def _pod(index: int) -> dict:
    name = f"train-{index}-p{index:05d}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "research",
            "labels": {"job-name": "train"},
            "creationTimestamp": "2026-12-02T10:00:05Z",
        },
        "spec": {
            "nodeName": f"aks-h100-{index // 8}",
            "initContainers": [{"name": "stage", "image": "ghcr.io/example/stager:0.3"}],
            "containers": [{"name": "trainer", "image": "ghcr.io/example/trainer:1.4.2"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "Initialized", "status": "True"},
                {"type": "PodScheduled", "status": "True"},
                {"type": "ContainersReady", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
            "initContainerStatuses": [
                {
                    "name": "stage",
                    "imageID": "stager@sha256:1",
                    "ready": False,
                    "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                }
            ],
            "containerStatuses": [
                {
                    "name": "trainer",
                    "imageID": "trainer@sha256:2",
                    "ready": True,
                    "restartCount": 0,
                    "state": {"running": {"startedAt": "2026-12-02T10:01:00Z"}},
                }
            ],
        },
    }


def build(pods: int) -> Snapshot:
    """A running Indexed Job with `pods` pods, one Workload and one event per pod."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "research",
            "uid": "u-1",
            "creationTimestamp": "2026-12-02T10:00:00Z",
        },
        "spec": {"completionMode": "Indexed", "completions": pods, "parallelism": pods},
        "status": {"active": pods},
    }
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "job-train-1", "namespace": "research"},
        "spec": {"queueName": "jobqueue"},
        "status": {
            "admission": {"clusterQueue": "tau-cq"},
            "conditions": [
                {"type": "QuotaReserved", "status": "True"},
                {"type": "Admitted", "status": "True"},
            ],
        },
    }
    events = [
        {
            "kind": "Event",
            "involvedObject": {"kind": "Pod", "name": f"train-{i}"},
            "reason": "Started",
            "message": "Started container trainer",
            "type": "Normal",
            "lastTimestamp": "2026-12-02T10:01:00Z",
        }
        for i in range(pods)
    ]
    return Snapshot.from_objects(
        "research", "train", [job, workload, *map(_pod, range(pods)), *events]
    )


def median_ms(func, runs: int) -> float:
    """Median wall time of `func()` in milliseconds, after one warm-up call."""
    func()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args(argv)
    snapshot = build(args.pods)
    status = interpret(snapshot, NOW)
    assert status.state.value == "running", status.state
    interpret_ms = median_ms(lambda: interpret(snapshot, NOW), args.runs)
    json_ms = median_ms(lambda: document.to_json(status), args.runs)
    text_ms = median_ms(lambda: text.to_text(status), args.runs)
    print(
        f"interpret, {args.pods} pods: median {interpret_ms:.1f} ms over {args.runs} runs "
        f"(target <= 100 ms){'' if interpret_ms <= 100 else '  OVER TARGET'}"
    )
    print(f"document.to_json: median {json_ms:.1f} ms; text.to_text: median {text_ms:.1f} ms")
    return 0 if interpret_ms <= 100 else 1


if __name__ == "__main__":
    raise SystemExit(main())
