"""The component-aware readiness report of an installation: Kubernetes >= 1.30, controller
Deployments, TauCluster, the baseline ClusterQueue and the quota guard.

`evaluate` is pure (facts in, checks out); `gather` reads the facts (I/O through `tau.kube`);
`wait_ready` repeats both until everything passes or the time is up.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tau.cluster.checks import ERROR, OK, WARN, Check, has_errors
from tau.k8s import meta
from tau.k8s.dra import SHARED_CLUSTER_QUEUE

MIN_KUBERNETES = (1, 30)
#: The TauCluster singleton's name (contract §4.5).
TAU_CLUSTER_NAME = "cluster"
#: The ClusterQueue the baseline queue value creates.
BASELINE_CLUSTER_QUEUE = SHARED_CLUSTER_QUEUE
#: Every Deployment of a Helm release carries the release name here (Helm's standard labels).
RELEASE_LABEL = meta.APP_INSTANCE


@dataclass
class Facts:
    """What the readiness checks look at, read from the cluster in one pass."""

    version: dict[str, Any]
    deployments: list[dict[str, Any]]
    tau_cluster: dict[str, Any] | None
    cluster_queue: dict[str, Any] | None
    quota_guard: bool
    #: Whether the values turn the baseline queue and the quota guard on (chart defaults: yes);
    #: a component turned off is reported as such, not waited for.
    baseline_expected: bool = True
    quota_guard_expected: bool = True


def evaluate(facts: Facts, release: str) -> list[Check]:
    """Every readiness check, in the order an operator fixes them."""
    return [
        _kubernetes(facts.version),
        *_deployments(facts.deployments, release),
        _tau_cluster(facts.tau_cluster),
        _cluster_queue(facts.cluster_queue, facts.baseline_expected),
        _quota_guard(facts.quota_guard, facts.quota_guard_expected),
    ]


def _kubernetes(version: dict[str, Any]) -> Check:
    text = str(version.get("gitVersion") or f"v{version.get('major')}.{version.get('minor')}")
    try:
        major = int(str(version.get("major", "0")).rstrip("+"))
        minor = int(str(version.get("minor", "0")).rstrip("+"))
    except ValueError:
        return Check(WARN, "kubernetes", f"cannot read the server version ({text})")
    need = ".".join(map(str, MIN_KUBERNETES))
    if (major, minor) < MIN_KUBERNETES:
        return Check(ERROR, "kubernetes", f"{text} is older than the required {need}")
    return Check(OK, "kubernetes", f"{text} (>= {need})")


def _deployments(items: list[dict[str, Any]], release: str) -> list[Check]:
    if not items:
        return [
            Check(
                ERROR,
                "controllers",
                f"no Deployments labelled {RELEASE_LABEL}={release}: is the release installed?",
            )
        ]
    checks = []
    for item in sorted(
        items, key=lambda d: (d["metadata"].get("namespace", ""), d["metadata"]["name"])
    ):
        meta, spec, status = item["metadata"], item.get("spec") or {}, item.get("status") or {}
        want = int(spec.get("replicas", 1) if spec.get("replicas") is not None else 1)
        have = int(status.get("availableReplicas") or 0)
        label = f"deployment/{meta['name']}"
        where = f" in {meta.get('namespace', '')}"
        if have >= want:
            checks.append(Check(OK, label, f"{have}/{want} available{where}"))
        else:
            checks.append(
                Check(ERROR, label, f"{have}/{want} available{where}{_condition_text(status)}")
            )
    return checks


def _condition_text(status: dict[str, Any]) -> str:
    for cond in status.get("conditions") or []:
        if cond.get("status") != "True" and cond.get("message"):
            return f" ({cond.get('type')}: {cond['message']})"
    return ""


def _tau_cluster(obj: dict[str, Any] | None) -> Check:
    if obj is None:
        return Check(ERROR, "taucluster", f'TauCluster "{TAU_CLUSTER_NAME}" not found')
    status = obj.get("status") or {}
    phase = status.get("phase") or "Pending"
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if phase == "Ready" and (generation is None or observed == generation):
        return Check(OK, "taucluster", "Ready")
    if phase == "Ready":
        return Check(
            WARN,
            "taucluster",
            f"Ready but not yet observed (generation {generation}, observed {observed})",
        )
    reasons = [
        f"{c.get('type')}={c.get('status')}" + (f" ({c['message']})" if c.get("message") else "")
        for c in status.get("conditions") or []
        if _reports_problem(c)
    ]
    detail = f": {'; '.join(reasons)}" if reasons else ""
    return Check(ERROR if phase == "Degraded" else WARN, "taucluster", f"{phase}{detail}")


#: TauCluster conditions that report a problem when True (the others report one when False).
_BAD_WHEN_TRUE = frozenset({"OwnershipConflict", "ReconcilePaused", "DeletionBlocked"})


def _reports_problem(cond: dict[str, Any]) -> bool:
    kind, value = cond.get("type"), cond.get("status")
    if kind in _BAD_WHEN_TRUE:
        return value == "True"
    return kind != "Ready" and value == "False"


def _cluster_queue(obj: dict[str, Any] | None, expected: bool) -> Check:
    label = f"clusterqueue/{BASELINE_CLUSTER_QUEUE}"
    if obj is None:
        if not expected:
            return Check(OK, label, "not created (baselineQueue.enabled=false)")
        return Check(ERROR, label, "not found: the baseline queue was not created")
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Active":
            if cond.get("status") == "True":
                return Check(OK, label, "Active")
            return Check(
                ERROR,
                label,
                f"not Active: {cond.get('reason', '')} {cond.get('message', '')}".rstrip(),
            )
    return Check(WARN, label, "exists but Kueue has not reported it Active yet")


def _quota_guard(served: bool, expected: bool) -> Check:
    if not expected and not served:
        return Check(OK, "quota-guard", "not installed (quotaGuard.enabled=false)")
    if served:
        return Check(OK, "quota-guard", "TauQuotaRequest is served (ReportOnly)")
    return Check(
        ERROR, "quota-guard", "TauQuotaRequest is not served: the quota guard is not installed"
    )


def gather(api: Any, namespace: str, release: str, *, context: str | None) -> Facts:
    """Read every fact the readiness checks need (I/O)."""
    from tau.kube import operator as k

    return Facts(
        version=k.server_version(api, context=context),
        deployments=k.list_deployments(
            api, label_selector=f"{RELEASE_LABEL}={release}", context=context
        ),
        tau_cluster=k.get_object(api, k.TAU_CLUSTER, TAU_CLUSTER_NAME, context=context),
        cluster_queue=k.get_object(api, k.CLUSTERQUEUE, BASELINE_CLUSTER_QUEUE, context=context),
        quota_guard=k.quota_guard_served(api, namespace, context=context),
    )


def wait_ready(
    check: Callable[[], list[Check]],
    timeout: float,
    *,
    interval: float = 5.0,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Check]:
    """Re-run `check` until it has no errors or warnings, or `timeout` seconds passed."""
    deadline = clock() + timeout
    while True:
        checks = check()
        if not has_errors(checks) and all(c.level == OK for c in checks):
            return checks
        if clock() + interval > deadline:
            return checks
        sleep(interval)
