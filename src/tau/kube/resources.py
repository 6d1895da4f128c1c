"""Typed calls by resource type: get, list, create, replace, patch, delete, a pod's log.

Performs I/O (Kubernetes API). This is the one place that maps a `ResourceType` and a verb onto
a request: the kind's path (`/api/v1/...` for the core group, `/apis/<group>/<version>/...` for
every other, built-in or custom) through `tau.kube.rest`, the session's ApiClient underneath.
Objects travel as plain JSON dicts, decoded once: the official client's typed models cost a
second of CPU to load, are slow on large lists and reject fields of newer API versions.

Every call runs inside `api_call`, so failures leave as `ClusterError` with the HTTP status and
its `reason` ("NotFound" for a missing object, "NotServed" when the cluster does not serve the
resource type); nothing above this layer sees an `ApiException` or a urllib3 error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import ResourceType
from tau.kube import rest
from tau.kube.client import DEFAULT_TIMEOUT
from tau.kube.errors import api_call
from tau.kube.raw import decode

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


def _scoped(resource: ResourceType, namespace: str | None) -> str | None:
    """The namespace a call on `resource` uses: none for a cluster-scoped kind."""
    return namespace if resource.namespaced else None


#: The HTTP method of each verb.
_METHODS = {
    "get": "GET",
    "list": "GET",
    "create": "POST",
    "replace": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
}


def _invoke(
    api: Any,
    verb: str,
    resource: ResourceType,
    namespace: str | None,
    name: str | None = None,
    body: Obj | None = None,
    *,
    query: rest.Query = (),
    content_type: str = rest.JSON,
    timeout: rest.Timeout = DEFAULT_TIMEOUT,
) -> Any:
    """Send `verb` on `resource` (one object when `name` is given); returns the raw response."""
    url = rest.path(resource, _scoped(resource, namespace), name)
    return rest.request(
        api,
        _METHODS[verb],
        url,
        query=query,
        body=body,
        content_type=content_type,
        timeout=timeout,
    )


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
        return decode(_invoke(api, "get", resource, namespace, name, timeout=timeout))


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
    query: list[tuple[str, str]] = []
    if selector:
        query.append(("labelSelector", selector))
    if field_selector:
        query.append(("fieldSelector", field_selector))
    if limit:
        query.append(("limit", str(limit)))
    with api_call("list", resource, namespace=namespace, context=context):
        body = decode(_invoke(api, "list", resource, namespace, query=query, timeout=timeout))
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
    query = [("fieldValidation", "Strict")]
    if dry_run:
        query.append(("dryRun", "All"))
    name = (body.get("metadata") or {}).get("name")
    # create addresses the collection; replace addresses the object by name.
    named = str(name) if verb == "replace" else None
    with api_call(verb, resource, namespace=namespace, name=name, context=context):
        return decode(_invoke(api, verb, resource, namespace, named, body, query=query))


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
    with api_call("patch", resource, namespace=namespace, name=name, context=context):
        response = _invoke(
            api,
            "patch",
            resource,
            namespace,
            name,
            changes,
            content_type="application/merge-patch+json",
        )
        return decode(response)


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
    query: list[tuple[str, str]] = []
    body: Obj | None = None
    if uid:
        # With a body the API server reads every option from it and ignores the query
        # parameters, so propagation, grace and dry run go in the body too.
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": uid},
            **({"propagationPolicy": propagation} if propagation else {}),
            **({"gracePeriodSeconds": grace_seconds} if grace_seconds is not None else {}),
            **({"dryRun": ["All"]} if dry_run else {}),
        }
    if propagation:
        query.append(("propagationPolicy", propagation))
    if grace_seconds is not None:
        query.append(("gracePeriodSeconds", str(grace_seconds)))
    if dry_run:
        query.append(("dryRun", "All"))
    try:
        with api_call("delete", resource, namespace=namespace, name=name, context=context):
            # Reading the body returns the connection to the pool.
            _ = _invoke(api, "delete", resource, namespace, name, body=body, query=query).data
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
    #: RFC3339 time: only lines written at or after it (a followed log resuming).
    since_time: str | None = None

    def query(self) -> list[tuple[str, str]]:
        """The log request's query parameters, as the API server names them."""
        out: list[tuple[str, str]] = []
        if self.container:
            out.append(("container", self.container))
        for key, number in (
            ("tailLines", self.tail_lines),
            ("sinceSeconds", self.since_seconds),
            ("limitBytes", self.limit_bytes),
        ):
            if number is not None:
                out.append((key, str(number)))
        if self.since_time:
            out.append(("sinceTime", self.since_time))
        if self.previous:
            out.append(("previous", "true"))
        if self.timestamps:
            out.append(("timestamps", "true"))
        return out


def _log(
    api: Any, name: str, namespace: str, options: LogOptions, *, follow: bool, timeout: Any
) -> Any:
    from tau.k8s.kinds import POD

    query = options.query() + ([("follow", "true")] if follow else [])
    url = rest.path(POD, namespace, name, "log")
    return rest.request(api, "GET", url, query=query, timeout=timeout)


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
        response = _log(api, name, namespace, options, follow=False, timeout=DEFAULT_TIMEOUT)
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
        response = _log(api, name, namespace, options, follow=True, timeout=None)
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
