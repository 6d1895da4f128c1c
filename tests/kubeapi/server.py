"""The emulated API server: lifecycle, configuration and the helpers tests use as controllers.

:class:`KubeApiServer` binds a ``ThreadingHTTPServer`` to ``127.0.0.1`` on an ephemeral port and
serves it from a background thread. ``stop()`` closes the listening socket and force-closes any
kept-alive or watching connection, then joins every thread, so no port or thread outlives a test.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from . import errors
from .handler import ApiRequestHandler
from .kinds import KUBERAY_KINDS, KUEUE_KINDS, TAU_KINDS, KindRegistry, ResourceKind
from .store import DEFAULT_NAMESPACES, Clock, Store, utc_now


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it.

    ``query`` keeps the last value of each parameter, ``body`` is the parsed JSON (or None) and
    ``headers`` are keyed in lower case because HTTP header names are case-insensitive.
    """

    method: str
    path: str
    query: dict[str, str]
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class _Denial:
    code: int
    path_prefix: str
    verbs: frozenset[str] | None


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, emulator: KubeApiServer, port: int = 0) -> None:
        self.emulator = emulator
        self.open_connections: set[socket.socket] = set()
        self.accepted = 0
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), ApiRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.open_connections.add(request)
            self.accepted += 1
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.open_connections.discard(request)
        super().shutdown_request(request)


