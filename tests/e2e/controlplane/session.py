"""The control plane of this process, once `make e2e`'s runner (or the first e2e fixture) has
started it: the e2e fixtures attach to it instead of starting a second one."""

from __future__ import annotations

import fcntl
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tests.e2e.controlplane.build import cache_root
from tests.e2e.controlplane.cluster import ControlPlane
from tests.e2e.controlplane.researcher import Researcher, provision
from tests.e2e.controlplane.team_store import StoreMissing, TeamStore


@dataclass
class Session:
    plane: ControlPlane
    researcher: Researcher
    lock: IO[str] | None = field(default=None, repr=False)
    #: The team store beside the plane (None on a machine without PostgreSQL or versitygw).
    store: TeamStore | None = None

    def stop(self) -> None:
        global current
        self.researcher.stop()
        if self.store is not None:
            self.store.stop()
        # TAU_E2E_KEEP keeps the data and logs for a look after a failure.
        self.plane.stop(keep=bool(os.environ.get("TAU_E2E_KEEP")))
        if self.lock is not None:
            self.lock.close()
        current = None


current: Session | None = None


def exclusive() -> IO[str]:
    """Hold the machine's e2e lock: KubeRay's webhook port is fixed, so one control plane at
    a time; a second run waits for the first instead of failing on the port."""
    path = cache_root() / "e2e.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = path.open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("waiting for another e2e control plane on this machine to stop", file=sys.stderr)
        fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def runtime_images() -> dict[str, Any]:
    """The real node's images (built once per machine and input key, see `image`)."""
    from tests.e2e.controlplane.image import build_images

    return dict(build_images())


def start(root: Path) -> Session:
    """Start a control plane under `root`, provision the researcher, and remember it."""
    global current
    lock = exclusive()
    plane = ControlPlane(root / "data")
    plane.images = runtime_images()
    store = None
    try:
        plane.start()
        store = team_store(plane)
        researcher = provision(plane, root / "researcher", store)
    except BaseException:
        if store is not None:
            store.stop()
        plane.stop(keep=True)
        lock.close()
        raise
    current = Session(plane, researcher, lock, store)
    return current


def team_store(plane: ControlPlane) -> TeamStore | None:
    """The team store beside the plane, reachable from the real node's pods; None (said on
    stderr) where PostgreSQL or versitygw is not installed, except in CI, which installs both."""
    from tests.e2e.controlplane.node import HOST_IP

    if plane.node is None:
        return None
    try:
        return TeamStore(plane.supervisor, HOST_IP).start()
    except StoreMissing as err:
        if os.environ.get("CI"):
            raise
        print(f"no team store: {err}", file=sys.stderr)
        return None
