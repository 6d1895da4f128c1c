"""The errors the experiment store raises, with the reference's message prefixes. Pure."""

from __future__ import annotations

from tau.errors import ExitCode, TauError, UsageError

__all__ = [
    "IndexDamaged",
    "NotBuilt",
    "NotFound",
    "StoreError",
    "UsageError",
    "WriteConflict",
]


class StoreError(TauError):
    """The store cannot be opened or read (missing manifest, unknown schema, bad input)."""


class NotFound(StoreError):
    """`experiment store record not found: <target>`."""

    def __init__(self, target: str, *, hint: str | None = None) -> None:
        super().__init__(f"experiment store record not found: {target}", hint=hint)
        self.target = target


class WriteConflict(StoreError):
    """`experiment store write conflict: <detail>`: a write-once record or key differs."""

    def __init__(self, detail: str, *, hint: str | None = None) -> None:
        super().__init__(f"experiment store write conflict: {detail}", hint=hint)
        self.detail = detail


class IndexDamaged(StoreError):
    """The store's `index.sqlite` is corrupt or truncated: one line with the fix, no traceback.

    The index is derived: the append-log mirrors and the metric files hold everything it holds,
    so `experiment rebuild-index` makes a new one (restoring a backup works as well).
    """

    def __init__(self, index: str, reason: str) -> None:
        root = str(index).rsplit("/", 1)[0] if "/" in str(index) else "."
        super().__init__(
            f"experiment store index {index} is damaged ({reason})",
            hint=(
                "restore index.sqlite from a backup, or rebuild it from the store's files with "
                f"`taugrid-portal experiment rebuild-index --store {root}`"
            ),
        )
        self.index = str(index)
        self.reason = reason


class NotBuilt(TauError):
    """A `taugrid-portal` command of the surface that is not built yet (exit 2)."""

    exit_code = ExitCode.NOT_IMPLEMENTED

    def __init__(self, command: str, *, hint: str | None = None) -> None:
        super().__init__(f"{command}: not built yet", hint=hint)
