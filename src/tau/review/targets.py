"""Which targets a review covers, and one target rendered on one side.

Performs I/O (lists tau/ folders, reads configs and what they name). A target is a run config
`tau/NAME.yaml` (or `.yml`) whose NAME is a run name, exactly what `tau run NAME` resolves;
`--all` takes every one of the working directory's `tau/` folder, or in a monorepo
(`tau.projects.yaml`) of every project's. Other files there (the workspace connection
descriptor, subfolders such as `rendered/` and `manifests/`) are not targets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.errors import TauError
from tau.intent import projects
from tau.k8s.names import DNS_1123_LABEL
from tau.review.model import Side


@dataclass(frozen=True)
class Entry:
    """One target: its label (NAME, or PROJECT/NAME in a monorepo), config file and the folder
    holding its `tau/` (the project's directory, or the working directory).
    """

    label: str
    name: str
    path: Path
    base: Path
    project: projects.Project | None = None


def _in(base: Path, project: projects.Project | None) -> list[Entry]:
    folder = base / "tau"
    found = []
    for path in sorted(folder.glob("*.y*ml")) if folder.is_dir() else []:
        name, ext = path.stem, path.suffix
        if ext in (".yaml", ".yml") and DNS_1123_LABEL.match(name) and path.is_file():
            label = f"{project.name}/{name}" if project else name
            found.append(Entry(label, name, path, base, project))
    return found


def discover(cwd: Path) -> list[Entry]:
    """Every target `--all` covers from `cwd` (see the module docstring).

    Raises:
        ConfigError: the monorepo catalog is invalid.
    """
    catalog = projects.find(cwd)
    if catalog is None:
        return _in(cwd, None)
    chosen = [catalog.projects[name] for name in catalog.names()]
    return [entry for project in chosen for entry in _in(project.root, project)]


def named(names: list[str], cwd: Path, project: str | None) -> list[Entry]:
    """The targets the command line names, resolved as `tau run NAME` resolves them.

    Raises:
        UsageError: a name is not a target here (see tau.intent.target.resolve).
    """
    from tau.intent import target as targets

    out = []
    for name in names:
        found = targets.resolve(name, None, cwd, project)
        owner = found.project
        label = f"{owner.name}/{name}" if owner else name
        out.append(Entry(label, name, found.path, owner.root if owner else cwd, owner))
    return out


def load(path: Path) -> Any:
    """The target's validated config (a managed workflow translated, as `tau run` does).

    Raises:
        ConfigError: the config does not load or validate.
    """
    from tau.intent import load as loader
    from tau.intent import validate
    from tau.intent.workflow import probe

    doc = loader.load(path)
    if probe.applies(doc.data):
        from tau.intent.workflow import dispatch

        return dispatch.load_run(doc, probe.Options())
    return validate.validate(doc)


def documents(path: Path, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The target's client render (`tau run NAME --dry-run=client` without provenance):
    placeholders for cluster values, Secret references redacted.

    Raises:
        TauError: the config does not load, validate or render.
    """
    from tau import pipeline

    return pipeline.client_preview(load(path), env).documents


def side(path: Path | None, env: Mapping[str, str], shown: Mapping[str, str]) -> Side:
    """One side of a target: its objects, its error (with each `shown` prefix replaced, so a
    scratch directory reads as `REV:`), or absent when `path` is None or missing.
    """
    if path is None or not path.is_file():
        return Side()
    try:
        return Side(documents(path, env))
    except TauError as exc:
        text = exc.format()
        for prefix, replacement in shown.items():
            text = text.replace(prefix, replacement)
        return Side(error=text)


def shown_path(path: Path, cwd: Path) -> Path:
    """`path` relative to `cwd` when inside it (as tau names files in messages)."""
    try:
        return path.resolve().relative_to(cwd.resolve())
    except ValueError:
        return path
