"""The pod's CPU and memory use: `system/cpu_cores` and `system/memory_bytes` every interval.

Performs I/O (reads /proc and the cgroup v2 files). In a pod (`KUBERNETES_SERVICE_HOST` set)
whose processes the collector can see (the rendered pod has `shareProcessNamespace: true`), it
sums over them: CPU seconds (utime + stime of each process, counted from when it was first
seen) and resident memory. Where it sees only itself (no shared namespace, or not in a pod: a
laptop's /proc is the whole machine's, not the run's) it reads its own cgroup v2's `cpu.stat`
(`usage_usec`) and `memory.current` instead. CPU is a rate: seconds used per second since the
previous sample, so the first sample gives memory only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

CPU = "system/cpu_cores"
MEMORY = "system/memory_bytes"


@dataclass
class Sample:
    """One reading: cumulative CPU seconds per process (or of the cgroup) and memory now."""

    how: str  # "proc" or "cgroup"
    cpu: dict[str, float]
    memory: int
    at: float


@dataclass
class SystemSampler:
    proc: Path = Path("/proc")
    cgroup: Path = Path("/sys/fs/cgroup")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    own_pid: int = field(default_factory=os.getpid)
    previous: Sample | None = None

    def sample(self, now: float | None = None) -> dict[str, float]:
        """The metrics of this interval ({} when nothing is readable)."""
        at = time.time() if now is None else now
        current = self._read(at)
        if current is None:
            return {}
        out: dict[str, float] = {MEMORY: float(current.memory)}
        before = self.previous
        if before is not None and before.how == current.how and current.at > before.at:
            used = 0.0
            for key, seconds in current.cpu.items():
                # A process first seen now started during the interval: all its CPU is new.
                used += max(0.0, seconds - before.cpu.get(key, 0.0))
            out[CPU] = used / (current.at - before.at)
        self.previous = current
        return out

    def _read(self, at: float) -> Sample | None:
        if self.env.get("KUBERNETES_SERVICE_HOST"):
            found = self._processes(at)
            if found is not None:
                return found
        return self._cgroup(at)

    def _processes(self, at: float) -> Sample | None:
        """The sum over the processes in /proc but for this one; None when there is no other."""
        ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        cpu: dict[str, float] = {}
        memory = 0
        others = 0
        try:
            entries = list(self.proc.iterdir())
        except OSError:
            return None
        for entry in entries:
            if not entry.name.isdigit():
                continue
            stat = parse_stat(entry / "stat")
            if stat is None:
                continue  # exited meanwhile, or not ours to read
            utime, stime, start, rss_pages = stat
            if int(entry.name) != self.own_pid:
                others += 1
            # pid and start time: a reused pid is another process.
            cpu[f"{entry.name}:{start}"] = (utime + stime) / ticks
            memory += rss_pages * page
        if not others:
            return None
        return Sample("proc", cpu, memory, at)

    def _cgroup(self, at: float) -> Sample | None:
        try:
            usage = None
            for line in (self.cgroup / "cpu.stat").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    usage = int(value) / 1_000_000
            memory = int((self.cgroup / "memory.current").read_text().strip())
        except (OSError, ValueError):
            return None
        if usage is None:
            return None
        return Sample("cgroup", {"cgroup": usage}, memory, at)


def parse_stat(path: Path) -> tuple[int, int, int, int] | None:
    """(utime, stime, starttime, rss pages) of a /proc/<pid>/stat file; None when unreadable.

    The command name (field 2) is in parentheses and may hold spaces or parentheses itself, so
    the fields are counted from the last `)`.
    """
    try:
        text = path.read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()
    try:
        # Fields 14, 15, 22 and 24 of proc(5), counted from field 3 (state) = rest[0].
        return int(rest[11]), int(rest[12]), int(rest[19]), int(rest[21])
    except (IndexError, ValueError):
        return None
