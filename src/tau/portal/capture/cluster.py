"""`capture run-profile` and `autocapture`: read runs through the project's session and status
fetch, and record them. Performs I/O (cluster reads through `tau.kube`/`tau.status`; store).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tau.errors import UsageError
from tau.portal.capture.profile import Profile, profile_of
from tau.portal.capture.record import Counts, record_profile
from tau.portal.store.core import Store


@dataclass(frozen=True)
class Scope:
    project: str
    experiment: str
    group: str
    owner: str
    cluster: str | None


def capture_run_profile(
    store: Store, api: Any, namespace: str, name: str, scope: Scope, *, state: str | None
) -> tuple[dict[str, Any], Counts]:
    """Fetch one run (Job or RayJob) as `tau run status` does and record its profile."""
    from tau.status.fetch import fetch
    from tau.status.interpret import interpret

    snapshot = fetch(api, namespace, name)
    status = interpret(snapshot, datetime.now(UTC))
    profile = profile_of(snapshot, status.state, cluster=scope.cluster)
    if profile is None:
        raise UsageError(
            f"no Job or RayJob {name!r} in namespace {namespace}",
            hint=f"list runs with `tau run list -n {namespace}`",
        )
    if state:
        profile.run["state"] = state
    counts = _record(store, [profile], scope, "status-run-profile")
    return profile.run | {"context": profile.context}, counts


def reconcile(store: Store, api: Any, namespace: str, scope: Scope) -> tuple[Counts, list[str]]:
    """One pass over the namespace's tau-managed Jobs and RayJobs; returns counts, warnings."""
    from tau.k8s import meta
    from tau.k8s.kinds import JOB, RAYJOB
    from tau.kube.lists import list_kind
    from tau.status.fetch import fetch
    from tau.status.interpret import interpret

    warnings: list[str] = []
    names: list[str] = []
    selector = f"{meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE}"
    for resource in (JOB, RAYJOB):
        listed = list_kind(api, resource, namespace, selector=selector)
        if not listed.ok:
            if resource is RAYJOB and listed.status == 404:
                continue  # KubeRay is not installed: no RayJobs to capture
            from tau.errors import ClusterError

            raise ClusterError(f"listing {resource.plural} in {namespace}: {listed.error}")
        if listed.truncated:
            warnings.append(f"{resource.plural} in {namespace} truncated to {len(listed.items)}")
        for obj in listed.items:
            owners = obj.get("metadata", {}).get("ownerReferences") or []
            if resource is JOB and any(o.get("kind") == "RayJob" for o in owners):
                continue  # the RayJob's submitter Job is captured with its RayJob
            names.append(str(obj["metadata"]["name"]))
    now = datetime.now(UTC)
    profiles = []
    for name in sorted(set(names)):
        snapshot = fetch(api, namespace, name)
        warnings += [f"{name}: {e}" for e in snapshot.errors]
        profile = profile_of(snapshot, interpret(snapshot, now).state, cluster=scope.cluster)
        if profile is not None:
            profiles.append(profile)
    return _record(store, profiles, scope, "controller-autocapture"), warnings


def _record(store: Store, profiles: list[Profile], scope: Scope, source: str) -> Counts:
    """Record the profiles in one commit; the counts of what changed."""
    counts = Counts()
    with store.writer() as w:
        for profile in profiles:
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
    return counts
