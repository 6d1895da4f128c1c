"""Make a started control plane ready for a researcher, the way an operator would.

`provision` installs the project's test chart with `tau cluster install` (real helm), starts
the tau-core stand-in, creates a TauWorkspace for a researcher identity that RBAC binds to one
namespace, waits until tau sees it Ready, and writes the researcher's own kubeconfig. The
researcher's shell then needs only `KUBECONFIG`, the context and the workspace name.

With a team store beside the plane, the workspace on the real node names it as a platform
does (`spec.experiments`: the store, the credentials Secret it creates in the workspace's
namespace, and the metrics offload image by digest), so a researcher's
`metrics.offload.enabled: true` needs nothing else.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import pki
from tests.e2e.controlplane.cluster import ADMIN_CONTEXT, ControlPlane
from tests.e2e.controlplane.tau_core import TAU, TauCore
from tests.e2e.controlplane.team_store import SECRET, TeamStore

KUEUE_API = "kueue.x-k8s.io/v1beta2"

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "tests" / "e2e" / "chart" / "taugrid"
SYSTEM_NAMESPACE = "tau-system"
WORKSPACE = "team-e2e"
#: The workspace whose runs land on the real node (its LocalQueue points at REAL_QUEUE).
REAL_WORKSPACE = "team-real"
REAL_QUEUE = "realqueue"
REAL_FLAVOR = "taugrid-real"
REAL_TOPOLOGY = "taugrid-real-topology"
#: The claim the examples and a researcher's first run name (`storage.data_pvc`), provisioned
#: in each workspace as a platform would.
DATA_CLAIM = "training-data"
RESEARCHER = "researcher-e2e"
RESEARCHER_CONTEXT = "tau-e2e-researcher"
ROLE = "tau-researcher-v1"


def console_script(name: str) -> str:
    """A console script (`tau`, `taugrid-portal`) of the interpreter running the tests."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def tau_binary() -> str:
    return console_script("tau")


@dataclass(repr=False)
class Researcher:
    kubeconfig: Path
    context: str
    workspace: str
    namespace: str
    admin_env: dict[str, str]
    tau_core: TauCore
    install_output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: The workspace on the real node (None when the plane runs without one).
    real_workspace: str | None = None
    #: The runtime image the real node holds (`runtime.image` of a run there).
    image: str | None = None
    #: The team store the real workspace names (None when the plane runs without one).
    store: TeamStore | None = None
    #: The metrics offload image the real workspace names, by digest.
    offload_image: str | None = None

    def __repr__(self) -> str:
        return f"Researcher(workspace={self.workspace}, kubeconfig={self.kubeconfig})"

    def stop(self) -> None:
        self.tau_core.stop()


def operator_env(plane: ControlPlane, config_dir: Path) -> dict[str, str]:
    """The environment of an operator's shell: the admin kubeconfig, helm, tau's own config."""
    return {
        **os.environ,
        "KUBECONFIG": str(plane.admin_kubeconfig),
        "TAU_HELM": str(plane.binaries["helm"]),
        "TAU_CONFIG_DIR": str(config_dir),
        "HELM_CACHE_HOME": str(config_dir / "helm-cache"),
        "HELM_CONFIG_HOME": str(config_dir / "helm-config"),
        "HELM_DATA_HOME": str(config_dir / "helm-data"),
        "NO_COLOR": "1",
    }


