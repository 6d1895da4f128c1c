"""The Git root of a directory and the monorepo catalog file there. Performs I/O (stat only).

A module of its own, importing nothing of the config layer: every command that connects asks
for the repository root (descriptor discovery) and whether a catalog exists (lifecycle verbs),
and only a repository that has a catalog pays for loading and validating it
(`tau.intent.projects`).
"""

from __future__ import annotations

from pathlib import Path

#: The monorepo catalog, at the Git root.
FILENAME = "tau.projects.yaml"


def git_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds `.git` (a dir or a worktree file)."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def catalog_file(start: Path) -> Path | None:
    """The catalog of the Git repository holding `start`, when it has one."""
    from tau.intent.probe import is_file

    root = git_root(start)
    if root is None or not is_file(root / FILENAME):
        return None
    return root / FILENAME
