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


def is_away(exc: ClusterError) -> bool:
    """True when `exc` says the API is (for now) not there, rather than refusing the request."""
    return exc.reason == UNREACHABLE or exc.status in AWAY_STATUSES


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
        #: Every outage this read came through: seconds away, in order.
        self.outages: list[float] = []

    @property
    def away(self) -> bool:
        return self.since is not None

    def failed(self, exc: ClusterError) -> float:
        """Record a failed request; the seconds to wait before the next try.

        Raises:
            ClusterError: `exc` itself when it is not the API being away, or when the API has
                been away longer than `give_up_after`.
        """
        if not is_away(exc):
            raise exc
        now = self.monotonic()
        if self.since is None:
            self.since, self.first, self._tries = now, str(exc), 0
        elif now - self.since > self.give_up_after:
            raise exc
        self._tries += 1
        return float(min(MAX_BACKOFF, 0.5 * 2 ** min(self._tries - 1, 4)))

    def back(self) -> None:
        """A request succeeded: if it ends an outage, say so once."""
        if self.since is None:
            return
        seconds = self.monotonic() - self.since
        self.outages.append(seconds)
        self.since = None
        self.say(
            f"the Kubernetes API was away for {_duration(seconds)} ({self.first}); "
            f"{self.what} carried on"
        )


def _duration(seconds: float) -> str:
    whole = max(1, round(seconds))
    return f"{whole}s" if whole < 120 else f"{whole // 60}m{whole % 60:02d}s"
