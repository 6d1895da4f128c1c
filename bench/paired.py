"""Paired cold-process timings: what one import costs a fresh interpreter.

Not a benchmark itself (run_all.py skips it): `transport_import.py` and
`status_plain_vs_rich.py` time two snippets in fresh interpreters, alternated so a busy machine
slows both alike, and compare the medians.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path


def _once(argv: list[str], cwd: Path | None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=cwd)
    return time.perf_counter() - start


def medians(
    without: str, with_it: str, runs: int, *, flags: tuple[str, ...] = (), cwd: Path | None = None
) -> tuple[float, float]:
    """Median seconds of `python [flags] -c without` and `-c with_it`, run `runs` times each,
    alternated."""
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        a.append(_once([sys.executable, *flags, "-c", without], cwd))
        b.append(_once([sys.executable, *flags, "-c", with_it], cwd))
    return statistics.median(a), statistics.median(b)
