"""What one review found: each target's two sides and the difference between them.

Pure. A side is what rendering a target gave at one place (a Git revision, the work tree, the
cluster): its objects, or the located error that stopped the render, or nothing when the target
does not exist there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau.review.differ import ObjectDiff, compare


@dataclass(frozen=True)
class Side:
    """One side of a target: `documents`, or `error` (located text), or neither (absent)."""

    documents: list[dict[str, Any]] | None = None
    error: str | None = None

    @property
    def absent(self) -> bool:
        return self.documents is None and self.error is None


@dataclass(frozen=True)
class TargetDiff:
    """One target: `op` is unchanged, changed, added, removed or error."""

    target: str
    op: str
    objects: tuple[ObjectDiff, ...] = ()
    #: (side label, located error) for each side that failed to render.
    errors: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Review:
    """Every target compared from the side `old` (e.g. HEAD, live) to `new` (the work tree)."""

    old: str
    new: str
    targets: list[TargetDiff] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(t.op != "unchanged" for t in self.targets)


def target_diff(target: str, old: Side, new: Side, labels: tuple[str, str]) -> TargetDiff:
    """Compare one target's sides; `labels` name them (old, new) in error lines."""
    errors = tuple(
        (label, side.error) for label, side in zip(labels, (old, new), strict=True) if side.error
    )
    if errors:
        return TargetDiff(target, "error", errors=errors)
    if old.documents is None:
        added = tuple(ObjectDiff(*_ref(d), "added") for d in new.documents or [])
        return TargetDiff(target, "added", added)
    if new.documents is None:
        removed = tuple(ObjectDiff(*_ref(d), "removed") for d in old.documents)
        return TargetDiff(target, "removed", removed)
    objects = tuple(compare(old.documents, new.documents))
    return TargetDiff(target, "changed" if objects else "unchanged", objects)


def _ref(document: dict[str, Any]) -> tuple[str, str]:
    return str(document.get("kind", "")), str((document.get("metadata") or {}).get("name", ""))