class KubeApiServer:
    """A Kubernetes API server emulation for tests, reachable over real HTTP on 127.0.0.1."""

    def __init__(
        self,
        *,
        clock: Clock = utc_now,
        history_limit: int = 1000,
        require_namespaces: bool = False,
        default_watch_timeout: float = 30.0,
        user: str = "emulator-user",
    ) -> None:
        self.kinds = KindRegistry()
        self.store = Store(self.kinds, clock, history_limit, require_namespaces)
        self.default_watch_timeout = default_watch_timeout
        self.user = user
        self.stopping = False
        self._requests: list[RecordedRequest] = []
        self._requests_lock = threading.Lock()
        self._denials: list[_Denial] = []
        self._expiries: dict[tuple[str, str], int] = {}
        self._access_denials: list[tuple[str, str, str, str, str | None]] = []
        #: Seconds a SelfSubjectAccessReview takes to answer (a slow or blocked credential path).
        self.access_review_delay = 0.0
        self._token: str | None = None
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lifecycle_lock = threading.Lock()
        # Unexpected exceptions inside request handling; answered as 500 InternalError.
        self.internal_errors: list[Exception] = []
        self._port = 0
        namespaces = self.kinds.resolve("v1", "Namespace")
        for name in DEFAULT_NAMESPACES:
            self.store.create(namespaces, None, {"metadata": {"name": name}})

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> KubeApiServer:
        with self._lifecycle_lock:
            if self._http is not None:
                raise RuntimeError("the server is already started")
            self.stopping = False
            self._http = _HTTPServer(self)
            self._port = int(self._http.server_address[1])
            self._thread = threading.Thread(
                target=self._http.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"kubeapi-{self._port}",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Idempotent and safe to call from any thread, also while requests are in flight."""
        with self._lifecycle_lock:
            http, thread = self._http, self._thread
            self._http = self._thread = None
        if http is None:
            return
        self.stopping = True
        self.store.wake_watchers()
        http.shutdown()
        with http.connections_lock:
            connections = list(http.open_connections)
        for connection in connections:
            # Unblocks handler threads waiting on keep-alive reads so server_close can join them.
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        http.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def restart(self) -> None:
        """Come back on the same port after `stop()`, with the same objects: an API server
        restarted on its etcd (clients reconnect to the address they know)."""
        with self._lifecycle_lock:
            if self._http is not None:
                raise RuntimeError("stop the server before restarting it")
            self.stopping = False
            self._http = _HTTPServer(self, self._port)
            self._thread = threading.Thread(
                target=self._http.serve_forever,
                kwargs={"poll_interval": 0.01},
                name=f"kubeapi-{self._port}",
                daemon=True,
            )
            self._thread.start()

    def __enter__(self) -> KubeApiServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        # Kept after stop() so tests can check the port was released.
        if not self._port:
            raise RuntimeError("the server was never started")
        return self._port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def connections_accepted(self) -> int:
        """How many TCP connections clients opened since the server started."""
        return self._http.accepted if self._http is not None else 0

    # ---------------------------------------------------------------- kinds

    def register_kind(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        namespaced: bool = True,
        subresources: Iterable[str] = ("status",),
        selectable_fields: Iterable[str] = (),
    ) -> ResourceKind:
        """Serve a custom resource, like installing its CRD."""
        return self.kinds.register(
            ResourceKind(
                group,
                version,
                plural,
                kind,
                namespaced=namespaced,
                subresources=frozenset(subresources),
                selectable_fields=frozenset(selectable_fields),
            )
        )

    def register_kueue_kuberay_tau_kinds(self) -> None:
        """Install the Kueue v1beta2, KubeRay v1 and Tau v1alpha1 kinds tau works with."""
        for kind in (*KUEUE_KINDS, *KUBERAY_KINDS, *TAU_KINDS):
            self.kinds.register(kind)

    # ---------------------------------------------------------------- controller helpers

    def put(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or overwrite ``obj`` (status included) by its apiVersion/kind; emits events."""
        kind = self.kinds.resolve(obj["apiVersion"], obj["kind"])
        return self.store.put(kind, obj)

    def get_object(
        self, api_version: str, kind: str, name: str, namespace: str | None = "default"
    ) -> dict[str, Any] | None:
        """The stored object or ``None``; ``kind`` may be the Kind or the plural."""
        return self.store.find(self.kinds.resolve(api_version, kind), namespace, name)

    def list_objects(
        self, api_version: str, kind: str, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        items, _ = self.store.list(self.kinds.resolve(api_version, kind), namespace)
        return items

    def set_status(
        self,
        api_version: str,
        kind: str,
        name: str,
        status: dict[str, Any],
        namespace: str | None = "default",
        *,
        merge: bool = False,
    ) -> dict[str, Any]:
        """Replace (or merge-patch, with ``merge``) the status; bumps rv but not generation."""
        resolved = self.kinds.resolve(api_version, kind)
        return self.store.set_status(resolved, namespace, name, status, merge=merge)

    def delete_object(
        self,
        api_version: str,
        kind: str,
        name: str,
        namespace: str | None = "default",
        propagation: str = "Background",
    ) -> dict[str, Any] | None:
        """Delete like a client would (finalizers respected); ``None`` when it did not exist."""
        resolved = self.kinds.resolve(api_version, kind)
        try:
            return self.store.delete(resolved, namespace, name, propagation=propagation)
        except errors.ApiError as error:
            if error.code == 404:
                return None
            raise

    def set_pod_log(
        self,
        name: str,
        text: str,
        namespace: str = "default",
        container: str = "",
        previous: bool = False,
    ) -> None:
        """Store what ``/log`` returns; without ``container`` it serves the default container.
        With ``previous`` it is the log of the container's previous (restarted) instance."""
        self.store.set_pod_log(namespace, name, text, container, previous)

    @property
    def resource_version(self) -> int:
        return self.store.resource_version

    def compact(self) -> None:
        """Drop the watch history: watches from any older resourceVersion now get 410 Expired."""
        self.store.compact()

    def expire_watch(self, plural: str, group: str = "") -> None:
        """End one watch of ``group/plural`` with an ERROR 410 Expired event, deterministically.

        The open watch gets it at its next poll, before any further event; with none open, the
        next one gets it right away. Models a watch whose resourceVersion etcd compacted away
        while it was connected, without depending on when the client reads.
        """
        with self._requests_lock:
            self._expiries[(group, plural)] = self._expiries.get((group, plural), 0) + 1
        self.store.wake_watchers()

    def take_expiry(self, group: str, plural: str) -> bool:
        """True (once per `expire_watch`) when a watch of ``group/plural`` must end with 410."""
        with self._requests_lock:
            pending = self._expiries.get((group, plural), 0)
            if pending:
                self._expiries[(group, plural)] = pending - 1
            return bool(pending)

    # ---------------------------------------------------------------- request log

    def _log_request(
        self, method: str, path: str, query: dict[str, str], body: Any, headers: dict[str, str]
    ) -> None:
        with self._requests_lock:
            self._requests.append(RecordedRequest(method, path, query, body, headers))

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._requests_lock:
            return list(self._requests)

    def reset_requests(self) -> None:
        with self._requests_lock:
            self._requests.clear()

    def count_requests(self, method: str | None = None, path_prefix: str = "") -> int:
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method) and r.path.startswith(path_prefix)
        )

    # ---------------------------------------------------------------- auth simulation

    def require_token(self, token: str | None) -> None:
        """Answer 401 unless requests carry ``Authorization: Bearer <token>``; None disables."""
        self._token = token

    def deny(
        self, code: int = 403, path_prefix: str = "", verbs: Iterable[str] | None = None
    ) -> None:
        """Answer 401/403 for requests under ``path_prefix`` (and ``verbs``, if given).

        A 401 without ``verbs`` also covers discovery paths; 403 only resource requests, whose
        Status names the verb, resource and namespace like kube-apiserver's RBAC denials.
        """
        if code not in (401, 403):
            raise ValueError("deny() simulates 401 Unauthorized or 403 Forbidden only")
        with self._requests_lock:
            self._denials.append(
                _Denial(code, path_prefix, frozenset(verbs) if verbs is not None else None)
            )

    def allow_all(self) -> None:
        with self._requests_lock:
            self._denials.clear()
            self._access_denials.clear()
            self._token = None

    # ------------------------------------------------ SelfSubjectAccessReview (auth can-i)

    def deny_access(
        self,
        verb: str,
        resource: str,
        *,
        group: str = "",
        subresource: str = "",
        namespace: str | None = None,
    ) -> None:
        """Answer SelfSubjectAccessReviews for this permission with allowed=false.

        Everything else is allowed. ``namespace`` None denies it in every namespace. A review of
        ``*`` on ``*`` (cluster-wide mode) is allowed only while no permission is denied.
        """
        with self._requests_lock:
            self._access_denials.append((verb, group, resource, subresource, namespace))

    def access_allowed(self, attributes: dict[str, Any]) -> bool:
        """The review's answer for ``spec.resourceAttributes``."""
        verb, resource = attributes.get("verb", ""), attributes.get("resource", "")
        with self._requests_lock:
            denials = list(self._access_denials)
        if verb == "*" or resource == "*":
            return not denials
        asked = (
            verb,
            attributes.get("group", ""),
            resource,
            attributes.get("subresource", ""),
        )
        return not any(
            d[:4] == asked and d[4] in (None, attributes.get("namespace")) for d in denials
        )

    def _authenticate(self, authorization: str | None, path: str) -> None:
        # 401 applies to every path, discovery included: the credentials themselves are bad.
        # 403 denials are checked per resource in _authorize, where the verb and kind are known.
        if self._token is not None and authorization != f"Bearer {self._token}":
            raise errors.unauthorized()
        with self._requests_lock:
            denials = list(self._denials)
        for denial in denials:
            if denial.code == 401 and denial.verbs is None and path.startswith(denial.path_prefix):
                raise errors.unauthorized()

    def _authorize(self, verb: str, path: str, kind: ResourceKind, namespace: str | None) -> None:
        with self._requests_lock:
            denials = list(self._denials)
        for denial in denials:
            if path.startswith(denial.path_prefix) and (
                denial.verbs is None or verb in denial.verbs
            ):
                if denial.code == 401:
                    raise errors.unauthorized()
                raise errors.forbidden(self.user, verb, kind.plural, kind.group, namespace)
