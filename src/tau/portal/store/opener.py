"""Open the store a `--store` value names: the folder store or the team store.

Performs I/O. The one module that knows both implementations; each is imported only when it
is the one named (the team store's drivers cost time to import).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tau.portal.store.location import TeamURL, resolve_store

if TYPE_CHECKING:
    from tau.portal.store.interface import Store


def open_store(store: str | None, env: Mapping[str, str] | None = None) -> Store:
    """Open the store for reading: a folder store or a team store, whichever it names."""
    where = resolve_store(store, env)
    return open_location(where)


def open_location(where: Path | TeamURL) -> Store:
    if isinstance(where, TeamURL):
        from tau.portal.store.team import TeamStore

        return TeamStore.open(where)
    from tau.portal.store.core import Store as FolderStore

    return FolderStore.open(where)
