"""compute.* of a manifest: GPUs, workers, CPU and memory quantities, CPU-only defaults.

Pure. CPU fields take a whole number (the reference's form) or a Kubernetes CPU quantity
("500m"); memory fields take a Kubernetes memory quantity ("32Gi"). Both are kept as the
strings the renderer writes, and limits are compared with requests by value.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, NamedTuple

from tau.intent.workflow._read import Reader
from tau.intent.workflow.model import ManifestCompute
from tau.intent.workflow.problems import quote
from tau.k8s.quantity import parse_quantity

MAX_GPUS = 8
CPU_FIELDS = ("cpus", "cpu_limit", "worker_cpus", "worker_cpu_limit")
MEMORY_FIELDS = ("memory", "memory_limit", "worker_memory", "worker_memory_limit")
#: (request, limit): each limit must be at least its request.
PAIRS = (
    ("cpus", "cpu_limit"),
    ("worker_cpus", "worker_cpu_limit"),
    ("memory", "memory_limit"),
    ("worker_memory", "worker_memory_limit"),
)
#: The reference's memory grammar, narrowed to the suffixes Kubernetes accepts: the reference
#: also takes "32gi", "512K" and "512m" (which Kubernetes rejects, or reads as millibytes).
_MEMORY = re.compile(r"^[0-9]+(?:[EPTGM]i?|Ki|k)?$")
_CPU_HINT = "write whole CPUs (4) or millicores (500m)"
_UNSET_HINT = "remove it to use the default sizing, or write a positive value"
_SPACES_HINT = "remove the spaces around the value"


class Quantity(NamedTuple):
    text: str
    value: Decimal


def read_compute(r: Reader) -> ManifestCompute:
    """Read compute.*; with gpus == 0 fill in the contract's CPU-only defaults."""
    r.mapping(("compute",))
    gpus = r.integer(("compute", "gpus"))
    if gpus is None:
        gpus = 1
    elif not 0 <= gpus <= MAX_GPUS:
        r.error(
            ("compute", "gpus"),
            f"compute.gpus: want 0..{MAX_GPUS} (per-worker; 0 = CPU-only), got {gpus}",
            "GPUs per worker pod: 0 for a CPU-only run, at most 8",
        )
    workers = r.integer(("compute", "workers"))
    if not workers:  # unset or 0: one worker, as the reference coerces it
        workers = 1
    elif workers < 1:
        r.error(
            ("compute", "workers"),
            f"compute.workers: want ≥ 1, got {workers}",
            "remove compute.workers for one worker pod",
        )
    values: dict[str, Quantity | None] = {f: _cpu(r, f) for f in CPU_FIELDS}
    values.update({f: _memory(r, f) for f in MEMORY_FIELDS})
    written = {f for f, v in values.items() if v is not None}
    if gpus == 0:
        values = cpu_only_defaults(values)
    _check_limits(r, values, written)
    texts = {f: (v.text if v is not None else None) for f, v in values.items()}
    return ManifestCompute(gpus, workers, **texts)


def cpu_only_defaults(values: dict[str, Quantity | None]) -> dict[str, Quantity | None]:
    """The reference's CPU-only sizing: a small head, workers sized like it unless told."""
    out = dict(values)
    out["cpus"] = out["cpus"] or Quantity("1", Decimal(1))
    out["cpu_limit"] = out["cpu_limit"] or out["cpus"]
    out["worker_cpus"] = out["worker_cpus"] or out["cpus"]
    out["worker_cpu_limit"] = out["worker_cpu_limit"] or out["worker_cpus"]
    memory_given = out["memory"] is not None
    out["memory"] = out["memory"] or _memory_quantity("2Gi")
    out["memory_limit"] = out["memory_limit"] or out["memory"]
    if out["worker_memory"] is None:
        out["worker_memory"] = out["memory"] if memory_given else _memory_quantity("4Gi")
    out["worker_memory_limit"] = out["worker_memory_limit"] or out["worker_memory"]
    return out


def _memory_quantity(text: str) -> Quantity:
    value = parse_quantity(text)
    assert value is not None
    return Quantity(text, value)


def _cpu(r: Reader, field: str) -> Quantity | None:
    path = ("compute", field)
    value: Any = r.raw(path)
    if value is None:
        return None
    name = f"compute.{field}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        r.wrong_type(path, "a CPU count or quantity such as 4 or 500m", value)
        return None
    if isinstance(value, int | float):
        if not math.isfinite(value):
            r.error(
                path,
                f"{name}: must be a Kubernetes CPU quantity like 4 or 500m (got {value})",
                _CPU_HINT,
            )
            return None
        if value < 0:
            r.error(path, f"{name}: want ≥ 1 when set, got {value}", _UNSET_HINT)
            return None
        if value == 0:
            return None  # the reference reads 0 as unset
        number = Decimal(value) if isinstance(value, int) else Decimal(repr(value))
        text = str(int(value)) if value == int(value) else format(number, "f")
        return Quantity(text, number)
    if value.strip() != value:
        r.error(path, f"{name}: must not have surrounding whitespace", _SPACES_HINT)
        return None
    if not value:
        return None
    parsed = parse_quantity(value)
    if parsed is None:
        r.error(
            path,
            f"{name}: must be a Kubernetes CPU quantity like 4 or 500m (got {quote(value)})",
            _CPU_HINT,
        )
        return None
    if parsed <= 0:
        r.error(path, f"{name}: must be greater than zero (got {quote(value)})", _UNSET_HINT)
        return None
    return Quantity(value, parsed)


def _memory(r: Reader, field: str) -> Quantity | None:
    path = ("compute", field)
    value: Any = r.raw(path)
    if value is None:
        return None
    name = f"compute.{field}"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        r.wrong_type(path, "a memory quantity such as 32Gi", value)
        return None
    # A bare number is a count of bytes, as in Kubernetes.
    text = value if isinstance(value, str) else str(value)
    if text.strip() != text:
        r.error(path, f"{name}: must not have surrounding whitespace", _SPACES_HINT)
        return None
    if not text:
        return None
    parsed = parse_quantity(text) if _MEMORY.fullmatch(text) else None
    if parsed is None:
        r.error(
            path,
            f"{name}: must be a Kubernetes memory quantity like 512Mi or 32Gi (got {quote(text)})",
            "use a binary suffix (Ki, Mi, Gi, Ti) or a decimal one (k, M, G, T)",
        )
        return None
    if parsed <= 0:
        r.error(path, f"{name}: must be greater than zero (got {quote(text)})", _UNSET_HINT)
        return None
    return Quantity(text, parsed)


def _check_limits(r: Reader, values: dict[str, Quantity | None], written: set[str]) -> None:
    for request, limit in PAIRS:
        low, high = values[request], values[limit]
        if low is None or high is None or high.value >= low.value:
            continue
        # Point at a value the author wrote: a defaulted one has no place in the file.
        subject = limit if limit in written else request
        defaulted = [f for f in (request, limit) if f not in written]
        hint = (
            f"compute.{defaulted[0]} is not set and defaults from the other CPU and memory "
            "fields on a CPU-only manifest (compute.gpus: 0); set it explicitly"
            if defaulted
            else f"raise compute.{limit} or lower compute.{request}"
        )
        r.error(
            ("compute", limit),
            f"compute.{limit}={high.text} must be >= compute.{request}={low.text}",
            hint,
            at=("compute", subject),
        )
