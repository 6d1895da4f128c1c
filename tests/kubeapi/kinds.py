"""The catalogue of resource types the emulator serves: built-ins plus test-registered CRDs.

A real API server only serves a custom resource once its CRD is installed; the emulator mirrors
that by refusing any group/version/plural that was not registered, so tests notice when the code
under test depends on a CRD the cluster might not have.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ResourceKind:
    """One served resource: ``/apis/{group}/{version}/[namespaces/{ns}/]{plural}``."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    subresources: frozenset[str] = field(default_factory=lambda: frozenset({"status"}))
    # Built-in types accept strategic-merge patches; custom resources reject them with 415.
    builtin: bool = False
    # Field selectors beyond metadata.name/metadata.namespace that this type supports.
    selectable_fields: frozenset[str] = frozenset()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    subresources: tuple[str, ...] = (),
    fields: tuple[str, ...] = (),
) -> ResourceKind:
    return ResourceKind(
        group,
        version,
        plural,
        kind,
        namespaced=namespaced,
        subresources=frozenset(subresources),
        builtin=True,
        selectable_fields=frozenset(fields),
    )


BUILTIN_KINDS: tuple[ResourceKind, ...] = (
    _builtin(
        "",
        "v1",
        "namespaces",
        "Namespace",
        namespaced=False,
        subresources=("status",),
        fields=("status.phase",),
    ),
    _builtin(
        "",
        "v1",
        "nodes",
        "Node",
        namespaced=False,
        subresources=("status",),
        fields=("spec.unschedulable",),
    ),
    _builtin(
        "",
        "v1",
        "pods",
        "Pod",
        subresources=("status", "log"),
        fields=(
            "status.phase",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "status.podIP",
        ),
    ),
    _builtin("", "v1", "services", "Service", subresources=("status",)),
    _builtin(
        "",
        "v1",
        "events",
        "Event",
        fields=(
            "involvedObject.kind",
            "involvedObject.name",
            "involvedObject.namespace",
            "involvedObject.uid",
            "reason",
            "type",
            "source",
        ),
    ),
    _builtin("", "v1", "secrets", "Secret", fields=("type",)),
    _builtin("", "v1", "configmaps", "ConfigMap"),
    _builtin("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", subresources=("status",)),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount"),
    _builtin("batch", "v1", "jobs", "Job", subresources=("status",), fields=("status.successful",)),
    _builtin("apps", "v1", "deployments", "Deployment", subresources=("status",)),
    _builtin(
        "events.k8s.io",
        "v1",
        "events",
        "Event",
        fields=("regarding.kind", "regarding.name", "regarding.namespace", "reason", "type"),
    ),
    # Cluster-scoped kinds the operator commands (`tau cluster`) read.
    _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False),
    _builtin("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False),
    _builtin("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", namespaced=False),
)

KUEUE_KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload"),
    ResourceKind("kueue.x-k8s.io", "v1beta2", "localqueues", "LocalQueue"),
    ResourceKind("kueue.x-k8s.io", "v1beta2", "clusterqueues", "ClusterQueue", namespaced=False),
    ResourceKind(
        "kueue.x-k8s.io",
        "v1beta2",
        "resourceflavors",
        "ResourceFlavor",
        namespaced=False,
        subresources=frozenset(),
    ),
    ResourceKind(
        "kueue.x-k8s.io",
        "v1beta2",
        "workloadpriorityclasses",
        "WorkloadPriorityClass",
        namespaced=False,
        subresources=frozenset(),
    ),
    ResourceKind(
        "kueue.x-k8s.io",
        "v1beta2",
        "topologies",
        "Topology",
        namespaced=False,
        subresources=frozenset(),
    ),
)

KUBERAY_KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("ray.io", "v1", "rayjobs", "RayJob"),
    ResourceKind("ray.io", "v1", "rayclusters", "RayCluster"),
    ResourceKind("ray.io", "v1", "rayservices", "RayService"),
)

TAU_KINDS: tuple[ResourceKind, ...] = (
    ResourceKind("tau.azure.com", "v1alpha1", "workspaces", "TauWorkspace"),
    # clusters.tau.azure.com: the cluster-scoped TauCluster singleton (contract §4.5).
    ResourceKind("tau.azure.com", "v1alpha1", "clusters", "TauCluster", namespaced=False),
    ResourceKind("tau.azure.com", "v1alpha1", "quotarequests", "TauQuotaRequest"),
)


class KindRegistry:
    """Thread-safe lookup of served kinds by URL parts or by ``apiVersion``/``kind``."""

    def __init__(self, kinds: tuple[ResourceKind, ...] = BUILTIN_KINDS) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[tuple[str, str, str], ResourceKind] = {}
        for kind in kinds:
            self.register(kind)

    def register(self, kind: ResourceKind) -> ResourceKind:
        with self._lock:
            self._by_path[(kind.group, kind.version, kind.plural)] = kind
        return kind

    def by_path(self, group: str, version: str, plural: str) -> ResourceKind | None:
        with self._lock:
            return self._by_path.get((group, version, plural))

    def by_kind(self, api_version: str, kind: str) -> ResourceKind | None:
        group, _, version = api_version.rpartition("/")
        with self._lock:
            for candidate in self._by_path.values():
                if (candidate.group, candidate.version, candidate.kind) == (group, version, kind):
                    return candidate
        return None

    def resolve(self, api_version: str, kind_or_plural: str) -> ResourceKind:
        """Find a kind by ``Kind`` or plural name, for the direct store helpers."""
        found = self.by_kind(api_version, kind_or_plural)
        if found is None:
            group, _, version = api_version.rpartition("/")
            found = self.by_path(group, version, kind_or_plural)
        if found is None:
            raise KeyError(f"kind {kind_or_plural!r} in {api_version!r} is not registered")
        return found

    def all(self) -> list[ResourceKind]:
        with self._lock:
            return list(self._by_path.values())
