"""`tau workspace list|status|check|connection` end to end against the local API emulator.

The CLI runs in-process (`tau.cli.main`), activates a connection from a real kubeconfig file
pointing at the emulator on 127.0.0.1, and talks to it through the official client.
"""

from __future__ import annotations

import json
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tau.connection.descriptor import RELATIVE_PATH
from tests.kubeapi.fixtures import EMULATOR_CONTEXT, researcher_shell
from tests.kubeapi.server import KubeApiServer
from tests.test_workspace_objects import tau_workspace

WS_PATH = "/apis/tau.azure.com/v1alpha1/namespaces/tau-system/workspaces"


@pytest.fixture
def cluster(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch
) -> KubeApiServer:
    """A researcher's shell at the emulator."""
    return researcher_shell(kube_api, kubeconfig_file, tmp_path, monkeypatch)


def put_ws(cluster: KubeApiServer, obj: dict, *, stale: bool = False) -> dict:
    """Store a TauWorkspace; its observedGeneration follows the server's generation."""
    stored = cluster.put(obj)
    status = dict(obj["status"])
    generation = stored["metadata"].get("generation", 1)
    status["observedGeneration"] = generation - 1 if stale else generation
    return cluster.set_status(
        "tau.azure.com/v1alpha1", "TauWorkspace", obj["metadata"]["name"], status, "tau-system"
    )


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_prints_the_table(cluster: KubeApiServer, capsys) -> None:
    put_ws(cluster, tau_workspace("team-b", namespace="team-b-ns", queue="team-b-queue"))
    put_ws(cluster, tau_workspace("team-a", phase="Degraded"))
    code, out, _ = run(capsys, "workspace", "list", "--context", EMULATOR_CONTEXT)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "PHASE", "NAMESPACE", "QUEUE"]
    assert lines[1].split() == ["team-a", "Degraded", "team-a-ns", "team-a-queue"]
    assert lines[2].split() == ["team-b", "Ready", "team-b-ns", "team-b-queue"]


def test_list_empty_and_json(cluster: KubeApiServer, capsys) -> None:
    assert (
        run(capsys, "workspace", "list", "--context", EMULATOR_CONTEXT)[1]
        == "no workspaces found\n"
    )
    put_ws(cluster, tau_workspace())
    code, out, _ = run(capsys, "workspace", "list", "-o", "json", "--context", EMULATOR_CONTEXT)
    doc = json.loads(out)
    assert code == 0 and doc["items"][0]["resolved"]["localQueue"] == "team-a-queue"


def test_status_text_and_json(cluster: KubeApiServer, capsys) -> None:
    put_ws(cluster, tau_workspace())
    code, out, _ = run(capsys, "workspace", "status", "team-a", "--context", EMULATOR_CONTEXT)
    assert code == 0
    assert out.startswith("Workspace: team-a\n  phase:          Ready\n")
    assert "  queue:          team-a-queue" in out and "Conditions:" in out
    assert "RBACReady" in out
    code, out, _ = run(
        capsys, "workspace", "status", "team-a", "-o", "json", "--context", EMULATOR_CONTEXT
    )
    doc = json.loads(out)
    assert doc["resolved"] == {
        "namespace": "team-a-ns",
        "localQueue": "team-a-queue",
        "serviceAccount": "tau-runner",
    }
    assert doc["metadata"]["name"] == "team-a"


def test_bad_output_format_is_a_usage_error(cluster: KubeApiServer, capsys) -> None:
    code, _, err = run(capsys, "workspace", "list", "-o", "yaml", "--context", EMULATOR_CONTEXT)
    assert code == 1 and "error: --output must be one of: table, json" in err


def test_check_ready_exits_zero(cluster: KubeApiServer, capsys) -> None:
    put_ws(cluster, tau_workspace())
    code, out, _ = run(capsys, "workspace", "check", "team-a", "--context", EMULATOR_CONTEXT)
    assert code == 0 and 'workspace "team-a" is Ready' in out


def test_check_fails_when_the_caller_lacks_the_workspace_permissions(
    cluster: KubeApiServer, capsys
) -> None:
    """Ready for the workspace's subject is not usable by a caller RBAC does not bind: the
    check names what is missing, where, and who grants it, as `tau run` would."""
    ws = tau_workspace()
    ws["spec"]["authorization"] = {"mode": "workspace-rbac"}
    ws["spec"]["role"] = "tau-researcher-v1"
    put_ws(cluster, ws)
    cluster.deny_access("create", "jobs", group="batch", namespace="team-a-ns")
    cluster.deny_access("get", "pods", subresource="log")
    code, out, err = run(capsys, "workspace", "check", "team-a", "--context", EMULATOR_CONTEXT)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        'error: workspace "team-a" is missing 2 permission(s) in namespace "team-a-ns": '
        "create jobs.batch, get pods/log",
        "  hint: the TauWorkspace owner (your platform operator) grants them by binding role "
        'tau-researcher-v1 to your identity in namespace "team-a-ns"; tau cannot work around RBAC',
    ]
    code, out, _ = run(
        capsys, "workspace", "check", "team-a", "--context", EMULATOR_CONTEXT, "-o", "json"
    )
    doc = json.loads(out)
    assert code == 1 and doc["ready"] is False and doc["phase"] == "Ready"
    assert doc["reason"].startswith('workspace "team-a" is missing 2 permission(s)')


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"phase": "Degraded"}, "(phase=Degraded)"),
        ({"stale": True}, "observedGeneration 0 != generation 1"),
    ],
)
def test_check_not_ready_exits_non_zero(cluster: KubeApiServer, capsys, kwargs, fragment) -> None:
    stale = kwargs.pop("stale", False)
    put_ws(cluster, tau_workspace(**kwargs), stale=stale)
    code, _, err = run(capsys, "workspace", "check", "team-a", "--context", EMULATOR_CONTEXT)
    assert code == 1
    assert err.startswith('error: workspace "team-a" is not Ready') and fragment in err


