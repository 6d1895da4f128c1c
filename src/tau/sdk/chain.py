"""Follow a chain's RayJobs: wait for one to succeed, delete one and wait until it is gone.

Performs I/O (Kubernetes API through `tau.kube`). The reference SDK polled `kubectl get rayjob
-o jsonpath={.status.jobStatus}` every poll interval and ran `kubectl delete --wait`; here a
watch on the one RayJob (by name, from the resourceVersion last read) reports a change as it
happens, a get every poll interval backs it up (a watch that ends, expires with 410 or is not
allowed falls back to it), and no kubectl is needed. Ctrl-C is never caught: the caller says
what the interrupted chain left behind.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import RAYJOB
from tau.sdk.errors import SdkError

PREFIX = "tau python submit"
#: What an empty --timeout means, as in the reference.
DEFAULT_TIMEOUT = 24 * 3600.0
#: jobStatus values that end a wait without success.
FAILED_STATUSES = frozenset({"FAILED", "STOPPED"})
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
#: Seconds between gets while a deletion completes (the watch reports it sooner).
DELETE_RECHECK = 15.0

Obj = dict[str, Any]


def parse_duration(text: str, flag: str) -> float:
    """Seconds of `<n>s`, `<n>m`, `<n>h` or a bare number of seconds; "" is 24h.

    Raises:
        SdkError: anything else, or a duration that is not positive.
    """
    raw = text.strip()
    if not raw:
        return DEFAULT_TIMEOUT
    number, scale = (raw[:-1], _UNITS[raw[-1]]) if raw[-1] in _UNITS else (raw, 1.0)
    try:
        seconds = float(number) * scale
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise SdkError(
            f"Tau Python SDK: invalid duration {raw!r}; expected e.g. 30s, 5m, 2h",
            hint=f"{flag} takes a positive duration in seconds (s), minutes (m) or hours (h)",
        )
    return seconds


def format_duration(seconds: float) -> str:
    """`24h`, `5m`, `90s`: the largest whole unit, as a user would have typed it."""
    for unit, size in (("h", 3600.0), ("m", 60.0)):
        if seconds >= size and float(seconds / size).is_integer():
            return f"{int(seconds / size)}{unit}"
    return f"{seconds:g}s"


def job_status(obj: Obj) -> str:
    """The RayJob's `.status.jobStatus` ("" before KubeRay has set it)."""
    return str((obj.get("status") or {}).get("jobStatus") or "")


def wait_rayjob(
    api: Any,
    namespace: str,
    name: str,
    *,
    timeout: float,
    poll_interval: float,
    say: Callable[[str], None],
    context: str | None = None,
) -> None:
    """Return once rayjob/`name` reports SUCCEEDED, printing each status it goes through once.

    Raises:
        SdkError: it reports FAILED (or STOPPED), it is deleted while waited for, or `timeout`
            seconds pass first.
        ClusterError: the RayJob cannot be read.
    """
    say(
        f"{PREFIX}: waiting for rayjob/{name} in {namespace} "
        f"(timeout={format_duration(timeout)}, poll={poll_interval:g}s)..."
    )
    last: str | None = None
    for obj in observe(
        api,
        namespace,
        name,
        deadline=time.monotonic() + timeout,
        poll_interval=poll_interval,
        context=context,
    ):
        if obj is None:
            if last is None:
                continue  # not there yet: the submission may still be landing
            raise SdkError(
                f"{PREFIX}: rayjob/{name} was deleted from {namespace} before it reached "
                f"SUCCEEDED (last status: {last or '<unknown>'})"
            )
        status = job_status(obj)
        if status != last:
            say(f"{PREFIX}:   rayjob/{name} status={status or '<unknown>'}")
            last = status
        if status == "SUCCEEDED":
            return
        if status in FAILED_STATUSES:
            raise SdkError(
                f"{PREFIX}: rayjob/{name} reports {status}; check "
                f"`tau run logs {name} -n {namespace}`."
            )
    raise SdkError(
        f"{PREFIX}: timed out after {format_duration(timeout)} waiting for rayjob/{name} to "
        f"reach SUCCEEDED (last status: {last or '<none>'})",
        hint=f"it keeps running: follow it with `tau run status {name} -n {namespace}`",
    )


def delete_rayjob(
    api: Any,
    namespace: str,
    name: str,
    *,
    timeout: float,
    say: Callable[[str], None],
    context: str | None = None,
) -> None:
    """Delete rayjob/`name` (foreground: its RayCluster goes first) and return once it is gone,
    so the next workload finds the GPUs free. Already gone is fine.

    Raises:
        SdkError: the delete was refused, or it is still there after `timeout` seconds.
    """
    from tau.kube.resources import delete

    try:
        existed = delete(
            api, RAYJOB, name, namespace=namespace, propagation="Foreground", context=context
        )
    except ClusterError as exc:
        raise SdkError(
            f"{PREFIX}: failed to delete completed rayjob/{name}: {exc.message}", hint=exc.hint
        ) from exc
    if not existed:
        say(f"{PREFIX}:   rayjob/{name} was already gone")
        return
    for obj in observe(
        api,
        namespace,
        name,
        deadline=time.monotonic() + timeout,
        poll_interval=DELETE_RECHECK,
        context=context,
    ):
        if obj is None:
            say(f"{PREFIX}:   rayjob/{name} deleted")
            return
    raise SdkError(
        f"{PREFIX}: failed to delete completed rayjob/{name}: still present after "
        f"{format_duration(timeout)}",
        hint="a finalizer may be holding it: check `kubectl get rayjob "
        f"{name} -n {namespace} -o yaml`",
    )


def observe(
    api: Any,
    namespace: str,
    name: str,
    *,
    deadline: float,
    poll_interval: float,
    context: str | None = None,
) -> Iterator[Obj | None]:
    """The RayJob each time it may have changed (None while it does not exist), until the
    caller stops or `deadline` (time.monotonic()) passes.

    A get starts every round; a watch from its resourceVersion then reports changes for up to
    `poll_interval` seconds, after which the next round reads the object again. A watch that
    expires (410) is followed by a new round at once; one that fails otherwise (not allowed,
    a dropped connection) is replaced by waiting out the round.

    Raises:
        ClusterError: the get failed.
    """
    from tau.kube.resources import find
    from tau.kube.streams import Expired, watch_kind

    while True:
        obj = find(api, RAYJOB, name, namespace=namespace, context=context)
        yield obj
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        span = min(remaining, poll_interval)
        version = str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
        stream = watch_kind(
            api,
            RAYJOB,
            namespace,
            field_selector=f"metadata.name={name}",
            resource_version=version,
            timeout_seconds=math.ceil(span),
        )
        try:
            for change, event in stream:
                if change == "BOOKMARK":
                    continue
                yield None if change == "DELETED" else event
                if time.monotonic() >= deadline:
                    return
        except Expired:
            continue
        except ClusterError:
            time.sleep(max(0.0, min(span, deadline - time.monotonic())))
        finally:
            stream.stop()
