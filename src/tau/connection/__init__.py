"""The repository's workspace connection: descriptor, trust, dedicated kubeconfig, AKS access.

Public entry points: `discover`, `load`, `activate`, `Connection`, `TrustRequired`.
Nothing here imports `kubernetes`; the Azure SDK is imported only for `access.method: aks`.
"""

from tau.connection.activate import TRUST_COMMAND, Connection, TrustRequired, activate
from tau.connection.descriptor import Descriptor, Discovery, discover, load

__all__ = [
    "TRUST_COMMAND",
    "Connection",
    "Descriptor",
    "Discovery",
    "TrustRequired",
    "activate",
    "discover",
    "load",
]
