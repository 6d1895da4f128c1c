"""`tau run --diff --against REV`: each target rendered from a Git revision and from the work tree.

Performs I/O (git, the scratch tree, the configs). Targets are matched across the two sides by
their config's path in the repository, so a target that did not exist at REV reads as added and
one deleted since as removed. Errors on the revision's side name files as `REV:path`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from tau.errors import ConfigError, Location, TauError, UsageError
from tau.review import revision
from tau.review.model import Review, target_diff
from tau.review.targets import Entry, discover, named, shown_path, side

WORK_TREE = "work tree"


def _named(names: list[str], cwd: Path, old_cwd: Path, project: str | None) -> list[Entry]:
    """Each name resolved in the work tree, or else at the revision (a removed target)."""
    out = []
    for name in names:
        try:
            out += named([name], cwd, project)
        except UsageError as missing:
            try:
                out += named([name], old_cwd, project)
            except TauError:
                raise missing from None
    return out


def _relocated(exc: ConfigError, shown: Mapping[str, str]) -> ConfigError:
    """The error with its files named as `REV:path` instead of the scratch directory."""

    def name(file: str) -> str:
        for prefix, replacement in shown.items():
            file = file.replace(prefix, replacement)
        return file

    return ConfigError(
        [
            replace(d, location=Location(name(d.location.file), d.location.line, d.location.col))
            if d.location
            else d
            for d in exc.diagnostics
        ]
    )


def _rel(path: Path, root: Path) -> str:
    return path.resolve().relative_to(root.resolve()).as_posix()


def review(
    names: list[str], cwd: Path, rev: str, env: Mapping[str, str], project: str | None = None
) -> Review:
    """Every target `names` (or, when empty, `--all`) means, from `rev` to the work tree.

    Raises:
        UsageError: not a Git work tree, an unknown revision, a name found on neither side.
    """
    root = revision.git_root(cwd)
    rel_cwd = _rel(cwd, root)
    result = Review(rev, WORK_TREE)
    with revision.checked_out(root, rev) as tree:
        old_cwd = tree / rel_cwd
        shown = {f"{tree}/": f"{rev}:", str(tree): f"{rev}:"}
        try:
            if names:
                entries = _named(names, cwd, old_cwd, project)
            else:
                entries = discover(cwd) + (discover(old_cwd) if old_cwd.is_dir() else [])
        except ConfigError as exc:
            raise _relocated(exc, shown) from None
        seen: dict[str, str] = {}
        for entry in entries:
            inside_tree = entry.path.resolve().is_relative_to(tree.resolve())
            key = _rel(entry.path, tree if inside_tree else root)
            seen.setdefault(key, entry.label)
        for key, label in seen.items():
            new_path = root / key
            old = side(tree / key, env, shown)
            new = side(shown_path(new_path, Path.cwd()) if new_path.is_file() else None, env, {})
            result.targets.append(target_diff(label, old, new, (rev, WORK_TREE)))
    return result
