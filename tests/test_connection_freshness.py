"""Connection freshness and permissions (contract §4.1-4.3) against the local API emulator:
minTauVersion, the 5-minute readiness cache, the bounded revalidation and the RBAC checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tau
from tau.cli import main
from tau.connection.descriptor import RELATIVE_PATH
from tau.errors import ClusterError, UsageError
from tau.session import connect
from tau.workspaces.permissions import PermissionsMissing
from tests import test_workspace_cli_e2e as e2e
from tests.kubeapi.handler import ACCESS_REVIEW_PATH
from tests.test_workspace_cli_e2e import DESCRIPTOR, put_ws
from tests.test_workspace_objects import tau_workspace

cluster = e2e.cluster  # the emulator with the Tau kinds, and a shell pointing at it

RBAC = DESCRIPTOR.replace(
    "  mode: cluster-wide\n", "  mode: workspace-rbac\n  requiredRole: tau-researcher-v1\n"
)


def _repo(root: Path, text: str = DESCRIPTOR) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / RELATIVE_PATH).parent.mkdir()
    (root / RELATIVE_PATH).write_text(text)
    return root


def _connect(repo: Path):
    return connect(start=repo, trust=True, confirm=None)


def _state(tmp_path: Path) -> tuple[Path, dict]:
    (path,) = (tmp_path / "cfg" / "connections").glob("*.json")
    return path, json.loads(path.read_text())


def _calls(api, path_part: str) -> int:
    return sum(path_part in r.path for r in api.requests)


def test_a_tau_older_than_min_tau_version_is_refused_naming_both_and_the_upgrade(
    cluster, tmp_path, monkeypatch, capsys
):
    repo = _repo(tmp_path / "repo", DESCRIPTOR.replace("0.1.0", "9.2.0"))
    monkeypatch.chdir(repo)
    monkeypatch.setattr(tau, "__version__", "0.1.0")
    assert main(["run", "list"]) == 1
    err = capsys.readouterr().err
    assert "tau 0.1.0 is too old for this repository" in err
    assert "requires requirements.minTauVersion 9.2.0 or newer" in err
    assert "hint: upgrade tau to 9.2.0 or newer the way it was installed: `pipx install " in err
    assert "install.sh" not in err and "tau==" not in err  # another program; another project


def test_the_offline_connection_check_fails_on_a_newer_min_tau_version(
    tmp_path, monkeypatch, capsys
):
    """`tau workspace connection` (offline) no longer calls such a descriptor valid."""
    repo = _repo(tmp_path / "repo", DESCRIPTOR.replace("0.1.0", "9.2.0"))
    monkeypatch.chdir(repo)
    monkeypatch.setattr(tau, "__version__", "0.1.0")
    assert main(["workspace", "connection"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(
        f"error: tau 0.1.0 is too old for this repository: {repo / RELATIVE_PATH} requires "
        "requirements.minTauVersion 9.2.0 or newer\n"
    ), err
    assert "Traceback" not in err
    # The same tau with a descriptor it satisfies is valid, and a dev build is not checked.
    (repo / RELATIVE_PATH).write_text(DESCRIPTOR)
    assert main(["workspace", "connection"]) == 0
    assert "Workspace connection configuration is valid." in capsys.readouterr().out
    (repo / RELATIVE_PATH).write_text(DESCRIPTOR.replace("0.1.0", "9.2.0"))
    monkeypatch.setattr(tau, "__version__", "9.3.0.dev0")
    assert main(["workspace", "connection"]) == 0


def test_a_dev_build_skips_the_version_check(cluster, tmp_path, monkeypatch):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo", DESCRIPTOR.replace("0.1.0", "9.2.0"))
    monkeypatch.setattr(tau, "__version__", "9.3.0.dev0")
    assert _connect(repo).namespace == "team-a-ns"
    monkeypatch.setattr(tau, "__version__", "dev")
    assert _connect(repo).namespace == "team-a-ns"


def test_a_verified_connection_is_trusted_for_five_minutes_then_revalidated(cluster, tmp_path):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo")
    assert _connect(repo).target.queue == "team-a-queue"
    path, state = _state(tmp_path)
    assert state["verified_at"] and state["namespace"] == "team-a-ns"
    assert _calls(cluster, ACCESS_REVIEW_PATH) == 1  # cluster-wide: one review of * on *
    cluster.reset_requests()
    # Fresh: nothing is asked of the cluster, the recorded target is used.
    assert _connect(repo).target.queue == "team-a-queue"
    assert _calls(cluster, "/workspaces") == 0 and _calls(cluster, ACCESS_REVIEW_PATH) == 0
    # Six minutes later: the workspace is read and the permissions are checked again.
    state["verified_at"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(state))
    put_ws(cluster, tau_workspace(phase="Degraded"))
    from tau.workspaces.target import WorkspaceNotReady

    with pytest.raises(WorkspaceNotReady):
        _connect(repo)
    assert _calls(cluster, "/workspaces/team-a") == 1


def test_revalidation_is_bounded_by_the_timeout_with_the_sign_in_message(
    cluster, tmp_path, monkeypatch
):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo")
    cluster.access_review_delay = 2.0
    monkeypatch.setenv("TAU_CONNECTION_REVALIDATION_TIMEOUT", "300ms")
    with pytest.raises(ClusterError) as err:
        _connect(repo)
    assert err.value.message == (
        "revalidating the cached workspace connection timed out after 0.3s, most likely because "
        "the Kubernetes credential provider needed a sign-in prompt and no terminal is "
        "attached; run a tau command in a terminal once to complete sign-in"
    )
    assert err.value.exit_code == 3


def test_a_bad_timeout_value_names_the_variable(cluster, tmp_path, monkeypatch):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo")
    monkeypatch.setenv("TAU_CONNECTION_REVALIDATION_TIMEOUT", "soon")
    with pytest.raises(UsageError) as err:
        _connect(repo)
    assert (
        err.value.message
        == '$TAU_CONNECTION_REVALIDATION_TIMEOUT "soon" must be a positive duration'
    )


def test_workspace_rbac_names_every_missing_permission_and_who_grants_it(
    cluster, tmp_path, monkeypatch, capsys
):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo", RBAC)
    cluster.deny_access("create", "jobs", group="batch", namespace="team-a-ns")
    cluster.deny_access("get", "pods", subresource="log")
    with pytest.raises(PermissionsMissing) as err:
        _connect(repo)
    assert err.value.message == (
        'workspace "team-a" is missing 2 permission(s) in namespace "team-a-ns": '
        "create jobs.batch, get pods/log"
    )
    assert err.value.hint == (
        "the TauWorkspace owner (your platform operator) grants them by binding role "
        'tau-researcher-v1 to your identity in namespace "team-a-ns"; tau cannot work around RBAC'
    )
    reviews = [r.body for r in cluster.requests if r.path == ACCESS_REVIEW_PATH]
    asked = {
        (b["spec"]["resourceAttributes"]["verb"], b["spec"]["resourceAttributes"]["resource"])
        for b in reviews
    }
    assert {("delete", "rayjobs"), ("get", "localqueues"), ("list", "events")} <= asked
    # Nothing was recorded as verified: the next command checks again.
    assert not _state(tmp_path)[1].get("verified_at")
    monkeypatch.chdir(repo)
    assert main(["run", "list"]) == 1
    assert "create jobs.batch, get pods/log" in capsys.readouterr().err


def test_cluster_wide_mode_needs_everything_everywhere(cluster, tmp_path):
    put_ws(cluster, tau_workspace())
    repo = _repo(tmp_path / "repo")
    cluster.deny_access("delete", "jobs", group="batch")
    with pytest.raises(PermissionsMissing) as err:
        _connect(repo)
    assert "uses cluster-wide authorization" in err.value.message
    assert err.value.message.endswith("your identity lacks: * *")
    assert "a cluster administrator grants it" in (err.value.hint or "")
