"""The one read interface every experiment store implements: the folder store and the team store.

Pure (a typing protocol). Read commands and both servers take a `Store` and never ask which
kind they have: rows come from `query`/`scalar` (SQL written once, with `?` placeholders, in the
subset SQLite and PostgreSQL share), and metric files are opened at `path_of(rel)` through
`filesystem` (None for local files, a pyarrow filesystem for an object store).

Implementations: `tau.portal.store.core.Store` (a folder: SQLite index, local Parquet) and
`tau.portal.store.team.TeamStore` (PostgreSQL index, Parquet on S3-compatible storage).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

Row = dict[str, Any]
Params = Sequence[Any] | Mapping[str, Any]


class Store(Protocol):
    """What a read command needs from an experiment store."""

    manifest: dict[str, Any]

    @property
    def location(self) -> str:
        """How outputs name the store (`store_path`): a folder path or the team store's URL."""
        ...

    @property
    def project(self) -> str: ...

    @property
    def experiment_id(self) -> str: ...

    @property
    def filesystem(self) -> Any:
        """The pyarrow filesystem metric files are read through (None: the local disk)."""
        ...

    def path_of(self, rel: str) -> str:
        """Where the store-relative file `rel` (a `metric_files.path`) is, for `filesystem`."""
        ...

    def file_bytes(self, rel: str) -> bytes:
        """The whole store-relative file `rel` (an object store's are kept, as they never
        change once indexed: a chart reading several metrics of a file fetches it once).
        """
        ...

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        """Rows of a read query as plain dicts."""
        ...

    def scalar(self, sql: str, params: Params = ()) -> Any:
        """The first column of the first row (None when there is no row)."""
        ...

    def version(self) -> str:
        """A token that changes whenever a writer commits (caches and ETags follow it)."""
        ...

    def close(self) -> None: ...
