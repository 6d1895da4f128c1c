"""A long-lived read carried across an API server that went away and came back.

Pure (a clock and a `say` callback are injected; nothing is imported from the client). An API
server restarts (a rolling upgrade, a crash), its etcd restarts, or the network drops for a
moment: `tau run status --watch` and `tau run logs -f` keep reading, as kubectl's watches do,
instead of ending with an error. Each failed request is handed to `Outage.failed`, which says
whether it is the API being away (a refused or dropped connection, a timeout, a 5xx or 429 of
a server or storage not ready) and how long to wait before the next try; the first request
that succeeds again calls `Outage.back`, which says, once, on one line, that the API was away
and for how long. Past `give_up_after` seconds the last error is raised as it is.

    outage = Outage("the watch", say=lambda line: print(line, file=sys.stderr))
    while True:
        try:
            snapshot = fetch(...)
        except ClusterError as exc:
            time.sleep(outage.failed(exc))    # raises exc when it is not an outage
            continue
        outage.back()
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tau.errors import ClusterError
from tau.kube.errors import UNREACHABLE

#: What an API server answers while it, or its storage, is not ready: 429 (too many requests
#: while starting), 500 (etcd unavailable), 502/503 (a proxy or the server not ready), 504.
AWAY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: How long a read keeps trying before it gives the error to the reader.
GIVE_UP_AFTER = 600.0
#: The wait between two tries grows to this (seconds): a restarted server is seen within it.
MAX_BACKOFF = 5.0
#: A restarted API server answers before its caches are filled: for this long after it is
#: back, it may refuse a request it allows once ready (401/403 before its authorizer has the
#: RBAC objects, 404 for a CRD's kind it does not serve yet). Such answers are waited on.
SETTLE = 60.0


def is_away(exc: ClusterError) -> bool:
    """True when `exc` says the API is (for now) not there, rather than refusing the request."""
    return exc.reason == UNREACHABLE or exc.status in AWAY_STATUSES


def is_settling_refusal(exc: ClusterError) -> bool:
    """True for what a just-restarted API server may answer until its caches fill."""
    return exc.status in (401, 403) or exc.reason == "NotServed"


class Outage:
    """The outage a long-lived read is in (if any): since when, and what it said first."""

    def __init__(
        self,
        what: str,
        *,
        say: Callable[[str], None],
        monotonic: Callable[[], float] = time.monotonic,
        give_up_after: float = GIVE_UP_AFTER,
    ) -> None:
        self.what = what
        self.say = say
        self.monotonic = monotonic
        self.give_up_after = give_up_after
        self.since: float | None = None
        self.first = ""
        self._tries = 0
        self._back_at: float | None = None
        #: Every outage this read came through: seconds away, in order.
        self.outages: list[float] = []

    @property
    def away(self) -> bool:
        return self.since is not None

    def settling(self) -> bool:
        """The API is away, or came back less than `SETTLE` seconds ago."""
        if self.since is not None:
            return True
        return self._back_at is not None and self.monotonic() - self._back_at < SETTLE

    def failed(self, exc: ClusterError) -> float:
        """Record a failed request; the seconds to wait before the next try.

        A refusal (401, 403, a kind not served) is waited on only while the API is away or
        settling after its return; any other failure that is not the API being away is raised.

        Raises:
            ClusterError: `exc` itself when it is not the API being away, or when the API has
                been away longer than `give_up_after`.
        """
        now = self.monotonic()
        if not is_away(exc):
            if not (is_settling_refusal(exc) and self.settling()):
                raise exc
            if self.since is None:
                # Back, but not ready: waited on without a second line (bounded by SETTLE).
                self._tries += 1
                return self._backoff()
        if self.since is None:
            self.since, self.first, self._tries = now, str(exc), 0
        elif now - self.since > self.give_up_after:
            raise exc
        self._tries += 1
        return self._backoff()

    def _backoff(self) -> float:
        return float(min(MAX_BACKOFF, 0.5 * 2 ** min(max(self._tries - 1, 0), 4)))

    def back(self) -> None:
        """A request succeeded: if it ends an outage, say so once."""
        if self.since is None:
            return
        now = self.monotonic()
        seconds = now - self.since
        self.outages.append(seconds)
        self.since, self._back_at, self._tries = None, now, 0
        self.say(
            f"the Kubernetes API was away for {_duration(seconds)} ({self.first}); "
            f"{self.what} carried on"
        )


def _duration(seconds: float) -> str:
    whole = max(1, round(seconds))
    return f"{whole}s" if whole < 120 else f"{whole // 60}m{whole % 60:02d}s"
