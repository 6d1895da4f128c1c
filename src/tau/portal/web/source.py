"""What the web app needs from the experiment store, as a protocol. Pure.

`tau.portal.stellar.source.StoreSource` implements it over the store's read API; tests pass
small fakes. A target that does not exist raises `LookupError` (the route answers 404).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from tau.portal.stellar.evidence import Evidence


class StellarSource(Protocol):
    @property
    def store_path(self) -> str: ...

    def version(self) -> str:
        """A token that changes whenever the store's content changes (cache key, ETag)."""
        ...

    def evidence(self, target: str, *, max_runs: int, kind: str = "") -> Evidence:
        """What the store holds for `target`; `kind` (run_group, run or experiment) resolves
        an id that several kinds share; "" tries a group, then a run, then an experiment.
        """
        ...

    def status(self, target: str) -> Mapping[str, Any]: ...

    def search_runs(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]: ...

    def search_experiments(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]: ...
