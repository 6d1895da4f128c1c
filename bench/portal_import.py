"""`taugrid-portal experiment import jsonl`: 1,000,000 rows x 5 metrics, then the same again.

    .venv/bin/python bench/portal_import.py [--rows 1000000] [--runs 5]

Targets (issue 11): the import <= 5 s, the re-import <= 1 s writing nothing new. Each figure is
the median of `--runs` cold processes (the whole command, interpreter start included), with
the load average beside it: the machine is shared, so compare medians taken at low load. A
third figure is the same history with CRLF line ends and a blank line, which takes the
trimmed-lines path rather than the plain one. The process CPU time (user + system) is printed
too; it moves less with other load than the wall time does.

A fourth figure is a sweep (`--sweep-runs` runs of `--sweep-rows` rows each, 5 metrics)
imported in one call with `--run-per-file`; the target is a few seconds for 50 runs (one
process per run took 69 s, MLflow 55 s).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_history(path: Path, rows: int, *, crlf: bool = False) -> None:
    """Fast synthetic history: formatted text in large chunks, no json.dumps per row."""
    end = "\r\n" if crlf else "\n"
    line = (
        '{{"_step":{i},"_timestamp":{t:.3f},"loss":{a:.6f},"accuracy":{b:.6f},'
        '"lr":0.0003,"grad_norm":{c:.4f},"tokens_per_s":{d}}}' + end
    )
    with open(path, "w", encoding="utf-8", newline="") as fh:
        chunk = []
        for i in range(rows):
            chunk.append(
                line.format(
                    i=i,
                    t=1760000000 + i * 0.5,
                    a=2.0 / (1 + i / 1000),
                    b=i / rows,
                    c=1 + (i % 97) / 100,
                    d=30000 + i % 1000,
                )
            )
            if len(chunk) == 100_000:
                fh.write("".join(chunk))
                chunk = []
                if crlf:
                    fh.write(end)  # a blank line now and then
        fh.write("".join(chunk))


def cli(*args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one cold `taugrid-portal` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tau.portal.cli", *args], check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def state(store: Path) -> tuple[list[tuple[str, int, int]], dict[str, int]]:
    """Every file (size, mtime) and every index table's row count."""
    files = sorted(
        (str(p), p.stat().st_size, p.stat().st_mtime_ns)
        for p in store.rglob("*")
        if p.is_file() and p.name != ".tau-exp.lock"
    )
    with sqlite3.connect(store / "index.sqlite") as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        counts = {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    return files, counts


def report(label: str, target: str, runs: list[tuple[float, float, float]]) -> None:
    walls = [w for w, _, _ in runs]
    cpus = [c for _, c, _ in runs]
    loads = [f"{lo:.1f}" for _, _, lo in runs]
    print(
        f"{label}: median {statistics.median(walls):.2f} s ({target}); "
        f"cpu median {statistics.median(cpus):.2f} s; "
        f"runs {', '.join(f'{t:.2f}' for t in walls)}; load {', '.join(loads)}",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sweep-runs", type=int, default=50)
    parser.add_argument("--sweep-rows", type=int, default=2_000)
    parser.add_argument("--sweep-only", action="store_true", help="only the sweep figure")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="portal-bench-"))
    try:
        sweep = work / "sweep"
        sweep.mkdir()
        for k in range(opts.sweep_runs):
            write_history(sweep / f"run-{k:03d}.jsonl", opts.sweep_rows)
        swept: list[tuple[float, float, float]] = []
        for n in range(opts.runs):
            store = work / f"sweep-store-{n}"
            cli("experiment", "init", "bench", "--store", str(store))
            load = os.getloadavg()[0]
            swept.append((*cli("experiment", "import", "jsonl", "--store", str(store), "--group",
                               "sweep", "--run-per-file", "--history", str(sweep / "*.jsonl")),
                          load))  # fmt: skip
            with sqlite3.connect(store / "index.sqlite") as conn:
                count = conn.execute("SELECT count(*) FROM runs").fetchone()[0]
            assert count == opts.sweep_runs, f"sweep imported {count} runs"
            shutil.rmtree(store)
        report(
            f"sweep of {opts.sweep_runs} runs x {opts.sweep_rows:,} rows x 5 metrics, one call",
            "target: seconds",
            swept,
        )
        if opts.sweep_only:
            return 0
        history = work / "metrics.history.jsonl"
        write_history(history, opts.rows)
        windows = work / "windows.history.jsonl"
        write_history(windows, opts.rows, crlf=True)
        first: list[tuple[float, float, float]] = []
        again: list[tuple[float, float, float]] = []
        tidied: list[tuple[float, float, float]] = []
        for n in range(opts.runs):
            store = work / f"store-{n}"
            cli("experiment", "init", "bench", "--store", str(store))
            load = os.getloadavg()[0]
            first.append((*cli("experiment", "import", "jsonl", "--store", str(store), "--run",
                               "r1", "--history", str(history)), load))  # fmt: skip
            before = state(store)
            load = os.getloadavg()[0]
            again.append((*cli("experiment", "import", "jsonl", "--store", str(store), "--run",
                               "r1", "--history", str(history)), load))  # fmt: skip
            assert state(store) == before, "re-import wrote something"
            load = os.getloadavg()[0]
            tidied.append((*cli("experiment", "import", "jsonl", "--store", str(store), "--run",
                                "r2", "--history", str(windows)), load))  # fmt: skip
            shutil.rmtree(store)
        rows = f"{opts.rows:,} rows x 5 metrics"
        report(f"import jsonl {rows}", "target <= 5 s", first)
        report("re-import (reused, nothing written)", "target <= 1 s", again)
        report(f"import jsonl {rows}, CRLF + blank lines", "no target", tidied)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
