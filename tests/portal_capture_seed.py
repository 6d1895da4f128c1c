"""Cluster objects of tau runs for the capture/autocapture tests, shaped as tau renders them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tau.k8s import meta
from tests.kubeapi import KubeApiServer
from tests.portal_helpers import portal

NS = "team"
CTX = ["--context", "emulator"]
TAU = {meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE}


def job(name: str, namespace: str = NS, **annotations: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": TAU | {meta.LABEL_RUN_ID: name, meta.KUEUE_QUEUE_NAME: "team-q"},
            "annotations": dict(annotations),
        },
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
            }
        },
    }


def pod(name: str, job_name: str, namespace: str = NS, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": TAU | {"job-name": job_name, meta.LABEL_RUN_ID: job_name},
        },
        "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "i"}]},
        "status": status,
    }


def workload(name: str, job_uid: str, namespace: str = NS) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {meta.KUEUE_JOB_UID: job_uid},
        },
        "spec": {"queueName": "team-q", "podSets": [{"name": "main", "count": 1}]},
    }


def true_since(kind: str, when: str) -> dict[str, str]:
    return {"type": kind, "status": "True", "lastTransitionTime": when}


def complete(kube_api: KubeApiServer, name: str, namespace: str = NS) -> None:
    kube_api.set_status(
        "batch/v1",
        "Job",
        name,
        {
            "startTime": "2026-12-01T10:01:00Z",
            "completionTime": "2026-12-01T11:00:00Z",
            "succeeded": 1,
            "conditions": [true_since("Complete", "2026-12-01T11:00:00Z")],
        },
        namespace=namespace,
    )


def prepare(
    kube_api: KubeApiServer, kubeconfig_file: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> KubeApiServer:
    """The emulator with Kueue, KubeRay and DRA kinds, reachable as context `emulator`."""
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.register_kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    monkeypatch.chdir(tmp_path)
    return kube_api


def new_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """An initialised experiment store (project `demo`)."""
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root
