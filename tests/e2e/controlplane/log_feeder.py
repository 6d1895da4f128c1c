"""Give every fake pod's containers a log that `kubectl logs` (and `tau run logs`) can read.

KWOK answers the kubelet's container-log endpoint from a file named by a `Logs` object (one per
pod, same name). This feeder watches pods; for each new one it writes one file per container and
creates that object, so the apiserver streams real bytes from the fake kubelet. A container's log
is `started <the first line of its command and args>`, then the lines of its E2E_LOG env var
(`\\n` separates lines): a test chooses what a workload prints through the run config. The
file is in the CRI log format a kubelet keeps, which KWOK parses.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
from pathlib import Path
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.e2e.controlplane.objects import Api

LOG_ENV = "E2E_LOG"


def container_log(container: dict[str, Any], now: datetime.datetime | None = None) -> str:
    """The container's log in the CRI format a kubelet keeps (`<time> stdout F <line>`)."""
    argv = [*(container.get("command") or []), *(container.get("args") or [])]
    first = " ".join(argv) if argv else str(container.get("image") or "")
    lines = [f"started {first.splitlines()[0] if first else ''}".rstrip()]
    for env in container.get("env") or []:
        if env.get("name") == LOG_ENV and env.get("value"):
            lines += str(env["value"]).split("\\n")
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return "".join(f"{stamp} stdout F {line}\n" for line in lines)


class LogFeeder:
    def __init__(self, api: Api, folder: Path) -> None:
        self.api = api
        self.folder = folder
        self._stop = threading.Event()
        self._seen: set[str] = set()
        self._thread = threading.Thread(target=self._run, name="log-feeder", daemon=True)
        self._core = client.CoreV1Api(api.api_client)

    def start(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            stream = watch.Watch()
            try:
                for event in stream.stream(
                    self._core.list_pod_for_all_namespaces, timeout_seconds=2
                ):
                    if self._stop.is_set():
                        stream.stop()
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self._feed(event["object"].to_dict())
            except ApiException:
                # 410 Gone and friends: start a fresh list+watch.
                continue
            except Exception:
                if self._stop.is_set():
                    return
                continue

    def _feed(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        key = f"{meta['namespace']}/{meta['name']}/{meta['uid']}"
        if key in self._seen:
            return
        self._seen.add(key)
        spec = pod["spec"]
        entries = []
        for container in [*(spec.get("init_containers") or []), *spec["containers"]]:
            as_dict = {
                "command": container.get("command"),
                "args": container.get("args"),
                "image": container.get("image"),
                "env": [
                    {"name": e.get("name"), "value": e.get("value")}
                    for e in container.get("env") or []
                ],
            }
            path = self.folder / f"{meta['namespace']}_{meta['name']}_{container['name']}.log"
            path.write_text(container_log(as_dict))
            entries.append({"containers": [container["name"]], "logsFile": str(path)})
        with contextlib.suppress(Exception):
            self.api.apply(
                {
                    "apiVersion": "kwok.x-k8s.io/v1alpha1",
                    "kind": "Logs",
                    "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
                    "spec": {"logs": entries},
                }
            )
