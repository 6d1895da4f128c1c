"""Existence probes that answer False instead of raising for a path the OS refuses.

Performs I/O (stat). `Path.is_file()` raises OSError for a name longer than the file system
allows (ENAMETOOLONG) or one it cannot represent; user input reaches these probes, and a
path that cannot exist is simply not there.
"""

from __future__ import annotations

from pathlib import Path


def is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False
