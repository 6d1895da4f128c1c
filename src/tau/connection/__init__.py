"""The repository's workspace connection: descriptor, trust, dedicated kubeconfig, AKS access.

Entry points: `tau.connection.activate` (`activate`, `Connection`, `TrustRequired`) and
`tau.connection.descriptor` (`discover`, `load`). Nothing here imports `kubernetes`; the Azure
SDK is imported only for `access.method: aks`. The package itself imports nothing, so a light
submodule (`tau.connection.context`, `tau.connection.memo`) loads without the descriptor
parser and YAML.
"""
