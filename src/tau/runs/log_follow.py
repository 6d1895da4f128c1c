"""`tau run logs -f` carried across an API server restart: resumed from the last line's time,
no line twice, none missing. Performs I/O (through injected calls).

A followed log is one long request through the API server to the kubelet. When the server
restarts (or its etcd, or the network drops), the request ends, cleanly or not, while the
container goes on writing. Ending there would lose the rest; reading again from the start
would print lines twice. So the log is read with the kubelet's timestamps: after any end, if
the container has not ended, the log is read again from the last line's second (`sinceTime`,
which the API passes on at whole seconds) and every line up to the last one printed is
dropped by its timestamp (lines of the same instant by count). The timestamps are removed
again unless the reader asked for them. One stderr line says how long the API was away.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from tau.errors import ClusterError
from tau.kube import resources
from tau.kube.outage import Outage
from tau.runs.node_sync import NodeSync, PodFinder, api_pod

#: The kubelet's line prefix with timestamps=true: RFC3339Nano, one space.
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) ")
#: Seconds between two reads of a log whose stream ended while its container still runs.
_AGAIN = 1.0

Key = tuple[int, int]
Opener = Callable[[Any, str, str, resources.LogOptions], Iterator[str]]
Ended = Callable[[], bool]


def stamp_key(line: str) -> tuple[Key, str] | None:
    """(seconds since the epoch, nanoseconds) of a timestamped line, and the line without
    its timestamp; None for a line without one.
    """
    found = _STAMP.match(line)
    if found is None:
        return None
    base, fraction, zone = found.groups()
    offset = "+00:00" if zone == "Z" else zone
    seconds = int(datetime.fromisoformat(base + offset).timestamp())
    return (seconds, int((fraction or "0").ljust(9, "0"))), line[found.end() :]


class Cursor:
    """Where a followed log is: the last line's instant and how many lines of it were read."""

    def __init__(self) -> None:
        self.last: Key | None = None
        self.at_last = 0
        self._skip = 0

    def resume(self) -> None:
        """A new read starts at the last line's second: its lines of that instant come again."""
        self._skip = self.at_last

    def admit(self, key: Key) -> bool:
        """True for a line not read before (the stream gives lines in time order)."""
        if self.last is None or key > self.last:
            self.last, self.at_last, self._skip = key, 1, 0
            return True
        if key < self.last:
            return False
        if self._skip:
            self._skip -= 1
            return False
        self.at_last += 1
        return True

    def since(self) -> str | None:
        """The `sinceTime` to read again from (whole seconds: what the API passes on)."""
        if self.last is None:
            return None
        return datetime.fromtimestamp(self.last[0], UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def follow(
    api: Any,
    namespace: str,
    pod: str,
    read: resources.LogOptions,
    *,
    ended: Ended,
    say: Callable[[str], None],
    opener: Opener | None = None,
    pod_finder: PodFinder | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
) -> Iterator[str]:
    """Yield the container's log as it is written until the container has ended, across
    API outages.

    Args:
        api: the session's ApiClient.
        namespace: the pod's namespace.
        pod: the pod's name.
        read: what to read (container, tail, timestamps as the reader asked).
        ended: True once the container has ended (or the pod is gone); may raise ClusterError.
        say: where the one line about an outage goes (stderr).
        opener: replaces `resources.follow_log` (tests).
        pod_finder: replaces the API read of the pod after the node's 404 (tests).
        sleep, monotonic: the waits and the clock (tests).

    Raises:
        ClusterError: a failure that is not the API being away (the container not started,
            the pod gone from the API), an outage longer than `tau.kube.outage.GIVE_UP_AFTER`,
            or a node that does not know the pod past `tau.runs.node_sync.NODE_SYNC_WAIT`.
    """
    opener = opener or _open
    cursor, outage = Cursor(), Outage("the log", say=say, monotonic=monotonic)
    # A kubelet back from a restart answers 404 for the pod's log until it lists its pods.
    node = NodeSync(namespace, pod, pod_finder or api_pod(api, namespace, pod), clock=monotonic)
    first, last_pass = True, False
    while True:
        options = dataclasses.replace(read, timestamps=True)
        if not first and cursor.last is not None:
            cursor.resume()
            options = dataclasses.replace(options, since_time=cursor.since(), tail_lines=None)
        pending = ""
        try:
            for chunk in opener(api, pod, namespace, options):
                outage.back()
                node.back()
                pending += chunk
                *lines, pending = pending.split("\n")
                out = [_kept(line, cursor, read.timestamps) for line in lines]
                text = "".join(line + "\n" for line in out if line is not None)
                if text:
                    yield text
            outage.back()
        except ClusterError as exc:
            first = False
            if exc.status == 404:
                sleep(node.failed(exc))  # raises unless the API still has the pod
                continue
            sleep(outage.failed(exc))  # raises what is not the API being away
            continue
        if pending:
            # The container's last output without a newline: the stream ended cleanly.
            kept = _kept(pending, cursor, read.timestamps)
            if kept is not None:
                yield kept
        if last_pass:
            return
        first = False
        try:
            done = ended()
        except ClusterError as exc:
            sleep(outage.failed(exc))
            continue
        if done:
            # One more read from the last line: what the cut stream had not delivered.
            last_pass = True
        else:
            # The stream ended under a running container: the server cut it. Read on.
            sleep(_AGAIN)


def _kept(line: str, cursor: Cursor, timestamps: bool) -> str | None:
    """The line to print (None: read before), its timestamp kept only when asked for."""
    stamped = stamp_key(line)
    if stamped is None:
        return line
    key, text = stamped
    if not cursor.admit(key):
        return None
    return line if timestamps else text


def _open(api: Any, pod: str, namespace: str, options: resources.LogOptions) -> Iterator[str]:
    return resources.follow_log(api, pod, namespace, options)


def container_ended(api: Any, namespace: str, pod: str, container: str) -> bool:
    """True unless `container` of `pod` runs or waits to run again: terminated, without a
    status (nothing more will be written), or the pod gone.
    """
    from tau.k8s.kinds import POD

    found = resources.find(api, POD, pod, namespace=namespace)
    if found is None:
        return True
    status = found.get("status") or {}
    if status.get("phase") in ("Succeeded", "Failed"):
        return True
    for entry in (status.get("initContainerStatuses") or []) + (
        status.get("containerStatuses") or []
    ):
        if entry.get("name") == container:
            state = entry.get("state") or {}
            return not ("running" in state or "waiting" in state)
    return True
