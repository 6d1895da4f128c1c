"""`tau python doctor` (`tau.sdk.doctor.run`) against the local API emulator.

The doctor connects like `tau run` (a real kubeconfig pointing at the emulator on 127.0.0.1),
resolves the workspace, and asks SelfSubjectAccessReviews, which the emulator answers allowed
unless a test denies one.
"""

from __future__ import annotations

import io
import platform
import stat
import sys
from pathlib import Path

import pytest

import tau
from tau.sdk import doctor
from tests.kubeapi.fixtures import EMULATOR_CONTEXT, researcher_shell, write_kubeconfig
from tests.kubeapi.server import KubeApiServer
from tests.test_workspace_objects import tau_workspace

P = "tau python doctor: "


@pytest.fixture
def cluster(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch
) -> KubeApiServer:
    """A researcher's shell at the emulator, and no taugrid-portal around."""
    monkeypatch.setenv("TAUGRID_PORTAL_BINARY", str(tmp_path / "no-portal"))
    return researcher_shell(kube_api, kubeconfig_file, tmp_path, monkeypatch)


def put_ws(cluster: KubeApiServer, obj: dict) -> None:
    stored = cluster.put(obj)
    status = {**obj["status"], "observedGeneration": stored["metadata"].get("generation", 1)}
    cluster.set_status(
        "tau.azure.com/v1alpha1", "TauWorkspace", obj["metadata"]["name"], status, "tau-system"
    )


def diagnose(namespace: str | None = None) -> tuple[int, list[str], list[str]]:
    out, err = io.StringIO(), io.StringIO()
    code = doctor.run(namespace=namespace, context=EMULATOR_CONTEXT, out=out, err=err)
    return code, out.getvalue().splitlines(), err.getvalue().splitlines()


def submit_lines(namespace: str) -> list[str]:
    return [
        f'{P}{verb} {what} in namespace "{namespace}": ok'
        for verb, what in [
            ("create", "rayjobs.ray.io"),
            ("create", "jobs.batch"),
            ("create", "secrets"),
            ("get", "rayjobs.ray.io"),
            ("watch", "rayjobs.ray.io"),
            ("delete", "rayjobs.ray.io"),
        ]
    ]


def header(tmp_path: Path) -> list[str]:
    return [
        f"{P}Tau Python SDK {tau.__version__}",
        f"{P}python {platform.python_version()} ({sys.executable})",
        f"{P}tau {tau.__version__} (same package: ok)",
        f"{P}TAUGRID_PORTAL_BINARY={tmp_path / 'no-portal'} does not exist (advisory: "
        "`taugrid-portal experiment` and the portal need it); reinstall tau, which ships it, or "
        "set TAUGRID_PORTAL_BINARY=/path/to/taugrid-portal",
    ]


def test_all_checks_pass_for_a_namespace(cluster: KubeApiServer, tmp_path: Path) -> None:
    code, out, err = diagnose("team")
    assert (code, err) == (0, [])
    assert out == [
        *header(tmp_path),
        f'{P}kubeconfig context "{EMULATOR_CONTEXT}" (flag): ok',
        f'{P}namespace "team" (no workspace: --namespace): ok',
        *submit_lines("team"),
        f"{P}ok",
    ]
    reviews = [
        r.body["spec"]["resourceAttributes"]
        for r in cluster.requests
        if r.path.endswith("/selfsubjectaccessreviews")
    ]
    assert {(a["verb"], a["resource"], a.get("group", ""), a["namespace"]) for a in reviews} == {
        ("create", "rayjobs", "ray.io", "team"),
        ("create", "jobs", "batch", "team"),
        ("create", "secrets", "", "team"),
        ("get", "rayjobs", "ray.io", "team"),
        ("watch", "rayjobs", "ray.io", "team"),
        ("delete", "rayjobs", "ray.io", "team"),
    }


def test_the_workspace_decides_the_namespace(cluster: KubeApiServer) -> None:
    put_ws(cluster, tau_workspace())
    code, out, err = diagnose()
    assert (code, err) == (0, [])
    assert out[5:] == [
        f'{P}workspace "team-a" Ready (namespace=team-a-ns, queue=team-a-queue): ok',
        f'{P}workspace "team-a" permissions (cluster-wide): ok',
        *submit_lines("team-a-ns"),
        f"{P}ok",
    ]


