"""Faults a real cluster does to running work, injected into a started control plane.

Each fault acts on the component itself, as it fails in production: the apiserver or etcd
process stopped and started again on the same data, the node's kubelet stopped (its containers
keep running), containerd restarted (its shims keep the containers), the node's link taken
down, the node's memory bounded so that a run can push it into the kubelet's eviction.
Every injection is counted (`injected`) for the suite's summary line. Waiting is on
conditions (a port refusing, a health endpoint answering), bounded; the only fixed waits are
the fault durations a test asks for.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import node
from tests.e2e.controlplane.processes import Process, http_ok, https_ok, stop_process, wait_until

#: Budget for a component to answer again after its restart on a loaded 2-core machine.
BACK_TIMEOUT = 180.0


@dataclass
class Outage:
    """One injected fault: what, and how long the component was away (stop to ready)."""

    fault: str
    away: float = 0.0


@dataclass
class Faults:
    """Fault injection on `plane` (a started `ControlPlane` with its real node)."""

    plane: Any
    injected: list[Outage] = field(default_factory=list)

    # ------------------------------------------------------------------ control plane

    def _proc(self, name: str) -> Process:
        found = [p for p in self.plane.supervisor.processes if p.name == name]
        assert found, f"no process {name} in this control plane"
        return found[-1]

    def _apiserver_ready(self) -> bool:
        plane = self.plane
        check = https_ok(
            f"{plane.server}/readyz",
            ca=plane.ca.cert_path,
            client=(plane.admin_client.cert, plane.admin_client.key),
        )
        try:
            return check()
        except OSError:
            return False

    def restart_apiserver(self, down_for: float) -> Outage:
        """Stop kube-apiserver (SIGTERM, as a rolling restart does), keep it down `down_for`
        seconds, start it again on the same etcd, and return once /readyz answers."""
        proc = self._proc("kube-apiserver")
        started = time.monotonic()
        stop_process(proc, grace=30)
        wait_until(
            "the apiserver's port to refuse",
            lambda: not _port_open(self.plane.ports.apiserver),
            timeout=30,
        )
        time.sleep(down_for)  # the fault's duration, fixed by the test
        self.plane.supervisor.launch(proc)
        wait_until("kube-apiserver /readyz", self._apiserver_ready, timeout=BACK_TIMEOUT, proc=proc)
        return self._count("apiserver restart", started)

    def restart_etcd(self, down_for: float) -> Outage:
        """Stop etcd, keep it down `down_for` seconds, start it on its data directory, and
        return once etcd and then the apiserver (which stayed up) answer as ready."""
        proc = self._proc("etcd")
        port = self.plane.ports.etcd
        started = time.monotonic()
        stop_process(proc, grace=30)
        wait_until("etcd's port to refuse", lambda: not _port_open(port), timeout=30)
        time.sleep(down_for)
        self.plane.supervisor.launch(proc)
        wait_until(
            "etcd /health",
            http_ok(f"http://127.0.0.1:{port}/health"),
            timeout=BACK_TIMEOUT,
            proc=proc,
        )
        wait_until("kube-apiserver /readyz", self._apiserver_ready, timeout=BACK_TIMEOUT)
        return self._count("etcd restart", started)

    # ------------------------------------------------------------------ the real node

    @property
    def node(self) -> node.RealNode:
        assert self.plane.node is not None, "the control plane has no real node"
        real: node.RealNode = self.plane.node
        return real

    def _node_proc(self, name: str) -> Process:
        proc = self.node._process(name)
        assert proc is not None, f"the real node has no {name}"
        return proc

    def stop_kubelet(self) -> float:
        """Stop the kubelet (its pods' containers keep running under their shims); returns
        when it stopped (the monotonic clock), for `start_kubelet` to count the outage."""
        started = time.monotonic()
        stop_process(self._node_proc("kubelet"), grace=30)
        return started

    def start_kubelet(self, stopped_at: float) -> Outage:
        """Start the same kubelet again and return once the node reads Ready."""
        self._launch_kubelet()
        return self._count("kubelet stopped", stopped_at)

    def _launch_kubelet(self) -> None:
        """Start the kubelet (on what its configuration file says now); once the node reads
        Ready."""
        proc = self._node_proc("kubelet")
        self.plane.supervisor.launch(proc)
        wait_until(
            f"node {node.NODE_NAME} to be Ready again",
            lambda: self.plane.api.nodes_ready([node.NODE_NAME]),
            timeout=BACK_TIMEOUT,
            proc=proc,
        )

    def _restart_kubelet(self) -> None:
        self.stop_kubelet()
        self._launch_kubelet()

    def _node_memory(self, which: str) -> int:
        found = self.plane.api.get("v1", "Node", node.NODE_NAME) or {}
        return quantity_bytes(str(((found.get("status") or {}).get(which) or {})["memory"]))

    @contextlib.contextmanager
    def bounded_memory(self, pods: str = "3Gi", evict_below: str = "1Gi") -> Iterator[int]:
        """The real node's pods bounded to `pods` of memory, with a hard eviction threshold
        of `evict_below` a test can reach; yields the memory (bytes) the pods may use before
        the kubelet evicts.

        The kubelet sees this whole machine (its memory is shared with everything else on
        it), so its node-wide `memory.available` cannot be pushed over a threshold safely.
        What it does enforce is node allocatable: the pods' cgroup is capped at capacity
        minus `systemReserved`, and the same hard threshold applies to what is left in that
        cgroup (`allocatableMemory.available`). Reserving all but `pods` for the system
        makes that signal one test run can cross, on any machine size, without touching
        the host. The pressure condition clears after 10 s (not 5 min), so a retry is not
        held back by it. The kubelet goes back to its own configuration at the end."""
        capacity = self._node_memory("capacity")
        bound, threshold = quantity_bytes(pods), quantity_bytes(evict_below)
        assert threshold < bound < capacity, (pods, evict_below, capacity)
        config = self.node.kubelet_config()
        self.node.write_kubelet_config(
            systemReserved={"memory": f"{(capacity - bound) // 1024}Ki"},
            enforceNodeAllocatable=["pods"],
            evictionHard={**config["evictionHard"], "memory.available": evict_below},
            evictionPressureTransitionPeriod="10s",
        )
        try:
            self._restart_kubelet()
            wait_until(
                "the node to advertise its bounded memory",
                # Within a MiB: the kubelet also takes huge pages off, where a host has any.
                lambda: abs(self._node_memory("allocatable") - (bound - threshold)) < 1 << 20,
                timeout=60,
            )
            wait_until(
                "the pods' cgroup to be capped",
                lambda: _pods_cgroup_limit() <= bound,
                timeout=60,
            )
            yield bound - threshold
        finally:
            self.node.write_kubelet_config()
            self._restart_kubelet()
            wait_until(
                "the node to advertise its whole memory again",
                lambda: self._node_memory("allocatable") > bound,
                timeout=60,
            )

    def restart_containerd(self) -> Outage:
        """Stop containerd and start it again; its shims (each in a process group of its own)
        and so the containers live on, and it finds them again from its state directory."""
        proc = self._node_proc("containerd")
        started = time.monotonic()
        stop_process(proc, grace=30)
        self.plane.supervisor.launch(proc)
        wait_until(
            "containerd to answer again",
            lambda: self.node._ctr("version", timeout=10) is not None,
            timeout=BACK_TIMEOUT,
            proc=proc,
        )
        return self._count("containerd restart", started)

    def link_down(self) -> float:
        """Take the host's end of the node's link down: the node is cut off from the
        apiserver (its relay) and the apiserver from the kubelet."""
        subprocess.run(["ip", "link", "set", node.HOST_LINK, "down"], check=True)
        return time.monotonic()

    def link_up(self, cut_at: float) -> Outage:
        """Bring the link back, with its routes (a link going down drops them), and return
        once the node reads Ready."""
        subprocess.run(["ip", "link", "set", node.HOST_LINK, "up"], check=True)
        for cidr in (node.POD_CIDR, self.node.service_cidr):
            subprocess.run(
                ["ip", "route", "replace", cidr, "via", node.NODE_IP, "dev", node.HOST_LINK],
                check=True,
                capture_output=True,
            )
        wait_until(
            f"node {node.NODE_NAME} to be Ready again",
            lambda: self.plane.api.nodes_ready([node.NODE_NAME]),
            timeout=BACK_TIMEOUT,
        )
        return self._count("link down", cut_at)

    def small_claim(self, namespace: str, name: str, size: str = "64Mi") -> None:
        """A claim `name` in `namespace` bound to a volume of the real node that holds only
        `size`: a folder of the node with a tmpfs of that size mounted on it (in the node's
        own mount namespace, where the kubelet mounts it into pods). It goes with the node."""
        folder = self.node.root / "small-claims" / name
        folder.mkdir(parents=True, exist_ok=True)
        # tmpfs spells sizes k/m/g; Kubernetes spells them Ki/Mi/Gi.
        tmpfs_size = size.removesuffix("i").lower()
        self.node._run_in_node(
            "mount", "-t", "tmpfs", "-o", f"size={tmpfs_size},mode=0777", name, str(folder)
        )
        pv = f"{name}-{namespace}"
        self.plane.api.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": size},
                    "accessModes": ["ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": "",
                    "claimRef": {"namespace": namespace, "name": name},
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
                },
            }
        )
        self.plane.api.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "volumeName": pv,
                    "resources": {"requests": {"storage": size}},
                },
            }
        )

        def bound() -> bool:
            claim = self.plane.api.get("v1", "PersistentVolumeClaim", name, namespace) or {}
            return (claim.get("status") or {}).get("phase") == "Bound"

        wait_until(f"claim {namespace}/{name} to be Bound", bound, timeout=60)

    # ------------------------------------------------------------------ helpers

    def _count(self, fault: str, started: float) -> Outage:
        outage = Outage(fault, time.monotonic() - started)
        self.injected.append(outage)
        return outage


#: Binary suffixes of Kubernetes quantities (the ones a node's memory is written in).
_SUFFIXES = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40}


def quantity_bytes(text: str) -> int:
    """A memory quantity (`24567890Ki`, `3Gi`, plain bytes) in bytes."""
    for suffix, factor in _SUFFIXES.items():
        if text.endswith(suffix):
            return int(text.removesuffix(suffix)) * factor
    return int(text)


def _pods_cgroup_limit() -> int:
    """The memory limit of the real node's pods' cgroup (cgroup v1, the kubelet's
    `cgroupRoot`/kubepods), or a huge number while it has none."""
    limit = Path("/sys/fs/cgroup/memory") / node.CGROUP_ROOT / "kubepods" / "memory.limit_in_bytes"
    try:
        return int(limit.read_text())
    except (OSError, ValueError):
        return 1 << 62


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False
