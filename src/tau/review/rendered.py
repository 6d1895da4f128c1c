"""`tau run --render`: each target's client render in a file the repository checks in.

Performs I/O (reads configs, writes or compares files). The default folder is `tau/rendered/`
beside the targets (`tau/rendered/NAME.yaml`; in a monorepo each project's own); `--out DIR`
puts them in DIR instead (`DIR/PROJECT/NAME.yaml` in a monorepo). A file is the client render
(placeholders for what only the cluster knows, Secret references redacted) without the
per-submission provenance annotations, under a fixed header: the same config gives the same
bytes on every machine and every run.

`--check` writes nothing: a file whose bytes differ from a fresh render, a missing file, and
(with `--all`) a file no target renders any more are stale, each shown with its semantic diff.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau.errors import TauError
from tau.review.model import Side, target_diff
from tau.review.targets import Entry, documents, shown_path

FOLDER = Path("tau") / "rendered"
HEADER = (
    "# Rendered by `tau run --render` from {config}; do not edit.\n"
    "# Regenerate: tau run --render {name}   Check: tau run --render {name} --check\n"
)


@dataclass(frozen=True)
class Outcome:
    """One file: `status` is written, unchanged, fresh, stale, removed or error; `detail` holds
    the stale file's diff lines or the error.
    """

    path: Path
    status: str
    target: str = ""
    detail: tuple[str, ...] = ()


def destination(entry: Entry, out: Path | None) -> Path:
    """Where the target's render goes (see the module docstring)."""
    if out is None:
        return entry.base / FOLDER / f"{entry.name}.yaml"
    project = entry.project.name if entry.project else None
    return (out / project if project else out) / f"{entry.name}.yaml"


def content(entry: Entry, env: Mapping[str, str]) -> str:
    """The file's text: the header, then the canonical YAML of the client render.

    Raises:
        TauError: the target does not render.
    """
    from tau import pipeline

    rel = entry.path.resolve().relative_to(entry.base.resolve()).as_posix()
    header = HEADER.format(config=rel, name=entry.name)
    return header + pipeline.dump(documents(shown_path(entry.path, Path.cwd()), env), "yaml")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _orphans(folders: set[Path], made: set[Path]) -> list[Path]:
    found = {p for folder in folders if folder.is_dir() for p in folder.glob("*.yaml")}
    return sorted(found - made)


def _objects(text: str) -> list[dict[str, Any]] | None:
    try:
        return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError:
        return None


def _stale(path: Path, entry: Entry, old: str | None, new: str) -> Outcome:
    from tau.review.report import details

    if old is None:
        note = f"missing: run `tau run --render {entry.name}` to write it"
        return Outcome(path, "stale", entry.label, (note,))
    before = _objects(old)
    if before is None:
        return Outcome(path, "stale", entry.label, ("not YAML any more: render it again",))
    diff = target_diff(entry.label, Side(before), Side(_objects(new)), ("file", "render"))
    lines = tuple(line[2:] for line in details(diff)) or ("only the file's layout differs",)
    return Outcome(path, "stale", entry.label, lines)


def run(
    entries: list[Entry],
    env: Mapping[str, str],
    *,
    out: Path | None = None,
    check: bool = False,
    prune: bool = False,
) -> list[Outcome]:
    """Write (or with `check` compare) each target's file; `prune` (for --all) also handles
    files no target renders: removed, or stale under `check`.
    """
    outcomes: list[Outcome] = []
    made: set[Path] = set()
    for entry in entries:
        path = destination(entry, out)
        made.add(path)
        try:
            text = content(entry, env)
        except TauError as exc:
            outcomes.append(Outcome(path, "error", entry.label, tuple(exc.format().splitlines())))
            continue
        current = _read(path)
        if current == text:
            outcomes.append(Outcome(path, "fresh" if check else "unchanged", entry.label))
        elif check:
            outcomes.append(_stale(path, entry, current, text))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            outcomes.append(Outcome(path, "written", entry.label))
    if prune:
        for orphan in _orphans({p.parent for p in made}, made):
            if check:
                note = "no target renders this file any more: delete it"
                outcomes.append(Outcome(orphan, "stale", orphan.stem, (note,)))
            else:
                orphan.unlink()
                outcomes.append(Outcome(orphan, "removed", orphan.stem))
    return outcomes
