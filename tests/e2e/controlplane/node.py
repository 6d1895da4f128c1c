"""A real node beside the KWOK nodes: containerd, runc, the CNI plugins, kubelet, kube-proxy and
CoreDNS, each a process of the control plane, so pods really run.

Everything of the node stays inside namespaces of its own, and goes with them:

* **Network.** A network namespace holds the node: its loopback, its end (``eth0``,
  ``NODE_IP``) of a veth pair whose host end carries ``HOST_IP``, the pod bridge ``tau0`` with
  the pods behind it, and every iptables rule kube-proxy and the bridge plugin write. The host
  gets one interface and two routes (pods, Services) through it, gone when the namespace goes.
  The namespace has no route to anywhere else: a pull from a registry fails at once.
* **Mounts.** The same holder process has a private mount namespace where ``/run``,
  ``/var/lib`` and ``/var/log`` are the node's own folders (kubelet, containerd's shims and the
  CNI cache write there), and where the kernel tunables the kubelet insists on read as it wants
  them (bind-mounted files), so it never writes the host's ``/proc/sys``.
* **Cgroups.** Pods live under ``/sys/fs/cgroup/<controller>/tau-e2e-node``, removed at stop.

The apiserver listens on loopback only; the node reaches it through :mod:`relay` on
``HOST_IP``. The apiserver reaches the kubelet on ``NODE_IP:10250`` through the link.
The node advertises the GPUs of the fake GPU pool (the documented extended-resource status
patch: there is no device, training runs on CPU with gloo) and carries the pool's labels plus
``type: real``, which the ``taugrid-real`` flavor selects: a workspace on the ``realqueue``
ClusterQueue runs here; the KWOK workspace's flavor selects ``type: kwok`` and never does.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

from tests.e2e.controlplane import pki
from tests.e2e.controlplane.build import cache_root, components
from tests.e2e.controlplane.processes import (
    Process,
    StartError,
    Supervisor,
    stop_process,
    wait_until,
)

NODE_NAME = "tau-node-0"
#: The link between the host and the node's network namespace (a /30 of its own).
HOST_IP, NODE_IP = "10.213.0.1", "10.213.0.2"
HOST_LINK = "taue2e0"
#: Pod addresses on the node's bridge; far from KWOK's fake 10.244/16.
POD_CIDR = "10.245.0.0/24"
CLUSTER_DOMAIN = "cluster.local"
GPUS = 8
REAL_NODE_TAINT = "tau-e2e/real-node"
CGROUP_ROOT = "tau-e2e-node"
NODE_LABELS = {
    "type": "real",
    "topology.kubernetes.io/zone": "local-1",
    "tau.azure.com/gpu-class": "h100-95gb",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.product": "NVIDIA-H100-NVL",
    "nvidia.com/gpu.count": str(GPUS),
}
#: A preference, not a rule: pods that need nothing of this node (the suite's simulated
#: runs and services, helper pods) go to the KWOK nodes, and a pod that must land here (its
#: claim is a local volume of this node, or its flavor selects `type: real`) still can.
NODE_TAINTS = [{"key": REAL_NODE_TAINT, "value": "true", "effect": "PreferNoSchedule"}]
#: What the kubelet checks in /proc/sys (and would otherwise write on the host).
KERNEL_TUNABLES = {
    "vm/overcommit_memory": "1",
    "vm/panic_on_oom": "0",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
}
START_TIMEOUT = 180.0
#: The team store's temporary folders (team_store.py): a server still running from one is left
#: behind by a stop.
STORE_FOLDER_PREFIX = "tau-e2e-store-"


class RealNode:
    """The real node of one control plane, rooted at `root` (its configs, state and logs)."""

    def __init__(
        self,
        *,
        root: Path,
        binaries: dict[str, Path],
        supervisor: Supervisor,
        ca: pki.Authority,
        apiserver_port: int,
        service_cidr: str,
        images: dict[str, Any],
    ) -> None:
        self.root = root
        self.binaries = binaries
        self.supervisor = supervisor
        self.ca = ca
        self.apiserver_port = apiserver_port
        self.service_cidr = service_cidr
        self.images = images
        self.holder: Process | None = None
        self.processes: list[Process] = []
        self.versions: dict[str, str] = {}

    # ------------------------------------------------------------------ paths

    @property
    def socket(self) -> Path:
        return self.root / "run" / "containerd.sock"

    @property
    def containerd_root(self) -> Path:
        """containerd's content and snapshots outlive a control plane: the runtime image is
        imported once per machine (and image key), not once per run."""
        version = next(c.version for c in components() if c.name == "containerd")
        return cache_root() / "node" / f"containerd-{version}"

    def _bin(self, name: str) -> str:
        return str(self.binaries[name])

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> RealNode:
        self.root.mkdir(parents=True, exist_ok=True)
        self._namespaces()
        self._link()
        self._certificates()
        self._relay()
        self._cgroups()
        self._containerd()
        self._import_images()
        self._kubelet()
        self._kube_proxy()
        self._coredns()
        return self

    def stop(self) -> None:
        """Pods first (through the CRI, so runc tears down their cgroups and mounts), then
        every node process, then the namespaces (interfaces, routes and rules go with them)."""
        kubelet = self._process("kubelet")
        if kubelet is not None:
            stop_process(kubelet)
        if self._process("containerd") is not None and self.socket.exists():
            with contextlib.suppress(Exception):
                self._crictl("rmp", "--all", "--force", timeout=120)
        for proc in reversed(self.processes):
            stop_process(proc)
        if self.holder is not None:
            stop_process(self.holder)
        self._remove_cgroups()

    # ------------------------------------------------------------------ namespaces

    def _namespaces(self) -> None:
        for sub in ("run", "var-lib", "var-log", "sysctl", "cni-conf", "ipam"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        binds = []
        for rel, value in KERNEL_TUNABLES.items():
            fake = self.root / "sysctl" / rel.replace("/", ".")
            fake.write_text(value + "\n")
            binds.append(f"mount --bind {fake} /proc/sys/{rel}")
        # Made from the holder's view, so each path is the host's own folder.
        script = " && ".join(
            [
                f"mount --bind {self.root / 'var-lib'} /var/lib",
                f"mount --bind {self.root / 'var-log'} /var/log",
                f"mount --bind {self.root / 'run'} /run",
                *binds,
                "ip link set lo up",
                "echo 1 > /proc/sys/net/ipv4/ip_forward",
                # Per network namespace: Service traffic between pods on one bridge is NATed.
                "(echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables || true)",
                "touch " + str(self.root / "namespaces-ready"),
                "exec sleep infinity",
            ]
        )
        self.holder = self.supervisor.start(
            "node-namespaces",
            ["unshare", "--net", "--mount", "--propagation", "private", "sh", "-c", script],
        )
        wait_until(
            "the node's namespaces",
            lambda: (self.root / "namespaces-ready").exists(),
            timeout=30,
            proc=self.holder,
        )

    def _in_node(self, argv: list[str]) -> list[str]:
        """`argv` run inside the node's network and mount namespaces."""
        assert self.holder is not None and self.holder.popen is not None
        return ["nsenter", "-t", str(self.holder.popen.pid), "--net", "--mount", "--", *argv]

    def _run_in_node(self, *argv: str, timeout: float = 60) -> str:
        done = subprocess.run(
            self._in_node(list(argv)), capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise StartError(f"{' '.join(argv)} failed in the node: {done.stderr.strip()}")
        return done.stdout

    def _link(self) -> None:
        assert self.holder is not None and self.holder.popen is not None
        pid = str(self.holder.popen.pid)
        # A stale host end (a killed earlier run on this machine) would block the name.
        subprocess.run(["ip", "link", "del", HOST_LINK], capture_output=True)
        for argv in (
            ["ip", "link", "add", HOST_LINK, "type", "veth", "peer", "name", "eth0", "netns", pid],
            ["ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_LINK],
            ["ip", "link", "set", HOST_LINK, "up"],
        ):
            subprocess.run(argv, check=True, capture_output=True)
        self._run_in_node("ip", "addr", "add", f"{NODE_IP}/30", "dev", "eth0")
        self._run_in_node("ip", "link", "set", "eth0", "up")
        # The host reaches pods (the apiserver's logs and proxy calls, KubeRay's dashboard
        # client) and Service addresses (kube-proxy's rules in the node) through the link.
        for cidr in (POD_CIDR, self.service_cidr):
            subprocess.run(
                ["ip", "route", "replace", cidr, "via", NODE_IP, "dev", HOST_LINK],
                check=True,
                capture_output=True,
            )

    def _certificates(self) -> None:
        self.kubelet_serving = self.ca.issue(
            "kubelet-serving", NODE_NAME, hosts=(NODE_IP,), server=True
        )
        # The node's identity. RBAC's Node authorizer is not on, so the node is an admin of
        # this throwaway cluster rather than a `system:node` bound by hand.
        client = self.ca.issue(
            "kubelet-client", f"system:node:{NODE_NAME}", orgs=("system:masters",), client=True
        )
        self.kubeconfig = pki.write_kubeconfig(
            self.root / "node.kubeconfig",
            server=f"https://{HOST_IP}:{self.apiserver_port}",
            ca=self.ca.cert_path,
            client=client,
            context="tau-e2e-node",
            namespace=None,
        )

    def _relay(self) -> None:
        import sys

        relay = self.supervisor.start(
            "node-apiserver-relay",
            [
                sys.executable,
                "-m",
                "tests.e2e.controlplane.relay",
                f"{HOST_IP}:{self.apiserver_port}",
                f"127.0.0.1:{self.apiserver_port}",
            ],
            env={"PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
        self.processes.append(relay)
        wait_until(
            "the apiserver relay",
            lambda: "relaying" in relay.tail(),
            timeout=60,
            proc=relay,
        )

    # ------------------------------------------------------------------ cgroups

    def _cgroup_dirs(self) -> list[Path]:
        base = Path("/sys/fs/cgroup")
        return [d / CGROUP_ROOT for d in sorted(base.iterdir()) if d.is_dir()]

    def _cgroups(self) -> None:
        self._remove_cgroups()
        for folder in self._cgroup_dirs():
            folder.mkdir(exist_ok=True)
            if folder.parent.name == "cpuset":
                # A v1 cpuset starts empty: a task can join it only once it has CPUs and nodes.
                for knob in ("cpuset.cpus", "cpuset.mems"):
                    (folder / knob).write_text((folder.parent / knob).read_text())

    def _remove_cgroups(self) -> None:
        for top in self._cgroup_dirs():
            if not top.exists():
                continue
            # Deepest first: a cgroup folder can be removed only once it has no children.
            for folder in sorted(
                (p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)
            ):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            with contextlib.suppress(OSError):
                top.rmdir()

    # ------------------------------------------------------------------ containerd

    def _containerd(self) -> None:
        cni_bin = Path(self.binaries["bridge"]).parent
        self.containerd_root.mkdir(parents=True, exist_ok=True)
        (self.root / "cni-conf" / "10-tau-e2e.conflist").write_text(
            json.dumps(
                {
                    "cniVersion": "1.0.0",
                    "name": "tau-e2e",
                    "plugins": [
                        {
                            "type": "bridge",
                            "bridge": "tau0",
                            "isGateway": True,
                            "ipMasq": True,
                            "hairpinMode": True,
                            "ipam": {
                                "type": "host-local",
                                "ranges": [[{"subnet": POD_CIDR}]],
                                "routes": [{"dst": "0.0.0.0/0"}],
                                "dataDir": str(self.root / "ipam"),
                            },
                        },
                        {"type": "portmap", "capabilities": {"portMappings": True}},
                    ],
                },
                indent=2,
            )
        )
        config = self.root / "containerd.toml"
        config.write_text(
            _containerd_config(
                root=self.containerd_root,
                state=self.root / "containerd-state",
                socket=self.socket,
                runc=self._bin("runc"),
                cni_bin=cni_bin,
                cni_conf=self.root / "cni-conf",
                sandbox_image=self.images["pause"].name,
            )
        )
        path = f"{Path(self._bin('containerd')).parent}:{os.environ.get('PATH', '')}"
        proc = self.supervisor.start(
            "containerd",
            self._in_node([self._bin("containerd"), "--config", str(config)]),
            env={"PATH": path},
        )
        self.processes.append(proc)
        wait_until(
            "containerd's socket",
            lambda: self.socket.exists() and self._ctr("version", timeout=10) is not None,
            timeout=START_TIMEOUT,
            proc=proc,
        )
        # Pods a killed earlier run left in the kept image store: the kubelet knows none of them.
        self._crictl("rmp", "--all", "--force", timeout=120)

    def _ctr(self, *argv: str, timeout: float = 600) -> str:
        address = ["--address", str(self.socket), "-n", "k8s.io"]
        return self._run_in_node(self._bin("ctr"), *address, *argv, timeout=timeout)

    def _crictl(self, *argv: str, timeout: float = 60) -> str:
        endpoint = ["--runtime-endpoint", f"unix://{self.socket}"]
        return self._run_in_node(self._bin("crictl"), *endpoint, *argv, timeout=timeout)

    def _import_images(self) -> None:
        present = set(self._ctr("images", "ls", "-q").split())
        for image in self.images.values():
            if image.name not in present:
                started = time.monotonic()
                self._ctr(
                    "images",
                    "import",
                    "--snapshotter",
                    "overlayfs",
                    str(image.archive),
                    timeout=1800,
                )
                # Never collected by the kubelet's image garbage collection.
                self._ctr("images", "label", image.name, "io.cri-containerd.pinned=pinned")
                self.versions[f"import {image.name}"] = f"{time.monotonic() - started:.0f}s"
            if image.pinned != image.name and image.pinned not in present:
                # A pod names this one by digest (`repo@sha256:…`): the CRI finds an image by
                # that reference only when containerd holds one under it.
                self._ctr("images", "tag", "--force", image.name, image.pinned)
                self._ctr("images", "label", image.pinned, "io.cri-containerd.pinned=pinned")
            if image.pinned != image.name:
                # One per checkout's wheel: the store kept across runs holds only the current
                # one (the base layer they share stays; each wheel's layer goes with its image).
                repo = image.name.rsplit(":", 1)[0]
                stale = [
                    n
                    for n in present
                    if n.split("@")[0].rsplit(":", 1)[0] == repo
                    and n not in (image.name, image.pinned)
                ]
                if stale:
                    self._ctr("images", "rm", *stale)

    def crictl(self, *argv: str, timeout: float = 60) -> str:
        """crictl against the node's containerd (what an operator on the node would type)."""
        return self._crictl(*argv, timeout=timeout)

    # ------------------------------------------------------------------ kubelet

    def _kubelet(self) -> None:
        resolv = self.root / "resolv.conf"
        # The pods' resolver is cluster DNS only: nothing is looked up outside the machine.
        resolv.write_text(f"nameserver {NODE_IP}\n")
        config = self.write_kubelet_config()
        labels = ",".join(f"{k}={v}" for k, v in NODE_LABELS.items())
        proc = self.supervisor.start(
            "kubelet",
            self._in_node(
                [
                    self._bin("kubelet"),
                    f"--config={config}",
                    f"--kubeconfig={self.kubeconfig}",
                    f"--root-dir={self.root / 'kubelet'}",
                    f"--hostname-override={NODE_NAME}",
                    f"--node-ip={NODE_IP}",
                    f"--node-labels={labels}",
                    "--v=1",
                ]
            ),
        )
        self.processes.append(proc)

    @property
    def kubelet_config_path(self) -> Path:
        return self.root / "kubelet.yaml"

    def kubelet_config(self) -> dict[str, Any]:
        """The kubelet's configuration (KubeletConfiguration) as this node runs it."""
        resolv = self.root / "resolv.conf"
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            # These machines boot cgroup v1 (hybrid); kubelet >= 1.35 refuses it
            # unless told otherwise.
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "cgroupRoot": f"/{CGROUP_ROOT}",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": NODE_IP,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "tlsCertFile": str(self.kubelet_serving.cert),
            "tlsPrivateKeyFile": str(self.kubelet_serving.key),
            "authentication": {
                "x509": {"clientCAFile": str(self.ca.cert_path)},
                "webhook": {"enabled": False},
                "anonymous": {"enabled": False},
            },
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDNS": [NODE_IP],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(resolv),
            "registerWithTaints": NODE_TAINTS,
            "failSwapOn": False,
            # Lowering a score needs CAP_SYS_RESOURCE, which these machines withhold.
            "oomScoreAdj": 0,
            # The kernel tunables read as the kubelet wants (bind mounts in the node's
            # mount namespace): it checks them and never writes the host's.
            "protectKernelDefaults": True,
            "evictionHard": {
                "memory.available": "100Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "serializeImagePulls": False,
            "maxPods": 110,
            "shutdownGracePeriod": "0s",
            "nodeStatusReportFrequency": "10s",
            "fileCheckFrequency": "5s",
            "syncFrequency": "10s",
        }

    def write_kubelet_config(self, **overrides: Any) -> Path:
        """Write the kubelet's configuration, with `overrides` over its keys (a fault test
        bounds the node's memory this way); the kubelet reads it when it starts."""
        config = self.kubelet_config_path
        config.write_text(yaml.safe_dump({**self.kubelet_config(), **overrides}))
        return config

    def wait_ready(self, api: Any) -> None:
        """Until the node is Ready and advertises the GPU pool's GPUs."""
        proc = self._process("kubelet")
        wait_until(
            f"node {NODE_NAME} to be Ready",
            lambda: api.nodes_ready([NODE_NAME]),
            timeout=START_TIMEOUT,
            proc=proc,
        )
        gpus = {"nvidia.com/gpu": str(GPUS)}
        api.patch_status("v1", "Node", NODE_NAME, {"capacity": gpus, "allocatable": gpus})

        def advertised() -> bool:
            node = api.get("v1", "Node", NODE_NAME) or {}
            return (node.get("status") or {}).get("allocatable", {}).get("nvidia.com/gpu") == str(
                GPUS
            )

        wait_until("the node's GPUs", advertised, timeout=60, proc=proc)

    # ------------------------------------------------------------------ kube-proxy, DNS

    def _kube_proxy(self) -> None:
        config = self.root / "kube-proxy.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
                    "kind": "KubeProxyConfiguration",
                    "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                    "hostnameOverride": NODE_NAME,
                    "mode": "iptables",
                    "oomScoreAdj": 0,
                    "clusterCIDR": POD_CIDR,
                    "bindAddress": NODE_IP,
                    "healthzBindAddress": "127.0.0.1:10256",
                    "metricsBindAddress": "127.0.0.1:10249",
                    # Leave the machine-wide conntrack table alone.
                    "conntrack": {
                        "maxPerCore": 0,
                        "min": 0,
                        "tcpEstablishedTimeout": "0s",
                        "tcpCloseWaitTimeout": "0s",
                    },
                }
            )
        )
        proc = self.supervisor.start(
            "kube-proxy", self._in_node([self._bin("kube-proxy"), f"--config={config}", "--v=1"])
        )
        self.processes.append(proc)

    def _coredns(self) -> None:
        corefile = self.root / "Corefile"
        # Cluster names from the apiserver; every other name is NXDOMAIN at once, since
        # nothing is forwarded off this machine.
        corefile.write_text(
            f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {NODE_IP}
    errors
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {self.kubeconfig} tau-e2e-node
        pods insecure
        fallthrough in-addr.arpa
    }}
    cache 5
}}
.:53 {{
    bind {NODE_IP}
    errors
    template ANY ANY {{
        rcode NXDOMAIN
    }}
}}
"""
        )
        proc = self.supervisor.start(
            "coredns", self._in_node([self._bin("coredns"), "-conf", str(corefile)])
        )
        self.processes.append(proc)
        wait_until(
            "CoreDNS",
            lambda: "CoreDNS-" in proc.tail(50),
            timeout=START_TIMEOUT,
            proc=proc,
        )

    # ------------------------------------------------------------------ helpers

    def _process(self, name: str) -> Process | None:
        return next((p for p in self.processes if p.name == name), None)


def _containerd_config(
    *,
    root: Path,
    state: Path,
    socket: Path,
    runc: str,
    cni_bin: Path,
    cni_conf: Path,
    sandbox_image: str,
) -> str:
    return f"""version = 3
