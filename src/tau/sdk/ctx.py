"""The context a train or eval function receives: its name, shape and folders.

Pure. Called locally (`fn()` on a handle), every folder is rooted at the current directory and
`is_remote` is False; in a pod the cluster wrapper builds the same fields from the TAU_* env.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def _cwd() -> Path:
    return Path.cwd()


def _datasets() -> Path:
    return Path.cwd() / "datasets"


def _checkpoints() -> Path:
    return Path.cwd() / "checkpoints"


@dataclass
class Ctx:
    """What a workload function may read about where and how it runs."""

    name: str
    gpus: int
    workers: int = 1
    smoke_pairs: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)
    manifest_path: Path | None = None
    data_dir: Path = field(default_factory=_cwd)
    hot_dir: Path = field(default_factory=_cwd)
    datasets_dir: Path = field(default_factory=_datasets)
    checkpoints_dir: Path = field(default_factory=_checkpoints)
    durable_datasets_dir: Path = field(default_factory=_datasets)
    durable_checkpoints_dir: Path = field(default_factory=_checkpoints)
    upstream_checkpoint: Path | None = None
    resume_from: Path | None = None
    storage_hot_status: str = "local"
    storage_hot_reason: str = ""
    storage_hot_write_mbps: float | None = None
    is_remote: bool = False
