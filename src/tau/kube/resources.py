"""Typed calls by resource type: get, list, create, replace, patch, delete, a pod's log.

Performs I/O (Kubernetes API). This is the one place that maps a `ResourceType` onto the
official client: built-in kinds of the core group go through CoreV1Api (their paths live under
`/api/v1`), every other group (batch Jobs, apps Deployments, Kueue, KubeRay, Tau) through the
generic CustomObjectsApi, whose `/apis/<group>/<version>` paths serve built-in and custom kinds
alike. Objects travel as plain JSON dicts (`_preload_content=False`, decoded once): the typed
models are slow on large lists and reject fields of newer API versions.

Every call runs inside `api_call`, so failures leave as `ClusterError` with the HTTP status and
its `reason` ("NotFound" for a missing object, "NotServed" when the cluster does not serve the
resource type); nothing above this layer sees an `ApiException` or a urllib3 error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import ResourceType
from tau.kube.client import DEFAULT_TIMEOUT
from tau.kube.errors import api_call
from tau.kube.raw import RAW, decode

Obj = dict[str, Any]


@dataclass(frozen=True)
class Page:
    """One list response.

    Attributes:
        items: the objects.
        resource_version: the list's resourceVersion (where a watch resumes).
        truncated: the server had more than the requested `limit`.
    """

    items: list[Obj] = field(default_factory=list)
    resource_version: str = ""
    truncated: bool = False


def _snake(kind: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _core(api: Any) -> Any:
    from kubernetes.client import CoreV1Api

    return CoreV1Api(api)


def _custom(api: Any) -> Any:
    from kubernetes.client import CustomObjectsApi

    return CustomObjectsApi(api)


def _scoped(resource: ResourceType, namespace: str | None) -> str | None:
    """The namespace a call on `resource` uses: none for a cluster-scoped kind."""
    return namespace if resource.namespaced else None


def _invoke(
    api: Any,
    verb: str,
    resource: ResourceType,
    namespace: str | None,
    name: str | None = None,
    body: Obj | None = None,
    **options: Any,
) -> Any:
    """Call the client method for `verb` on `resource`; returns the raw response."""
    options = {**RAW, "_request_timeout": DEFAULT_TIMEOUT, **options}
    namespace = _scoped(resource, namespace)
    named = (name,) if name is not None else ()
    payload = (body,) if body is not None else ()
    if verb == "delete" and body is not None:
        # A delete's body (DeleteOptions) follows the query options, by keyword only.
        payload, options = (), {**options, "body": body}
    if resource.group == "":
        core, noun = _core(api), _snake(resource.kind)
        method = "read" if verb == "get" else verb
        if verb == "list":
            return list_method(api, resource, namespace)(**options)
        if not resource.namespaced:
            return getattr(core, f"{method}_{noun}")(*named, *payload, **options)
        return getattr(core, f"{method}_namespaced_{noun}")(*named, namespace, *payload, **options)
    custom, gv = _custom(api), (resource.group, resource.version)
    if namespace is None:
        fn = getattr(custom, f"{verb}_cluster_custom_object")
        return fn(*gv, resource.plural, *named, *payload, **options)
    fn = getattr(custom, f"{verb}_namespaced_custom_object")
    return fn(*gv, namespace, resource.plural, *named, *payload, **options)


def list_method(api: Any, resource: ResourceType, namespace: str | None) -> Any:
    """The official client's list call for `resource` in `namespace` (None: every namespace),
    positional arguments bound; a watch calls it with `watch=True`. A cluster-scoped kind
    ignores `namespace`.
    """
    from functools import partial

    namespace = _scoped(resource, namespace)
    if resource.group == "":
        core, noun = _core(api), _snake(resource.kind)
        if not resource.namespaced:
            return getattr(core, f"list_{noun}")
        if namespace is None:
            # Listing across namespaces is a differently named call in the official client.
            return getattr(core, f"list_{noun}_for_all_namespaces")
        return partial(getattr(core, f"list_namespaced_{noun}"), namespace)
    custom, gv = _custom(api), (resource.group, resource.version)
    if namespace is None:
        return partial(custom.list_cluster_custom_object, *gv, resource.plural)
    return partial(custom.list_namespaced_custom_object, *gv, namespace, resource.plural)


def find(
    api: Any,
    resource: ResourceType,
    name: str,
    *,
    namespace: str | None = None,
    context: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Obj | None:
    """One object; None when it, or its resource type, does not exist. Other failures raise."""
    try:
        return get(api, resource, name, namespace=namespace, context=context, timeout=timeout)
    except ClusterError as exc:
        if exc.status == 404:
            return None
        raise


def get(
    api: Any,
    resource: ResourceType,
    name: str,
    *,
    namespace: str | None = None,
    context: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Obj:
    """One object (namespaced when `namespace` is given, else cluster-scoped)."""
    with api_call("get", resource, namespace=namespace, name=name, context=context):
        return decode(_invoke(api, "get", resource, namespace, name, _request_timeout=timeout))


def list_page(
    api: Any,
    resource: ResourceType,
    *,
    namespace: str | None = None,
    selector: str = "",
    field_selector: str = "",
    limit: int | None = None,
    context: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Page:
    """One list call: the objects of `resource` in `namespace` (None: every namespace, or the
    cluster-scoped objects), filtered server-side by label and field selectors.
    """
    namespace = _scoped(resource, namespace)
    options: dict[str, Any] = {"_request_timeout": timeout}
    if selector:
        options["label_selector"] = selector
    if field_selector:
        options["field_selector"] = field_selector
    if limit:
        options["limit"] = limit
    with api_call("list", resource, namespace=namespace, context=context):
        body = decode(_invoke(api, "list", resource, namespace, **options))
    metadata = body.get("metadata") or {}
    return Page(
        items=list(body.get("items") or []),
        resource_version=str(metadata.get("resourceVersion") or ""),
        truncated=bool(metadata.get("continue")),
    )


def list_items(
    api: Any,
    resource: ResourceType,
    *,
    namespace: str | None = None,
    selector: str = "",
    field_selector: str = "",
    context: str | None = None,
    missing_ok: bool = False,
) -> list[Obj]:
    """The objects of one list call; [] for an unserved resource type when `missing_ok`."""
    try:
        page = list_page(
            api,
            resource,
            namespace=namespace,
            selector=selector,
            field_selector=field_selector,
            context=context,
        )
    except ClusterError as exc:
        if missing_ok and exc.status == 404:
            return []
        raise
    return page.items


def create(
    api: Any,
    resource: ResourceType,
    body: Obj,
    *,
    namespace: str | None,
    dry_run: bool = False,
    context: str | None = None,
) -> Obj:
    """Create `body`; with `dry_run` the server validates and answers but persists nothing."""
    return _write(api, "create", resource, body, namespace, dry_run, context)


def replace(
    api: Any,
    resource: ResourceType,
    body: Obj,
    *,
    namespace: str | None,
    dry_run: bool = False,
    context: str | None = None,
) -> Obj:
    """Replace the object named by `body` (which carries the resourceVersion it updates)."""
    return _write(api, "replace", resource, body, namespace, dry_run, context)


def _write(
    api: Any,
    verb: str,
    resource: ResourceType,
    body: Obj,
    namespace: str | None,
    dry_run: bool,
    context: str | None,
) -> Obj:
    # Strict, as kubectl sends it: a field the server does not know (a typo, a field of a
    # newer CRD version) is an error, not silently dropped from what the run gets.
    options: dict[str, Any] = {"field_validation": "Strict"}
    if dry_run:
        options["dry_run"] = "All"
    name = (body.get("metadata") or {}).get("name")
    # create addresses the collection; replace addresses the object by name.
    named = str(name) if verb == "replace" else None
    with api_call(verb, resource, namespace=namespace, name=name, context=context):
        return decode(_invoke(api, verb, resource, namespace, named, body, **options))


def patch(
    api: Any,
    resource: ResourceType,
    name: str,
    changes: Obj,
    *,
    namespace: str | None,
    context: str | None = None,
) -> Obj:
    """Apply a JSON merge patch (RFC 7386) to one object: the same semantics for every kind."""
    options: dict[str, Any] = {}
    if resource.group == "":
        # The core API would pick a strategic merge patch; the custom-object API a merge patch.
        options["_content_type"] = "application/merge-patch+json"
    with api_call("patch", resource, namespace=namespace, name=name, context=context):
        return decode(_invoke(api, "patch", resource, namespace, name, changes, **options))


def delete(
    api: Any,
    resource: ResourceType,
    name: str,
    *,
    namespace: str | None,
    propagation: str | None = None,
    grace_seconds: int | None = None,
    dry_run: bool = False,
    context: str | None = None,
    uid: str | None = None,
) -> bool:
    """Delete one object. False when the object was already gone; a resource type the cluster
    does not serve is an error (a missing CRD is not "nothing to delete").

    `uid` makes the deletion conditional (a UID precondition): an object recreated under the
    same name since it was read is not deleted, and the API answers 409 Conflict.
    """
    options: dict[str, Any] = {}
    if uid:
        from kubernetes.client import V1DeleteOptions, V1Preconditions

        # With a body the API server reads every option from it and ignores the query
        # parameters, so propagation, grace and dry run go in the body too.
        options["body"] = V1DeleteOptions(
            preconditions=V1Preconditions(uid=uid),
            propagation_policy=propagation,
            grace_period_seconds=grace_seconds,
            dry_run=["All"] if dry_run else None,
        )
    if propagation:
        options["propagation_policy"] = propagation
    if grace_seconds is not None:
        options["grace_period_seconds"] = grace_seconds
    if dry_run:
        options["dry_run"] = "All"
    try:
        with api_call("delete", resource, namespace=namespace, name=name, context=context):
            # Reading the body returns the connection to the pool.
            _ = _invoke(api, "delete", resource, namespace, name, **options).data
    except ClusterError as exc:
        if exc.reason == "NotFound":
            return False
        raise
    return True


@dataclass(frozen=True)
class LogOptions:
    """Which part of a container's log to read (kubectl logs' flags)."""

    container: str | None = None
    tail_lines: int | None = None
    since_seconds: int | None = None
    limit_bytes: int | None = None
    previous: bool = False
    timestamps: bool = False

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "container": self.container,
            "tail_lines": self.tail_lines,
            "since_seconds": self.since_seconds,
            "limit_bytes": self.limit_bytes,
            "previous": self.previous or None,
            "timestamps": self.timestamps or None,
        }
        return {k: v for k, v in out.items() if v is not None}


def pod_log(
    api: Any,
    name: str,
    namespace: str,
    options: LogOptions = LogOptions(),
    *,
    context: str | None = None,
) -> str:
    """A container's log as text (undecodable bytes replaced)."""
    from tau.k8s.kinds import POD

    with api_call("read logs of", POD, namespace=namespace, name=name, context=context):
        response = _core(api).read_namespaced_pod_log(
            name, namespace, **options.kwargs(), **RAW, _request_timeout=DEFAULT_TIMEOUT
        )
        return bytes(response.data or b"").decode("utf-8", "replace")


def follow_log(
    api: Any,
    name: str,
    namespace: str,
    options: LogOptions = LogOptions(),
    *,
    context: str | None = None,
) -> Iterator[str]:
    """A container's log as it is written, in text chunks, until the container ends."""
    import codecs

    from tau.k8s.kinds import POD

    # A multi-byte character may straddle two chunks: decode incrementally.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    with api_call("read logs of", POD, namespace=namespace, name=name, context=context):
        # No request timeout: a quiet training loop may print nothing for minutes.
        response = _core(api).read_namespaced_pod_log(
            name, namespace, follow=True, **options.kwargs(), **RAW
        )
        try:
            for raw in response.stream(4096):
                text = decoder.decode(bytes(raw))
                if text:
                    yield text
            tail = decoder.decode(b"", final=True)
            if tail:
                yield tail
        finally:
            response.release_conn()
