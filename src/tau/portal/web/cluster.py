"""The portal's cluster reader: one bounded refresh shared by every board and browser tab.

Performs I/O (the Kubernetes API, through `tau.kube.lists`). A refresh is eight list calls,
whatever the cluster's size; it is cached for `ttl` seconds, and concurrent requests for a stale
view wait for one refresh instead of each starting their own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from tau.k8s import meta
from tau.kube.lists import BOARD_KINDS, Listed, list_kind
from tau.portal.web.boards import ClusterView
from tau.portal.web.cache import Memo

#: Seconds a refresh is reused: many tabs polling every few seconds cost one read.
DEFAULT_TTL = 3.0


class ClusterReader:
    def __init__(
        self,
        api_client: Any | None,
        *,
        namespace: str | None = None,
        unavailable: str = "",
        ttl: float = DEFAULT_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.unavailable = unavailable
        self.clock = clock
        self._memo: Memo[ClusterView] = Memo(size=1, ttl=ttl)

    def view(self) -> ClusterView:
        return self._memo.get("view", self._read, clock=self.clock)

    def _read(self) -> ClusterView:
        lists: dict[str, Listed] = {}
        for resource in BOARD_KINDS:
            if self.api_client is None:
                lists[resource.kind] = Listed(
                    error=f"no Kubernetes access: {self.unavailable or 'no cluster connection'}"
                )
                continue
            # Only tau's pods: the runs board needs no others, and a busy cluster has many.
            selector = (
                f"{meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE}" if resource.kind == "Pod" else ""
            )
            lists[resource.kind] = list_kind(
                self.api_client, resource, self.namespace, selector=selector
            )
        return ClusterView(lists=lists, read_at=datetime.now(UTC), namespace=self.namespace)
