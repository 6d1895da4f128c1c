"""The workload overrides `tau python build` and `submit` share (flags over decorators).

Pure. One frozen value instead of eighteen loose flags, checked once with the reference's words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from tau.sdk.errors import SdkError

NODE_SELECTOR_SHAPE = "tau-py: node_selector entries must be key=value with non-empty key and value"

#: Override field → the generated `compute` key it sets.
COMPUTE_KEYS = {
    "cpu_request": "cpus",
    "memory_request": "memory",
    "cpu_limit": "cpu_limit",
    "memory_limit": "memory_limit",
    "worker_cpu_request": "worker_cpus",
    "worker_memory_request": "worker_memory",
    "worker_cpu_limit": "worker_cpu_limit",
    "worker_memory_limit": "worker_memory_limit",
}


@dataclass(frozen=True)
class Overrides:
    """Every override flag; None / False / () means "keep what the decorator says"."""

    namespace: str | None = None
    data_pvc: str | None = None
    queue: str | None = None
    gpu_class: str | None = None
    disable_default_priorities: bool = False
    node_selector: tuple[tuple[str, str], ...] = ()
    cpu_request: int | None = None
    memory_request: str | None = None
    cpu_limit: int | None = None
    memory_limit: str | None = None
    worker_cpu_request: int | None = None
    worker_memory_request: str | None = None
    worker_cpu_limit: int | None = None
    worker_memory_limit: str | None = None
    profiler: str | None = None
    profile_rank: str | None = None
    profile_warmup: str | None = None
    profile_duration: str | None = None

    def check(self) -> None:
        """Refuse values no workload could use: counts below 1, blank or padded text."""
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None or f.name in ("disable_default_priorities", "node_selector"):
                continue
            if f.name in ("cpu_request", "cpu_limit", "worker_cpu_request", "worker_cpu_limit"):
                positive_int(value, f.name)
            else:
                nonblank_text(value, f.name)
        for key, value in self.node_selector:
            if not key.strip() or not value.strip():
                raise SdkError(NODE_SELECTOR_SHAPE)

    def compute(self) -> dict[str, int | str]:
        """The `compute` keys these overrides set."""
        out: dict[str, int | str] = {}
        for name, key in COMPUTE_KEYS.items():
            value = getattr(self, name)
            if value is not None:
                out[key] = value
        return out


def positive_int(value: object, name: str) -> int:
    """`value` as an int of at least 1."""
    try:
        number = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        raise SdkError(f"tau-py: {name} must be an integer (got {value!r})") from None
    if number < 1:
        raise SdkError(f"tau-py: {name} must be >= 1 (got {number})")
    return number


def nonblank_text(value: object, name: str) -> str:
    """`value` as text that is neither empty nor padded with whitespace."""
    text = str(value)
    if not text or text.strip() != text:
        raise SdkError(f"tau-py: {name} must not be empty or have surrounding whitespace")
    return text


def parse_node_selector(values: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`key=value` strings as (key, value) pairs, trimmed; later keys win, order kept."""
    pairs: dict[str, str] = {}
    for item in values:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip() or not value.strip():
            raise SdkError(NODE_SELECTOR_SHAPE)
        pairs[key.strip()] = value.strip()
    return tuple(pairs.items())


def selector_pairs(value: object) -> tuple[tuple[str, str], ...]:
    """A decorator's node_selector (a mapping, one `k=v` string, or a list of them) as pairs."""
    if value is None:
        return ()
    if isinstance(value, Mapping):
        items = [f"{k}={v}" for k, v in value.items()]
    elif isinstance(value, str):
        items = [value]
    elif isinstance(value, Sequence):
        items = [str(v) for v in value]
    else:
        raise SdkError(NODE_SELECTOR_SHAPE)
    return parse_node_selector(items)
