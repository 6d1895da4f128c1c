"""Make a started control plane ready for a researcher, the way an operator would.

`provision` installs the project's test chart with `tau cluster install` (real helm), starts
the tau-core stand-in, creates a TauWorkspace for a researcher identity that RBAC binds to one
namespace, waits until tau sees it Ready, and writes the researcher's own kubeconfig. The
researcher's shell then needs only `KUBECONFIG`, the context and the workspace name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.controlplane import pki
from tests.e2e.controlplane.cluster import ADMIN_CONTEXT, ControlPlane
from tests.e2e.controlplane.tau_core import TAU, TauCore

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "tests" / "e2e" / "chart" / "taugrid"
SYSTEM_NAMESPACE = "tau-system"
WORKSPACE = "team-e2e"
RESEARCHER = "researcher-e2e"
RESEARCHER_CONTEXT = "tau-e2e-researcher"
ROLE = "tau-researcher-v1"


def console_script(name: str) -> str:
    """A console script (`tau`, `taugrid-portal`) of the interpreter running the tests."""
    candidate = Path(sys.executable).with_name(name)
    return str(candidate) if candidate.exists() else name


def tau_binary() -> str:
    return console_script("tau")


@dataclass(repr=False)
class Researcher:
    kubeconfig: Path
    context: str
    workspace: str
    namespace: str
    admin_env: dict[str, str]
    tau_core: TauCore
    install_output: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Researcher(workspace={self.workspace}, kubeconfig={self.kubeconfig})"

    def stop(self) -> None:
        self.tau_core.stop()


def operator_env(plane: ControlPlane, config_dir: Path) -> dict[str, str]:
    """The environment of an operator's shell: the admin kubeconfig, helm, tau's own config."""
    return {
        **os.environ,
        "KUBECONFIG": str(plane.admin_kubeconfig),
        "TAU_HELM": str(plane.binaries["helm"]),
        "TAU_CONFIG_DIR": str(config_dir),
        "HELM_CACHE_HOME": str(config_dir / "helm-cache"),
        "HELM_CONFIG_HOME": str(config_dir / "helm-config"),
        "HELM_DATA_HOME": str(config_dir / "helm-data"),
        "NO_COLOR": "1",
    }


def run_tau(
    argv: list[str], env: dict[str, str], *, cwd: Path | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return run_console("tau", argv, env, cwd=cwd, timeout=timeout)


def run_console(
    script: str,
    argv: list[str],
    env: dict[str, str],
    *,
    cwd: Path | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """Run a console script as a user's shell would: no terminal, output captured."""
    return subprocess.run(
        [console_script(script), *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def workspace_object(name: str, target: str, subject: str) -> dict[str, Any]:
    return {
        "apiVersion": TAU,
        "kind": "TauWorkspace",
        "metadata": {"name": name, "namespace": SYSTEM_NAMESPACE},
        "spec": {
            "authorization": {"mode": "workspace-rbac"},
            "principalRef": {"provider": "entra", "name": subject},
            "kubernetesSubject": {"kind": "User", "name": subject},
            "role": ROLE,
            "target": {"namespace": target, "createNamespace": True},
            "queue": f"{target}-queue",
            "defaults": {"outputRoot": f"/data/projects/{target}/runs", "priority": "normal"},
        },
    }


def provision(plane: ControlPlane, folder: Path) -> Researcher:
    folder.mkdir(parents=True, exist_ok=True)
    tau_core = TauCore(plane.api, SYSTEM_NAMESPACE)
    tau_core.start()
    env = operator_env(plane, folder / "operator-config")
    install = run_tau(
        [
            "cluster",
            "install",
            "--chart",
            str(CHART),
            "--context",
            ADMIN_CONTEXT,
            "--timeout",
            "5m",
        ],
        env,
    )
    if install.returncode != 0:
        tau_core.stop()
        raise RuntimeError(
            f"tau cluster install exited {install.returncode}:\n{install.stdout}\n{install.stderr}"
        )
    plane.api.apply(workspace_object(WORKSPACE, WORKSPACE, RESEARCHER))
    tau_core.nudge()
    _wait_ready(plane, WORKSPACE)
    cert = plane.ca.issue(RESEARCHER, RESEARCHER, client=True)
    kubeconfig = pki.write_kubeconfig(
        folder / "researcher.kubeconfig",
        server=plane.server,
        ca=plane.ca.cert_path,
        client=cert,
        context=RESEARCHER_CONTEXT,
        namespace=WORKSPACE,
    )
    return Researcher(
        kubeconfig=kubeconfig,
        context=RESEARCHER_CONTEXT,
        workspace=WORKSPACE,
        namespace=WORKSPACE,
        admin_env=env,
        tau_core=tau_core,
        install_output=install.stdout,
    )


def _wait_ready(plane: ControlPlane, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        ws = plane.api.get(TAU, "TauWorkspace", name, SYSTEM_NAMESPACE) or {}
        if (ws.get("status") or {}).get("phase") == "Ready":
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"TauWorkspace {name} not Ready after {timeout:.0f}s")
        time.sleep(0.2)
