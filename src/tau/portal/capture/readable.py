"""Find the folder a glob could not look into. Performs I/O (lists folders).

`glob.glob` treats a folder it may not list as empty, so a pattern into a folder without read
permission reports "no files match" where the problem is the permission. This walks the
pattern's folders the way glob does and names the first one that refuses to be listed.
"""

from __future__ import annotations

import glob
import os
from typing import NoReturn

from tau.portal.errors import UsageError


def _listable(folder: str) -> bool:
    try:
        with os.scandir(folder or "."):
            return True
    except PermissionError:
        return False
    except OSError:
        return True  # missing or not a folder: not a permission problem


def unreadable_folder(pattern: str) -> str | None:
    """The first folder that a match of `pattern` would have to be listed from and that this
    user may not list, or None.

    The literal folder before the first wildcard is checked, then each folder the pattern's
    own folder part matches (as glob expands it), so `/data/*/metrics/*.jsonl` finds
    `/data/b/metrics` when only that one is locked.
    """
    folder = os.path.dirname(pattern)
    if not glob.has_magic(folder):
        return None if _listable(folder) else folder or "."
    literal = folder
    while glob.has_magic(literal):
        literal = os.path.dirname(literal)
    if not _listable(literal):
        return literal or "."
    parent = unreadable_folder(folder)
    if parent is not None:
        return parent
    for match in sorted(glob.glob(folder, recursive=True)):
        if os.path.isdir(match) and not _listable(match):
            return match
    return None


def no_match(pattern: str) -> NoReturn:
    """Why a glob matched nothing: a folder on its way this user cannot read, when there is one
    (`glob` skips those silently), else plainly no match.

    Raises:
        UsageError: always.
    """
    denied = unreadable_folder(os.path.expanduser(pattern))
    if denied is not None:
        raise UsageError(
            f"--history {pattern!r}: cannot read folder {denied}: permission denied",
            hint="make the folder readable by this user (chmod/chown), or copy the histories "
            "somewhere readable and pass that glob",
        )
    raise UsageError(f"--history {pattern!r}: no files match")
