"""The one-line error for a store write the filesystem refused (a full disk, above all). Pure.

Python's own text (`No space left on device`, pyarrow's `Error writing bytes to file`, SQLite's
`database or disk is full`) names neither the file nor the fix; the writer knows which file it
was writing, and by the time this error is raised it has removed everything it had written.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from tau.portal.errors import StoreError

#: errno values that mean the filesystem has no room (space or quota) for the write.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})
#: errno values that mean this user may not write there.
NOT_ALLOWED = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def _why(exc: BaseException) -> str | None:
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        if "full" in text:
            return "no space left on device"
        if "readonly" in text or "read-only" in text:
            return "read-only database"
        return None
    if isinstance(exc, OSError) and exc.errno in NO_SPACE:
        return "no space left on device"
    if isinstance(exc, OSError) and exc.errno in NOT_ALLOWED:
        return "permission denied" if exc.errno != errno.EROFS else "read-only file system"
    return None


def write_problem(exc: BaseException, path: Path | None, root: Path) -> StoreError | None:
    """The located error for a failed write of `path` in the store at `root`, or None when
    `exc` is not a refusal by the filesystem (it is then raised as it is).
    """
    why = _why(exc)
    if why is None:
        return None
    where = path or root
    if why == "no space left on device":
        hint = (
            f"free space on the filesystem holding {root}, or choose another store with "
            "--store DIR (or TAU_EXP_STORE); nothing of this write was kept"
        )
    else:
        hint = (
            f"make {root} writable by this user, or choose another store with --store DIR "
            "(or TAU_EXP_STORE); nothing of this write was kept"
        )
    return StoreError(f"cannot write {where}: {why}", hint=hint)
