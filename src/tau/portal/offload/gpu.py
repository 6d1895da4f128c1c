"""Each GPU's utilisation and memory: `system/gpu<i>/utilization_percent` and
`system/gpu<i>/memory_used_bytes`, from `nvidia-smi` where it is on PATH.

Performs I/O (runs nvidia-smi). The query is
`nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total
--format=csv,noheader,nounits`: one line per GPU, `0, 35, 1024, 81920` (percent, MiB, MiB);
a value the GPU does not report reads `[N/A]` or `[Not Supported]` and is left out.
"""

from __future__ import annotations

import shutil
import subprocess

QUERY = [
    "--query-gpu=index,utilization.gpu,memory.used,memory.total",
    "--format=csv,noheader,nounits",
]
MIB = 1024 * 1024
#: A wedged driver must not stall the collector's pass.
TIMEOUT = 5.0


def parse(text: str) -> dict[str, float]:
    """The metrics of nvidia-smi's output (lines it cannot read are skipped)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 3 or not fields[0].isdigit():
            continue
        index = fields[0]
        utilization = _number(fields[1])
        used = _number(fields[2])
        if utilization is not None:
            out[f"system/gpu{index}/utilization_percent"] = utilization
        if used is not None:
            out[f"system/gpu{index}/memory_used_bytes"] = used * MIB
    return out


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # [N/A], [Not Supported]


def sample(binary: str | None = None) -> tuple[dict[str, float], str | None]:
    """(metrics, a note when nvidia-smi is there but failed); ({}, None) without it."""
    found = binary or shutil.which("nvidia-smi")
    if not found:
        return {}, None
    try:
        done = subprocess.run(
            [found, *QUERY], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"nvidia-smi: {exc}"
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()
        return {}, f"nvidia-smi exited {done.returncode}: {last[-1] if last else 'no output'}"
    return parse(done.stdout), None
