"""HTTP request handling: turns API-server requests into store calls and writes the responses.

The handler speaks HTTP/1.1 with keep-alive, as the official client's urllib3 pool expects. Plain
responses carry a Content-Length; watch streams and followed logs use chunked encoding so every
event reaches the client as soon as it happens (urllib3 only yields data early for chunked bodies).
"""

from __future__ import annotations

import base64
import json
import select
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from . import discovery, errors
from .errors import ApiError
from .kinds import ResourceKind
from .routes import Route, parse_route
from .selectors import parse_field_selector, parse_label_selector
from .store import WatchEvent

if TYPE_CHECKING:
    from .server import KubeApiServer

_TRUE = ("true", "1")
ACCESS_REVIEW_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
#: The timestamp every log line carries when a client asks for `timestamps=true`.
LOG_TIMESTAMP = "2026-01-02T03:04:05.000000006Z"
# How often a blocked watch re-checks for shutdown and client disconnects.
_WATCH_POLL_SECONDS = 0.1


def _verb(method: str, route: Route, watch: bool) -> str:
    if method == "GET":
        if watch:
            return "watch"
        return "get" if route.name else "list"
    if method == "DELETE" and not route.name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower()
    )


def _dry_run(query: dict[str, str], body: Any = None) -> bool:
    values = [query.get("dryRun")]
    if isinstance(body, dict) and isinstance(body.get("dryRun"), list):
        values.extend(body["dryRun"])
    for value in values:
        if value not in (None, "", "All"):
            raise errors.bad_request(f'Invalid dry run value "{value}": supported value is "All"')
    return "All" in values


