"""Apply, scale and delete a rendered service on the cluster.

Performs I/O (the Kubernetes API, through the official client passed in; imported lazily).
The objects sent are the ones `--dry-run=client` prints, unredacted, with the namespace set;
nothing is re-rendered here. API failures become ClusterErrors at this boundary.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.kinds import DEPLOYMENT, RAYSERVICE, SERVICE

#: Each kind `tau serve` touches, by Kubernetes kind.
RESOURCES = {r.kind: r for r in (RAYSERVICE, DEPLOYMENT, SERVICE)}
#: --kind value → the Kubernetes kind of the service object.
SERVE_KINDS = {"rayservice": "RayService", "deployment": "Deployment"}

RAYSERVICE_SCALE = (
    "serve scale --kind=rayservice: not yet implemented (serveConfigV2 is a "
    "string blob; redeploy with --replicas for now)"
)


@dataclass(frozen=True)
class Applied:
    """One object after apply: created or replaced (or would be, on a server dry run)."""

    kind: str
    name: str
    action: str
    object: dict[str, Any]


def _owned_by_tau(existing: dict[str, Any], name: str) -> bool:
    labels = existing.get("metadata", {}).get("labels") or {}
    return bool(
        labels.get(meta.LABEL_SERVICE) == name
        and labels.get(meta.LABEL_MANAGED_BY) == meta.MANAGED_BY_VALUE
    )


def _replacement(doc: dict[str, Any], existing: dict[str, Any]) -> dict[str, Any]:
    """The rendered object as an update of `existing`: its resourceVersion (custom resources
    refuse unconditional updates) and, for a Service, its immutable cluster IPs.
    """
    body = copy.deepcopy(doc)
    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    if doc["kind"] == "Service":
        for key in ("clusterIP", "clusterIPs"):
            if key in existing.get("spec", {}):
                body["spec"][key] = existing["spec"][key]
    return body


def _foreign(kind: str, namespace: str, name: str) -> ClusterError:
    return ClusterError(
        f"{kind} {namespace}/{name} exists and was not deployed by tau serve",
        status=409,
        hint="choose another service name, or remove that object yourself if it is really unused",
    )


def _refuse_foreign(api_client: Any, doc: dict[str, Any], context: str | None) -> None:
    """Raise when `doc`'s name is taken by an object tau did not deploy. A read that is not
    allowed checks nothing: the create that follows reports what was refused.
    """
    from tau.kube import resources

    kind, name, ns = doc["kind"], doc["metadata"]["name"], doc["metadata"]["namespace"]
    try:
        existing = resources.find(api_client, RESOURCES[kind], name, namespace=ns, context=context)
    except ClusterError as exc:
        if exc.status == 403:
            return
        raise
    if existing is not None and not _owned_by_tau(existing, name):
        raise _foreign(kind, ns, name)


def _apply_one(api_client: Any, doc: dict[str, Any], dry_run: bool, context: str | None) -> Applied:
    from tau.kube import resources

    kind, name, ns = doc["kind"], doc["metadata"]["name"], doc["metadata"]["namespace"]
    resource = RESOURCES[kind]
    try:
        created = resources.create(
            api_client, resource, doc, namespace=ns, dry_run=dry_run, context=context
        )
        return Applied(kind, name, "created", created)
    except ClusterError as exc:
        if exc.status != 409:
            raise
    existing = resources.get(api_client, resource, name, namespace=ns, context=context)
    if not _owned_by_tau(existing, name):
        raise _foreign(kind, ns, name)
    body = _replacement(doc, existing)
    return Applied(
        kind,
        name,
        "replaced",
        resources.replace(
            api_client, resource, body, namespace=ns, dry_run=dry_run, context=context
        ),
    )


def apply_service(
    api_client: Any,
    documents: list[dict[str, Any]],
    *,
    server_dry_run: bool = False,
    context: str | None = None,
) -> list[Applied]:
    """Create each object, or replace it when it already exists (a redeploy).

    Args:
        api_client: a `kubernetes.client.ApiClient` for the target cluster.
        documents: the rendered objects, namespace set, Secret references unredacted.
        server_dry_run: send `dryRun=All`; the server validates and persists nothing.
        context: the kubeconfig context, named in error messages.

    Raises:
        ClusterError: the API refused, or the name belongs to an object tau did not deploy.
    """
    # Every name is checked before anything is written: a Deployment's Service comes first in
    # apply order, and a refused Deployment must not leave a new Service selecting nothing.
    for doc in documents:
        _refuse_foreign(api_client, doc, context)
    applied = [_apply_one(api_client, doc, server_dry_run, context) for doc in documents]
    kinds = {doc["kind"] for doc in documents}
    if "Deployment" in kinds and "Service" not in kinds and not server_dry_run:
        # Redeployed with --service-port 0: the Service an earlier deploy created must go,
        # or it would keep routing to the new pods.
        doc = next(d for d in documents if d["kind"] == "Deployment")
        _delete_one(
            api_client, "Service", doc["metadata"]["namespace"], doc["metadata"]["name"], context
        )
    return applied


def check_scalable(kind: str, replicas: int) -> None:
    """Refuse what scale cannot do, before any API call.

    Raises:
        UsageError: `kind` is rayservice, or `replicas` is negative.
    """
    if kind == "rayservice":
        raise UsageError(
            RAYSERVICE_SCALE,
            hint="a RayService's Serve config is a serialized "
            "field: redeploy it (tau serve deploy) with the new size, or create it "
            "with --min-replicas/--max-replicas to autoscale",
        )
    if replicas < 0:
        raise UsageError(f"--replicas {replicas} must be 0 or more")


def scale_service(
    api_client: Any,
    kind: str,
    namespace: str,
    name: str,
    replicas: int,
    *,
    context: str | None = None,
) -> dict[str, Any]:
    """Set a Deployment's replica count; a RayService cannot be scaled in place.

    Raises:
        UsageError: `kind` is rayservice, or `replicas` is negative.
        ClusterError: the Deployment does not exist or the API refused.
    """
    from tau.kube import resources

    check_scalable(kind, replicas)
    changes = {"spec": {"replicas": replicas}}
    return resources.patch(
        api_client, DEPLOYMENT, name, changes, namespace=namespace, context=context
    )


def delete_service(
    api_client: Any, kind: str, namespace: str, name: str, *, context: str | None = None
) -> list[str]:
    """Delete the service object (and a Deployment's tau-owned Service); idempotent.

    Returns:
        "Kind/name" of each object deleted; empty when nothing was there.

    Raises:
        ClusterError: the API refused, or the resource type is not served (a missing CRD
            is an error, not "nothing to delete").
    """
    targets = [SERVE_KINDS[kind]] + (["Service"] if kind == "deployment" else [])
    return [f"{t}/{name}" for t in targets if _delete_one(api_client, t, namespace, name, context)]


def _delete_one(api_client: Any, kind: str, namespace: str, name: str, context: str | None) -> bool:
    from tau.kube import resources

    resource = RESOURCES[kind]
    if kind == "Service":
        existing = resources.find(api_client, resource, name, namespace=namespace, context=context)
        if existing is None or not _owned_by_tau(existing, name):
            return False  # a Service of the same name that tau did not create stays
    return resources.delete(api_client, resource, name, namespace=namespace, context=context)