root = "{root}"
state = "{state}"
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.erofs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = "{socket}"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = "{sandbox_image}"

[plugins.'io.containerd.cri.v1.runtime']
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # These machines withhold CAP_SYS_RESOURCE even from root: no process may lower its
  # oom_score_adj (runc's write of the sandbox's -998 fails). Scores stay at containerd's own.
  restrict_oom_score_adj = true

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  BinaryName = "{runc}"
  SystemdCgroup = false

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ["{cni_bin}"]
  conf_dir = "{cni_conf}"
  max_conf_num = 1
"""


def host_leftovers(root: Path) -> list[str]:
    """What a stopped node would have left on the host: processes, mounts, the link, routes,
    cgroups, iptables rules. Empty when the teardown was whole."""
    found: list[str] = []
    with contextlib.suppress(FileNotFoundError):
        mounts = Path("/proc/self/mountinfo").read_text()
        found += [f"mount: {line.split()[4]}" for line in mounts.splitlines() if str(root) in line]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [f"interface: {HOST_LINK}" for line in links.splitlines() if HOST_LINK in line]
    routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    found += [f"route: {line}" for line in routes.splitlines() if NODE_IP in line]
    base = Path("/sys/fs/cgroup")
    found += [f"cgroup: {d}" for d in base.glob(f"*/{CGROUP_ROOT}")]
    if shutil.which("iptables-save"):
        rules = subprocess.run(["iptables-save"], capture_output=True, text=True).stdout
        found += [f"iptables: {line}" for line in rules.splitlines() if "KUBE-" in line]
    procs = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    # The team store's servers keep their data in a folder of their own (team_store.py).
    marks = (str(root), STORE_FOLDER_PREFIX)
    found += [
        f"process: {line.strip()}"
        for line in procs.splitlines()
        if any(m in line for m in marks) and "ps -eo" not in line
    ]
    return found


def ray_router(api: Any) -> Any:
    """Where a KubeRay request for a Ray head goes when that head really runs on the node: the
    head Service's address (kube-proxy in the node takes it on to the pod), or a pod address of
    the node's bridge. None for every other head, which the fake head answers."""
    import ipaddress

    from tests.e2e.controlplane.ray_head import _is_ip, _service_of

    pods = ipaddress.ip_network(POD_CIDR)

    def route(host: str, port: int) -> tuple[str, int] | None:
        if _is_ip(host):
            return (host, port) if ipaddress.ip_address(host) in pods else None
        named = _service_of(host)
        if named is None:
            return None
        namespace, name = named
        slices = api.list(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            namespace,
            label_selector=f"kubernetes.io/service-name={name}",
        )
        on_node = [
            ep
            for piece in slices
            for ep in piece.get("endpoints") or []
            if ep.get("nodeName") == NODE_NAME
        ]
        if not on_node:
            return None
        service = api.get("v1", "Service", name, namespace) or {}
        cluster_ip = (service.get("spec") or {}).get("clusterIP")
        if cluster_ip and cluster_ip != "None":
            return cluster_ip, port
        return on_node[0]["addresses"][0], port

    return route