def pvc(phase: str | None) -> dict:
    obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "training-data", "namespace": "team-a-ns"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "1Gi"}}},
    }
    if phase:
        obj["status"] = {"phase": phase}
    return obj


def test_check_data_pvc_warns_when_missing_or_unbound(cluster: KubeApiServer, capsys) -> None:
    put_ws(cluster, tau_workspace())
    argv = (
        "workspace",
        "check",
        "team-a",
        "--data-pvc",
        "training-data",
        "--context",
        EMULATOR_CONTEXT,
    )
    code, _, err = run(capsys, *argv)
    assert code == 0 and 'warning: PVC "training-data" not found in namespace "team-a-ns"' in err
    cluster.put(pvc("Pending"))
    code, _, err = run(capsys, *argv)
    assert code == 0 and "is Pending, not Bound" in err
    cluster.set_status(
        "v1", "PersistentVolumeClaim", "training-data", {"phase": "Bound"}, "team-a-ns"
    )
    code, _, err = run(capsys, *argv)
    assert code == 0 and "warning" not in err


def test_check_data_pvc_forbidden_is_a_failure(cluster: KubeApiServer, capsys) -> None:
    put_ws(cluster, tau_workspace())
    cluster.deny(403, path_prefix="/api/v1/namespaces/team-a-ns/persistentvolumeclaims")
    code, _, err = run(
        capsys,
        "workspace",
        "check",
        "team-a",
        "--data-pvc",
        "training-data",
        "--context",
        EMULATOR_CONTEXT,
    )
    assert code == 3 and "403 Forbidden" in err


def test_missing_workspace_is_a_plain_not_found(cluster: KubeApiServer, capsys) -> None:
    code, _, err = run(capsys, "workspace", "status", "nope", "--context", EMULATOR_CONTEXT)
    assert code == 1
    assert err.startswith('error: TauWorkspace "nope" not found in namespace "tau-system"')
    assert "tau workspace list" in err


def test_missing_crd_says_what_to_install(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    for argv in (("list",), ("status", "team-a")):
        code, _, err = run(capsys, "workspace", *argv, "--context", EMULATOR_CONTEXT)
        assert code == 3
        assert err.startswith("error: TauWorkspace CRD not installed: is TauGrid installed?")
        assert "Traceback" not in err


def test_unauthorized_names_the_request_and_who_to_ask(cluster: KubeApiServer, capsys) -> None:
    cluster.require_token("another-token")
    code, _, err = run(capsys, "workspace", "list", "--context", EMULATOR_CONTEXT)
    assert code == 3
    assert "401 Unauthorized" in err and "list workspaces.tau.azure.com" in err
    assert "emulator-token" not in err  # the credential is never echoed


def test_forbidden_names_verb_resource_namespace(cluster: KubeApiServer, capsys) -> None:
    cluster.deny(403, path_prefix=WS_PATH)
    code, _, err = run(capsys, "workspace", "list", "--context", EMULATOR_CONTEXT)
    assert code == 3
    assert err.startswith(
        "error: you are not allowed to list workspaces.tau.azure.com in "
        'namespace "tau-system" on context "emulator" (403 Forbidden)'
    )
    assert "platform operator" in err


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_is_plain(tmp_path: Path, monkeypatch, capsys) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "down",
                "clusters": [
                    {"name": "down", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}
                ],
                "users": [{"name": "down", "user": {"token": "t"}}],
                "contexts": [{"name": "down", "context": {"cluster": "down", "user": "down"}}],
            }
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    code, _, err = run(capsys, "workspace", "list")
    assert code == 3
    assert err.startswith(
        'error: connection to the Kubernetes API server for context "down" was refused'
    )
    assert "Traceback" not in err and "urllib3" not in err


DESCRIPTOR = """\
schema: tau.workspace.connection.v1
workspace: team-a
cluster:
  contextName: emulator
access:
  method: kubeconfig
authorization:
  mode: cluster-wide
requirements:
  minTauVersion: 0.1.0
"""


def make_repo(root: Path) -> Path:
    (root / ".git").mkdir(parents=True)
    (root / RELATIVE_PATH).parent.mkdir()
    (root / RELATIVE_PATH).write_text(DESCRIPTOR)
    return root