def run_tau(
    argv: list[str], env: dict[str, str], *, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return run_console("tau", argv, env, cwd=cwd, timeout=timeout)


def run_console(
    script: str,
    argv: list[str],
    env: dict[str, str],
    *,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Run a console script as a user's shell would: no terminal, output captured."""
    return subprocess.run(
        [console_script(script), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def workspace_object(name: str, target: str, subject: str) -> dict[str, Any]:
    return {
        "apiVersion": TAU,
        "kind": "TauWorkspace",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "authorization": {"mode": "workspace-rbac"},
            "principalRef": {"provider": "entra", "name": subject},
            "kubernetesSubject": {"kind": "User", "name": subject},
            "role": ROLE,
            "target": {"namespace": target, "createNamespace": True},
            "queue": f"{target}-queue",
            "defaults": {"outputRoot": f"/data/projects/{target}/runs", "priority": "normal"},
        },
    }


def provision(plane: ControlPlane, folder: Path, store: TeamStore | None = None) -> Researcher:
    folder.mkdir(parents=True, exist_ok=True)
    tau_core = TauCore(plane.api, SYSTEM_NAMESPACE)
    tau_core.start()
    env = operator_env(plane, folder / "operator-config")
    install = run_tau(
        [
            "cluster",
            "install",
            "--chart",
            str(CHART),
            "--context",
            ADMIN_CONTEXT,
            "--timeout",
            "5m",
            # The suite's workspace queues on the KWOK nodes only; the real node has a flavor
            # (and a queue) of its own.
            "--set",
            "baselineQueue.flavor.nodeLabels.type=kwok",
        ],
        env,
    )
    if install.returncode != 0:
        tau_core.stop()
        raise RuntimeError(
            f"tau cluster install exited {install.returncode}:\n{install.stdout}\n{install.stderr}"
        )
    plane.api.apply(workspace_object(WORKSPACE, WORKSPACE, RESEARCHER))
    tau_core.nudge()
    _wait_ready(plane, WORKSPACE)
    _data_claim(plane, WORKSPACE, folder / "volumes", node_local=False)
    real = None
    offload = plane.images["offload"].pinned if plane.images and "offload" in plane.images else None
    if plane.node is not None:
        experiments = _experiments(store, offload)
        real = _real_workspace(plane, tau_core, folder / "volumes", experiments)
        if store is not None:
            _store_secret(plane, REAL_WORKSPACE, store)
    cert = plane.ca.issue(RESEARCHER, RESEARCHER, client=True)
    kubeconfig = pki.write_kubeconfig(
        folder / "researcher.kubeconfig",
        server=plane.server,
        ca=plane.ca.cert_path,
        client=cert,
        context=RESEARCHER_CONTEXT,
        namespace=WORKSPACE,
    )
    return Researcher(
        kubeconfig=kubeconfig,
        context=RESEARCHER_CONTEXT,
        workspace=WORKSPACE,
        namespace=WORKSPACE,
        admin_env=env,
        tau_core=tau_core,
        install_output=install.stdout,
        real_workspace=real,
        image=plane.images["runtime"].name if real and plane.images else None,
        store=store if real else None,
        offload_image=offload if real and store else None,
    )


def _experiments(store: TeamStore | None, offload: str | None) -> dict[str, str] | None:
    """The workspace's `spec.experiments`: where its runs' evidence goes, with what."""
    if store is None or offload is None:
        return None
    return {"store": store.url(), "credentialsSecret": SECRET, "offloadImage": offload}


def _store_secret(plane: ControlPlane, namespace: str, store: TeamStore) -> None:
    """The platform-owned Secret the offload sidecar reads with `envFrom`."""
    plane.api.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": SECRET,
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "tau-e2e-platform"},
            },
            "type": "Opaque",
            "stringData": store.secret_data(),
        }
    )


