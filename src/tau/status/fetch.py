"""Read one run's objects from the Kubernetes API into a Snapshot.

Performs I/O, through the official `kubernetes` client passed in as an `ApiClient` (imported
lazily, so the pure modules load without it). The number of requests does not depend on the
number of pods: each kind is one get or one list with a label selector.

Reading the run itself (Job, RayJob) must succeed or be a plain 404; any other failure raises a
ClusterError, because "not found" would then be a lie. Every later query soft-fails: its part of
the snapshot stays empty and the reason is recorded in `Snapshot.errors`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tau.errors import ClusterError
from tau.kube.raw import RAW as _RAW
from tau.kube.raw import decode
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
_KUEUE = ("kueue.x-k8s.io", "v1beta2", "workloads")
_RAYJOB = ("ray.io", "v1", "rayjobs")
_RAYCLUSTER = ("ray.io", "v1", "rayclusters")
#: DRA went GA in Kubernetes 1.34 as resource.k8s.io/v1.
_CLAIMS = ("resource.k8s.io", "v1", "resourceclaims")


def _reason(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    try:
        message = json.loads(getattr(exc, "body", "") or "{}").get("message", "")
    except (TypeError, ValueError, AttributeError):
        message = ""
    return f"{status} {message}".strip() if status else str(exc)


class _Reader:
    """Calls the API for one namespace and records soft failures."""

    def __init__(self, api_client: Any, namespace: str) -> None:
        from tau.kube import apis

        self.core = apis.core(api_client)
        self.batch = apis.batch(api_client)
        self.custom = apis.custom(api_client)
        self.namespace = namespace
        self.errors: list[str] = []

    def required(self, kind: str, name: str, call: Callable[[], Any]) -> Obj | None:
        """A get that may 404 (absent, or its type not served) but must not fail otherwise."""
        from tau.k8s.kinds import BY_KIND
        from tau.kube.errors import api_call

        try:
            with api_call("get", BY_KIND[kind], namespace=self.namespace, name=name):
                return decode(call())
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise

    def soft(self, what: str, call: Callable[[], Any], *, missing_ok: bool = False) -> Obj | None:
        """A get or list whose failure leaves its part empty; a 404 is just "none"."""
        from tau.kube.apis import ApiException

        try:
            return decode(call())
        except ApiException as exc:
            if exc.status == 404 and missing_ok:
                return None
            self.errors.append(f"{what}: {_reason(exc)}")
            return None

    def items(self, what: str, call: Callable[[], Any], *, missing_ok: bool = True) -> list[Obj]:
        body = self.soft(what, call, missing_ok=missing_ok)
        return list((body or {}).get("items") or [])

    def custom_list(self, gvp: tuple[str, str, str], selector: str | None = None) -> Any:
        group, version, plural = gvp
        return lambda: self.custom.list_namespaced_custom_object(
            group, version, self.namespace, plural, label_selector=selector or "", **_RAW
        )

    def custom_get(self, gvp: tuple[str, str, str], name: str) -> Any:
        group, version, plural = gvp
        return lambda: self.custom.get_namespaced_custom_object(
            group, version, self.namespace, plural, name, **_RAW
        )


def _pods(reader: _Reader, name: str, cluster: str) -> list[Obj]:
    ns = reader.namespace
    pods = reader.items(
        "pods",
        lambda: reader.core.list_namespaced_pod(
            ns, label_selector=f"{JOB_NAME_LABEL}={name}", **_RAW
        ),
        missing_ok=False,
    )
    if cluster:
        pods += reader.items(
            "pods",
            lambda: reader.core.list_namespaced_pod(
                ns, label_selector=f"{RAY_CLUSTER_LABEL}={cluster}", **_RAW
            ),
            missing_ok=False,
        )
    return list({name_of(p): p for p in pods}.values())


def _claims(reader: _Reader, pods: list[Obj]) -> list[Obj]:
    if not any((p.get("spec") or {}).get("resourceClaims") for p in pods):
        return []
    # Claims from templates carry generated names; one list plus a name filter stays constant.
    wanted = {n for p in pods for n in _claim_refs(p)}
    claims = reader.items("resourceclaims", reader.custom_list(_CLAIMS))
    return [c for c in claims if name_of(c) in wanted or _owned_by(c, pods)]


def _claim_refs(pod: Obj) -> list[str]:
    refs = [
        str(r.get("resourceClaimName"))
        for r in (pod.get("spec") or {}).get("resourceClaims") or ()
        if r.get("resourceClaimName")
    ]
    refs += [
        str(s.get("resourceClaimName"))
        for s in status_of(pod).get("resourceClaimStatuses") or ()
        if s.get("resourceClaimName")
    ]
    return refs


def _owned_by(claim: Obj, pods: list[Obj]) -> bool:
    names = {name_of(p) for p in pods}
    return any(
        ref.get("kind") == "Pod" and ref.get("name") in names
        for ref in metadata(claim).get("ownerReferences") or ()
    )


def _events(reader: _Reader, names: set[str]) -> list[Obj]:
    # A field selector cannot OR object names, and one query per pod would make the request
    # count grow with the run; so: one namespace list (events expire after ~1h), then a filter.
    ns = reader.namespace
    events = reader.items(
        "events",
        lambda: reader.core.list_namespaced_event(
            ns, field_selector=f"involvedObject.namespace={ns}", **_RAW
        ),
        missing_ok=False,
    )
    return [e for e in events if (e.get("involvedObject") or {}).get("name") in names]


def fetch(api_client: Any, namespace: str, name: str) -> Snapshot:
    """Read everything `interpret` needs for run `name` in `namespace`.

    Args:
        api_client: an official `kubernetes.client.ApiClient`.
        namespace: the run's namespace.
        name: the Job or RayJob name.

    Returns:
        The Snapshot; sub-queries that failed are listed in `errors`.

    Raises:
        ClusterError: reading the Job or RayJob failed with anything but 404.
    """
    reader = _Reader(api_client, namespace)
    job = reader.required(
        "Job", name, lambda: reader.batch.read_namespaced_job(name, namespace, **_RAW)
    )
    rayjob = reader.required("RayJob", name, reader.custom_get(_RAYJOB, name))
    if job is None and rayjob is None:
        return Snapshot(namespace=namespace, name=name)
    from tau.status.facts import primary_of

    primary = primary_of(Snapshot(namespace=namespace, name=name, job=job, rayjob=rayjob))[1]
    uid = str(metadata(primary).get("uid") or "")
    workloads = (
        reader.items(
            "workloads",
            reader.custom_list(_KUEUE, f"{KUEUE_JOB_UID_LABEL}={uid}"),
            missing_ok=False,
        )
        if uid
        else []
    )
    cluster_name = str(status_of(rayjob).get("rayClusterName") or "") if rayjob else ""
    raycluster = (
        reader.soft("raycluster", reader.custom_get(_RAYCLUSTER, cluster_name), missing_ok=True)
        if cluster_name
        else None
    )
    pods = _pods(reader, name, cluster_name)
    claims = _claims(reader, pods)
    service = None
    if job is not None and (job.get("spec") or {}).get("completionMode") == "Indexed":
        service = reader.soft(
            "service",
            lambda: reader.core.read_namespaced_service(f"{name}-headless", namespace, **_RAW),
            missing_ok=True,
        )
    names = {name, cluster_name, *(name_of(o) for o in (*workloads, *pods, *claims))}
    events = _events(reader, names)
    return Snapshot(
        namespace=namespace,
        name=name,
        job=job,
        rayjob=rayjob,
        workloads=tuple(workloads),
        raycluster=raycluster,
        pods=tuple(pods),
        events=tuple(events),
        resource_claims=tuple(claims),
        service=service,
        errors=tuple(reader.errors),
    )
