"""`autocapture --watch`: keep the per-kind lists current through watch streams and reconcile
whenever they change. Performs I/O (watch threads, the store).

Each kind of `cluster.KINDS` has a `Mirror`: it lists the kind once, then watches from the
list's resourceVersion on a background thread and applies every event to its copy. A stream
the server ends (after `interval`) is resumed from the last version seen; a 410 Gone
(`tau.kube.streams.Expired`) is answered by listing again and watching from the new version.
The main thread reconciles from the mirrors after every change (coalescing bursts) and at
least every `interval` (the resync bound), and reports each pass that changed the store.
Ctrl-C propagates as KeyboardInterrupt after the watch threads were told to stop.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tau.errors import ClusterError
from tau.portal.capture.assemble import Lists
from tau.portal.capture.cluster import KINDS, Kind, Scope, list_failure, record_lists
from tau.portal.capture.record import Counts
from tau.portal.store.core import Store

#: Seconds a mirror waits before it retries a failed list or watch.
RETRY_SECONDS = 1.0


class Mirror:
    """One kind's objects in scope, kept current by a list and then a resumed watch."""

    def __init__(
        self,
        api: Any,
        kind: Kind,
        namespace: str | None,
        *,
        timeout_seconds: int,
        changed: Callable[[str], None],
    ) -> None:
        self.api = api
        self.kind = kind
        self.namespace = namespace
        self.timeout_seconds = timeout_seconds
        self.changed = changed
        self.served = True
        self.version = ""
        self.warning: str | None = None
        self.lists = 0
        self._objects: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._stream: Any = None

    def items(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._objects.values())

    def sync(self) -> None:
        """List the kind and replace the copy with the result (a required kind raises).

        Raises:
            ClusterError: a required kind (Jobs, RayJobs) could not be listed.
        """
        from tau.kube.lists import list_kind

        listed = list_kind(
            self.api, self.kind.resource, self.namespace, selector=self.kind.selector
        )
        self.lists += 1
        self.warning = list_failure(self.kind, listed, self.namespace)
        if not listed.ok:
            # Not served (a CRD that is not installed) is not watched; other failures retry
            # the list (no version: nothing to resume from).
            self.served = not (self.kind.optional and listed.status == 404)
            self.version = ""
            return
        with self._lock:
            self._objects = {_key(o): o for o in listed.items}
            self.version = listed.resource_version

    def run(self) -> None:
        """The watch thread: resume from the last version until stopped."""
        from tau.kube.streams import Expired, watch_kind

        failures = 0
        while self.served and not self._stopped.is_set():
            if not self.version:
                self._retry_sync()
                continue
            self._stream = watch_kind(
                self.api,
                self.kind.resource,
                self.namespace,
                selector=self.kind.selector,
                resource_version=self.version,
                timeout_seconds=self.timeout_seconds,
            )
            try:
                for change, obj in self._stream:
                    self._apply(change, obj)
                    self.version = self._stream.resource_version
                failures = 0
            except Expired:
                self._retry_sync()
            except ClusterError as exc:
                self.warning = f"watching {self.kind.resource.qualified}: {exc.message}"
                failures += 1
                # A dropped connection is retried at once; a lasting refusal (a watch that is
                # forbidden) once per interval, not in a tight loop.
                self._stopped.wait(RETRY_SECONDS if failures == 1 else self.timeout_seconds)

    def _retry_sync(self) -> None:
        """List again; on failure, wait for the next try (an interval) without a pass."""
        try:
            self.sync()
        except ClusterError as exc:
            self.warning = exc.message
            self.version = ""
        if not self.version:
            self._stopped.wait(self.timeout_seconds)
            return
        self.changed(self.kind.field)

    def _apply(self, change: str, obj: dict[str, Any]) -> None:
        if change == "BOOKMARK":
            return  # only a newer version to resume from
        with self._lock:
            if change == "DELETED":
                self._objects.pop(_key(obj), None)
            else:
                self._objects[_key(obj)] = obj
        self.changed(self.kind.field)

    def stop(self) -> None:
        self._stopped.set()
        if self._stream is not None:
            self._stream.stop()


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    md = obj.get("metadata") or {}
    return str(md.get("namespace") or ""), str(md.get("name") or "")


@dataclass
class Pass:
    """One reconcile of the watch: its counts and the warnings not reported before."""

    number: int
    counts: Counts
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        c = self.counts
        return bool(
            c.created_runs
            or c.updated_runs
            or c.created_contexts
            or c.updated_contexts
            or c.events
            or c.tags
        )


class Feed:
    """The mirrors of every kind and the queue their changes arrive on."""

    def __init__(self, api: Any, namespace: str | None, *, timeout_seconds: int) -> None:
        self.changes: queue.Queue[str] = queue.Queue()
        self.mirrors = [
            Mirror(api, kind, namespace, timeout_seconds=timeout_seconds, changed=self.changes.put)
            for kind in KINDS
        ]
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """List every kind (a required kind that fails raises), then start the watches."""
        for mirror in self.mirrors:
            mirror.sync()
        for mirror in self.mirrors:
            thread = threading.Thread(
                target=mirror.run, name=f"tau-autocapture-{mirror.kind.field}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def lists(self) -> Lists:
        return Lists(**{m.kind.field: m.items() for m in self.mirrors})

    def warnings(self) -> list[str]:
        return [m.warning for m in self.mirrors if m.warning]

    def wait(self, timeout: float) -> None:
        """Until a change arrives or `timeout` passes; then drop the queued burst."""
        try:
            self.changes.get(timeout=timeout)
        except queue.Empty:
            return
        while True:
            try:
                self.changes.get_nowait()
            except queue.Empty:
                return

    def close(self) -> None:
        for mirror in self.mirrors:
            mirror.stop()


def follow(
    store: Store,
    api: Any,
    namespace: str | None,
    scope: Scope,
    *,
    interval: float,
    report: Callable[[Pass], None],
    max_passes: int = 0,
    feed: Feed | None = None,
) -> int:
    """Reconcile on every change until interrupted (or after `max_passes` passes, for tests).

    Args:
        interval: seconds; the watch requests' server timeout and the longest time between
            two passes.
        report: called with the first pass and every later pass that changed the store.
        max_passes: stop after this many passes (0: never).

    Returns:
        The number of passes made.

    Raises:
        ClusterError: the first list of Jobs or RayJobs failed.
        KeyboardInterrupt: Ctrl-C (the watch threads are stopped first).
    """
    feed = feed or Feed(api, namespace, timeout_seconds=max(int(interval), 1))
    reported: set[str] = set()
    passes = 0
    try:
        feed.start()
        while True:
            counts, conflicts = record_lists(store, feed.lists(), scope, skip_conflicts=True)
            passes += 1
            # A warning that persists is said once, not on every pass.
            new = [w for w in feed.warnings() + conflicts if w not in reported]
            reported.update(new)
            done = Pass(passes, counts, new)
            if passes == 1 or done.changed or new:
                report(done)
            if max_passes and passes >= max_passes:
                return passes
            feed.wait(interval)
    finally:
        feed.close()
