"""`tau cluster validate nodes`: find the GPU nodes, probe each with one privileged pod, report.

`discover`, `probe_pod`, `assess_nodes` and `table` are pure; `probe_nodes` performs I/O. Probe
pods run with bounded concurrency and are always deleted: on success, on failure, on timeout
and on Ctrl-C (the `finally` of `probe_nodes` deletes every pod it created, including one
whose create request was in flight, because the name is recorded before the request).
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tau.cluster.probe import DEGRADED, HEALTHY, SCRIPT, UNHEALTHY, UNKNOWN, assess, parse
from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.meta import LABEL_GPU_CLASS

GPU_CLASSES = ("any", "a100-80gb", "h100-95gb", "h200-141gb")
PROBE_NAMESPACE = "default"
MANAGED_BY = (meta.APP_MANAGED_BY, "tau-validate")
RUN_LABEL = meta.APP_INSTANCE
#: A small image with nsenter; the probe itself uses the host's nvidia-smi and ibstat.
PROBE_IMAGE = "mcr.microsoft.com/azurelinux/busybox:1.36"
DEFAULT_PARALLEL = 8
DEVICE_PLUGIN_GPU = "nvidia.com/gpu"
MIG_PREFIX = "nvidia.com/mig-"
DRA_GPU_DRIVER = "gpu.nvidia.com"
#: Labels that say a node has GPUs even when it exposes none (GPU feature discovery, tau).
GPU_NODE_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.count", LABEL_GPU_CLASS)


@dataclass(frozen=True)
class GpuNode:
    """A node and how its GPUs are exposed (`source`: device-plugin, mig, dra or none)."""

    name: str
    gpus: int
    source: str

    @property
    def stranded(self) -> bool:
        return self.gpus == 0


@dataclass(frozen=True)
class Row:
    """One line of the nodes table."""

    node: str
    gpus: int
    source: str
    nvlink: str
    ib: str
    ecc: str
    driver: str
    status: str
    reasons: tuple[str, ...] = ()

    @property
    def status_text(self) -> str:
        return f"{self.status} ({'; '.join(self.reasons)})" if self.reasons else self.status


def check_gpu_class(value: str) -> str:
    if value not in GPU_CLASSES:
        raise UsageError(
            f'--gpu-class "{value}" is not a known GPU class',
            hint=f"use one of: {', '.join(GPU_CLASSES)}",
        )
    return value


def _quantity(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def dra_devices(slices: Iterable[dict[str, Any]] | None) -> dict[str, int]:
    """Node name → number of NVIDIA GPU devices its DRA ResourceSlices publish. Pure."""
    out: dict[str, int] = {}
    for item in slices or ():
        spec = item.get("spec") or {}
        if spec.get("driver") == DRA_GPU_DRIVER and spec.get("nodeName"):
            out[spec["nodeName"]] = out.get(spec["nodeName"], 0) + len(spec.get("devices") or [])
    return out


def discover(
    nodes: Iterable[dict[str, Any]], slices: Iterable[dict[str, Any]] | None, gpu_class: str
) -> list[GpuNode]:
    """The GPU nodes of `gpu_class`, with their GPU count and source; stranded ones too. Pure.

    A node counts as a GPU node when it exposes `nvidia.com/gpu`, MIG slices or DRA GPU
    devices, or carries a GPU label; one with a GPU label and nothing schedulable is stranded.
    """
    dra = dra_devices(slices)
    found = []
    for node in nodes:
        meta = node.get("metadata") or {}
        labels = meta.get("labels") or {}
        if gpu_class != "any" and labels.get(LABEL_GPU_CLASS) != gpu_class:
            continue
        status = node.get("status") or {}
        allocatable = status.get("allocatable") or {}
        capacity = status.get("capacity") or {}
        plugin = _quantity(allocatable.get(DEVICE_PLUGIN_GPU, 0))
        mig = sum(_quantity(v) for k, v in allocatable.items() if k.startswith(MIG_PREFIX))
        name = str(meta.get("name"))
        if plugin:
            found.append(GpuNode(name, plugin, "device-plugin"))
        elif mig:
            found.append(GpuNode(name, mig, "mig"))
        elif dra.get(name):
            found.append(GpuNode(name, dra[name], "dra"))
        elif any(k in labels for k in GPU_NODE_LABELS) or _quantity(
            capacity.get(DEVICE_PLUGIN_GPU, 0)
        ):
            found.append(GpuNode(name, 0, "none"))
    return sorted(found, key=lambda n: n.name)


def pod_name(node: str, suffix: str) -> str:
    """`tau-validate-<node>-<hex>`, within the 63 characters of a DNS label."""
    base = node.lower().replace(".", "-")[: 63 - len("tau-validate-") - len(suffix) - 1].strip("-")
    return f"tau-validate-{base}-{suffix}"


def probe_pod(name: str, node: str, run_id: str, timeout: float) -> dict[str, Any]:
    """The privileged probe pod pinned to `node`. Pure."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": PROBE_NAMESPACE,
            "labels": {MANAGED_BY[0]: MANAGED_BY[1], RUN_LABEL: run_id},
        },
        "spec": {
            "nodeName": node,
            "hostPID": True,
            "hostNetwork": True,
            "restartPolicy": "Never",
            "activeDeadlineSeconds": max(1, int(timeout)),
            "terminationGracePeriodSeconds": 0,
            # The probe must reach GPU nodes whatever their taints (GPU pools are usually tainted).
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "probe",
                    "image": PROBE_IMAGE,
                    "command": [
                        "nsenter",
                        "-t",
                        "1",
                        "-m",
                        "-u",
                        "-i",
                        "-n",
                        "-p",
                        "--",
                        "sh",
                        "-c",
                        SCRIPT,
                    ],
                    "securityContext": {"privileged": True},
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "16Mi"},
                        "limits": {"memory": "128Mi"},
                    },
                }
            ],
        },
    }


