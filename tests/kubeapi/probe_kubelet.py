"""A fake kubelet for `tau cluster validate nodes`: answers probe pods from recorded outputs.

It plays the GPU nodes: each new pod labelled ``app.kubernetes.io/managed-by=tau-validate``
gets, after ``delay`` seconds, the recorded probe log of its node and phase Succeeded. Nodes in
``hang`` never finish (timeouts); nodes in ``fail`` end Failed with exit code 1.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

MANAGED_BY = ("app.kubernetes.io/managed-by", "tau-validate")


class ProbeKubelet:
    """Completes probe pods from ``logs[node]`` (a string or a callable returning one)."""

    def __init__(
        self,
        api,
        logs: dict[str, str] | Callable[[str], str],
        *,
        delay: float | Callable[[str], float] = 0.0,
        hang: Iterable[str] = (),
        fail: Iterable[str] = (),
    ) -> None:
        self.api, self.logs, self.delay = api, logs, delay
        self.hang, self.fail = set(hang), set(fail)
        self.seen: set[str] = set()
        self.max_in_flight = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.timers: list[threading.Timer] = []

    def __enter__(self) -> ProbeKubelet:
        self.thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        self.thread.join(5)
        for timer in self.timers:
            timer.cancel()

    def _probe_pods(self) -> list[dict]:
        return [
            p
            for p in self.api.list_objects("v1", "Pod", "default")
            if (p["metadata"].get("labels") or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]
        ]

    def _loop(self) -> None:
        while not self.stop.is_set():
            pods = self._probe_pods()
            running = [
                p
                for p in pods
                if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ]
            self.max_in_flight = max(self.max_in_flight, len(running))
            for pod in pods:
                name = pod["metadata"]["name"]
                if name in self.seen:
                    continue
                self.seen.add(name)
                node = pod["spec"]["nodeName"]
                if node in self.hang:
                    continue
                delay = self.delay(node) if callable(self.delay) else self.delay
                timer = threading.Timer(delay, self._complete, args=(name, node))
                timer.daemon = True
                self.timers.append(timer)
                timer.start()
            self.stop.wait(0.005)

    def _complete(self, name: str, node: str) -> None:
        if self.api.get_object("v1", "Pod", name, "default") is None:
            return
        if node in self.fail:
            status = {
                "phase": "Failed",
                "containerStatuses": [
                    {"name": "probe", "state": {"terminated": {"reason": "Error", "exitCode": 1}}}
                ],
            }
            self.api.set_status("v1", "Pod", name, status, namespace="default")
            return
        log = self.logs(node) if callable(self.logs) else self.logs[node]
        self.api.set_pod_log(name, log, namespace="default")
        self.api.set_status("v1", "Pod", name, {"phase": "Succeeded"}, namespace="default")
