"""Every run's Snapshot from one list per kind: what autocapture reads instead of N fetches.

Pure. `tau.status.fetch` reads one run with a handful of requests; autocapture reads a whole
namespace (or all of them), so it lists each kind once and sorts the objects into one Snapshot
per run here, with the same links `fetch` follows: Workloads by the Kueue job-uid label, pods
by `job-name` (and `ray.io/cluster` for a RayJob's cluster), ResourceClaims the pods use, and
Events about any of those objects. The request count does not grow with the number of runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tau.status.facts import (
    JOB_NAME_LABEL,
    KUEUE_JOB_UID_LABEL,
    RAY_CLUSTER_LABEL,
    metadata,
    name_of,
    status_of,
)
from tau.status.snapshot import Snapshot

Obj = dict[str, Any]
Key = tuple[str, str]


@dataclass(frozen=True)
class Lists:
    """One namespace's (or every namespace's) objects of each kind autocapture reads.

    Attributes:
        jobs: tau-managed batch/v1 Jobs.
        rayjobs: tau-managed RayJobs.
        workloads: Kueue Workloads (they do not carry tau's labels).
        pods: tau-managed pods.
        events: core/v1 Events.
        claims: ResourceClaims (DRA).
    """

    jobs: list[Obj] = field(default_factory=list)
    rayjobs: list[Obj] = field(default_factory=list)
    workloads: list[Obj] = field(default_factory=list)
    pods: list[Obj] = field(default_factory=list)
    events: list[Obj] = field(default_factory=list)
    claims: list[Obj] = field(default_factory=list)


def _ns(obj: Mapping[str, Any]) -> str:
    return str(metadata(obj).get("namespace") or "")


def _key(obj: Mapping[str, Any]) -> Key:
    return _ns(obj), name_of(dict(obj))


def _owned_by_rayjob(obj: Mapping[str, Any]) -> bool:
    return any(o.get("kind") == "RayJob" for o in metadata(obj).get("ownerReferences") or ())


def run_keys(lists: Lists) -> list[Key]:
    """(namespace, name) of every run: RayJobs, and Jobs that are not a RayJob's submitter."""
    keys = {_key(r) for r in lists.rayjobs}
    keys |= {_key(j) for j in lists.jobs if not _owned_by_rayjob(j)}
    return sorted(keys)


def _index(objects: Iterable[Obj], label: str) -> dict[Key, list[Obj]]:
    out: dict[Key, list[Obj]] = defaultdict(list)
    for obj in objects:
        value = (metadata(obj).get("labels") or {}).get(label)
        if value:
            out[(_ns(obj), str(value))].append(obj)
    return out


def _claim_refs(pod: Obj) -> set[str]:
    # The same references `tau.status.fetch` follows: direct names and generated ones.
    refs = {
        str(r.get("resourceClaimName"))
        for r in (pod.get("spec") or {}).get("resourceClaims") or ()
        if r.get("resourceClaimName")
    }
    refs |= {
        str(s.get("resourceClaimName"))
        for s in status_of(pod).get("resourceClaimStatuses") or ()
        if s.get("resourceClaimName")
    }
    return refs


def _claims_of(claims: list[Obj], pods: list[Obj]) -> list[Obj]:
    if not any((p.get("spec") or {}).get("resourceClaims") for p in pods):
        return []
    wanted = set().union(*(_claim_refs(p) for p in pods))
    names = {name_of(p) for p in pods}
    return [
        c
        for c in claims
        if name_of(c) in wanted
        or any(
            r.get("kind") == "Pod" and r.get("name") in names
            for r in metadata(c).get("ownerReferences") or ()
        )
    ]


def snapshots(lists: Lists) -> list[Snapshot]:
    """One Snapshot per run, sorted by namespace and name."""
    jobs = {_key(j): j for j in lists.jobs}
    rayjobs = {_key(r): r for r in lists.rayjobs}
    workloads = _index(lists.workloads, KUEUE_JOB_UID_LABEL)
    by_job = _index(lists.pods, JOB_NAME_LABEL)
    by_cluster = _index(lists.pods, RAY_CLUSTER_LABEL)
    claims: dict[str, list[Obj]] = defaultdict(list)
    for claim in lists.claims:
        claims[_ns(claim)].append(claim)
    events: dict[Key, list[Obj]] = defaultdict(list)
    for event in lists.events:
        involved = event.get("involvedObject") or {}
        where = str(involved.get("namespace") or _ns(event))
        events[(where, str(involved.get("name") or ""))].append(event)

    out = []
    for ns, name in run_keys(lists):
        job, rayjob = jobs.get((ns, name)), rayjobs.get((ns, name))
        primary = job if job is not None and not (rayjob and _owned_by_rayjob(job)) else rayjob
        uid = str(metadata(primary).get("uid") or "")
        linked = workloads.get((ns, uid), []) if uid else []
        cluster = str(status_of(rayjob).get("rayClusterName") or "") if rayjob else ""
        pods = list(by_job.get((ns, name), []))
        if cluster:
            pods += by_cluster.get((ns, cluster), [])
        pods = list({name_of(p): p for p in pods}.values())
        used = _claims_of(claims.get(ns, []), pods)
        names = {name, cluster, *(name_of(o) for o in (*linked, *pods, *used))}
        about = [e for n in sorted(names - {""}) for e in events.get((ns, n), [])]
        out.append(
            Snapshot(
                namespace=ns,
                name=name,
                job=job,
                rayjob=rayjob,
                workloads=tuple(linked),
                pods=tuple(pods),
                events=tuple(about),
                resource_claims=tuple(used),
            )
        )
    return out
