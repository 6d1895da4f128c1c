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

from tests.e2e.controlplane.node import NODE_NAME
from tests.e2e.controlplane.objects import Api

LOG_ENV = "E2E_LOG"
#: `tau cluster validate nodes` labels its probe pods so.
PROBE_LABEL = ("app.kubernetes.io/managed-by", "tau-validate")
#: A fake node's "hardware": the probe output its node annotation names (default healthy).
PROBE_ANNOTATION = "tau-e2e/probe"
PROBES = Path(__file__).resolve().parents[2] / "fixtures" / "probes"


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


def probe_report(fixture: str, now: datetime.datetime | None = None) -> str:
    """A node probe's output (tests/fixtures/probes/<fixture>.log) as a CRI log."""
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = (PROBES / f"{fixture}.log").read_text().splitlines()
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
        meta, spec = pod["metadata"], pod["spec"]
        key = f"{meta['namespace']}/{meta['name']}/{meta['uid']}"
        if key in self._seen or not spec.get("node_name"):
            return  # fed already, or not on a node yet (a node probe's log depends on it)
        if spec["node_name"] == NODE_NAME:
            return  # the kubelet of the real node keeps its pods' real logs
        self._seen.add(key)
        probe = self._probe_report(pod)
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
            path.write_text(probe if probe is not None else container_log(as_dict))
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

    def _probe_report(self, pod: dict[str, Any]) -> str | None:
        """A GPU node probe pod's log: what that node's hardware would report. No GPU runs
        here, so the node's annotation chooses a recorded report (healthy unless it says)."""
        labels = pod["metadata"].get("labels") or {}
        if labels.get(PROBE_LABEL[0]) != PROBE_LABEL[1]:
            return None
        node = self.api.get("v1", "Node", pod["spec"]["node_name"]) or {}
        fixture = ((node.get("metadata") or {}).get("annotations") or {}).get(
            PROBE_ANNOTATION, "healthy"
        )
        return probe_report(fixture)
