"""The frozen input of `interpret`: every cluster object one status view reads, as plain dicts.

Pure. `fetch` fills it from the API; tests build it from YAML fixtures. Objects are the JSON the
API server returns (camelCase keys), never client models, so fixtures and live data look alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tau.status.evidence_model import StoreEvidence

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Snapshot:
    """What the cluster held for one run at one moment.

    Attributes:
        namespace: the run's namespace.
        name: the run (Job or RayJob) name.
        job: the batch/v1 Job of that name, or None.
        rayjob: the ray.io/v1 RayJob of that name, or None.
        workloads: Kueue Workloads linked by ``kueue.x-k8s.io/job-uid``.
        raycluster: the RayCluster the RayJob names in its status, or None.
        pods: pods of the Job (``job-name``) and of the RayCluster (``ray.io/cluster``).
        events: core/v1 Events about the run's objects.
        resource_claims: resource.k8s.io ResourceClaims the pods reference (DRA).
        service: the headless Service of an Indexed Job, or None.
        errors: sub-queries that failed and left their part empty (soft failure), as
            ``"<what>: <why>"`` lines.
        store_evidence: what the experiment store held for a finished run that offloads its
            metrics (`tau.cli.evidence_read`), or None when it was not read.
        last_lines: (pod, container, text) of the last lines of a container that exited
            non-zero: what its process said as it failed (read for failed containers only).
        preemptors: (JobUID, "Kind name") of the workloads Kueue preempted this run for, as
            its Workload's eviction message names them by UID (read when preempted only).
    """

    namespace: str
    name: str
    job: Obj | None = None
    rayjob: Obj | None = None
    workloads: tuple[Obj, ...] = ()
    raycluster: Obj | None = None
    pods: tuple[Obj, ...] = ()
    events: tuple[Obj, ...] = ()
    resource_claims: tuple[Obj, ...] = ()
    service: Obj | None = None
    errors: tuple[str, ...] = field(default=())
    store_evidence: StoreEvidence | None = None
    last_lines: tuple[tuple[str, str, str], ...] = ()
    preemptors: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_objects(
        cls,
        namespace: str,
        name: str,
        objects: list[dict[str, Any]],
        errors: tuple[str, ...] = (),
    ) -> Snapshot:
        """Sort a flat list of API objects (a fixture file, say) into a Snapshot by kind.

        Args:
            namespace: run namespace.
            name: run name; the Job/RayJob/Service are the objects of that name.
            objects: any mix of Job, RayJob, Workload, RayCluster, Pod, Event, ResourceClaim and
                Service documents.
            errors: soft failures to carry along.

        Returns:
            The Snapshot; objects of other kinds are ignored.
        """
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for obj in objects:
            by_kind.setdefault(str(obj.get("kind")), []).append(obj)

        def named(kind: str, wanted: str) -> dict[str, Any] | None:
            return next(
                (o for o in by_kind.get(kind, []) if o.get("metadata", {}).get("name") == wanted),
                None,
            )

        clusters = by_kind.get("RayCluster", [])
        return cls(
            namespace=namespace,
            name=name,
            job=named("Job", name),
            rayjob=named("RayJob", name),
            workloads=tuple(by_kind.get("Workload", [])),
            raycluster=clusters[0] if clusters else None,
            pods=tuple(by_kind.get("Pod", [])),
            events=tuple(by_kind.get("Event", [])),
            resource_claims=tuple(by_kind.get("ResourceClaim", [])),
            service=named("Service", f"{name}-headless"),
            errors=errors,
        )
