"""The control plane of this process, once `make e2e`'s runner (or the first e2e fixture) has
started it: the e2e fixtures attach to it instead of starting a second one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.e2e.controlplane.cluster import ControlPlane
from tests.e2e.controlplane.researcher import Researcher, provision


@dataclass
class Session:
    plane: ControlPlane
    researcher: Researcher

    def stop(self) -> None:
        self.researcher.stop()
        self.plane.stop()


current: Session | None = None


def start(root: Path) -> Session:
    """Start a control plane under `root`, provision the researcher, and remember it."""
    global current
    plane = ControlPlane(root / "data")
    plane.start()
    try:
        researcher = provision(plane, root / "researcher")
    except BaseException:
        plane.stop(keep=True)
        raise
    current = Session(plane, researcher)
    return current