@dataclass(frozen=True)
class Outcome:
    """What a node's probe pod produced: its log, or why there is none."""

    log: str | None = None
    error: str | None = None


Clock = Callable[[], float]


def _waiting_reason(pod: dict[str, Any]) -> str:
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (status.get("state") or {}).get("waiting") or {}
        if waiting.get("reason"):
            return f", {waiting['reason']}"
    return ""


def _failure(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    for cs in status.get("containerStatuses") or []:
        term = (cs.get("state") or {}).get("terminated") or {}
        if term:
            reason, code = term.get("reason", "Error"), term.get("exitCode", "?")
            return f"probe pod failed: {reason} (exit {code})"
    return f"probe pod failed: {status.get('reason') or status.get('message') or 'unknown reason'}"


def probe_nodes(
    api: Any,
    nodes: list[GpuNode],
    *,
    timeout: float,
    parallel: int = DEFAULT_PARALLEL,
    context: str | None = None,
    poll: float = 0.1,
    clock: Clock = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    token: Callable[[int], str] = secrets.token_hex,
    warn: Callable[[str], None] = lambda _text: None,
) -> dict[str, Outcome]:
    """Run one probe pod per node, at most `parallel` at once; every pod is deleted at the end.

    One list call per poll tick covers every pod in flight, so the API load does not grow with
    the number of nodes.
    """
    from tau.kube import operator as k

    run_id = f"tau-validate-{token(4)}"
    selector = f"{MANAGED_BY[0]}={MANAGED_BY[1]},{RUN_LABEL}={run_id}"
    queue = deque(nodes)
    inflight: dict[str, tuple[GpuNode, float]] = {}
    created: set[str] = set()
    outcomes: dict[str, Outcome] = {}

    def finish(name: str, outcome: Outcome) -> None:
        node, _ = inflight.pop(name)
        outcomes[node.name] = outcome
        k.delete_pod(api, name, PROBE_NAMESPACE, context=context)
        created.discard(name)

    try:
        while queue or inflight:
            while queue and len(inflight) < parallel:
                node = queue.popleft()
                name = pod_name(node.name, token(3))
                created.add(name)
                try:
                    k.create_pod(api, probe_pod(name, node.name, run_id, timeout), context=context)
                except ClusterError as exc:
                    if exc.status in (401, 403):
                        raise
                    created.discard(name)
                    outcomes[node.name] = Outcome(error=f"cannot create probe pod: {exc.message}")
                    continue
                inflight[name] = (node, clock() + timeout)
            if not inflight:
                break
            sleep(poll)
            pods = {
                p["metadata"]["name"]: p
                for p in k.list_pods(api, PROBE_NAMESPACE, label_selector=selector, context=context)
            }
            for name, (_node, deadline) in list(inflight.items()):
                pod = pods.get(name)
                phase = ((pod or {}).get("status") or {}).get("phase") or "Pending"
                if pod is None:
                    finish(name, Outcome(error="probe pod disappeared"))
                elif phase == "Succeeded":
                    finish(
                        name, Outcome(log=k.pod_log(api, name, PROBE_NAMESPACE, context=context))
                    )
                elif phase == "Failed":
                    finish(name, Outcome(error=_failure(pod)))
                elif clock() >= deadline:
                    state = f"{phase}{_waiting_reason(pod)}"
                    late = f"probe did not finish within {int(timeout)}s ({state})"
                    finish(name, Outcome(error=late))
    finally:
        _cleanup(api, created, context, warn)
    return outcomes


def _cleanup(api: Any, names: set[str], context: str | None, warn: Callable[[str], None]) -> None:
    from tau.kube import operator as k

    left = []
    for name in sorted(names):
        try:
            k.delete_pod(api, name, PROBE_NAMESPACE, context=context)
        except (ClusterError, KeyboardInterrupt):
            left.append(name)
    if left:
        warn(
            f"could not delete probe pods {', '.join(left)}; delete them with: kubectl delete pods "
            f"-n {PROBE_NAMESPACE} -l {MANAGED_BY[0]}={MANAGED_BY[1]}"
        )


def assess_nodes(nodes: list[GpuNode], outcomes: dict[str, Outcome]) -> list[Row]:
    """One table row per node. Pure."""
    rows = []
    for node in nodes:
        if node.stranded:
            rows.append(
                Row(
                    node.name,
                    0,
                    node.source,
                    "-",
                    "-",
                    "-",
                    "-",
                    UNHEALTHY,
                    ("stranded: GPU node exposes no schedulable GPUs",),
                )
            )
            continue
        outcome = outcomes.get(node.name, Outcome(error="not probed"))
        if outcome.log is None:
            rows.append(
                Row(
                    node.name,
                    node.gpus,
                    node.source,
                    "-",
                    "-",
                    "-",
                    "-",
                    UNKNOWN,
                    (outcome.error or "no probe output",),
                )
            )
            continue
        a = assess(parse(outcome.log), node.gpus)
        rows.append(
            Row(
                node.name,
                node.gpus,
                node.source,
                a.nvlink,
                a.ib,
                a.ecc,
                a.driver,
                a.status,
                a.reasons,
            )
        )
    return rows


def table(rows: list[Row]) -> str:
    """`NODE GPUS SOURCE NVLINK IB ECC DRIVER STATUS`, then `N/M nodes healthy`. Pure."""
    header = ("NODE", "GPUS", "SOURCE", "NVLINK", "IB", "ECC", "DRIVER", "STATUS")
    cells = [
        (r.node, str(r.gpus), r.source, r.nvlink, r.ib, r.ecc, r.driver, r.status_text)
        for r in rows
    ]
    widths = [max(len(c[i]) for c in (header, *cells)) for i in range(len(header) - 1)]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in (header, *cells)
    ]
    healthy = sum(1 for r in rows if r.status == HEALTHY)
    lines.append(f"{healthy}/{len(rows)} nodes healthy")
    return "\n".join(lines) + "\n"


def exit_code(rows: list[Row], min_healthy: int) -> int:
    """1 when healthy < --min-healthy; without it, when any node is UNHEALTHY or UNKNOWN."""
    healthy = sum(1 for r in rows if r.status == HEALTHY)
    if min_healthy > 0:
        return 1 if healthy < min_healthy else 0
    return 1 if any(r.status in (UNHEALTHY, UNKNOWN) for r in rows) else 0


__all__ = ["DEGRADED", "HEALTHY", "UNHEALTHY", "UNKNOWN"]
