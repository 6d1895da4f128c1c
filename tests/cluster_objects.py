"""Builders for the cluster objects the `tau cluster` tests put into the API emulator."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FAKE_HELM_DIR = ROOT / "tests" / "fixtures" / "helm"
PROBES = ROOT / "tests" / "fixtures" / "probes"
KUEUE = "kueue.x-k8s.io/v1beta2"


def probe_log(name: str) -> str:
    return (PROBES / f"{name}.log").read_text()


def node(
    name: str,
    *,
    gpus: int = 8,
    gpu_class: str | None = "h100-95gb",
    labels: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    rdma: bool = True,
) -> dict[str, Any]:
    alloc = {"cpu": "96", "memory": "1800Gi"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    if rdma and gpus:
        alloc["rdma/ib"] = "8"
    alloc.update(allocatable or {})
    all_labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "eastus-1"}
    if gpu_class:
        all_labels["tau.azure.com/gpu-class"] = gpu_class
    all_labels.update(labels or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": all_labels},
        "status": {"capacity": dict(alloc), "allocatable": alloc},
    }


def flavor(name: str, node_labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE,
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": {"nodeLabels": node_labels, **spec},
    }


def cluster_queue(
    name: str, flavors: dict[str, dict[str, str]], active: bool = True
) -> dict[str, Any]:
    covered = sorted({r for res in flavors.values() for r in res})
    return {
        "apiVersion": KUEUE,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        {
                            "name": f,
                            "resources": [{"name": r, "nominalQuota": q} for r, q in res.items()],
                        }
                        for f, res in flavors.items()
                    ],
                }
            ]
        },
        "status": {"conditions": [{"type": "Active", "status": "True" if active else "False"}]},
    }


def deployment(
    name: str, namespace: str, release: str = "taugrid", available: int = 1
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/instance": release},
        },
        "spec": {"replicas": 1},
        "status": {"availableReplicas": available},
    }


def tau_cluster(phase: str = "Ready") -> dict[str, Any]:
    return {
        "apiVersion": "tau.azure.com/v1alpha1",
        "kind": "TauCluster",
        "metadata": {"name": "cluster"},
        "spec": {},
        "status": {"phase": phase, "observedGeneration": 1},
    }


def install_ready_cluster(api) -> None:
    """Everything the readiness report wants to see after an install."""
    api.register_kueue_kuberay_tau_kinds()
    for name in ("tau-core-controller", "kueue-controller-manager", "kuberay-operator"):
        api.put(deployment(name, "tau-system"))
    api.put(tau_cluster())
    api.put(cluster_queue("taugrid-cq", {"taugrid-default": {"cpu": "100"}}))


def fake_helm_env(
    monkeypatch,
    tmp_path: Path,
    *,
    version: str = "v3.15.4+gfa9efb0",
    releases: list[dict[str, str]] | None = None,
) -> Path:
    """Put the fake helm first on PATH; returns the argv log file."""
    log = tmp_path / "helm-calls.jsonl"
    state = tmp_path / "helm-state.json"
    state.write_text(json.dumps(releases or []))
    monkeypatch.setenv("PATH", f"{FAKE_HELM_DIR}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_HELM_LOG", str(log))
    monkeypatch.setenv("FAKE_HELM_STATE", str(state))
    monkeypatch.setenv("FAKE_HELM_VERSION", version)
    monkeypatch.delenv("TAU_HELM", raising=False)
    monkeypatch.delenv("FAKE_HELM_FAIL", raising=False)
    monkeypatch.delenv("FAKE_HELM_SLEEP", raising=False)
    return log


def helm_calls(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def operator_shell(kubeconfig: Path, tmp_path: Path, monkeypatch) -> None:
    """A shell whose kubeconfig points at the emulator, in a directory outside any repository."""
    from tests.kubeapi.fixtures import point_shell_at

    point_shell_at(kubeconfig, tmp_path / "work", tmp_path / "cfg", monkeypatch)
