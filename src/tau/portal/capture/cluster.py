"""`capture run-profile` and `autocapture`: read runs through the project's session, and record
them. Performs I/O (cluster reads through `tau.kube`/`tau.status`; the store).

`capture run-profile` reads one run as `tau run status` does (`tau.status.fetch`). `autocapture`
reads a namespace with one list per kind (`KINDS`) and assembles every run from those lists
(`assemble`), so its request count does not grow with the number of runs; `--watch` keeps the
same lists current through watch streams (`follow`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.kinds import EVENT, JOB, POD, RAYJOB, RESOURCE_CLAIM, WORKLOAD, ResourceType
from tau.portal.capture.assemble import Lists, snapshots
from tau.portal.capture.profile import Profile, primary, profile_of
from tau.portal.capture.record import Counts, record_profile
from tau.portal.errors import WriteConflict
from tau.portal.store.core import Store

#: tau labels its Jobs, RayJobs and their pods; Workloads, Events and claims carry no tau label.
TAU_SELECTOR = f"{meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE}"


@dataclass(frozen=True)
class Scope:
    project: str
    experiment: str
    group: str
    owner: str
    cluster: str | None


@dataclass(frozen=True)
class Kind:
    """One kind autocapture reads.

    Attributes:
        field: the `Lists` attribute it fills.
        selector: the label selector of its list and watch.
        required: a failed list fails the command (the runs themselves); otherwise the
            failure is a warning and the kind's part stays empty.
        optional: a 404 means its CRD is not installed: no objects, no warning.
    """

    field: str
    resource: ResourceType
    selector: str = ""
    required: bool = False
    optional: bool = False


KINDS: tuple[Kind, ...] = (
    Kind("jobs", JOB, TAU_SELECTOR, required=True),
    Kind("rayjobs", RAYJOB, TAU_SELECTOR, required=True, optional=True),
    Kind("workloads", WORKLOAD, optional=True),
    Kind("pods", POD, TAU_SELECTOR),
    Kind("events", EVENT),
    Kind("claims", RESOURCE_CLAIM, optional=True),
)


def where(namespace: str | None) -> str:
    return f"namespace {namespace}" if namespace else "all namespaces"


def list_failure(kind: Kind, listed: Any, namespace: str | None) -> str | None:
    """The warning for a failed list (None: nothing to say); raises when the kind is required.

    Raises:
        ClusterError: a required kind could not be listed.
    """
    if listed.ok:
        if listed.truncated:
            return (
                f"{kind.resource.qualified} in {where(namespace)} truncated to {len(listed.items)}"
            )
        return None
    if kind.optional and listed.status == 404:
        return None  # not installed (no KubeRay, Kueue or DRA): nothing of that kind to read
    if kind.required:
        raise ClusterError(
            f"{listed.error} ({where(namespace)})",
            status=listed.status,
            hint="check the context and your access to the namespace",
        )
    return f"{listed.error} ({where(namespace)}); runs are recorded without it"


def read_lists(api: Any, namespace: str | None) -> tuple[Lists, list[str]]:
    """One list per kind in `namespace` (None: all namespaces), plus warnings."""
    from tau.kube.lists import list_kind

    found: dict[str, list[dict[str, Any]]] = {}
    warnings: list[str] = []
    for kind in KINDS:
        if kind.field == "claims" and not any(
            (p.get("spec") or {}).get("resourceClaims") for p in found["pods"]
        ):
            found["claims"] = []  # no pod uses DRA: skip the request, as `status.fetch` does
            continue
        listed = list_kind(api, kind.resource, namespace, selector=kind.selector)
        warning = list_failure(kind, listed, namespace)
        if warning:
            warnings.append(warning)
        found[kind.field] = listed.items
    return Lists(**found), warnings


def capture_run_profile(
    store: Store, api: Any, namespace: str, name: str, scope: Scope, *, state: str | None
) -> tuple[dict[str, Any], Counts, dict[str, Any]]:
    """Fetch one run (Job or RayJob) as `tau run status` does and record its profile.

    Returns:
        The recorded run (with its context), the counts, and the run object itself (for its
        result annotations).
    """
    from tau.status.fetch import fetch
    from tau.status.interpret import interpret

    snapshot = fetch(api, namespace, name)
    status = interpret(snapshot, datetime.now(UTC))
    profile = profile_of(snapshot, status.state, cluster=scope.cluster)
    found = primary(snapshot)
    if profile is None or found is None:
        raise UsageError(
            f"no Job or RayJob {name!r} in namespace {namespace}",
            hint=f"list runs with `tau run list -n {namespace}`",
        )
    if state:
        profile.run["state"] = state
    counts, _ = record(store, [profile], scope, "status-run-profile")
    return profile.run | {"context": profile.context}, counts, dict(found[1])


def reconcile(
    store: Store, api: Any, namespace: str | None, scope: Scope
) -> tuple[Counts, list[str]]:
    """One pass over the tau-managed Jobs and RayJobs of `namespace` (None: all namespaces)."""
    lists, warnings = read_lists(api, namespace)
    counts, more = record_lists(store, lists, scope)
    return counts, warnings + more


def record_lists(
    store: Store, lists: Lists, scope: Scope, *, skip_conflicts: bool = False
) -> tuple[Counts, list[str]]:
    """Record every run the lists hold; returns counts and warnings.

    Args:
        skip_conflicts: a run whose state or identity conflicts with the store is reported as
            a warning and left alone (a long-running watch must not end over one run);
            otherwise the conflict is raised.
    """
    from tau.status.interpret import interpret

    now = datetime.now(UTC)
    profiles = []
    for snapshot in snapshots(lists):
        profile = profile_of(snapshot, interpret(snapshot, now).state, cluster=scope.cluster)
        if profile is not None:
            profiles.append(profile)
    return record(store, profiles, scope, "controller-autocapture", skip_conflicts=skip_conflicts)


def record(
    store: Store,
    profiles: list[Profile],
    scope: Scope,
    source: str,
    *,
    skip_conflicts: bool = False,
) -> tuple[Counts, list[str]]:
    """Record the profiles in one commit; the counts of what changed, and warnings."""
    counts = Counts()
    warnings: list[str] = []
    with store.writer() as w:
        for profile in profiles:
            try:
                record_profile(
                    w,
                    profile,
                    project=scope.project,
                    experiment=scope.experiment,
                    group=scope.group,
                    owner=scope.owner,
                    capture_source=source,
                    counts=counts,
                )
            except WriteConflict as exc:
                # record_profile checks every conflict before it writes anything of the run.
                if not skip_conflicts:
                    raise
                warnings.append(f"run {profile.run['run_id']}: {exc.message}")
    return counts, warnings
