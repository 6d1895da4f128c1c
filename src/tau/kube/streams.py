"""Watch streams of one kind, read as plain JSON lines. Performs I/O.

A stream is one watch request: it starts at a resourceVersion (from `tau.kube.lists.list_kind`
or the last event seen), yields `(type, object)` pairs as plain JSON dicts, and ends when the
server closes it after `timeout_seconds`; the caller resumes from `stream.resource_version`.
When the server no longer keeps that version (HTTP 410 Gone, or an ERROR event with code 410)
the stream raises `Expired`: the caller lists the kind again and watches from the list's
version. Every other API or transport failure leaves as a plain `ClusterError`, so callers
never see an `ApiException`. `stop()` may be called from any thread and ends the iteration.

    listed = list_kind(api, JOB, "team", selector=sel)
    stream = watch_kind(api, JOB, "team", selector=sel,
                        resource_version=listed.resource_version, timeout_seconds=30)
    try:
        for kind_of_change, obj in stream:   # ADDED | MODIFIED | DELETED | BOOKMARK
            ...
    except Expired:
        ...                                  # relist, then watch from the new version
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import ResourceType

#: Seconds past the server-side timeout before the client gives up on a silent connection.
_READ_GRACE = 15.0


class Expired(ClusterError):
    """The watch's resourceVersion is older than the server keeps (410 Gone): relist."""


class WatchStream:
    """One watch request on one kind; iterate for `(type, obj)`, `stop()` from any thread.

    Attributes:
        resource_version: the last version seen (the start version before any event);
            a new stream resumes from it.
    """

    def __init__(
        self,
        api_client: Any,
        resource: ResourceType,
        namespace: str | None,
        *,
        selector: str,
        resource_version: str,
        timeout_seconds: int,
        field_selector: str = "",
    ) -> None:
        self.api_client = api_client
        self.resource = resource
        self.namespace = namespace
        self.selector = selector
        self.field_selector = field_selector
        self.resource_version = resource_version
        self.timeout_seconds = timeout_seconds
        self._stopped = threading.Event()
        self._response: Any = None

    def stop(self) -> None:
        """End the iteration (also while it blocks on the connection)."""
        self._stopped.set()
        response = self._response
        if response is not None:
            _shut(response)

    def __iter__(self) -> Iterator[tuple[str, dict[str, Any]]]:
        if self._stopped.is_set():
            return
        from tau.kube import rest

        query = [
            ("watch", "true"),
            ("allowWatchBookmarks", "true"),
            ("timeoutSeconds", str(self.timeout_seconds)),
        ]
        if self.selector:
            query.append(("labelSelector", self.selector))
        if self.field_selector:
            query.append(("fieldSelector", self.field_selector))
        if self.resource_version:
            query.append(("resourceVersion", self.resource_version))
        try:
            response = rest.request(
                self.api_client,
                "GET",
                rest.path(self.resource, self.namespace),
                query=query,
                timeout=(10.0, self.timeout_seconds + _READ_GRACE),
            )
            self._response = response
            try:
                # stop() may have come while the request was on its way.
                if self._stopped.is_set():
                    return
                for line in _lines(response):
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue  # a line cut by a dropped connection: the resume covers it
                    kind_of_change = str(event.get("type"))
                    obj = event.get("object") or {}
                    if kind_of_change == "ERROR":
                        raise _error_event(obj)
                    version = (obj.get("metadata") or {}).get("resourceVersion")
                    if version:
                        self.resource_version = str(version)
                    yield kind_of_change, obj
                    if self._stopped.is_set():
                        return
            finally:
                self._response = None
                response.close()
                response.release_conn()
        except Exception as exc:
            if self._stopped.is_set():
                return  # stop() closed the socket under the read
            translated = self._translate(exc)
            if translated is None:
                raise
            raise translated from exc

    def _translate(self, exc: Exception) -> ClusterError | None:
        from tau.kube.errors import translate

        if getattr(exc, "status", None) == 410:
            where = f" in {self.namespace}" if self.namespace else ""
            return Expired(
                f"watch of {self.resource.qualified}{where} from resourceVersion "
                f"{self.resource_version} expired (410 Gone)",
                status=410,
                hint="list again and watch from the list's resourceVersion",
            )
        return translate(exc, "watch", self.resource, namespace=self.namespace)


def _lines(response: Any) -> Iterator[bytes]:
    """The non-blank lines of a watch response (one JSON event each), as they arrive."""
    pending = b""
    for chunk in response.stream(amt=None, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending


def _error_event(status: dict[str, Any]) -> Exception:
    """The API error an ERROR event stands for (a Status object: code, reason, message)."""
    from tau.kube.direct import HttpError

    code = status.get("code")
    reason = f"{status.get('reason')}: {status.get('message')}"
    return HttpError(code if isinstance(code, int) else 500, reason, json.dumps(status))


def _shut(response: Any) -> None:
    """Shut the response's socket down: a read blocked on it in another thread returns at once
    (closing it instead could wait on the TLS lock that read holds).
    """
    sock = getattr(getattr(response, "connection", None), "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed
            sock.shutdown(socket.SHUT_RDWR)


def watch_kind(
    api_client: Any,
    resource: ResourceType,
    namespace: str | None,
    *,
    selector: str = "",
    field_selector: str = "",
    resource_version: str = "",
    timeout_seconds: int = 30,
) -> WatchStream:
    """A watch on `resource` in `namespace` (all namespaces when None) from `resource_version`.

    Args:
        api_client: the session's ApiClient (`tau.session.connect`).
        resource: the kind (`tau.k8s.kinds`).
        namespace: one namespace, or None for all.
        selector: a label selector ("" for all objects).
        field_selector: a field selector (`metadata.name=NAME`; "" for all objects).
        resource_version: where to start ("" means the current objects as ADDED, then changes).
        timeout_seconds: the server ends the stream after this long; resume from
            `stream.resource_version`.

    Iterating the stream raises:
        Expired: the version is too old (410); relist and watch from the list's version.
        ClusterError: any other API or transport failure.
    """
    return WatchStream(
        api_client,
        resource,
        namespace,
        selector=selector,
        resource_version=resource_version,
        timeout_seconds=max(int(timeout_seconds), 1),
        field_selector=field_selector,
    )