def _real_workspace(
    plane: ControlPlane,
    tau_core: TauCore,
    volumes: Path,
    experiments: dict[str, str] | None = None,
) -> str:
    """What a platform sets up for a team on real nodes: a flavor of those nodes (whose taints
    it tolerates), a ClusterQueue sized to them, the workspace, and its data claim."""
    from tests.e2e.controlplane import node

    real = plane.api.get("v1", "Node", node.NODE_NAME) or {}
    allocatable = (real.get("status") or {}).get("allocatable") or {}
    # A Topology of its own: Kueue keeps a Topology that a flavor uses, so one shared with the
    # chart would hold the chart's uninstall.
    plane.api.apply(
        {
            "apiVersion": KUEUE_API,
            "kind": "Topology",
            "metadata": {"name": REAL_TOPOLOGY},
            "spec": {
                "levels": [
                    {"nodeLabel": "topology.kubernetes.io/zone"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        }
    )
    plane.api.apply(
        {
            "apiVersion": KUEUE_API,
            "kind": "ResourceFlavor",
            "metadata": {"name": REAL_FLAVOR},
            "spec": {
                "nodeLabels": {"type": "real"},
                "tolerations": [
                    {"key": t["key"], "operator": "Exists", "effect": t["effect"]}
                    for t in node.NODE_TAINTS
                ],
                "topologyName": REAL_TOPOLOGY,
            },
        }
    )
    plane.api.apply(
        {
            "apiVersion": KUEUE_API,
            "kind": "ClusterQueue",
            "metadata": {"name": REAL_QUEUE},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": REAL_FLAVOR,
                                "resources": [
                                    {"name": r, "nominalQuota": allocatable.get(r, "0")}
                                    for r in ("cpu", "memory", "nvidia.com/gpu")
                                ],
                            }
                        ],
                    }
                ],
            },
        }
    )
    workspace = workspace_object(REAL_WORKSPACE, REAL_WORKSPACE, RESEARCHER)
    workspace["metadata"]["annotations"] = {"tau-e2e/cluster-queue": REAL_QUEUE}
    if experiments:
        workspace["spec"]["experiments"] = experiments
    plane.api.apply(workspace)
    tau_core.nudge()
    _wait_ready(plane, REAL_WORKSPACE)
    _data_claim(plane, REAL_WORKSPACE, volumes, node_local=True)
    return REAL_WORKSPACE


def _data_claim(plane: ControlPlane, namespace: str, volumes: Path, *, node_local: bool) -> None:
    """`training-data` in `namespace`, bound to a volume of its own: a folder on the real node
    (a local PersistentVolume, so its pods land there) or, for the KWOK workspace, a hostPath
    no kubelet ever mounts."""
    from tests.e2e.controlplane import node

    folder = volumes / namespace
    folder.mkdir(parents=True, exist_ok=True)
    # Pods may run as a non-root user (restricted security context).
    folder.chmod(0o777)
    pv_name = f"{DATA_CLAIM}-{namespace}"
    source: dict[str, Any] = (
        {
            "local": {"path": str(folder)},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node.NODE_NAME],
                                }
                            ]
                        }
                    ]
                }
            },
        }
        if node_local
        else {"hostPath": {"path": str(folder), "type": "DirectoryOrCreate"}}
    )
    plane.api.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "labels": {"tau-e2e/claim": DATA_CLAIM}},
            "spec": {
                "capacity": {"storage": "50Gi"},
                "accessModes": ["ReadWriteOnce", "ReadWriteMany"]
                if not node_local
                else ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": "",
                "claimRef": {"namespace": namespace, "name": DATA_CLAIM},
                **source,
            },
        }
    )
    plane.api.apply(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": DATA_CLAIM, "namespace": namespace},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "",
                "volumeName": pv_name,
                "resources": {"requests": {"storage": "50Gi"}},
            },
        }
    )
    deadline = time.monotonic() + 60
    while True:
        claim = plane.api.get("v1", "PersistentVolumeClaim", DATA_CLAIM, namespace) or {}
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"claim {namespace}/{DATA_CLAIM} not Bound after 60s")
        time.sleep(0.2)


def _wait_ready(plane: ControlPlane, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        ws = plane.api.get(TAU, "TauWorkspace", name, SYSTEM_NAMESPACE) or {}
        if (ws.get("status") or {}).get("phase") == "Ready":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"TauWorkspace {name} not Ready after {timeout:.0f}s")
        time.sleep(0.2)
