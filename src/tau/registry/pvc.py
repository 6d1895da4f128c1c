"""The ``--registry pvc`` backend: registry documents on the registry PVC via helper pods.

Performs I/O (would talk to the cluster). Not built in this version: the helper-pod transport
needs a Kubernetes API to test against, and the local API emulator is not available yet. The
class exists so ``--registry pvc`` fails with a clear message and exit code 2 instead of a
traceback, and so the real backend can drop in behind the same `Backend` protocol.
"""

from __future__ import annotations

from tau.registry.errors import BackendNotBuilt


class PvcBackend:
    """Placeholder for the helper-pod backend; constructing it reports that it is not built."""

    def __init__(self, pvc: str, *, namespace: str | None, context: str | None) -> None:
        raise BackendNotBuilt(
            "the pvc registry backend is not built yet; use --registry file://DIR",
            hint="or set TAU_REGISTRY=file://DIR to make a local registry the default",
        )
