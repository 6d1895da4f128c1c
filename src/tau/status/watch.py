"""`tau run status --watch`: redraw the status whenever the run's objects change.

Performs I/O. Kubernetes watch streams (one per kind, on background threads) signal changes;
each change triggers one `fetch` + `interpret` + redraw, at most once per `interval`, so the
view follows the cluster without sleep-polling. A heartbeat redraw keeps ages current when
nothing changes. The clock for `interpret` is injected; the loop stops with exit 1 on a startup
failure or a failed run and exit 0 on completion or after `max_iterations`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from tau.errors import ClusterError
from tau.k8s.kinds import JOB, POD, RAYCLUSTER, RAYJOB, WORKLOAD, ResourceType
from tau.kube.outage import Outage
from tau.status import text
from tau.status.facts import (
    JOB_NAME_LABEL,
    KUEUE_JOB_UID_LABEL,
    RAY_CLUSTER_LABEL,
    metadata,
    primary_of,
    status_of,
)
from tau.status.model import RunStatus, State
from tau.status.snapshot import Snapshot

if TYPE_CHECKING:
    from tau.status.offload import Offload

Fetcher = Callable[[Any, str, str], Snapshot]
Interpreter = Callable[[Snapshot, datetime], RunStatus]
#: Server-side timeout of each watch request; watchers reconnect after it (and notice stop).
WATCH_TIMEOUT_SECONDS = 10
#: Redraw at least this often even without changes, so elapsed times stay current.
HEARTBEAT_SECONDS = 30.0
#: What a watch stream puts on the change queue when the API went away under it.
OUTAGE = "outage"


@dataclass(frozen=True)
class WatchResult:
    """How a watch ended.

    Attributes:
        exit_code: 0 on completion or iteration limit, 1 on failure.
        reason: ``completed``, ``failed``, ``max-iterations`` or ``interrupted``.
        iterations: how many times the status was drawn.
        status: the last status drawn.
        message: the error line for a failure (``startup phase failed for ns/name``), else "".
    """

    exit_code: int
    reason: str
    iterations: int
    status: RunStatus | None
    message: str = ""


def outcome(status: RunStatus) -> str | None:
    """``failed``, ``completed`` or None (keep watching), per cli-contract 2.5."""
    if status.state is State.FAILED or status.startup_failed:
        return "failed"
    if status.state is State.SUCCEEDED or (status.kind is not None and status.startup_complete):
        return "completed"
    return None


class ChangeFeed:
    """Background watch streams on the run's objects; `wait` returns when any of them changes."""

    def __init__(
        self,
        api_client: Any,
        namespace: str,
        name: str,
        timeout_seconds: int = WATCH_TIMEOUT_SECONDS,
    ) -> None:
        self.api_client = api_client
        self.namespace = namespace
        self.name = name
        self.timeout_seconds = timeout_seconds
        self.changes: queue.Queue[str] = queue.Queue()
        self.stopped = threading.Event()
        self._started: set[tuple[str, str, str]] = set()
        self._watches: list[Any] = []
        self._threads: list[threading.Thread] = []

    def follow(self, snapshot: Snapshot) -> None:
        """Start watches for every object the snapshot makes known (idempotent per selector)."""
        by_name = f"metadata.name={self.name}"
        self._start(JOB, field_selector=by_name)
        self._start(RAYJOB, field_selector=by_name)
        self._start(POD, selector=f"{JOB_NAME_LABEL}={self.name}")
        uid = str(metadata(primary_of(snapshot)[1]).get("uid") or "")
        if uid:
            self._start(WORKLOAD, selector=f"{KUEUE_JOB_UID_LABEL}={uid}")
        cluster = str(status_of(snapshot.rayjob).get("rayClusterName") or "")
        if cluster:
            self._start(POD, selector=f"{RAY_CLUSTER_LABEL}={cluster}")
            self._start(RAYCLUSTER, field_selector=f"metadata.name={cluster}")

    def _start(
        self, resource: ResourceType, *, selector: str = "", field_selector: str = ""
    ) -> None:
        key = (resource.plural, selector, field_selector)
        if key in self._started or self.stopped.is_set():
            return
        self._started.add(key)
        thread = threading.Thread(
            target=self._run,
            args=(resource, selector, field_selector),
            name=f"tau-watch-{resource.plural}",
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def _run(self, resource: ResourceType, selector: str, field_selector: str) -> None:
        from tau.kube.outage import SETTLE, is_away
        from tau.kube.streams import watch_kind

        version, away, away_at = "", False, None
        while not self.stopped.is_set():
            stream = watch_kind(
                self.api_client,
                resource,
                self.namespace,
                selector=selector,
                field_selector=field_selector,
                resource_version=version,
                timeout_seconds=self.timeout_seconds,
            )
            self._watches.append(stream)
            try:
                for kind_of_change, _obj in stream:
                    away = False
                    # A bookmark only moves the resume version on: nothing to redraw.
                    if kind_of_change != "BOOKMARK":
                        self.changes.put(resource.plural)
                    if self.stopped.is_set():
                        break
                # Resume after the server's timeout where this stream left off.
                version = stream.resource_version
            except ClusterError as exc:
                # A restarted API server refuses for a moment what it serves once ready.
                settling = away_at is not None and time.monotonic() - away_at < SETTLE
                if exc.status in (403, 404) and not settling:
                    return  # Not served (no KubeRay/Kueue) or not allowed: fetch reports it.
                if is_away(exc):
                    away_at = time.monotonic()
                if is_away(exc) and not away:
                    # The API went away: wake the loop, whose fetch waits for its return
                    # and says how long it was gone. Once per outage, not once per retry.
                    away = True
                    self.changes.put(OUTAGE)
                if exc.status == 410:
                    # Expired (410): start afresh. After an outage the stream resumes from
                    # its version (a 410 then, if the server no longer has it, relists).
                    version = ""
                self.stopped.wait(1.0)

    def wait(self, timeout: float) -> bool:
        """Block until a change arrives or `timeout` passes; True when something changed."""
        try:
            self.changes.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            return False
        return True

    def drain(self) -> None:
        """Drop queued changes: one redraw covers all of them."""
        while True:
            try:
                self.changes.get_nowait()
            except queue.Empty:
                return

    def close(self) -> None:
        """Stop every watch; threads end at their next event or request timeout."""
        self.stopped.set()
        for stream in list(self._watches):
            stream.stop()


def _stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def draw(console: Console, status: RunStatus, interval: float) -> None:
    """Redraw in place: clear the screen (terminals only), a header line, then the view."""
    console.clear()
    console.print(Text(f"watching {status.namespace}/{status.name} every {interval:g}s"))
    console.print()
    text.render(status, console)


def _wait_for_change(
    feed: ChangeFeed, last_draw: float, interval: float, monotonic: Callable[[], float]
) -> None:
    feed.wait(HEARTBEAT_SECONDS)
    # Coalesce bursts (a pod update often comes with a Workload and a Job update).
    remaining = last_draw + interval - monotonic()
    while remaining > 0:
        feed.wait(remaining)
        remaining = last_draw + interval - monotonic()
    feed.drain()


def watch(
    api_client: Any,
    namespace: str,
    name: str,
    *,
    console: Console,
    interval: float = 2.0,
    max_iterations: int = 0,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    monotonic: Callable[[], float] = time.monotonic,
    fetcher: Fetcher | None = None,
    interpreter: Interpreter | None = None,
    feed: ChangeFeed | None = None,
    evidence: Callable[[Snapshot, Offload], Snapshot] | None = None,
    say: Callable[[str], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> WatchResult:
    """Follow a run until it completes, fails, or `max_iterations` redraws were made.

    Args:
        api_client: an official `kubernetes.client.ApiClient`.
        namespace: the run's namespace.
        name: the run name.
        console: where to draw.
        interval: minimum seconds between redraws (> 0).
        max_iterations: stop after this many redraws; 0 means unbounded.
        clock: the `now` given to interpret.
        monotonic: the clock spacing redraws.
        fetcher: replaces `fetch.fetch` (tests).
        interpreter: replaces `interpret.interpret` (tests).
        feed: replaces the watch-stream ChangeFeed (tests).
        evidence: reads what a finished, offloading run left in its store into the snapshot
            (the CLI's `evidence_read.attach`; status itself never imports the store). None:
            the last frame says nothing of the store.
        say: where the one line about an API outage the watch came through goes (stderr).
        sleep: the wait between two tries while the API is away (tests).

    Returns:
        The WatchResult; the CLI exits with its `exit_code` and prints its `message`.

    Raises:
        ValueError: `interval` is not positive or `max_iterations` is negative.
        ClusterError: fetching the run failed (see `fetch.fetch`), or the API stayed away
            longer than `tau.kube.outage.GIVE_UP_AFTER`.
    """
    if interval <= 0 or max_iterations < 0:
        raise ValueError("--interval must be > 0 and --max-iterations >= 0")
    from tau.status.fetch import fetch
    from tau.status.interpret import interpret
    from tau.status.offload import store_to_read

    fetcher, interpreter = fetcher or fetch, interpreter or interpret
    feed = feed or ChangeFeed(api_client, namespace, name)
    outage = Outage("the watch", say=say or _stderr, monotonic=monotonic)
    iterations, status = 0, None
    try:
        while True:
            try:
                snapshot = fetcher(api_client, namespace, name)
            except ClusterError as exc:
                # The API went away (a restart, its etcd, the network): wait for it, as
                # kubectl's watches do, instead of ending the watch.
                sleep(outage.failed(exc))
                continue
            outage.back()
            if snapshot.errors and outage.settling():
                # Just back, the API server may still refuse a part (its authorizer's and
                # CRDs' caches fill after it answers): read again rather than draw a part
                # missing. Bounded by `tau.kube.outage.SETTLE`.
                sleep(1.0)
                continue
            status = interpreter(snapshot, clock())
            ended_now = outcome(status) is not None and evidence is not None
            offload = store_to_read(snapshot) if ended_now else None
            if offload is not None and evidence is not None:
                # The last frame of a run that offloads says what reached its store (layer 7).
                status = interpreter(evidence(snapshot, offload), clock())
            iterations += 1
            last_draw = monotonic()
            draw(console, status, interval)
            ended = outcome(status)
            if ended == "failed":
                return WatchResult(
                    1, ended, iterations, status, f"startup phase failed for {namespace}/{name}"
                )
            if ended == "completed":
                return WatchResult(0, ended, iterations, status)
            if max_iterations and iterations >= max_iterations:
                return WatchResult(0, "max-iterations", iterations, status)
            feed.follow(snapshot)
            _wait_for_change(feed, last_draw, interval, monotonic)
    except KeyboardInterrupt:
        return WatchResult(0, "interrupted", iterations, status)
    finally:
        feed.close()
