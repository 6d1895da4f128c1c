"""The portal boards, computed from one set of listed objects. Pure.

`ClusterView` is what one refresh read (eight list calls, see `tau.kube.lists.BOARD_KINDS`);
each board function turns it into a JSON document, or raises `Unavailable` naming the missing
source, so one missing CRD or forbidden kind disables only the boards that need it. Run phases
come from tau's own status interpreter, so the portal and `tau run status` never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tau.k8s import meta
from tau.k8s.quantity import parse_quantity
from tau.kube.lists import Listed
from tau.runs.listing import is_managed
from tau.status.facts import JOB_NAME_LABEL, KUEUE_JOB_UID_LABEL, RAY_CLUSTER_LABEL
from tau.status.interpret import interpret
from tau.status.snapshot import Snapshot

Obj = dict[str, Any]
GPU_RESOURCE = "nvidia.com/gpu"
#: Boards with a Kusto source; this server has none configured.
KUSTO_BOARDS = ("cluster", "cost", "nodeutil")
MAX_ROWS = 1000


class Unavailable(Exception):
    """A board's source is missing (HTTP 503); the message says which and why."""


@dataclass(frozen=True)
class ClusterView:
    """One refresh: the listed kinds by Kind name, and when they were read."""

    lists: Mapping[str, Listed]
    read_at: datetime
    namespace: str | None = None
    #: Boards already built from this view (the overview reuses the others).
    built: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def need(self, *kinds: str) -> list[list[Obj]]:
        """The items of each kind, or Unavailable naming the first kind that failed."""
        out = []
        for kind in kinds:
            items, error = self.optional(kind)
            if error:
                raise Unavailable(error)
            out.append(items)
        return out

    def optional(self, kind: str) -> tuple[list[Obj], str]:
        """The items of `kind`, or none and why: a kind this identity may not read is said as
        the access it needs and who has it, never as the API server's 403 text.
        """
        listed = self.lists.get(kind)
        if listed is None:
            return [], f"{kind} was not read"
        if listed.status == 403:
            return [], forbidden(kind)
        return (listed.items, "") if listed.ok else ([], listed.error)

    def truncated(self) -> list[str]:
        return sorted(k for k, v in self.lists.items() if v.truncated)


#: What each kind a researcher's role may lack shows, for the one line that says so.
_SHOWS = {
    "Node": "Node capacity and health",
    "ClusterQueue": "ClusterQueue quota and usage",
    "Workload": "Kueue workloads",
    "LocalQueue": "LocalQueues",
    "RayCluster": "Ray clusters",
    "Job": "Jobs",
    "RayJob": "RayJobs",
    "Pod": "Pods",
}
#: Kinds without a namespace: reading them always needs a cluster-wide grant.
_CLUSTER_WIDE = ("Node", "ClusterQueue")


def forbidden(kind: str) -> str:
    """The one line for a kind this identity may not list (HTTP 403), as `tau run status` says
    a layer the researcher cannot fix: what it would show, the access it needs, who has it.
    """
    what = _SHOWS.get(kind, f"{kind} objects")
    scope = "across the cluster" if kind in _CLUSTER_WIDE else "here"
    return (
        f"{what} need read access to {kind} objects {scope}, which your identity does not "
        f"have; the platform operator does (ask them for it, or for these figures)"
    )


def _once(build: Any) -> Any:
    """Build a board at most once per view; an Unavailable is remembered too."""

    def wrapped(view: ClusterView) -> dict[str, Any]:
        key = build.__name__
        if key not in view.built:
            try:
                view.built[key] = build(view)
            except Unavailable as exc:
                view.built[key] = exc
        result = view.built[key]
        if isinstance(result, Unavailable):
            raise result
        return dict(result)

    wrapped.__name__ = build.__name__
    wrapped.__doc__ = build.__doc__
    return wrapped