def test_a_denied_permission_fails_with_its_fix(cluster: KubeApiServer) -> None:
    cluster.deny_access("create", "secrets", namespace="team")
    cluster.deny_access("watch", "rayjobs", group="ray.io")
    code, out, err = diagnose("team")
    assert code == 1
    assert err == [
        f'{P}create secrets in namespace "team": fail',
        f"{P}  hint: {doctor.FIX_RBAC}",
        f'{P}watch rayjobs.ray.io in namespace "team": fail',
        f"{P}  hint: {doctor.FIX_RBAC}",
    ]
    assert f'{P}create rayjobs.ray.io in namespace "team": ok' in out
    assert f"{P}ok" not in out


def test_missing_workspace_permissions_fail_like_workspace_check(cluster: KubeApiServer) -> None:
    ws = tau_workspace()
    ws["spec"]["authorization"] = {"mode": "workspace-rbac"}
    ws["spec"]["role"] = "tau-researcher-v1"
    put_ws(cluster, ws)
    cluster.deny_access("get", "pods", subresource="log")
    code, _, err = diagnose()
    assert code == 1
    assert err == [
        f'{P}workspace "team-a" permissions (workspace-rbac): workspace "team-a" is missing 1 '
        'permission(s) in namespace "team-a-ns": get pods/log: fail',
        f"{P}  hint: the TauWorkspace owner (your platform operator) grants them by binding role "
        'tau-researcher-v1 to your identity in namespace "team-a-ns"; tau cannot work around RBAC',
    ]


def test_a_workspace_that_is_not_ready_stops_the_checks(cluster: KubeApiServer) -> None:
    put_ws(cluster, tau_workspace(phase="Degraded"))
    code, out, err = diagnose()
    assert code == 1
    assert err[0].startswith(f'{P}workspace: workspace "team-a" is not Ready')
    assert err[0].endswith(": fail") and err[1].startswith(f"{P}  hint: ")
    assert not any("rayjobs" in line for line in out)


def test_no_namespace_and_no_workspace_is_a_failed_check(cluster: KubeApiServer) -> None:
    code, _, err = diagnose()
    assert code == 1
    assert err == [
        f"{P}workspace: no namespace resolved for this workload: connect a workspace (see `tau "
        "workspace list`) or pass --namespace: fail",
        f"{P}  hint: run `tau workspace check` for the details, or pass -n/--namespace",
    ]


def test_an_unreachable_cluster_exits_3(
    kube_api: KubeApiServer, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    # A kubeconfig for a server that is gone: its port refuses connections.
    monkeypatch.setenv("KUBECONFIG", str(write_kubeconfig(kube_api, tmp_path / "kubeconfig")))
    kube_api.stop()
    code, out, err = diagnose("team")
    assert code == 3
    assert out[-2:] == [
        f'{P}kubeconfig context "{EMULATOR_CONTEXT}" (flag): ok',
        f'{P}namespace "team" (no workspace: --namespace): ok',
    ]
    assert err[0] == (
        f'{P}cluster: connection to the Kubernetes API server for context "{EMULATOR_CONTEXT}" '
        "was refused: fail"
    )
    assert err[1].startswith(f"{P}  hint: ")


def test_an_unknown_context_fails_the_connection(cluster: KubeApiServer) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = doctor.run(namespace="team", context="nowhere", out=out, err=err)
    assert code == 1
    lines = err.getvalue().splitlines()
    assert lines[0].startswith(f'{P}connection: kubeconfig context "nowhere" not found in ')
    assert lines[0].endswith('(contexts: "emulator"): fail')
    assert lines[1].startswith(f"{P}  hint: ")
    assert cluster.requests == []


def test_the_portal_is_found_beside_python_or_named(tmp_path: Path, monkeypatch) -> None:
    portal = tmp_path / "taugrid-portal"
    portal.write_text("#!/bin/sh\n")
    portal.chmod(portal.stat().st_mode | stat.S_IEXEC)
    assert doctor.find_portal({"TAUGRID_PORTAL_BINARY": str(portal)}) == (portal, "")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python3"))
    assert doctor.find_portal({}) == (portal, "")
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python3"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert doctor.find_portal({}) == (None, "taugrid-portal not found")
