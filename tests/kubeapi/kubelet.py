"""A fake kubelet for tests: runs each new pod's container command on the host.

It plays the node: the pod's shell script runs with the pod's env, its PVC mount
(``$TAU_ROOT``) pointing at a temp dir; the output becomes the pod log and the exit code the
phase. So helper-pod scripts that would run in busybox really run here.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path


class FakeKubelet:
    """Runs every new pod's container command once, on the host, against `volume`."""

    def __init__(self, api, volume: Path) -> None:
        self.api, self.volume = api, volume
        self.seen: set[str] = set()
        self.pods: list[dict] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *_):
        self.stop.set()
        self.thread.join(5)

    def _loop(self) -> None:
        while not self.stop.is_set():
            for pod in self.api.list_objects("v1", "Pod"):
                name = pod["metadata"]["name"]
                if name not in self.seen:
                    self.seen.add(name)
                    self.pods.append(pod)
                    threading.Thread(target=self._run, args=(pod,), daemon=True).start()
            self.stop.wait(0.01)

    def _run(self, pod: dict) -> None:
        container = pod["spec"]["containers"][0]
        env = {e["name"]: e["value"] for e in container.get("env", [])}
        env["TAU_ROOT"] = str(self.volume)  # the PVC, as mounted on this "node"
        env["PATH"] = "/usr/bin:/bin"
        proc = subprocess.run(
            container["command"], env=env, capture_output=True, text=True, check=False
        )
        name, ns = pod["metadata"]["name"], pod["metadata"]["namespace"]
        self.api.set_pod_log(name, proc.stdout + proc.stderr, namespace=ns)
        phase = "Succeeded" if proc.returncode == 0 else "Failed"
        self.api.set_status("v1", "Pod", name, {"phase": phase}, namespace=ns)
