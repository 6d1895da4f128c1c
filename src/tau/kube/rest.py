"""One HTTP request to the API server through the session's ApiClient, answered raw. Performs I/O.

tau addresses the API by path (`/apis/batch/v1/namespaces/team/jobs`) and reads every answer as
plain JSON, so it never loads the official client's generated API classes: importing
`CoreV1Api` alone builds some 250 typed models (about a second of CPU) before the first request,
and the typed models would be thrown away anyway. The request still goes through the session's
client: its configuration (server, TLS, client certificate), its bearer token (refreshed by
the kubeconfig's exec plugin or auth provider when it expires) and its connection pool.

`api` is either that official `ApiClient` or tau's lean session (`tau.kube.direct`) for a
kubeconfig with a static credential. A non-2xx answer raises the official client's
`ApiException` or the lean session's `HttpError`; `tau.kube.errors` translates both alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from tau.k8s.kinds import ResourceType
from tau.kube.client import DEFAULT_TIMEOUT

Query = Sequence[tuple[str, str]]
#: Seconds, or (connect, read) seconds; None waits for ever.
Timeout = float | tuple[float, float] | None

JSON = "application/json"


def path(
    resource: ResourceType,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str = "",
) -> str:
    """The URL path of `resource` (one object when `name` is given), as kubectl builds it.

    A cluster-scoped kind ignores `namespace`; a namespaced kind without one is the list
    across every namespace.
    """
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else "/api/v1"
    if resource.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{resource.plural}"
    if name is not None:
        base += f"/{quote(name, safe='')}"
    if subresource:
        base += f"/{subresource}"
    return base


def request(
    api: Any,
    method: str,
    url_path: str,
    *,
    query: Query = (),
    body: Any = None,
    content_type: str = JSON,
    accept: str = JSON,
    timeout: Timeout = DEFAULT_TIMEOUT,
) -> Any:
    """Send one request; the response (urllib3's, or `tau.kube.transport`'s), its body unread:
    `.data` reads it all, `.stream()` as it comes; either returns the connection to the pool.

    Raises:
        ApiException, HttpError: the server answered outside 2xx (its body on the exception).
    """
    headers = {"Accept": accept}
    if body is not None:
        headers["Content-Type"] = content_type
    send = getattr(api, "send", None)
    if send is not None:  # tau's own session (`tau.kube.direct`)
        return send(method, url_path, list(query), headers, body, timeout)
    serialized = api.param_serialize(
        method=method,
        resource_path=url_path,
        query_params=list(query),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    answer = api.call_api(*serialized, _request_timeout=timeout)
    if not 200 <= answer.status <= 299:
        from kubernetes.client.exceptions import ApiException

        answer.read()
        raise ApiException.from_response(http_resp=answer, body=None, data=None)
    return answer.response


def flag(value: bool) -> str:
    """A boolean query parameter as the API server spells it."""
    return "true" if value else "false"
