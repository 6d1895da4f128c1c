"""A log read answered 404 for a pod the API still has: the node's answer, not the pod's.

Performs I/O (one pod read per 404; the clock is injected). A kubelet that has just restarted
reports Ready before it has listed its pods again, and until it has it answers "pod does not
exist" for their logs (seconds, on a real node). Calling the pod gone there would be wrong,
and ending a followed log there would lose the rest of it. So a 404 for a pod the API still
has is read again, for up to NODE_SYNC_WAIT; past it the error names the node, not the pod.
Used by the single read and by the followed read of `tau run logs` and the log tee.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tau.errors import ClusterError

#: How long a log read waits for a node that does not know a pod the API still has.
NODE_SYNC_WAIT = 30.0
#: Seconds between two reads while the node does not know the pod.
AGAIN = 1.0

#: The pod as the API has it, or None when it has no such pod.
PodFinder = Callable[[], "dict[str, Any] | None"]


class NodeSync:
    """The wait of one log read for the node to know its pod again."""

    def __init__(
        self,
        namespace: str,
        pod: str,
        find: PodFinder,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.namespace = namespace
        self.pod = pod
        self.find = find
        self.clock = clock
        self._deadline: float | None = None

    def failed(self, exc: ClusterError) -> float:
        """Seconds to wait before reading again; raises `exc` when it is not the node's 404
        (the pod gone from the API, or any other error), and the node's error past the wait.
        """
        if exc.status != 404:
            raise exc
        found = self.find()
        if found is None:
            raise exc
        now = self.clock()
        if self._deadline is None:
            self._deadline = now + NODE_SYNC_WAIT
        if now >= self._deadline:
            node = str((found.get("spec") or {}).get("nodeName") or "its node")
            raise ClusterError(
                f"pod {self.namespace}/{self.pod} exists but node {node} does not serve its "
                f"log (it answers that it does not know the pod, {NODE_SYNC_WAIT:.0f}s on)",
                status=404,
                hint="a kubelet that restarted after the pod ended may have forgotten it; "
                "`tau run status` shows how the run ended; if the node stays so, ask "
                f"the platform team about node {node}",
            ) from None
        return AGAIN

    def back(self) -> None:
        """The node served the log: a later 404 starts a new wait."""
        self._deadline = None


def api_pod(api: Any, namespace: str, pod: str) -> PodFinder:
    """The finder that asks the API for the pod."""

    def find() -> dict[str, Any] | None:
        from tau.k8s.kinds import POD
        from tau.kube import resources

        return resources.find(api, POD, pod, namespace=namespace)

    return find
