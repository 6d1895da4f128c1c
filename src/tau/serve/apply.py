"""Apply, scale and delete a rendered service on the cluster.

Performs I/O (the Kubernetes API, through the official client passed in; imported lazily).
The objects sent are the ones `--dry-run=client` prints, unredacted, with the namespace set;
nothing is re-rendered here. API failures become ClusterErrors at this boundary.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta
from tau.k8s.kinds import RAYSERVICE, ResourceType
from tau.kube.errors import api_call

DEPLOYMENT = ResourceType("apps", "v1", "deployments", "Deployment")
SERVICE = ResourceType("", "v1", "services", "Service")
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


def _json(response: Any) -> dict[str, Any]:
    data = json.loads(response.data or b"{}")
    return data if isinstance(data, dict) else {}


def call(
    api_client: Any, verb: str, kind: str, namespace: str, name: str, body: Any = None, **extra: Any
) -> dict[str, Any]:
    """One API call (create, get, replace, patch or delete `kind` `name`) as plain data.

    The response is read as JSON rather than typed models: the object tau compares and prints
    is what the server sent, and a sparse object some other tool wrote cannot fail to parse.
    """
    from tau.kube import apis

    extra["_preload_content"] = False
    r = RESOURCES[kind]
    group, version, plural = r.group, r.version, r.plural
    if kind == "RayService":
        api = apis.custom(api_client)
        fn = {
            "create": api.create_namespaced_custom_object,
            "get": api.get_namespaced_custom_object,
            "replace": api.replace_namespaced_custom_object,
            "delete": api.delete_namespaced_custom_object,
        }[verb]
        head = (group, version, namespace, plural)
        args = (
            (*head, body)
            if verb == "create"
            else (*head, name) + ((body,) if body is not None else ())
        )
        return _json(fn(*args, **extra))
    typed = apis.apps(api_client) if kind == "Deployment" else apis.core(api_client)
    method = "read" if verb == "get" else verb
    fn = getattr(typed, f"{method}_namespaced_{kind.lower()}")
    if verb == "create":
        return _json(fn(namespace, body, **extra))
    return _json(fn(name, namespace, *((body,) if body is not None else ()), **extra))


def guarded(
    api_client: Any,
    verb: str,
    kind: str,
    namespace: str,
    name: str,
    body: Any = None,
    *,
    context: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """`call`, with any API or transport failure raised as a plain ClusterError."""
    with api_call(verb, RESOURCES[kind], namespace=namespace, name=name, context=context):
        return call(api_client, verb, kind, namespace, name, body, **extra)


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


def _apply_one(
    api_client: Any, doc: dict[str, Any], dry_run: dict[str, str], context: str | None
) -> Applied:
    from tau.kube.apis import ApiException

    kind, name, ns = doc["kind"], doc["metadata"]["name"], doc["metadata"]["namespace"]
    with api_call("create", RESOURCES[kind], namespace=ns, name=name, context=context):
        try:
            return Applied(
                kind, name, "created", call(api_client, "create", kind, ns, name, doc, **dry_run)
            )
        except ApiException as exc:
            if exc.status != 409:
                raise
    existing = guarded(api_client, "get", kind, ns, name, context=context)
    if not _owned_by_tau(existing, name):
        raise ClusterError(
            f"{kind} {ns}/{name} exists and was not deployed by tau serve",
            status=409,
            hint="choose another service name, or remove that "
            "object yourself if it is really unused",
        )
    body = _replacement(doc, existing)
    return Applied(
        kind,
        name,
        "replaced",
        guarded(api_client, "replace", kind, ns, name, body, context=context, **dry_run),
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
    dry_run = {"dry_run": "All"} if server_dry_run else {}
    applied = [_apply_one(api_client, doc, dry_run, context) for doc in documents]
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
    check_scalable(kind, replicas)
    return guarded(
        api_client,
        "patch",
        "Deployment",
        namespace,
        name,
        {"spec": {"replicas": replicas}},
        context=context,
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
    from tau.kube.apis import ApiException

    with api_call("delete", RESOURCES[kind], namespace=namespace, name=name, context=context):
        try:
            if kind == "Service" and not _owned_by_tau(
                call(api_client, "get", kind, namespace, name), name
            ):
                return False  # a Service of the same name that tau did not create stays
            call(api_client, "delete", kind, namespace, name)
        except ApiException as exc:
            if exc.status == 404 and _is_missing_object(exc):
                return False
            raise
    return True


def _is_missing_object(exc: Any) -> bool:
    """404 naming the object, not the resource type (the kube-apiserver Status details)."""
    try:
        body = json.loads(getattr(exc, "body", "") or "{}")
    except (TypeError, ValueError):
        return False
    return isinstance(body, dict) and bool((body.get("details") or {}).get("name"))
