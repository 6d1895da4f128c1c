"""Defaults the project's `tau.yaml` gives `track` and `import jsonl` (contract §4.2).

Performs I/O (reads the default config file of the working directory when there is one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.intent.target import DEFAULT_FILES


@dataclass(frozen=True)
class ProjectDefaults:
    """Values a discovered tau.yaml offers; each fills only a flag the user did not set."""

    run: str | None = None
    project: str | None = None
    experiment: str | None = None
    group: str | None = None


def discover(cwd: Path) -> ProjectDefaults:
    """Read `tau.yaml` (or its alternatives) in `cwd`; empty defaults when there is none."""
    for name in DEFAULT_FILES:
        path = cwd / name
        if path.is_file():
            return _from_file(path)
    return ProjectDefaults()


def _from_file(path: Path) -> ProjectDefaults:
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ProjectDefaults()  # `tau run validate` reports a broken config; not our job
    if not isinstance(data, dict):
        return ProjectDefaults()
    run = data.get("run")
    experiment = data.get("experiment")
    run_name = _text(run.get("name")) if isinstance(run, dict) else None
    exp: dict[str, Any] = experiment if isinstance(experiment, dict) else {}
    return ProjectDefaults(
        run=run_name or _text(data.get("name")),
        project=_text(exp.get("project")),
        experiment=_text(exp.get("name")),
        group=_text(exp.get("group")),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
