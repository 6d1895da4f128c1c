"""The part of TauGrid's tau-core operator that tau's lifecycle needs, for the tests.

tau is a CLI, renderer and observer: the operator that reconciles TauCluster and TauWorkspace
objects is not part of this project, and its image cannot be pulled here. This stand-in does
what tau reads from it, with real objects: for a TauWorkspace it creates the target namespace,
the LocalQueue (pointing at the workspace's ClusterQueue), the researcher's RoleBinding to the
workspace role and a RoleBinding that lets the subject read its TauWorkspace, then reports the
workspace Ready with the resolved namespace and queue; the TauCluster singleton is reported
Ready. A workspace whose `tau-e2e/phase` annotation names another phase is reported so (the
tests' way to show tau a workspace that is not Ready).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from tests.e2e.controlplane.objects import Api, namespace

TAU = "tau.azure.com/v1alpha1"
KUEUE = "kueue.x-k8s.io/v1beta2"
PHASE_ANNOTATION = "tau-e2e/phase"
#: The ClusterRole that lets a workspace's subject read TauWorkspaces (the chart ships it).
WORKSPACE_READER = "tau-workspace-reader"
#: The LocalQueue a workspace gets when it names none (the chart's defaultQueue), and the
#: ClusterQueue it points at (the chart's baseline queue).
DEFAULT_LOCAL_QUEUE = "jobqueue"
DEFAULT_CLUSTER_QUEUE = "taugrid-cq"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _condition(kind: str, ok: bool, reason: str, message: str = "") -> dict[str, str]:
    return {
        "type": kind,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": _now(),
    }


class TauCore:
    """Reconciles every TauWorkspace and the TauCluster on each pass of a background loop."""

    def __init__(self, api: Api, system_namespace: str = "tau-system") -> None:
        self.api = api
        self.system_namespace = system_namespace
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="tau-core", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=10)

    def nudge(self) -> None:
        """Reconcile now (after a test changed a workspace)."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                self.reconcile_all()
            self._wake.wait(0.5)
            self._wake.clear()

    def reconcile_all(self) -> None:
        try:
            workspaces = self.api.list(TAU, "TauWorkspace")
        except Exception:
            return  # the chart (and so the CRD) is not installed yet
        for ws in workspaces:
            self.reconcile_workspace(ws)
        for cluster in self.api.list(TAU, "TauCluster"):
            self._report_cluster(cluster)

    def _report_cluster(self, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        status = obj.get("status") or {}
        if status.get("phase") == "Ready" and status.get("observedGeneration") == meta.get(
            "generation"
        ):
            return
        self.api.patch_status(
            TAU,
            "TauCluster",
            meta["name"],
            {
                "phase": "Ready",
                "observedGeneration": meta.get("generation"),
                "conditions": [_condition("Ready", True, "Reconciled")],
            },
        )

    def reconcile_workspace(self, ws: dict[str, Any]) -> None:
        meta, spec = ws["metadata"], ws.get("spec") or {}
        name = meta["name"]
        target = (spec.get("target") or {}).get("namespace") or name
        queue = spec.get("queue") or DEFAULT_LOCAL_QUEUE
        cluster_queue = (meta.get("annotations") or {}).get(
            "tau-e2e/cluster-queue", DEFAULT_CLUSTER_QUEUE
        )
        subject = spec.get("kubernetesSubject") or {}
        role = spec.get("role") or "tau-researcher-v1"
        if self.api.get("v1", "Namespace", target) is None:
            self.api.apply(namespace(target, {"tau.azure.com/workspace": name}))
        self.api.apply(
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": queue, "namespace": target},
                "spec": {"clusterQueue": cluster_queue},
            }
        )
        if subject:
            rbac_subject = {
                "kind": subject["kind"],
                "name": subject["name"],
                **(
                    {"namespace": target}
                    if subject["kind"] == "ServiceAccount"
                    else {"apiGroup": "rbac.authorization.k8s.io"}
                ),
            }
            self.api.apply(_binding(f"{name}-{role}", target, role, rbac_subject))
            self.api.apply(
                _binding(f"{name}-reader", self.system_namespace, WORKSPACE_READER, rbac_subject)
            )
        phase = (meta.get("annotations") or {}).get(PHASE_ANNOTATION, "Ready")
        ready = phase == "Ready"
        status = {
            "phase": phase,
            "observedGeneration": meta.get("generation"),
            "target": {"resolvedNamespace": target},
            "queue": {"localQueue": queue, "clusterQueue": cluster_queue},
            "conditions": [
                _condition("RBACReady", ready, "Bound" if ready else "Waiting"),
                _condition("QueueReady", ready, "Ready" if ready else "Waiting"),
            ],
        }
        current = ws.get("status") or {}
        if all(current.get(k) == v for k, v in status.items() if k != "conditions"):
            return
        self.api.patch_status(TAU, "TauWorkspace", name, status, namespace=meta.get("namespace"))


def _binding(name: str, ns: str, role: str, subject: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }
