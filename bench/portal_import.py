"""`taugrid-portal experiment import jsonl`: 1,000,000 rows x 5 metrics, then the same again.

Targets (issue 11): the import <= 5 s, the re-import <= 1 s writing nothing new. Each figure is
the median of 3 cold processes (the whole command, interpreter start included).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 1_000_000
RUNS = 3


def write_history(path: Path, rows: int) -> None:
    """Fast synthetic history: formatted text in large chunks, no json.dumps per row."""
    line = (
        '{{"_step":{i},"_timestamp":{t:.3f},"loss":{a:.6f},"accuracy":{b:.6f},'
        '"lr":0.0003,"grad_norm":{c:.4f},"tokens_per_s":{d}}}\n'
    )
    with open(path, "w", encoding="utf-8") as fh:
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
        fh.write("".join(chunk))


def cli(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tau.portal.cli", *args], check=True, stdout=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="portal-bench-"))
    try:
        history = work / "metrics.history.jsonl"
        write_history(history, ROWS)
        first: list[float] = []
        again: list[float] = []
        for n in range(RUNS):
            store = work / f"store-{n}"
            cli("experiment", "init", "bench", "--store", str(store))
            first.append(cli("experiment", "import", "jsonl", "--store", str(store), "--run",
                             "r1", "--history", str(history)))  # fmt: skip
            before = sorted((p, p.stat().st_size) for p in store.rglob("*") if p.is_file())
            again.append(cli("experiment", "import", "jsonl", "--store", str(store), "--run",
                             "r1", "--history", str(history)))  # fmt: skip
            after = sorted((p, p.stat().st_size) for p in store.rglob("*") if p.is_file())
            assert before == after, "re-import wrote something"
        print(f"import jsonl {ROWS:,} rows x 5 metrics: median {statistics.median(first):.2f} s "
              f"(target <= 5 s; runs {', '.join(f'{t:.2f}' for t in first)})")  # fmt: skip
        print(f"re-import (reused, nothing written): median {statistics.median(again):.2f} s "
              f"(target <= 1 s; runs {', '.join(f'{t:.2f}' for t in again)})")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