class ApiRequestHandler(BaseHTTPRequestHandler):
    """One connection's requests; ``server.emulator`` is the owning :class:`KubeApiServer`."""

    protocol_version = "HTTP/1.1"
    server_version = "tau-kubeapi-emulator"

    # ---------------------------------------------------------------- plumbing

    @property
    def emulator(self) -> KubeApiServer:
        return self.server.emulator  # type: ignore[attr-defined]

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes; without NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log replaces stderr access logs

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _send_bytes(self, code: int, payload: bytes, content_type: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_json(self, code: int, body: Any) -> None:
        self._send_bytes(code, json.dumps(body).encode(), "application/json")

    def _start_chunked(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _client_gone(self) -> bool:
        # A readable socket with nothing to read means the client closed the connection.
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _read_body(self) -> tuple[bytes, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return raw, None
        try:
            return raw, json.loads(raw)
        except ValueError:
            return raw, errors.bad_request("the request body is not valid JSON")

    # ---------------------------------------------------------------- dispatch

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        _, body = self._read_body()
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.emulator._log_request(method, url.path, query, body, headers)
        try:
            if isinstance(body, ApiError):
                raise body
            self.emulator._authenticate(self.headers.get("Authorization"), url.path)
            if self._serve_discovery(method, url.path):
                return
            if method == "POST" and url.path == ACCESS_REVIEW_PATH:
                self._serve_access_review(body)
                return
            self._serve_resource(method, url.path, query, body)
        except ApiError as error:
            self._send_json(error.code, error.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except ValueError as error:
            # Malformed numbers in query parameters (limit, tailLines, timeoutSeconds, ...).
            self._send_json(400, errors.bad_request(f"invalid request: {error}").status())
        except Exception as error:
            # An emulator bug must fail loudly in the test, not hang the client on a dead socket.
            self.emulator.internal_errors.append(error)
            self._send_json(500, errors.failure_status(500, "InternalError", repr(error)))

    def _serve_discovery(self, method: str, path: str) -> bool:
        registry = self.emulator.kinds
        path = path.rstrip("/") or "/"
        body: dict[str, Any] | None
        if path in ("/healthz", "/readyz", "/livez"):
            self._send_bytes(200, b"ok", "text/plain")
            return True
        if path == "/version":
            body = discovery.VERSION_INFO
        elif path == "/api":
            body = discovery.core_versions(f"127.0.0.1:{self.emulator.port}")
        elif path == "/apis":
            body = discovery.group_list(registry)
        else:
            segments = path.strip("/").split("/")
            if segments == ["api", "v1"]:
                body = discovery.resource_list(registry, "", "v1")
            elif len(segments) == 2 and segments[0] == "apis":
                body = discovery.group(registry, segments[1])
            elif len(segments) == 3 and segments[0] == "apis":
                body = discovery.resource_list(registry, segments[1], segments[2])
            else:
                return False
            if body is None:
                raise errors.resource_not_found()
        if method != "GET":
            raise errors.method_not_allowed(method)
        self._send_json(200, body)
        return True

    def _kind_for(self, route: Route) -> ResourceKind:
        kind = self.emulator.kinds.by_path(route.group, route.version, route.plural)
        if kind is None:
            raise errors.resource_not_found()
        if route.namespace is not None and not kind.namespaced:
            raise errors.resource_not_found()
        if route.subresource is not None and route.subresource not in kind.subresources:
            raise errors.resource_not_found()
        return kind

    def _serve_resource(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
        route = parse_route(path)
        if route is None:
            raise errors.resource_not_found()
        kind = self._kind_for(route)
        if kind.namespaced and route.name and route.namespace is None:
            raise errors.resource_not_found()
        watch = query.get("watch", "").lower() in _TRUE
        verb = _verb(method, route, watch)
        self.emulator._authorize(verb, path, kind, route.namespace)
        store = self.emulator.store
        ns, name, sub = route.namespace, route.name, route.subresource

        if sub == "log":
            if method != "GET":
                raise errors.method_not_allowed(method)
            self._serve_log(ns or "", name or "", query)
        elif verb == "watch":
            self._serve_watch(kind, ns, query)
        elif verb == "list":
            self._serve_list(kind, ns, query)
        elif verb == "get":
            self._send_json(200, store.get(kind, ns, name or ""))
        elif verb == "create":
            if name or (kind.namespaced and ns is None):
                # Creates go to the collection URL of one namespace, never to an object URL.
                raise errors.method_not_allowed(method)
            created = store.create(kind, ns, body, dry_run=_dry_run(query))
            self._send_json(201, created)
        elif verb == "update":
            updated = store.update(
                kind, ns, name or "", body, subresource=sub, dry_run=_dry_run(query)
            )
            self._send_json(200, updated)
        elif verb == "patch":
            patched = store.patch(
                kind,
                ns,
                name or "",
                self.headers.get("Content-Type", ""),
                body,
                subresource=sub,
                dry_run=_dry_run(query),
            )
            self._send_json(200, patched)
        elif verb == "delete":
            options = body if isinstance(body, dict) else {}
            # As the real API server: a request with DeleteOptions in its body takes every
            # option from the body and ignores the query parameters.
            propagation = (
                options.get("propagationPolicy") if options else query.get("propagationPolicy")
            )
            deleted = store.delete(
                kind,
                ns,
                name or "",
                propagation=propagation,
                preconditions=options.get("preconditions"),
                dry_run=_dry_run(query, options),
            )
            self._send_json(200, deleted)
        elif verb == "deletecollection":
            self._serve_delete_collection(kind, ns, query, body)
        else:
            raise errors.method_not_allowed(method)

    # ---------------------------------------------------------------- list / watch

    def _predicate(self, kind: ResourceKind, query: dict[str, str]) -> Any:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), kind.selectable_fields)
        return lambda obj: labels(obj) and fields(obj)

    def _serve_list(self, kind: ResourceKind, namespace: str | None, query: dict[str, str]) -> None:
        items, rv = self.emulator.store.list(kind, namespace, self._predicate(kind, query))
        metadata: dict[str, Any] = {"resourceVersion": str(rv)}
        token = query.get("continue")
        if token:
            try:
                start = json.loads(base64.urlsafe_b64decode(token.encode()))
            except ValueError:
                raise errors.bad_request("invalid continue token") from None
            items = [i for i in items if _sort_key(i) > tuple(start["after"])]
            metadata["resourceVersion"] = str(start["rv"])
        limit = int(query.get("limit") or 0)
        if limit > 0 and len(items) > limit:
            remaining = len(items) - limit
            items = items[:limit]
            state = {"rv": int(metadata["resourceVersion"]), "after": list(_sort_key(items[-1]))}
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
            metadata["remainingItemCount"] = remaining
        self._send_json(
            200,
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": metadata,
                "items": items,
            },
        )

    def _serve_delete_collection(
        self, kind: ResourceKind, namespace: str | None, query: dict[str, str], body: Any
    ) -> None:
        options = body if isinstance(body, dict) else {}
        dry_run = _dry_run(query, options)
        items, _ = self.emulator.store.list(kind, namespace, self._predicate(kind, query))
        for item in items:
            meta = item["metadata"]
            self.emulator.store.delete(
                kind,
                meta.get("namespace"),
                meta["name"],
                propagation=options.get("propagationPolicy") or query.get("propagationPolicy"),
                dry_run=dry_run,
            )
        self._send_json(
            200,
            {
                "kind": f"{kind.kind}List",
                "apiVersion": kind.api_version,
                "metadata": {},
                "items": items,
            },
        )

    def _serve_watch(
        self, kind: ResourceKind, namespace: str | None, query: dict[str, str]
    ) -> None:
        matches = self._predicate(kind, query)
        store = self.emulator.store
        requested = query.get("resourceVersion") or ""
        if requested not in ("", "0") and not requested.isdigit():
            raise errors.bad_request(f"invalid resource version: {requested}")
        timeout = float(query.get("timeoutSeconds") or self.emulator.default_watch_timeout)
        deadline = time.monotonic() + timeout

        self._start_chunked("application/json")
        try:
            if requested in ("", "0"):
                # No version means "current state, then changes": replay what exists as ADDED.
                existing, cursor = store.list(kind, namespace, matches)
                for obj in existing:
                    self._write_event("ADDED", obj)
            else:
                cursor = int(requested)
            store_key = (kind.group, kind.plural)
            while not self.emulator.stopping and not self._client_gone():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                if self.emulator.take_expiry(kind.group, kind.plural):
                    self._write_event("ERROR", errors.expired(str(cursor), cursor + 1).status())
                    break
                try:
                    events = store.events_after(cursor, min(remaining, _WATCH_POLL_SECONDS))
                except ApiError as error:
                    self._write_event("ERROR", error.status())
                    break
                for event in events:
                    cursor = event.resource_version
                    if event.store_key == store_key:
                        self._forward(kind, event, namespace, matches)
            self._end_chunked()
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

    def _forward(
        self, kind: ResourceKind, event: WatchEvent, namespace: str | None, matches: Any
    ) -> None:
        def visible(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            in_scope = namespace is None or obj["metadata"].get("namespace") == namespace
            return in_scope and matches(obj)

        # A selector-filtered watch sees objects enter and leave the selection as ADDED/DELETED.
        now, before = visible(event.obj), visible(event.previous)
        if event.type == "DELETED":
            event_type = "DELETED" if before or now else None
        elif event.type == "ADDED":
            event_type = "ADDED" if now else None
        elif now and before:
            event_type = "MODIFIED"
        elif now:
            event_type = "ADDED"
        elif before:
            event_type = "DELETED"
        else:
            event_type = None
        if event_type is not None:
            obj = dict(event.obj, apiVersion=kind.api_version, kind=kind.kind)
            self._write_event(event_type, obj)

    def _write_event(self, event_type: str, obj: dict[str, Any]) -> None:
        self._write_chunk(json.dumps({"type": event_type, "object": obj}).encode() + b"\n")

    # ------------------------------------------------ SelfSubjectAccessReview

    def _serve_access_review(self, body: Any) -> None:
        """Answer `kubectl auth can-i`: the review comes back with status.allowed, unstored."""
        if not isinstance(body, dict) or body.get("kind") != "SelfSubjectAccessReview":
            raise errors.bad_request("expected a SelfSubjectAccessReview")
        if self.emulator.access_review_delay:
            time.sleep(self.emulator.access_review_delay)
        attributes = (body.get("spec") or {}).get("resourceAttributes") or {}
        allowed = self.emulator.access_allowed(attributes)
        self._send_json(201, {**body, "status": {"allowed": allowed}})

    # ---------------------------------------------------------------- logs

    def _serve_log(self, namespace: str, name: str, query: dict[str, str]) -> None:
        previous = query.get("previous", "").lower() in _TRUE
        text = self.emulator.store.pod_log(namespace, name, query.get("container"), previous)
        tail = query.get("tailLines")
        if tail is not None:
            lines = text.splitlines(keepends=True)
            count = int(tail)
            text = "".join(lines[-count:]) if count > 0 else ""
        # A kubelet that has removed the container answers 200 with this line in place of
        # the log, never timestamped (an error written after the headers went).
        removed = text.startswith("unable to retrieve container logs for ")
        if query.get("timestamps", "").lower() in _TRUE and not removed:
            # The kubelet's format: RFC3339Nano, one space, the line. The emulator has no
            # clock per line, so every line carries the same fixed instant.
            text = "".join(f"{LOG_TIMESTAMP} {line}" for line in text.splitlines(keepends=True))
        payload = text.encode()
        if query.get("limitBytes"):
            payload = payload[: int(query["limitBytes"])]
        if query.get("follow", "").lower() in _TRUE:
            # Following a log streams what is stored, then ends as if the container exited.
            self._start_chunked("text/plain")
            for line in payload.splitlines(keepends=True):
                self._write_chunk(line)
            self._end_chunked()
        else:
            self._send_bytes(200, payload, "text/plain")


def _sort_key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])
