"""`experiment search --metric-filter 'loss@min<0.5'` over 10,000 runs, and `experiment status`
of a 1,000-run group. Targets (issue 11): <= 500 ms each, the whole command.

Search and status read only the index (summaries live in SQLite; metric files are never
rescanned), so the benchmark store is generated straight into the index: 10 groups x 1,000
runs, each with the summaries that 5 metrics x 1,000 steps produce, plus tags. Generating the
Parquet files as well would take minutes and not change what these commands read. Each figure
is the median of 5 cold processes.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tau.portal.store.core import Store

GROUPS = 10
RUNS_PER_GROUP = 1000
METRICS = ("loss", "accuracy", "lr", "grad_norm", "tokens_per_s")
STEPS = 1000
REPEAT = 5


def build(root: Path) -> None:
    store, _ = Store.init(root, project="bench", experiment_id="bench")
    with store.writer() as w:
        conn = w.conn
        stamp = w.stamp
        for g in range(GROUPS):
            group = f"arm-{g}"
            conn.execute(
                "insert into run_groups values (?, 'bench', ?, ?, ?)", (group, group, stamp, stamp)
            )
            runs, summaries, tags = [], [], []
            for i in range(RUNS_PER_GROUP):
                run = f"run-{g}-{i:04d}"
                created = f"2026-01-{1 + i % 28:02d}T{g:02d}:00:00Z"
                runs.append((run, "bench", "bench", group, "succeeded", "bench", created))
                tags.append(("run", run, "seed", str(i % 5)))
                for m, name in enumerate(METRICS):
                    final = (i % 100) / 100 + m
                    summaries.append(
                        (run, name, "bench", group, STEPS, STEPS, 0, 0, STEPS - 1, STEPS - 1,
                         created, final, final, final + 2.0, stamp, f"jsonl-{run}")
                    )  # fmt: skip
            conn.executemany(
                "insert into runs (run_id, project, experiment_id, run_group_id, state, owner, "
                "created_at) values (?, ?, ?, ?, ?, ?, ?)",
                runs,
            )
            conn.executemany("insert into tags values (?, ?, ?, ?)", tags)
            conn.executemany(
                "insert into metric_summaries values (" + ", ".join("?" * 16) + ")",
                summaries,
            )


def timed(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tau.portal.cli", *args], check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="portal-bench-"))
    try:
        root = work / "store"
        started = time.perf_counter()
        build(root)
        print(f"built {GROUPS * RUNS_PER_GROUP:,} runs in {time.perf_counter() - started:.1f} s")
        store = str(root)
        search = [timed("experiment", "search", "--store", store, "--metric-filter",
                        "loss@min<0.5") for _ in range(REPEAT)]  # fmt: skip
        status = [timed("experiment", "status", "arm-3", "--store", store)
                  for _ in range(REPEAT)]  # fmt: skip
        baseline = [timed("--help") for _ in range(REPEAT)]
        print(f"search --metric-filter 'loss@min<0.5' over 10,000 runs: median "
              f"{statistics.median(search) * 1000:.0f} ms (target <= 500 ms)")  # fmt: skip
        print(f"status of a 1,000-run group: median {statistics.median(status) * 1000:.0f} ms "
              "(target <= 500 ms)")  # fmt: skip
        print(f"taugrid-portal --help: median {statistics.median(baseline) * 1000:.0f} ms "
              "(target <= 300 ms)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
