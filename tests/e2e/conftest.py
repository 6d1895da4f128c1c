"""Fixtures of the e2e suite: the control plane (started once per run), the researcher's shell
and a repository connected to the workspace, and the admin's view for assertions."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.controlplane import session
from tests.e2e.controlplane.cluster import ControlPlane
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import SYSTEM_NAMESPACE, Researcher, run_tau


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Uninstalling the chart ends the cluster's useful life: those tests run last.
    items.sort(key=lambda item: "uninstall" in item.nodeid)


@pytest.fixture(scope="session")
def e2e_session(request: pytest.FixtureRequest) -> Iterator[session.Session]:
    if session.current is not None:
        yield session.current
        return
    root = Path(tempfile.mkdtemp(prefix="tau-e2e-"))
    current = session.start(root)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(current.plane.summary_line())
    try:
        yield current
    finally:
        current.stop()
        session.current = None
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def plane(e2e_session: session.Session) -> ControlPlane:
    return e2e_session.plane


@pytest.fixture(scope="session")
def researcher(e2e_session: session.Session) -> Researcher:
    return e2e_session.researcher


@pytest.fixture(scope="session")
def admin(plane: ControlPlane) -> Api:
    return plane.api


@dataclass(repr=False)
class Shell:
    """A user's shell: an environment and a working directory; `tau(...)` runs the real CLI."""

    env: dict[str, str]
    cwd: Path

    def __repr__(self) -> str:
        return f"Shell(cwd={self.cwd})"

    def tau(self, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return run_tau(list(argv), self.env, cwd=self.cwd, timeout=timeout)

    def ok(self, *argv: str, timeout: float = 300) -> str:
        proc = self.tau(*argv, timeout=timeout)
        assert proc.returncode == 0, (
            f"tau {' '.join(argv)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
        )
        return proc.stdout


def connection_descriptor(workspace: str, context: str) -> dict[str, Any]:
    return {
        "schema": "tau.workspace.connection.v1",
        "workspace": workspace,
        "cluster": {"contextName": context, "systemNamespace": SYSTEM_NAMESPACE},
        "access": {"method": "kubeconfig"},
        "authorization": {"mode": "workspace-rbac", "requiredRole": "tau-researcher-v1"},
        "requirements": {"minTauVersion": "0.1.0"},
    }


def connected_repo(root: Path, workspace: str, context: str, kubeconfig: Path) -> Shell:
    """A Git repository at `root` whose descriptor names `workspace` through `context` of
    `kubeconfig` (access method kubeconfig), trusted once, as a user does."""
    (root / "tau").mkdir(parents=True, exist_ok=True)
    (root / "tau" / "workspace.connection.yaml").write_text(
        yaml.safe_dump(connection_descriptor(workspace, context))
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "TAU_CONFIG_DIR": str(root / ".tau-config"),
        "NO_COLOR": "1",
        "HOME": str(root),
    }
    env.pop("TAU_CONTEXT", None)
    shell = Shell(env, root)
    shell.ok("workspace", "connection", "--trust")
    return shell


@pytest.fixture(scope="session")
def repo(researcher: Researcher, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    """The researcher's repository connected to the workspace."""
    return connected_repo(
        tmp_path_factory.mktemp("repo"),
        researcher.workspace,
        researcher.context,
        researcher.kubeconfig,
    )


@pytest.fixture(scope="session")
def real_repo(researcher: Researcher, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    """The researcher's repository connected to the workspace whose runs land on the real node
    (the runs there really execute, in the runtime image `researcher.image`)."""
    assert researcher.real_workspace and researcher.image, "the control plane has no real node"
    return connected_repo(
        tmp_path_factory.mktemp("real-repo"),
        researcher.real_workspace,
        researcher.context,
        researcher.kubeconfig,
    )


@pytest.fixture(scope="session")
def operator(researcher: Researcher, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    return Shell(dict(researcher.admin_env), tmp_path_factory.mktemp("operator"))


def wait_for(
    what: str, check: Callable[[], Any], *, timeout: float = 120, interval: float = 0.25
) -> Any:
    """Poll `check` until it returns something truthy (the condition), then return it."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} ({last!r})")
        time.sleep(interval)
