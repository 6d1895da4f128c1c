"""A lifecycle read's connection is remembered while its inputs are unchanged, and only then.

The reads run against the local API emulator. Files a test writes are "settled" (their mtime
moved a minute back) where a memo should be written: one written less than a second before a
run is never trusted to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tau.cli import main
from tau.cli.reads import Place
from tau.connection import memo
from tau.connection.descriptor import RELATIVE_PATH
from tau.k8s.kinds import JOB
from tau.kube import resources
from tau.kube.direct import DirectClient
from tests.kubeapi.fixtures import EMULATOR_CONTEXT, write_kubeconfig
from tests.kubeapi.server import KubeApiServer
from tests.test_workspace_cli_e2e import DESCRIPTOR, put_ws
from tests.test_workspace_objects import tau_workspace

DIRECT = Place(namespace="team", context=EMULATOR_CONTEXT)


@pytest.fixture
def repo(emulator_env: Path, monkeypatch) -> Path:
    """A Git repository without a descriptor, its reads pointed at the emulator."""
    root = emulator_env / "repo"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    return root


def settle(root: Path) -> None:
    """Move every mtime under `root` a minute back, as if written long before the next run."""
    past = time.time() - 60
    for path in (root, *root.rglob("*")):
        os.utime(path, (past, past), follow_symlinks=False)


def memos(config: Path) -> list[Path]:
    return sorted((config / "memos").glob("*.json"))


def no_full_connection(monkeypatch) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the full connection ran")

    monkeypatch.setattr("tau.session.connect", refuse)


def test_a_read_connects_from_the_memo_while_nothing_changed(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer, monkeypatch
) -> None:
    first, namespace, system = (
        DIRECT.connect()
    )  # writes the dedicated kubeconfig: nothing is settled
    assert memos(tmp_path / "cfg") == []
    settle(tmp_path)
    DIRECT.connect()
    assert len(memos(tmp_path / "cfg")) == 1
    no_full_connection(monkeypatch)
    api, again, remembered = DIRECT.connect()
    assert isinstance(api, DirectClient) and again == namespace == "team"
    assert remembered == system  # where the TauWorkspaces are, for the kept-logs readers
    assert api.host == first.host and api.entries == first.entries
    kube_api.put({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"}, "spec": {}})
    kube_api.reset_requests()
    assert resources.list_items(api, JOB, namespace="team") == []
    assert kube_api.count_requests() == 1


def test_other_flags_or_another_directory_do_not_share_a_memo(
    repo: Path, tmp_path: Path, monkeypatch
) -> None:
    DIRECT.connect()
    settle(tmp_path)
    DIRECT.connect()
    other = Place(namespace="other", context=EMULATOR_CONTEXT)
    assert other.connect()[1] == "other"
    (repo / "sub").mkdir()
    monkeypatch.chdir(repo / "sub")
    DIRECT.connect()
    assert len(memos(tmp_path / "cfg")) == 3
    no_full_connection(monkeypatch)
    assert DIRECT.connect()[1] == "team"
    monkeypatch.chdir(repo)
    assert DIRECT.connect()[1] == "team" and other.connect()[1] == "other"


def test_a_changed_kubeconfig_is_read_again(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer, kubeconfig_file: Path
) -> None:
    DIRECT.connect()
    settle(tmp_path)
    DIRECT.connect()
    write_kubeconfig(kube_api, kubeconfig_file, token="rotated-token")
    api, _, _ = DIRECT.connect()
    assert api.entries[1] == {"token": "rotated-token"}


def test_files_written_just_before_a_run_are_not_remembered(repo: Path, tmp_path: Path) -> None:
    for _ in range(3):
        DIRECT.connect()
    assert memos(tmp_path / "cfg") == []


def test_an_unreadable_memo_is_a_miss(repo: Path, tmp_path: Path, monkeypatch) -> None:
    DIRECT.connect()
    settle(tmp_path)
    DIRECT.connect()
    for garbage in ("{", "[]", '{"schema": "tau.connection-memo.v1"}', "null"):
        memos(tmp_path / "cfg")[0].write_text(garbage)
        api, namespace, _ = DIRECT.connect()
        assert isinstance(api, DirectClient) and namespace == "team"


def test_a_connection_that_asked_the_cluster_is_not_remembered(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer
) -> None:
    """Without a namespace or a workspace, the primary workspace is looked up every time."""
    put_ws(kube_api, tau_workspace())
    place = Place(context=EMULATOR_CONTEXT)
    place.connect()
    settle(tmp_path)
    kube_api.reset_requests()
    assert place.connect()[1] == "team-a-ns"
    assert kube_api.count_requests() > 0 and memos(tmp_path / "cfg") == []


def test_the_workspace_connection_is_remembered_only_while_its_verification_is_fresh(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer, monkeypatch, capsys
) -> None:
    put_ws(kube_api, tau_workspace())
    (repo / RELATIVE_PATH).parent.mkdir()
    (repo / RELATIVE_PATH).write_text(DESCRIPTOR)
    assert main(["workspace", "connection", "--trust", "--live"]) == 0
    Place().connect()
    settle(tmp_path)
    Place().connect()
    kube_api.reset_requests()
    assert Place().connect()[1] == "team-a-ns" and kube_api.count_requests() == 0
    (recorded,) = memos(tmp_path / "cfg")
    start, end = json.loads(recorded.read_text())["fresh"]
    assert end - start == 300
    monkeypatch.setattr(memo, "time", SimpleNamespace(time=lambda: end))
    assert memo.recall(memo.key((None, None, None), os.environ), os.environ) is None
    monkeypatch.setattr(memo, "time", SimpleNamespace(time=lambda: start - 1))
    assert memo.recall(memo.key((None, None, None), os.environ), os.environ) is None
    monkeypatch.setattr(memo, "time", SimpleNamespace(time=lambda: start))
    assert memo.recall(memo.key((None, None, None), os.environ), os.environ) is not None
    capsys.readouterr()


@pytest.mark.parametrize("output", [[], ["-o", "json"]])
def test_a_status_read_loads_neither_yaml_nor_the_connection_layer_nor_rich(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer, output: list[str]
) -> None:
    """The point of the memo and of the plain view: `tau run status` of a connected place,
    printed to a pipe, parses no YAML and loads neither the descriptor's validator nor rich nor
    the official client.
    """
    kube_api.put({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a"}, "spec": {}})
    DIRECT.connect()
    settle(tmp_path)
    DIRECT.connect()
    probe = (
        "import json, sys\nfrom tau.cli import main\nmain(sys.argv[1:])\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    argv = ["run", "status", "a", "-n", "team", "--context", EMULATOR_CONTEXT, *output]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Job team/a" in proc.stdout or '"name": "a"' in proc.stdout
    modules = set(json.loads(proc.stdout.splitlines()[-1]))
    for package in (
        *("yaml", "tau.connection.activate", "tau.intent", "rich", "kubernetes"),
        # http.client is the lean session's HTTP (bench/transport_import.py: it costs less than
        # the 20 ms a hand-written framing would have to save to be kept).
        *("urllib3", "pydantic", "jinja2", "cyclopts"),
    ):
        assert not any(m == package or m.startswith(package + ".") for m in modules), package


def test_the_descriptors_system_namespace_finds_the_store_that_keeps_the_logs(
    repo: Path, tmp_path: Path, kube_api: KubeApiServer, capsys
) -> None:
    """A cluster whose TauWorkspaces live in the descriptor's `cluster.systemNamespace`: the
    connection carries it (fresh and from the memo), and a cancel keeps the attempt's logs
    in the store that workspace names, where `tau run logs` reads them once the Job is gone."""
    from tau.k8s import meta

    system, store = "platform-system", tmp_path / "store"
    store.mkdir()
    ws = tau_workspace(system_namespace=system, generation=1)
    ws["spec"]["experiments"] = {"store": str(store)}
    kube_api.put(ws)
    kube_api.set_status("tau.azure.com/v1alpha1", "TauWorkspace", "team-a", ws["status"], system)
    (repo / RELATIVE_PATH).parent.mkdir()
    (repo / RELATIVE_PATH).write_text(
        DESCRIPTOR.replace(
            "  contextName: emulator\n", f"  contextName: emulator\n  systemNamespace: {system}\n"
        )
    )
    assert main(["workspace", "connection", "--trust", "--live"]) == 0
    assert Place().connect().system_namespace == system
    settle(tmp_path)
    Place().connect()
    kube_api.reset_requests()
    assert Place().connect()[1:] == ("team-a-ns", system) and kube_api.count_requests() == 0

    job = kube_api.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "eval",
                "namespace": "team-a-ns",
                "labels": {meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE},
            },
            "spec": {},
            "status": {"failed": 1},
        }
    )
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "eval", "uid": job["metadata"]["uid"]}
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "eval-0",
                "namespace": "team-a-ns",
                "labels": {"job-name": "eval"},
                "ownerReferences": [owner],
            },
            "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {
                "phase": "Failed",
                "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": 1}}}],
            },
        }
    )
    kube_api.set_pod_log("eval-0", "loss went to nan\n", namespace="team-a-ns")
    capsys.readouterr()
    assert main(["run", "cancel", "eval", "--no-wait"]) == 0
    assert f"(1 container log(s)) in {store}\n" in capsys.readouterr().err
    assert (store / "runs" / "eval" / "logs" / "attempt-0" / "eval-0" / "main.log").is_file()
    kube_api.delete_object("v1", "Pod", "eval-0", namespace="team-a-ns")
    assert main(["run", "logs", "eval"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "loss went to nan\n"
    assert f"kept in {store} (its workload is gone)" in captured.err