def test_repository_flow_trust_then_check_the_descriptors_workspace(
    cluster: KubeApiServer, tmp_path: Path, monkeypatch, capsys
) -> None:
    put_ws(cluster, tau_workspace())
    repo = make_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    # No terminal under pytest: the first cluster use asks to be confirmed explicitly.
    code, _, err = run(capsys, "workspace", "check")
    assert code == 1
    assert "workspace connection requires interactive review" in err
    assert "tau workspace connection --trust" in err
    code, out, _ = run(capsys, "workspace", "connection")
    assert code == 0 and "Workspace connection configuration is valid." in out
    assert "Trusted:          no" in out and "Cluster access was not checked." in out
    code, out, _ = run(capsys, "workspace", "connection", "--trust", "--live")
    assert code == 0 and out.startswith("Connected.")
    assert "Namespace:        team-a-ns" in out and "Queue:            team-a-queue" in out
    kubeconfigs = list((tmp_path / "cfg" / "kubeconfigs").glob("emulator-*.yaml"))
    assert len(kubeconfigs) == 1 and stat.S_IMODE(kubeconfigs[0].stat().st_mode) == 0o600
    code, out, _ = run(capsys, "workspace", "check")
    assert code == 0 and 'workspace "team-a" is Ready' in out
    code, out, _ = run(capsys, "workspace", "connection", "-o", "json")
    assert json.loads(out)["trusted"] is True


def test_resolve_namespace_and_queue_from_the_connection(
    cluster: KubeApiServer, tmp_path: Path, monkeypatch
) -> None:
    from tau.connection.activate import activate
    from tau.errors import UsageError
    from tau.workspaces.lookup import resolve_namespace_and_queue
    from tau.workspaces.target import NO_NAMESPACE, WorkspaceNotReady

    repo = make_repo(tmp_path / "repo")
    conn = activate(repo, trust=True)
    put_ws(cluster, tau_workspace())
    target = resolve_namespace_and_queue(conn)
    assert (target.namespace, target.queue) == ("team-a-ns", "team-a-queue")
    put_ws(cluster, tau_workspace(phase="Pending"))
    with pytest.raises(WorkspaceNotReady):
        resolve_namespace_and_queue(conn)
    direct = activate(tmp_path, context=EMULATOR_CONTEXT)
    assert resolve_namespace_and_queue(direct, namespace="ns1").namespace == "ns1"
    with pytest.raises(UsageError) as info:
        resolve_namespace_and_queue(direct, discover_primary=False)
    assert info.value.message == NO_NAMESPACE
    put_ws(
        cluster,
        tau_workspace(
            "primary",
            namespace="p-ns",
            queue="p-q",
            annotations={"tau.azure.com/v0-primary-workspace": "true"},
        ),
    )
    assert resolve_namespace_and_queue(direct).namespace == "p-ns"


def test_offline_imports_do_not_load_kubernetes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    code = (
        "import sys\n"
        "import tau.cli, tau.cli.workspace, tau.connection\n"
        "import tau.kube.errors, tau.workspaces.report\n"
        "from tau.cli import main\n"
        "assert main(['workspace', 'connection']) == 0\n"
        "assert main(['workspace', '--help']) in (0, None)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('kubernetes', 'azure'))\n"
        "print('LOADED', loaded)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        capture_output=True,
        text=True,
        env={"TAU_CONFIG_DIR": str(tmp_path / "cfg"), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "LOADED []" in result.stdout


def test_a_changed_workspace_contract_needs_review(
    cluster: KubeApiServer, tmp_path: Path, monkeypatch, capsys
) -> None:
    from tau.connection.activate import TrustRequired, activate
    from tau.workspaces.lookup import resolve_namespace_and_queue

    repo = make_repo(tmp_path / "repo")
    put_ws(cluster, tau_workspace())
    resolve_namespace_and_queue(activate(repo, trust=True))  # pins uid, namespace, queue
    put_ws(cluster, tau_workspace(queue="moved-queue"))
    with pytest.raises(TrustRequired, match='queue changed from "team-a-queue" to "moved-queue"'):
        resolve_namespace_and_queue(activate(repo))
    monkeypatch.chdir(repo)
    code, out, _ = run(capsys, "workspace", "connection", "--trust", "--live")
    assert code == 0 and "Queue:            moved-queue" in out
    assert resolve_namespace_and_queue(activate(repo)).queue == "moved-queue"


def test_lifecycle_outside_a_repository_needs_context_or_namespace(tmp_path: Path) -> None:
    from tau.connection.activate import require_explicit_outside_repo
    from tau.errors import UsageError

    with pytest.raises(UsageError) as info:
        require_explicit_outside_repo(tmp_path, None, None, {})
    assert info.value.message == (
        "lifecycle commands outside a Git repository require explicit --context or --namespace"
    )
    require_explicit_outside_repo(tmp_path, "ctx", None, {})
    require_explicit_outside_repo(tmp_path, None, "ns", {})
    require_explicit_outside_repo(tmp_path, None, None, {"TAU_CONTEXT": "c"})
    (tmp_path / ".git").mkdir()
    require_explicit_outside_repo(tmp_path, None, None, {})
