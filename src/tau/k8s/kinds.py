"""The resource types (kind, group, version) tau reads or writes, and who installs each.

Pure vocabulary: the API layer (tau.kube) and everything above it name resources from here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceType:
    """One API resource: where it is served and which product's CRD provides it.

    Attributes:
        owner: the product whose CRD serves it ("" for built-in kinds).
        namespaced: False for cluster-scoped kinds (nodes, cluster queues, ...), which are
            always addressed without a namespace.
    """

    group: str
    version: str
    plural: str
    kind: str
    owner: str = ""
    namespaced: bool = True

    @property
    def qualified(self) -> str:
        """`plural.group` as kubectl spells it (`workspaces.tau.azure.com`, `pods`)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


TAU_WORKSPACE = ResourceType("tau.azure.com", "v1alpha1", "workspaces", "TauWorkspace", "TauGrid")
TAU_CLUSTER = ResourceType(
    "tau.azure.com", "v1alpha1", "clusters", "TauCluster", "TauGrid", namespaced=False
)
RAYJOB = ResourceType("ray.io", "v1", "rayjobs", "RayJob", "KubeRay")
RAYCLUSTER = ResourceType("ray.io", "v1", "rayclusters", "RayCluster", "KubeRay")
RAYSERVICE = ResourceType("ray.io", "v1", "rayservices", "RayService", "KubeRay")
# v1beta2 is the storage version of Kueue v0.19 (v1beta1 is still served).
WORKLOAD = ResourceType("kueue.x-k8s.io", "v1beta2", "workloads", "Workload", "Kueue")
LOCALQUEUE = ResourceType("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue", "Kueue")
CLUSTERQUEUE = ResourceType(
    "kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", "Kueue", namespaced=False
)
JOB = ResourceType("batch", "v1", "jobs", "Job")
POD = ResourceType("", "v1", "pods", "Pod")
SERVICE = ResourceType("", "v1", "services", "Service")
EVENT = ResourceType("", "v1", "events", "Event")
#: A managed workflow's secret payload (workflow.secret_payload), created before its workload.
SECRET = ResourceType("", "v1", "secrets", "Secret")
#: runtime.env_kv: the Key Vault objects the Secrets Store CSI driver syncs into a Secret.
SECRET_PROVIDER_CLASS = ResourceType(
    "secrets-store.csi.x-k8s.io",
    "v1",
    "secretproviderclasses",
    "SecretProviderClass",
    "Secrets Store CSI Driver",
)

#: The kinds tau creates for a run, by kind name.
BY_KIND = {r.kind: r for r in (JOB, SERVICE, RAYJOB, SECRET, SECRET_PROVIDER_CLASS)}
PVC = ResourceType("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")

# Operator reads and writes (`tau cluster`): nodes, controllers, Kueue policy objects, DRA.
NODE = ResourceType("", "v1", "nodes", "Node", namespaced=False)
DEPLOYMENT = ResourceType("apps", "v1", "deployments", "Deployment")
RESOURCE_FLAVOR = ResourceType(
    "kueue.x-k8s.io", "v1beta2", "resourceflavors", "ResourceFlavor", "Kueue", namespaced=False
)
TOPOLOGY = ResourceType(
    "kueue.x-k8s.io", "v1beta2", "topologies", "Topology", "Kueue", namespaced=False
)
WORKLOAD_PRIORITY_CLASS = ResourceType(
    "kueue.x-k8s.io",
    "v1beta2",
    "workloadpriorityclasses",
    "WorkloadPriorityClass",
    "Kueue",
    namespaced=False,
)
PRIORITY_CLASS = ResourceType(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
RESOURCE_SLICE = ResourceType(
    "resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False
)
#: DRA went GA in Kubernetes 1.34 as resource.k8s.io/v1.
RESOURCE_CLAIM = ResourceType("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
QUOTA_REQUEST = ResourceType(
    "tau.azure.com", "v1alpha1", "quotarequests", "TauQuotaRequest", "TauGrid"
)
