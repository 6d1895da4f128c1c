"""The manifests the controllers' own modules ship: CRDs and webhook configurations.

Kueue's and KubeRay's CRDs are installed from the module versions their controllers are built
from (pins.toml), read from the Go module cache; so is the Secrets Store CSI driver's
SecretProviderClass CRD, whose driver does not run here (KWOK's pods mount no volumes), so
that a Key Vault run's SecretProviderClass is created and validated as on a real cluster.
Kueue's and KubeRay's webhook configurations name an in-cluster Service; here the controllers
run as processes on 127.0.0.1, so each webhook (and Kueue's CRD conversion webhook) is pointed
at `https://127.0.0.1:<port><path>` with the test CA's bundle.
A URL is used rather than a Service with hand-made endpoints because the apiserver refuses
loopback addresses in Endpoints and EndpointSlices.
"""

from __future__ import annotations

import base64
import copy
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import build
from tests.e2e.controlplane.build import components

#: The Kueue CRDs whose versions convert through Kueue's /convert webhook (its kustomization
#: patches these, config/components/crd/kustomization.yaml).
KUEUE_CONVERTED = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")
#: Kueue's kustomization prefixes every object name with this.
KUEUE_PREFIX = "kueue-"
#: Kueue's kustomization keeps its pod-level webhooks out of these namespaces.
KUEUE_EXCLUDED_NAMESPACES = ("kube-system", "kueue-system")
KUEUE_NAMESPACED_WEBHOOKS = (
    "mpod.kb.io",
    "mdeployment.kb.io",
    "mstatefulset.kb.io",
    "vpod.kb.io",
    "vdeployment.kb.io",
    "vstatefulset.kb.io",
)


def module_dir(name: str) -> Path:
    """The module cache folder of a pinned component (downloaded if missing)."""
    return build.module_dir(next(c for c in components() if c.name == name))


#: The pins.toml component of the Secrets Store CSI driver, and its CRD inside the module.
SECRETS_STORE = "secrets-store-csi-driver"
SECRETS_STORE_CRD = "config/crd/bases/secrets-store.csi.x-k8s.io_secretproviderclasses.yaml"


def module_cache() -> Path:
    """The Go module cache folder (`go env GOMODCACHE`), without asking the network."""
    explicit = os.environ.get("GOMODCACHE")
    if explicit:
        return Path(explicit)
    if shutil.which("go"):
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], check=False, capture_output=True, text=True
        ).stdout.strip()
        if out:
            return Path(out)
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path.home() / "go")
    return Path(gopath) / "pkg" / "mod"


def _escape(module: str) -> str:
    """A module path as the cache spells it: each capital letter becomes `!` + lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), module)


def cached_module_dir(name: str, cache: Path | None = None) -> Path | None:
    """The module cache folder of a pinned component if it is already there (no download)."""
    component = next(c for c in components() if c.name == name)
    folder = (cache or module_cache()) / f"{_escape(component.module)}@{component.version}"
    return folder if folder.is_dir() else None


def secrets_store_crd_path(root: Path) -> Path:
    """The SecretProviderClass CRD file inside the driver's module folder."""
    return root / SECRETS_STORE_CRD


def secrets_store_crds() -> list[dict[str, Any]]:
    return _docs(secrets_store_crd_path(module_dir(SECRETS_STORE)))


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def kueue_crds(webhook_port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    root = module_dir("kueue") / "config" / "components" / "crd" / "bases"
    crds = [d for p in sorted(root.glob("*.yaml")) for d in _docs(p)]
    for crd in crds:
        plural = crd["spec"]["names"]["plural"]
        if plural in KUEUE_CONVERTED:
            crd["spec"]["conversion"] = {
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": _url_client(webhook_port, "/convert", ca_pem),
                    "conversionReviewVersions": ["v1"],
                },
            }
    return crds


def kuberay_crds() -> list[dict[str, Any]]:
    root = module_dir("kuberay") / "config" / "crd" / "bases"
    return [d for p in sorted(root.glob("*.yaml")) for d in _docs(p)]


def kwok_crds(kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    root = module_dir("kwok") / "kustomize" / "crd" / "bases"
    return [_docs(root / f"kwok.x-k8s.io_{k}.yaml")[0] for k in kinds]


def kwok_node_stages() -> list[dict[str, Any]]:
    """KWOK's own node stages: initialize a node (Ready, addresses, the kubelet endpoint) and
    keep its lease fresh, so the node lifecycle controller never marks it NotReady."""
    root = module_dir("kwok") / "kustomize" / "stage" / "node"
    return [
        *_docs(root / "fast" / "node-initialize.yaml"),
        *_docs(root / "heartbeat-with-lease" / "node-heartbeat-with-lease.yaml"),
    ]


def _url_client(port: int, path: str, ca_pem: bytes) -> dict[str, str]:
    return {
        "url": f"https://127.0.0.1:{port}{path}",
        "caBundle": base64.b64encode(ca_pem).decode(),
    }


def _point_webhooks(
    docs: list[dict[str, Any]], port: int, ca_pem: bytes, prefix: str
) -> list[dict[str, Any]]:
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        doc["metadata"]["name"] = prefix + doc["metadata"]["name"]
        for hook in doc.get("webhooks") or []:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = _url_client(port, path, ca_pem)
        out.append(doc)
    return out


def kueue_webhooks(port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    path = module_dir("kueue") / "config" / "components" / "webhook" / "manifests.yaml"
    docs = _point_webhooks(_docs(path), port, ca_pem, KUEUE_PREFIX)
    for doc in docs:
        for hook in doc.get("webhooks") or []:
            if hook["name"] in KUEUE_NAMESPACED_WEBHOOKS:
                hook["namespaceSelector"] = {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": list(KUEUE_EXCLUDED_NAMESPACES),
                        }
                    ]
                }
    return docs


def kuberay_webhooks(port: int, ca_pem: bytes, served: tuple[str, ...]) -> list[dict[str, Any]]:
    """KubeRay's validating webhooks, keeping only the paths its operator registers."""
    path = module_dir("kuberay") / "config" / "webhook" / "manifests.yaml"
    docs = _point_webhooks(_docs(path), port, ca_pem, "kuberay-")
    for doc in docs:
        doc["webhooks"] = [
            h for h in doc.get("webhooks") or [] if h["clientConfig"]["url"].endswith(served)
        ]
    return [d for d in docs if d["webhooks"]]
