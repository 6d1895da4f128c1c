"""`tau.log` per call (p50/p99, target p99 < 50 µs) and `import tau; tau.log` (target < 20 ms).

    .venv/bin/python bench/metric_log.py [--calls N] [--runs N]

Each call is timed alone (perf_counter_ns around it) in a loop that does nothing else, with
the background thread writing to a real file meanwhile: a plain history (appended) and a glob
(chunks). A row of 2 metrics, as `tau.log({"loss": …, "acc": …}, step=i)`, and one of 20.
The import is timed inside fresh interpreters (so interpreter start-up, which every Python
program pays anyway, is left out), first call included; the median of --runs processes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

CALLS = """
import os, sys, time
import tau
from tau import metric_log
width, calls = int(sys.argv[1]), int(sys.argv[2])
names = ["loss", "acc"] if width == 2 else [f"train/metric_{i}" for i in range(width)]
clock = time.perf_counter_ns
log = tau.log
spent = []
for step in range(calls):
    value = 1.0 / (step + 1)
    row = dict.fromkeys(names, value)
    start = clock()
    log(row, step=step)
    spent.append(clock() - start)
tau.log_flush()
spent.sort()
n = len(spent)
print(spent[n // 2] / 1000, spent[int(n * 0.99)] / 1000, spent[int(n * 0.999)] / 1000)
"""

IMPORT = """
import time
start = time.perf_counter()
import tau
tau.log({"loss": 0.5})
print((time.perf_counter() - start) * 1000)
"""


def _env(history: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "PYTHONDONTWRITEBYTECODE")}
    env.update(PYTHONPATH=str(SRC), TAU_METRICS_HISTORY=history)
    return env


def per_call(history: str, width: int, calls: int) -> tuple[float, float, float]:
    """(p50, p99, p99.9) in µs of one tau.log call, in a fresh process."""
    out = subprocess.run(
        [sys.executable, "-c", CALLS, str(width), str(calls)],
        env=_env(history), capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    p50, p99, p999 = (float(x) for x in out.split())
    return p50, p99, p999


def import_ms(runs: int, history: str) -> float:
    times = []
    for _ in range(runs + 1):  # the first run writes the bytecode cache
        out = subprocess.run(
            [sys.executable, "-c", IMPORT], env=_env(history), capture_output=True, text=True,
            check=True,
        ).stdout  # fmt: skip
        times.append(float(out))
    return statistics.median(times[1:])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cases = [
            ("plain file, 2 metrics", f"{tmp}/a/metrics.jsonl", 2),
            ("plain file, 20 metrics", f"{tmp}/b/metrics.jsonl", 20),
            ("glob (chunks), 2 metrics", f"{tmp}/c/*.jsonl", 2),
        ]
        for label, history, width in cases:
            p50, p99, p999 = per_call(history, width, args.calls)
            verdict = "ok" if p99 < 50 else "SLOW"
            print(
                f"{'tau.log, ' + label:40s} p50 {p50:5.1f} µs  p99 {p99:5.1f} µs   "
                f"target p99 < 50 µs   {verdict}   (p99.9 {p999:.1f} µs)"
            )
        ms = import_ms(args.runs, f"{tmp}/d/metrics.jsonl")
        print(
            f"{'import tau + first tau.log':40s} median {ms:5.1f} ms          "
            f"target < 20 ms        {'ok' if ms < 20 else 'SLOW'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