def _md(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    return str(_md(obj).get("namespace") or ""), str(_md(obj).get("name") or "")


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _md(obj).get("labels") or {}


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind:
            return c
    return None


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    c = _condition(obj, kind)
    return bool(c and c.get("status") == "True")


def _meta(view: ClusterView, *, partial: list[str]) -> dict[str, Any]:
    return {
        "generated_at": view.read_at.isoformat().replace("+00:00", "Z"),
        "namespace": view.namespace or "*",
        "partial": partial,
        "truncated_lists": view.truncated(),
    }


# --- runs ------------------------------------------------------------------------------------


@_once
def runs_board(view: ClusterView) -> dict[str, Any]:
    """Tau-managed Jobs and RayJobs with their phase from tau's status interpreter."""
    jobs, pods = view.need("Job", "Pod")
    rayjobs, ray_err = view.optional("RayJob")
    workloads, wl_err = view.optional("Workload")
    clusters, _ = view.optional("RayCluster")
    by_uid: dict[str, list[Obj]] = {}
    for w in workloads:
        uid = _labels(w).get(KUEUE_JOB_UID_LABEL)
        if uid:
            by_uid.setdefault(uid, []).append(w)
    pods_by_job: dict[tuple[str, str], list[Obj]] = {}
    pods_by_cluster: dict[tuple[str, str], list[Obj]] = {}
    for p in pods:
        ns = str(_md(p).get("namespace") or "")
        labels = _labels(p)
        if labels.get(JOB_NAME_LABEL):
            pods_by_job.setdefault((ns, labels[JOB_NAME_LABEL]), []).append(p)
        if labels.get(RAY_CLUSTER_LABEL):
            pods_by_cluster.setdefault((ns, labels[RAY_CLUSTER_LABEL]), []).append(p)
    cluster_by_key = {_key(c): c for c in clusters}
    rows = []
    for kind, items in (("Job", jobs), ("RayJob", rayjobs)):
        for obj in items:
            owners = [o.get("kind") for o in _md(obj).get("ownerReferences") or ()]
            if not is_managed(obj) or (kind == "Job" and "RayJob" in owners):
                continue
            ns, name = _key(obj)
            uid = str(_md(obj).get("uid") or "")
            cluster_name = str((obj.get("status") or {}).get("rayClusterName") or "")
            run_pods = pods_by_job.get((ns, name), []) + pods_by_cluster.get((ns, cluster_name), [])
            snap = Snapshot(
                namespace=ns,
                name=name,
                job=obj if kind == "Job" else None,
                rayjob=obj if kind == "RayJob" else None,
                workloads=tuple(by_uid.get(uid, ())),
                raycluster=cluster_by_key.get((ns, cluster_name)),
                pods=tuple(run_pods),
            )
            rows.append(_run_row(kind, obj, interpret(snap, view.read_at)))
    rows.sort(key=lambda r: (r["created"], r["namespace"], r["name"]), reverse=True)
    partial = [e for e in (ray_err, wl_err) if e]
    return {
        **_meta(view, partial=partial),
        "total": len(rows),
        "truncated": len(rows) > MAX_ROWS,
        "runs": rows[:MAX_ROWS],
        "hint": "read-only: use `tau run cancel NAME` or `tau run resume NAME` to act on a run",
    }


def _run_row(kind: str, obj: Obj, status: Any) -> dict[str, Any]:
    labels = _labels(obj)
    phase = status.first_open_phase
    owner = status.actions[0].owner if status.actions else None
    diag = status.diagnostics[0] if status.diagnostics else None
    return {
        "name": _key(obj)[1],
        "namespace": _key(obj)[0],
        "kind": kind,
        "runId": labels.get(meta.LABEL_RUN_ID, ""),
        "state": str(status.state),
        "phase": str(phase.name) if phase else "",
        "phaseStatus": str(phase.status) if phase else "done",
        "phaseDetail": phase.detail if phase else "",
        "owner": str(diag.owner if diag else owner) if (diag or owner) else "",
        "reason": diag.message if diag else "",
        "queue": labels.get(meta.KUEUE_QUEUE_NAME, ""),
        "project": labels.get(meta.LABEL_STELLAR_PROJECT, ""),
        "experiment": labels.get(meta.LABEL_STELLAR_EXPERIMENT, ""),
        "group": labels.get(meta.LABEL_STELLAR_GROUP, ""),
        "pods": len(status.pods),
        "created": str(_md(obj).get("creationTimestamp") or ""),
    }


# --- queues ----------------------------------------------------------------------------------


def _usage(cq: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for flavor in (cq.get("status") or {}).get("flavorsUsage") or ():
        for r in flavor.get("resources") or ():
            out.setdefault(str(flavor.get("name")), {})[str(r.get("name"))] = str(
                r.get("total", "0")
            )
    return out


def _quota(cq: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for group in (cq.get("spec") or {}).get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for r in flavor.get("resources") or ():
                out.setdefault(str(flavor.get("name")), {})[str(r.get("name"))] = str(
                    r.get("nominalQuota", "0")
                )
    return out


def _gpus(resources: Mapping[str, Mapping[str, str]]) -> float:
    return sum(_num(v.get(GPU_RESOURCE)) or 0.0 for v in resources.values())


@_once
def queues_board(view: ClusterView) -> dict[str, Any]:
    """Kueue ClusterQueue/LocalQueue usage and the pending workloads. An identity that may not
    read ClusterQueues (a namespaced researcher) still sees its LocalQueues and workloads.
    """
    lqs, workloads = view.need("LocalQueue", "Workload")
    cqs, cq_error = view.optional("ClusterQueue")
    if cq_error and view.lists.get("ClusterQueue", Listed()).status != 403:
        raise Unavailable(cq_error)
    cluster_queues = []
    for cq in sorted(cqs, key=lambda o: _key(o)[1]):
        st = cq.get("status") or {}
        usage, quota = _usage(cq), _quota(cq)
        cluster_queues.append(
            {
                "name": _key(cq)[1],
                "cohort": (cq.get("spec") or {}).get("cohort", ""),
                "pendingWorkloads": int(st.get("pendingWorkloads") or 0),
                "admittedWorkloads": int(st.get("admittedWorkloads") or 0),
                "reservingWorkloads": int(st.get("reservingWorkloads") or 0),
                "usage": usage,
                "nominalQuota": quota,
                "gpuUsed": _gpus(usage),
                "gpuQuota": _gpus(quota),
            }
        )
    local_queues = [
        {
            "namespace": _key(lq)[0],
            "name": _key(lq)[1],
            "clusterQueue": (lq.get("spec") or {}).get("clusterQueue", ""),
            "pendingWorkloads": int((lq.get("status") or {}).get("pendingWorkloads") or 0),
            "admittedWorkloads": int((lq.get("status") or {}).get("admittedWorkloads") or 0),
        }
        for lq in sorted(lqs, key=_key)
    ]
    pending = []
    for w in workloads:
        if _true(w, "Admitted") or _true(w, "Finished"):
            continue
        reserve = _condition(w, "QuotaReserved")
        pending.append(
            {
                "namespace": _key(w)[0],
                "name": _key(w)[1],
                "queue": (w.get("spec") or {}).get("queueName", ""),
                "priority": (w.get("spec") or {}).get("priority"),
                "created": str(_md(w).get("creationTimestamp") or ""),
                "reason": (reserve or {}).get("message", "") or "waiting for quota",
            }
        )
    pending.sort(key=lambda p: (p["created"], p["namespace"], p["name"]))
    return {
        **_meta(view, partial=[]),
        "clusterQueues": cluster_queues[:MAX_ROWS],
        "clusterQueuesUnavailable": cq_error,
        "localQueues": local_queues[:MAX_ROWS],
        "pending": pending[:MAX_ROWS],
        "pendingTotal": len(pending),
        "truncated": max(len(pending), len(local_queues), len(cluster_queues)) > MAX_ROWS,
    }


# --- nodes -----------------------------------------------------------------------------------


def _is_gpu_node(node: Mapping[str, Any]) -> bool:
    capacity = (node.get("status") or {}).get("capacity") or {}
    return GPU_RESOURCE in capacity or meta.LABEL_GPU_CLASS in _labels(node)


@_once
def nodes_board(view: ClusterView) -> dict[str, Any]:
    """GPU nodes: capacity, allocatable, GPU class and health labels (null when not measured)."""
    (nodes,) = view.need("Node")
    rows = []
    for n in sorted(nodes, key=lambda o: _key(o)[1]):
        if not _is_gpu_node(n):
            continue
        st = n.get("status") or {}
        cap, alloc = st.get("capacity") or {}, st.get("allocatable") or {}
        labels = _labels(n)
        rows.append(
            {
                "name": _key(n)[1],
                "gpuClass": labels.get(meta.LABEL_GPU_CLASS),
                "health": {k: v for k, v in sorted(labels.items()) if "health" in k.lower()},
                "gpuCapacity": _num(cap.get(GPU_RESOURCE)),
                "gpuAllocatable": _num(alloc.get(GPU_RESOURCE)),
                "cpu": _num(cap.get("cpu")),
                "memoryGiB": _gib(cap.get("memory")),
                "ready": _true(n, "Ready"),
                "unschedulable": bool((n.get("spec") or {}).get("unschedulable")),
            }
        )
    return {**_meta(view, partial=[]), "total": len(rows), "nodes": rows[:MAX_ROWS]}


def _num(value: Any) -> float | None:
    """A quantity as a number; None when absent or unparsable (not measured is not zero)."""
    parsed = None if value is None else parse_quantity(str(value))
    return None if parsed is None else float(parsed)


def _gib(value: Any) -> float | None:
    parsed = _num(value)
    return None if parsed is None else round(parsed / 2**30, 1)


# --- ray -------------------------------------------------------------------------------------


@_once
def ray_board(view: ClusterView) -> dict[str, Any]:
    (clusters,) = view.need("RayCluster")
    rows = []
    for c in sorted(clusters, key=_key):
        st = c.get("status") or {}
        rows.append(
            {
                "namespace": _key(c)[0],
                "name": _key(c)[1],
                "state": st.get("state", ""),
                "desiredWorkers": st.get("desiredWorkerReplicas"),
                "availableWorkers": st.get("availableWorkerReplicas"),
                "runId": _labels(c).get(meta.LABEL_RUN_ID, ""),
                "created": str(_md(c).get("creationTimestamp") or ""),
            }
        )
    return {**_meta(view, partial=[]), "total": len(rows), "clusters": rows[:MAX_ROWS]}


# --- overview --------------------------------------------------------------------------------

BOARDS = (
    ("overview", "Overview", "/api/portal/overview"),
    ("runs", "Runs", "/api/portal/runs"),
    ("jobs", "Jobs / Queue", "/api/portal/jobs"),
    ("nodes", "Nodes", "/api/portal/nodes"),
    ("ray", "Ray", "/api/portal/ray"),
    ("cluster", "Cluster Health", "/api/portal/cluster"),
    ("cost", "Cost", "/api/portal/cost"),
    ("nodeutil", "Node Utilization", "/api/portal/nodeutil"),
)
KUSTO_REASON = (
    "not configured: Cluster Health, Cost, and Node Utilization boards need a Kusto source, "
    "which this build does not read yet"
)
#: What `portal serve` prints at startup. The reference names its --kusto-endpoint and
#: --kusto-query-command flags here; this build has neither, so the line names none.
KUSTO_WARNING = (
    "warning: Cluster Health, Cost, and Node Utilization boards disabled "
    "(they need a Kusto source, which this build does not read yet)"
)


def _fleet_capacity(nodes: list[Obj]) -> dict[str, Any]:
    """CPU cores and memory of every node, and the most common VM SKU of the GPU nodes (the
    `node.kubernetes.io/instance-type` label); null when no node reports it.
    """
    cpus = [_num(((n.get("status") or {}).get("capacity") or {}).get("cpu")) for n in nodes]
    memory = [_num(((n.get("status") or {}).get("capacity") or {}).get("memory")) for n in nodes]
    skus: dict[str, int] = {}
    for n in nodes:
        sku = _labels(n).get(meta.NODE_INSTANCE_TYPE)
        if sku and _is_gpu_node(n):
            skus[sku] = skus.get(sku, 0) + 1
    measured_cpu = [c for c in cpus if c is not None]
    measured_memory = [m for m in memory if m is not None]
    return {
        "totalCPUCores": sum(measured_cpu) if measured_cpu else None,
        "totalMemoryGiB": round(sum(measured_memory) / 2**30, 1) if measured_memory else None,
        "topSKU": min(skus, key=lambda k: (-skus[k], k)) if skus else None,
    }


@_once
def overview(view: ClusterView) -> dict[str, Any]:
    """Cards per source family; a missing source leaves its card null with a reason."""
    cards: dict[str, Any] = {}
    try:
        nodes = nodes_board(view)["nodes"]
        (all_nodes,) = view.need("Node")
        cards["fleet"] = {
            "totalNodes": len(all_nodes),
            "readyNodes": sum(1 for n in all_nodes if _true(n, "Ready")),
            "gpuNodes": len(nodes),
            "totalGPUs": sum(n["gpuCapacity"] or 0 for n in nodes),
            **_fleet_capacity(all_nodes),
        }
    except Unavailable as exc:
        cards["fleet"], cards["fleetUnavailable"] = None, str(exc)
    try:
        q = queues_board(view)
        quota = not q["clusterQueuesUnavailable"]
        cards["queue"] = {
            "pending": q["pendingTotal"],
            "admitted": sum(
                c["admittedWorkloads"] for c in q["clusterQueues" if quota else "localQueues"]
            ),
            # Quota is the ClusterQueues': unknown (null) where they cannot be read.
            "gpuUsed": sum(c["gpuUsed"] for c in q["clusterQueues"]) if quota else None,
            "gpuHeadroom": (
                sum(c["gpuQuota"] - c["gpuUsed"] for c in q["clusterQueues"]) if quota else None
            ),
            "quotaUnavailable": q["clusterQueuesUnavailable"],
        }
    except Unavailable as exc:
        cards["queue"], cards["queueUnavailable"] = None, str(exc)
    try:
        cards["ray"] = {"clusters": ray_board(view)["total"]}
    except Unavailable as exc:
        cards["ray"], cards["rayUnavailable"] = None, str(exc)
    cards["health"], cards["healthUnavailable"] = None, KUSTO_REASON
    cards["cost"], cards["costUnavailable"] = None, KUSTO_REASON
    running: list[dict[str, Any]] = []
    runs_error = ""
    try:
        running = [r for r in runs_board(view)["runs"] if r["state"] in ("running", "starting")]
    except Unavailable as exc:
        runs_error = str(exc)
    return {
        **_meta(view, partial=[]),
        "boards": [{"id": i, "title": t, "path": p, "external": False} for i, t, p in BOARDS],
        "cards": cards,
        "running": running[:100],
        "runningUnavailable": runs_error,
    }
