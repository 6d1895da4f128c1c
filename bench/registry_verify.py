"""Benchmark `tau data dataset verify`: hash ~1 GiB of real files and report MB/s.

Performs I/O. Creates files in a temp dir, registers them in a file:// registry, then times the
same `verify` call the CLI makes (median of several runs; the files stay in the page cache, so
this measures hashing and the scan, not the disk). Run: .venv/bin/python bench/registry_verify.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from tau.registry.backend import FileBackend
from tau.registry.datasets import DatasetRegistry, Registration

MIB = 1 << 20


def make_files(root: Path, total_mib: int, file_mib: int) -> int:
    """Write total_mib MiB of pseudo-random data in file_mib files; return the byte count."""
    block = os.urandom(MIB)
    written = 0
    for i in range(max(1, total_mib // file_mib)):
        with (root / f"shard-{i:04d}.bin").open("wb") as fh:
            for j in range(file_mib):
                fh.write(block[j % 251 :] + block[: j % 251])  # distinct content per MiB
        written += file_mib * MIB
    return written


def main() -> int:
    """Run the benchmark and print one line per run and the median."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--total-mib", type=int, default=1024)
    parser.add_argument("--file-mib", type=int, default=64)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="tau-bench-") as tmp:
        src = Path(tmp, "src")
        src.mkdir()
        nbytes = make_files(src, args.total_mib, args.file_mib)
        reg = DatasetRegistry(FileBackend(Path(tmp, "reg")))
        reg.register("bench@v1", src, Registration("eval", {}, {}, {}, {}))
        rates = []
        for i in range(args.runs):
            start = time.perf_counter()
            report = reg.verify("bench@v1")
            elapsed = time.perf_counter() - start
            assert report["ok"], report["mismatches"]
            rates.append(nbytes / 1e6 / elapsed)
            print(f"run {i + 1}: {elapsed:.3f}s  {rates[-1]:.0f} MB/s")
        print(
            f"verify {nbytes / MIB:.0f} MiB in {nbytes // (args.file_mib * MIB)} files: "
            f"median {statistics.median(rates):.0f} MB/s (cpus={os.cpu_count()})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
