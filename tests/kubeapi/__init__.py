"""A local Kubernetes API server emulation for tests, served over real HTTP on 127.0.0.1.

Tests drive it with the official ``kubernetes`` client (see ``fixtures.py``) and act as the
cluster's controllers through :class:`KubeApiServer` helpers such as ``put`` and ``set_status``.
"""

from .errors import ApiError
from .kinds import KUBERAY_KINDS, KUEUE_KINDS, TAU_KINDS, ResourceKind
from .server import KubeApiServer, RecordedRequest

__all__ = [
    "KUBERAY_KINDS",
    "KUEUE_KINDS",
    "TAU_KINDS",
    "ApiError",
    "KubeApiServer",
    "RecordedRequest",
    "ResourceKind",
]
