"""tau's own copy of a watched attempt's container logs, written as they are. Performs I/O.

A kubelet removes an evicted pod's containers, their logs with them, seconds after it killed
them: by the time the retry loop keeps the failed attempt (before it resubmits), the node has
nothing left to serve. So while `tau run` watches a Job with retries, each container of the
attempt's pods is followed (`tau.runs.log_follow`, across API outages) into a spool file in
tau's state folder, one folder per workload UID. Keeping the attempt (`tau.runs.kept_logs`)
takes the spool for a log the node no longer has; the spool goes once the attempt is kept or
has succeeded. Best effort: a follow that fails leaves its spool as far as it got, and the
node's own copy is always read first.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau.runs import kept_place

#: Containers followed per run at most: each holds one long request to the API server, so a
#: thousand-pod Job has its first pods (by name: rank 0 first) copied, not all of them.
MAX_FOLLOWED = 16
#: What the kubelet answers (200 OK) in place of a log whose container it has removed.
_REMOVED_LOG = "unable to retrieve container logs for "


def log_removed(text: str) -> bool:
    """Whether a log read's text is the kubelet saying the container's log is gone."""
    stripped = text.strip()
    return stripped.startswith(_REMOVED_LOG) and "\n" not in stripped


def spool_dir(namespace: str, run: str, uid: str, env: Mapping[str, str] | None = None) -> Path:
    """The folder of one workload's followed logs (`<pod>/<container>.log` inside)."""
    return kept_place.local_root(namespace, run, env) / "spool" / uid


def spooled(
    namespace: str, run: str, uid: str, pod: str, container: str, tail: int
) -> bytes | None:
    """The last `tail` lines tau followed of a container's log (with the kubelet's
    timestamps), or None when it followed none of it.
    """
    path = spool_dir(namespace, run, uid) / pod / f"{container}.log"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data:
        return None
    lines = data.splitlines(keepends=True)
    return b"".join(lines[-tail:])


def discard(namespace: str, run: str, uid: str) -> None:
    """Remove one workload's followed logs (kept, or no longer needed)."""
    shutil.rmtree(spool_dir(namespace, run, uid), ignore_errors=True)


def _started(pod: Mapping[str, Any]) -> list[str]:
    """Names of the pod's containers that run or ran (they have a log to follow)."""
    status = pod.get("status") or {}
    return [
        str(entry.get("name"))
        for entry in (status.get("initContainerStatuses") or [])
        + (status.get("containerStatuses") or [])
        if entry.get("name")
        and ("running" in (entry.get("state") or {}) or "terminated" in (entry.get("state") or {}))
    ]


def _owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("uid") == uid for ref in refs)


@dataclass
class Tee:
    """Follows the logs of one run's attempts, each container once, on daemon threads."""

    api: Any
    namespace: str
    run: str
    _followed: dict[tuple[str, str, str], threading.Thread] = field(default_factory=dict)

    def watch(self, workload: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> None:
        """Start following every started container of the workload's pods not followed yet."""
        uid = str((workload.get("metadata") or {}).get("uid") or "")
        if not uid:
            return
        ours = [p for p in pods if _owned_by(p, uid)]  # not an earlier attempt's, going away
        for pod in sorted(ours, key=lambda p: str((p.get("metadata") or {}).get("name"))):
            name = str((pod.get("metadata") or {}).get("name") or "")
            for container in _started(pod):
                key = (uid, name, container)
                if key in self._followed:
                    continue
                if sum(1 for k in self._followed if k[0] == uid) >= MAX_FOLLOWED:
                    return
                thread = threading.Thread(
                    target=self._copy,
                    args=key,
                    name=f"tau-log-copy-{name}-{container}",
                    daemon=True,
                )
                self._followed[key] = thread
                thread.start()

    def settle(self, uid: str, timeout: float = 5.0) -> None:
        """Give the workload's follows up to `timeout` seconds in all to write what they
        have read (their containers have ended: the follows are on their last read).
        """
        for (followed, _pod, _container), thread in list(self._followed.items()):
            if followed == uid:
                thread.join(timeout / max(1, len(self._followed)))

    def _copy(self, uid: str, pod: str, container: str) -> None:
        from tau.kube import resources
        from tau.runs import log_follow

        folder = spool_dir(self.namespace, self.run, uid) / pod
        # Kept logs are the researcher's alone: the folder 0700, the file 0600.
        with contextlib.suppress(Exception):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / f"{container}.log"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                chunks = log_follow.follow(
                    self.api,
                    self.namespace,
                    pod,
                    resources.LogOptions(container=container, timestamps=True),
                    ended=functools.partial(
                        log_follow.container_ended, self.api, self.namespace, pod, container
                    ),
                    say=lambda _line: None,  # the loop says what the API does, once
                )
                for chunk in chunks:
                    # The last read of a removed container is the kubelet's line, not log.
                    out.write(
                        "".join(
                            line
                            for line in chunk.splitlines(keepends=True)
                            if not log_removed(line)
                        )
                    )
                    out.flush()
