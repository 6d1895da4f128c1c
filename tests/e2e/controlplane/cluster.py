"""A real Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, KWOK (fake nodes and pods), Kueue and the KubeRay operator, each a process.

`ControlPlane(root).start()` makes certificates, picks free ports, starts every component in
dependency order, waits until each answers, installs the controllers' CRDs and webhooks and the
fake GPU nodes, and returns; `stop()` ends every process and removes `root` unless asked to keep
it. Everything listens on loopback only.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import ssl
import subprocess
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import node, objects, pki, upstream
from tests.e2e.controlplane.build import build_all, components
from tests.e2e.controlplane.processes import (
    StartError,
    Supervisor,
    free_port,
    http_ok,
    https_ok,
    port_open,
    wait_until,
)

HERE = Path(__file__).resolve().parent
ADMIN_CONTEXT = "tau-e2e-admin"
SERVICE_CIDR = "10.96.0.0/16"
#: KubeRay v1.5 has no flag for its webhook port: controller-runtime's default.
KUBERAY_WEBHOOK_PORT = 9443
#: Start-up budget of one component on a loaded 2-core machine.
START_TIMEOUT = 180.0


@dataclass
class Ports:
    etcd: int = field(default_factory=free_port)
    etcd_peer: int = field(default_factory=free_port)
    apiserver: int = field(default_factory=free_port)
    controller_manager: int = field(default_factory=free_port)
    scheduler: int = field(default_factory=free_port)
    kwok: int = field(default_factory=free_port)
    kwok_metrics: int = field(default_factory=free_port)
    kueue_webhook: int = field(default_factory=free_port)
    kueue_health: int = field(default_factory=free_port)
    kueue_metrics: int = field(default_factory=free_port)
    kuberay_health: int = field(default_factory=free_port)
    kuberay_metrics: int = field(default_factory=free_port)


class ControlPlane:
    """One control plane rooted at `root` (certificates, data, logs, kubeconfigs)."""

    def __init__(self, root: Path, *, binaries: dict[str, Path] | None = None) -> None:
        self.root = root
        self.binaries = binaries or build_all()
        self.ports = Ports()
        self.supervisor = Supervisor(root / "logs")
        self.versions: dict[str, str] = {}
        self.pki_dir = root / "pki"
        self.admin_kubeconfig = root / "admin.kubeconfig"
        self.ray_head: Any = None
        self.log_feeder: Any = None
        self.node: node.RealNode | None = None
        #: The images the real node runs (runtime, pause, offload); None when the node is off.
        self.images: dict[str, Any] | None = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports.apiserver}"

    def start(self) -> ControlPlane:
        if not port_free(KUBERAY_WEBHOOK_PORT):
            raise StartError(
                f"port {KUBERAY_WEBHOOK_PORT} is in use: KubeRay's webhook needs it (it has no "
                "port flag). Is a control plane from `make cluster-up` running? "
                "`make cluster-down` stops it."
            )
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            self._certificates()
            self._etcd()
            self._apiserver()
            self._controllers()
            self._install_crds()
            self._kwok()
            self._kueue()
            self._kuberay()
            self._finish()
            self._real_node()
        except BaseException:
            self.stop(keep=True)
            raise
        return self

    def stop(self, *, keep: bool = False) -> None:
        if self.node is not None:
            # Its pods first, through the CRI, while containerd still runs.
            with contextlib.suppress(Exception):
                self.node.stop()
        for helper in (self.log_feeder, self.ray_head):
            if helper is not None:
                with contextlib.suppress(Exception):
                    helper.stop()
        self.supervisor.stop_all()
        if not keep:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop(keep=exc[0] is not None and bool(os.environ.get("TAU_E2E_KEEP")))

    # ------------------------------------------------------------------ steps

    def _certificates(self) -> None:
        ca = pki.Authority(self.pki_dir)
        self.ca = ca
        self.apiserver_cert = ca.issue(
            "apiserver",
            "kube-apiserver",
            hosts=(
                "127.0.0.1",
                "localhost",
                "10.96.0.1",
                "kubernetes",
                "kubernetes.default",
                "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local",
                # The real node reaches the apiserver through a relay on its link's host end.
                node.HOST_IP,
            ),
            server=True,
        )
        self.kubelet_client = ca.issue(
            "apiserver-kubelet-client", "kube-apiserver", orgs=("system:masters",), client=True
        )
        self.kubelet_serving = ca.issue("kwok", "kwok", hosts=("127.0.0.1",), server=True)
        self.webhook_cert = ca.issue(
            "webhook", "webhook", hosts=("127.0.0.1", "localhost"), server=True
        )
        self.sa_keys = pki.service_account_keys(self.pki_dir)
        admin = ca.issue("admin", ADMIN_CONTEXT, orgs=("system:masters",), client=True)
        self.admin_client = admin
        pki.write_kubeconfig(
            self.admin_kubeconfig,
            server=self.server,
            ca=ca.cert_path,
            client=admin,
            context=ADMIN_CONTEXT,
            namespace=None,
        )
        # controller-runtime reads its serving pair as tls.crt/tls.key from a folder.
        for name in ("kueue", "kuberay"):
            folder = self.root / f"{name}-certs"
            if name == "kuberay":
                # KubeRay has no cert-dir flag: controller-runtime's default under $TMPDIR.
                folder = self.root / "kuberay-tmp" / "k8s-webhook-server" / "serving-certs"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.webhook_cert.cert, folder / "tls.crt")
            shutil.copy(self.webhook_cert.key, folder / "tls.key")

    def _etcd(self) -> None:
        p = self.ports
        proc = self.supervisor.start(
            "etcd",
            [
                self.binaries["etcd"],
                "--name=tau-e2e",
                f"--data-dir={self.root / 'etcd'}",
                f"--listen-client-urls=http://127.0.0.1:{p.etcd}",
                f"--advertise-client-urls=http://127.0.0.1:{p.etcd}",
                f"--listen-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{p.etcd_peer}",
                f"--initial-cluster=tau-e2e=http://127.0.0.1:{p.etcd_peer}",
                "--listen-metrics-urls=",
                # A test cluster's data does not need to survive a power cut.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        wait_until(
            "etcd /health", http_ok(f"http://127.0.0.1:{p.etcd}/health"), timeout=60, proc=proc
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{p.etcd}/version", timeout=5) as resp:
            self.versions["etcd"] = "v" + json.load(resp)["etcdserver"]

    def _apiserver(self) -> None:
        p, d = self.ports, self.pki_dir
        proc = self.supervisor.start(
            "kube-apiserver",
            [
                self.binaries["kube-apiserver"],
                f"--etcd-servers=http://127.0.0.1:{p.etcd}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={p.apiserver}",
                f"--cert-dir={d}",
                f"--tls-cert-file={self.apiserver_cert.cert}",
                f"--tls-private-key-file={self.apiserver_cert.key}",
                f"--client-ca-file={self.ca.cert_path}",
                f"--kubelet-client-certificate={self.kubelet_client.cert}",
                f"--kubelet-client-key={self.kubelet_client.key}",
                "--kubelet-preferred-address-types=InternalIP",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.sa_keys.cert}",
                f"--service-account-signing-key-file={self.sa_keys.key}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                "--profiling=false",
                # What the researcher identity asks of the API, one line a request: how the
                # bench counts API calls per `tau run status`, and what a failing test shows.
                f"--audit-policy-file={self._audit_policy()}",
                f"--audit-log-path={self.audit_log}",
                "--audit-log-format=json",
                # The webhooks are reached by URL; routing by endpoints is not needed.
                "--endpoint-reconciler-type=none",
                "--v=1",
            ],
        )
        wait_until(
            "kube-apiserver /readyz",
            https_ok(
                f"{self.server}/readyz",
                ca=self.ca.cert_path,
                client=(self.admin_client.cert, self.admin_client.key),
            ),
            timeout=START_TIMEOUT,
            proc=proc,
        )
        self.versions["kube-apiserver"] = self.get_json("/version")["gitVersion"]
        self.api = objects.Api(self.admin_kubeconfig, ADMIN_CONTEXT)

    @property
    def audit_log(self) -> Path:
        return self.root / "logs" / "audit.log"

    def _audit_policy(self) -> Path:
        from tests.e2e.controlplane.researcher import RESEARCHER

        path = self.root / "audit-policy.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "audit.k8s.io/v1",
                    "kind": "Policy",
                    "omitStages": ["RequestReceived"],
                    "rules": [
                        {"level": "Metadata", "users": [RESEARCHER]},
                        {"level": "None"},
                    ],
                }
            )
        )
        return path

    def _controllers(self) -> None:
        p, d = self.ports, self.pki_dir
        cm = self.supervisor.start(
            "kube-controller-manager",
            [
                self.binaries["kube-controller-manager"],
                f"--kubeconfig={self.admin_kubeconfig}",
                f"--authentication-kubeconfig={self.admin_kubeconfig}",
                f"--authorization-kubeconfig={self.admin_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p.controller_manager}",
                f"--cert-dir={d / 'controller-manager'}",
                "--leader-elect=false",
                f"--service-account-private-key-file={self.sa_keys.key}",
                f"--root-ca-file={self.ca.cert_path}",
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                "--use-service-account-credentials=false",
                "--kube-api-qps=200",
                "--kube-api-burst=400",
                "--v=1",
            ],
        )
        sched = self.supervisor.start(
            "kube-scheduler",
            [
                self.binaries["kube-scheduler"],
                f"--kubeconfig={self.admin_kubeconfig}",
                f"--authentication-kubeconfig={self.admin_kubeconfig}",
                f"--authorization-kubeconfig={self.admin_kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={p.scheduler}",
                f"--cert-dir={d / 'scheduler'}",
                "--leader-elect=false",
                "--v=1",
            ],
        )
        wait_until(
            "kube-controller-manager /healthz",
            https_ok(f"https://127.0.0.1:{p.controller_manager}/healthz"),
            timeout=START_TIMEOUT,
            proc=cm,
        )
        wait_until(
            "kube-scheduler /healthz",
            https_ok(f"https://127.0.0.1:{p.scheduler}/healthz"),
            timeout=START_TIMEOUT,
            proc=sched,
        )
        # Namespaces get their `default` ServiceAccount from the controller-manager; pods in
        # a namespace wait for it (the ServiceAccount admission plugin).
        wait_until(
            "the default ServiceAccount",
            lambda: self.api.get("v1", "ServiceAccount", "default", "default") is not None,
            timeout=START_TIMEOUT,
            proc=cm,
        )

    def _install_crds(self) -> None:
        ca_pem = self.ca.pem
        crds = [
            *upstream.kueue_crds(self.ports.kueue_webhook, ca_pem),
            *upstream.kuberay_crds(),
            *upstream.kwok_crds(("logs", "clusterlogs")),
            *upstream.secrets_store_crds(),
        ]
        for crd in crds:
            self.api.apply(crd)
        for crd in crds:
            self.api.wait_established(crd["metadata"]["name"], timeout=60)
        for ns in ("kueue-system", "ray-system", "kwok-system"):
            self.api.apply(objects.namespace(ns))

    def _kwok(self) -> None:
        p = self.ports
        config = self.root / "kwok.yaml"
        # Given any stage, KWOK uses only the stages it is given: KWOK's own node stages
        # (from its module) keep the nodes Ready; the pod stages are this project's.
        stages = [
            *upstream.kwok_node_stages(),
            *yaml.safe_load_all((HERE / "kwok-stages.yaml").read_text()),
        ]
        kwok_cfg = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            # A config file gets none of KWOK's flag defaults: these are KWOK's values.
            "options": {
                "enableCRDs": ["Logs", "ClusterLogs"],
                # The kubelet API (containerLogs) that `tau run logs` reaches through the
                # apiserver.
                "enableDebuggingHandlers": True,
                "podPlayStageParallelism": 4,
                "nodePlayStageParallelism": 4,
                "nodeLeaseParallelism": 4,
                "podsOnNodeSyncParallelism": 1,
                "nodeLeaseDurationSeconds": 40,
            },
        }
        config.write_text(yaml.safe_dump_all([kwok_cfg, *stages]))
        proc = self.supervisor.start(
            "kwok",
            [
                self.binaries["kwok"],
                f"--kubeconfig={self.admin_kubeconfig}",
                f"--config={config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={objects.KWOK_NODE_ANNOTATION}=fake",
                "--node-ip=127.0.0.1",
                f"--node-port={p.kwok}",
                f"--server-address=127.0.0.1:{p.kwok}",
                f"--tls-cert-file={self.kubelet_serving.cert}",
                f"--tls-private-key-file={self.kubelet_serving.key}",
                "--cidr=10.244.0.1/16",
            ],
        )
        wait_until("kwok's server", port_open(p.kwok), timeout=START_TIMEOUT, proc=proc)
        for fake in objects.gpu_nodes():
            self.api.apply(fake)
        wait_until(
            "the fake nodes to be Ready",
            lambda: self.api.nodes_ready([n["metadata"]["name"] for n in objects.gpu_nodes()]),
            timeout=START_TIMEOUT,
            proc=proc,
        )
        self.versions["kwok"] = _module_version(self.binaries["kwok"], "sigs.k8s.io/kwok")

    def _kueue(self) -> None:
        p = self.ports
        config = self.root / "kueue.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "namespace": "kueue-system",
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{p.kueue_health}"},
                    "metrics": {"bindAddress": f"127.0.0.1:{p.kueue_metrics}"},
                    "webhook": {
                        "port": p.kueue_webhook,
                        "host": "127.0.0.1",
                        "certDir": str(self.root / "kueue-certs"),
                    },
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    # The on-demand visibility API server reads its certificate from the fixed
                    # path /visibility; tau does not use that API, so it stays off.
                    "featureGates": {"VisibilityOnDemand": False},
                    "integrations": {
                        "frameworks": [
                            "batch/job",
                            "ray.io/rayjob",
                            "ray.io/raycluster",
                            "ray.io/rayservice",
                            "pod",
                            "deployment",
                        ]
                    },
                }
            )
        )
        proc = self.supervisor.start(
            "kueue",
            [
                *self._with_etc_overlay(
                    {
                        "kueue/metrics/certs/tls.crt": self.webhook_cert.cert,
                        "kueue/metrics/certs/tls.key": self.webhook_cert.key,
                    }
                ),
                self.binaries["kueue"],
                f"--config={config}",
                f"--kubeconfig={self.admin_kubeconfig}",
            ],
            env={"POD_NAMESPACE": "kueue-system"},
        )
        wait_until(
            "kueue /readyz",
            http_ok(f"http://127.0.0.1:{p.kueue_health}/readyz"),
            timeout=START_TIMEOUT,
            proc=proc,
        )
        wait_until("kueue's webhook server", port_open(p.kueue_webhook), timeout=60, proc=proc)
        for doc in upstream.kueue_webhooks(p.kueue_webhook, self.ca.pem):
            self.api.apply(doc)
        self.versions["kueue"] = _module_version(self.binaries["kueue"], "sigs.k8s.io/kueue")

    def _with_etc_overlay(self, files: dict[str, Path]) -> list[str]:
        """A command prefix that runs a program with `files` added under /etc, privately.

        With its own certificate management off, Kueue reads its metrics serving pair from the
        fixed path /etc/kueue/metrics/certs. Rather than write to the machine's /etc, the
        process gets a mount namespace of its own where /etc is an overlay holding those files.
        """
        upper, work = self.root / "etc-overlay" / "upper", self.root / "etc-overlay" / "work"
        for rel, src in files.items():
            (upper / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, upper / rel)
        work.mkdir(parents=True, exist_ok=True)
        user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
        mount = f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
        return [
            "unshare",
            *user,
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            f'{mount} && exec "$@"',
            "sh",
        ]

    def _kuberay(self) -> None:
        from tests.e2e.controlplane.ray_head import FakeRayHead, KubeStateSource

        p = self.ports
        self.ray_head = FakeRayHead(
            KubeStateSource(str(self.admin_kubeconfig), ADMIN_CONTEXT),
            router=node.ray_router(self.api),
        )
        self.ray_head.start()
        proc = self.supervisor.start(
            "kuberay-operator",
            [
                self.binaries["kuberay-operator"],
                f"--kubeconfig={self.admin_kubeconfig}",
                f"--metrics-addr=127.0.0.1:{p.kuberay_metrics}",
                f"--health-probe-bind-address=127.0.0.1:{p.kuberay_health}",
                "--enable-leader-election=false",
                "--log-stdout-encoder=console",
            ],
            env={
                "ENABLE_WEBHOOKS": "true",
                "TMPDIR": str(self.root / "kuberay-tmp"),
                # The dashboard and Serve calls the operator makes to Ray heads reach the
                # fake head through this proxy; Go never proxies loopback (the apiserver).
                "HTTP_PROXY": self.ray_head.proxy_url,
                "http_proxy": self.ray_head.proxy_url,
                "NO_PROXY": "127.0.0.1,localhost",
            },
        )
        wait_until(
            "kuberay /readyz",
            http_ok(f"http://127.0.0.1:{p.kuberay_health}/readyz"),
            timeout=START_TIMEOUT,
            proc=proc,
        )
        wait_until(
            "kuberay's webhook server", port_open(KUBERAY_WEBHOOK_PORT), timeout=60, proc=proc
        )
        for doc in upstream.kuberay_webhooks(
            KUBERAY_WEBHOOK_PORT, self.ca.pem, ("/validate-ray-io-v1-raycluster",)
        ):
            self.api.apply(doc)
        self.versions["kuberay"] = _module_version(
            self.binaries["kuberay-operator"], "github.com/ray-project/kuberay/ray-operator"
        )

    def _finish(self) -> None:
        from tests.e2e.controlplane.log_feeder import LogFeeder

        self.log_feeder = LogFeeder(self.api, self.root / "pod-logs")
        self.log_feeder.start()
        helm = subprocess.run(
            [str(self.binaries["helm"]), "version", "--short"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        self.versions["helm"] = helm.split("+", 1)[0]

    def _real_node(self) -> None:
        """The real node, when this plane has images for it (see `with_real_node`)."""
        if self.images is None:
            return
        self.node = node.RealNode(
            root=self.root / "node",
            binaries=self.binaries,
            supervisor=self.supervisor,
            ca=self.ca,
            apiserver_port=self.ports.apiserver,
            service_cidr=SERVICE_CIDR,
            images=self.images,
        ).start()
        self.node.wait_ready(self.api)
        self.versions["kubelet"] = self.get_json(f"/api/v1/nodes/{node.NODE_NAME}")["status"][
            "nodeInfo"
        ]["kubeletVersion"]
        self.versions["containerd"] = _module_version(
            self.binaries["containerd"], "github.com/containerd/containerd/v2"
        )

    # ------------------------------------------------------------------ helpers

    def get_json(self, path: str) -> dict[str, Any]:
        ctx = ssl.create_default_context(cafile=str(self.ca.cert_path))
        ctx.load_cert_chain(str(self.admin_client.cert), str(self.admin_client.key))
        with urllib.request.urlopen(self.server + path, context=ctx, timeout=10) as resp:
            data: dict[str, Any] = json.load(resp)
        return data

    def summary_line(self) -> str:
        v = self.versions
        line = (
            f"control plane: kube-apiserver {v.get('kube-apiserver')}, etcd {v.get('etcd')}, "
            f"kueue {v.get('kueue')}, kuberay {v.get('kuberay')}, helm {v.get('helm')}"
        )
        if self.node is not None:
            line += (
                f"; real node {node.NODE_NAME}: kubelet {v.get('kubelet')}, "
                f"containerd {v.get('containerd')}"
            )
        return line


def port_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # As Go listens (SO_REUSEADDR): a previous run's connections in TIME_WAIT do not count.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _module_version(binary: Path, module: str) -> str:
    """The version of `module` the running binary was built from (its embedded build info)."""
    out = subprocess.run(
        ["go", "version", "-m", str(binary)], check=True, capture_output=True, text=True
    ).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "dep" and parts[1] == module:
            return parts[2]
    pinned = {c.module: c.version for c in components()}
    return pinned.get(module, "unknown")
