"""Admin access to the control plane (the official client's dynamic API) and the objects the
harness puts in it: namespaces and the fake GPU nodes KWOK manages.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config
from kubernetes import dynamic
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import NotFoundError, ResourceNotFoundError

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
GPU_CLASS_LABEL = "tau.azure.com/gpu-class"
#: The fake GPU nodes: two 8-GPU H100 nodes (a 2-node torchrun job fits, a 16-GPU pod does not)
#: and one CPU node.
GPU_NODES = (("gpu-h100-0", 8), ("gpu-h100-1", 8), ("cpu-0", 0))


class Api:
    """The admin's dynamic client; `apply` creates or replaces a whole object."""

    def __init__(self, kubeconfig: Path, context: str) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self._client = self._new_client()

    def _new_client(self) -> dynamic.DynamicClient:
        api = kube_config.new_client_from_config(str(self.kubeconfig), context=self.context)
        return dynamic.DynamicClient(api)

    @property
    def api_client(self) -> ApiClient:
        return self._client.client

    def resource(self, api_version: str, kind: str) -> Any:
        try:
            return self._client.resources.get(api_version=api_version, kind=kind)
        except ResourceNotFoundError:
            # A kind installed after the client read discovery (a CRD): read it again.
            self._client = self._new_client()
            return self._client.resources.get(api_version=api_version, kind=kind)

    def apply(self, obj: dict[str, Any]) -> dict[str, Any]:
        res = self.resource(obj["apiVersion"], obj["kind"])
        meta = obj["metadata"]
        ns = meta.get("namespace") if res.namespaced else None
        try:
            current = res.get(name=meta["name"], namespace=ns)
        except NotFoundError:
            created: dict[str, Any] = res.create(body=obj, namespace=ns).to_dict()
            return created
        body = dict(obj)
        body["metadata"] = {**meta, "resourceVersion": current.metadata.resourceVersion}
        replaced: dict[str, Any] = res.replace(body=body, namespace=ns).to_dict()
        return replaced

    def get(
        self, api_version: str, kind: str, name: str, namespace: str | None = None
    ) -> dict[str, Any] | None:
        res = self.resource(api_version, kind)
        try:
            found: dict[str, Any] = res.get(name=name, namespace=namespace).to_dict()
        except NotFoundError:
            return None
        return found

    def list(
        self,
        api_version: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        res = self.resource(api_version, kind)
        kwargs: dict[str, Any] = {"namespace": namespace}
        if label_selector:
            kwargs["label_selector"] = label_selector
        items: list[dict[str, Any]] = res.get(**kwargs).to_dict()["items"]
        return items

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> None:
        res = self.resource(api_version, kind)
        # Background, not the batch API's default (orphan): an orphaned Job's pods and Kueue
        # Workload would outlive the test and keep holding the queue's quota.
        options = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}
        with contextlib.suppress(NotFoundError):
            res.delete(name=name, namespace=namespace, body=options)

    def patch_status(
        self, api_version: str, kind: str, name: str, status: dict[str, Any], namespace=None
    ) -> dict[str, Any]:
        res = self.resource(api_version, kind).subresources["status"]
        patched: dict[str, Any] = res.patch(
            name=name,
            namespace=namespace,
            body={"status": status},
            content_type="application/merge-patch+json",
        ).to_dict()
        return patched

    def patch(
        self, api_version: str, kind: str, name: str, body: dict[str, Any], namespace=None
    ) -> dict[str, Any]:
        res = self.resource(api_version, kind)
        patched: dict[str, Any] = res.patch(
            name=name, namespace=namespace, body=body, content_type="application/merge-patch+json"
        ).to_dict()
        return patched

    def wait_established(self, crd: str, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            obj = self.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd) or {}
            conds = (obj.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conds):
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {crd} not Established after {timeout:.0f}s")
            time.sleep(0.2)

    def nodes_ready(self, names: list[str]) -> bool:
        for name in names:
            node = self.get("v1", "Node", name)
            conds = ((node or {}).get("status") or {}).get("conditions") or []
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in conds):
                return False
        return True


def namespace(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": labels or {}},
    }


def gpu_node(name: str, gpus: int) -> dict[str, Any]:
    """A Node KWOK manages (its annotation), with GPU capacity as the device plugin reports it."""
    capacity = {"cpu": "96", "memory": "1800Gi", "pods": "110", "ephemeral-storage": "2Ti"}
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": "local-1",
        "type": "kwok",
    }
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        labels.update(
            {
                GPU_CLASS_LABEL: "h100-95gb",
                "nvidia.com/gpu.present": "true",
                "nvidia.com/gpu.product": "NVIDIA-H100-NVL",
                "nvidia.com/gpu.count": str(gpus),
            }
        )
    # GPU pools are tainted as AKS taints them: only pods that tolerate GPUs land there.
    taints = (
        [
            {"key": "sku", "value": "gpu", "effect": "NoSchedule"},
            {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        ]
        if gpus
        else []
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"taints": taints},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def gpu_nodes() -> list[dict[str, Any]]:
    return [gpu_node(name, gpus) for name, gpus in GPU_NODES]


__all__ = ["Api", "ApiException", "gpu_node", "gpu_nodes", "namespace"]
