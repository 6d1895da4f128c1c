"""No command writes the user's kubeconfig: every cluster root goes through tau's own copy.

The user's kubeconfig authenticates through an exec credential plugin whose token expires at
once, so the client refreshes it on every request — the situation in which a client built on
the user's file (persist_config) writes refreshed credentials back into it.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time

import pytest
import yaml

from tau.cli import main
from tests.kubeapi.fixtures import EMULATOR_CONTEXT, EMULATOR_TOKEN
from tests.kubeapi.kubelet import FakeKubelet
from tests.test_workspace_objects import tau_workspace

CREDENTIAL = {
    "apiVersion": "client.authentication.k8s.io/v1beta1",
    "kind": "ExecCredential",
    # Already expired: a client that caches or persists tokens must refresh it.
    "status": {"token": EMULATOR_TOKEN, "expirationTimestamp": "2000-01-01T00:00:00Z"},
}


@pytest.fixture
def user_kubeconfig(kube_api, tmp_path, monkeypatch):
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(CREDENTIAL))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    path = tmp_path / "home" / ".kube" / "config"
    path.parent.mkdir(parents=True)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": EMULATOR_CONTEXT, "cluster": {"server": kube_api.url}}],
        "users": [
            {
                "name": EMULATOR_CONTEXT,
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": str(plugin),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
        "contexts": [
            {
                "name": EMULATOR_CONTEXT,
                "context": {"cluster": EMULATOR_CONTEXT, "user": EMULATOR_CONTEXT},
            }
        ],
        "current-context": EMULATOR_CONTEXT,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    # An mtime in the past, so a rewrite within the same second would still show.
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    monkeypatch.setenv("KUBECONFIG", str(path))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    monkeypatch.delenv("TAU_REGISTRY", raising=False)
    return path


def test_no_cluster_root_writes_the_users_kubeconfig(user_kubeconfig, kube_api, tmp_path, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(tau_workspace("vision", namespace="vision-team", queue="vision-q", generation=1))
    (tmp_path / "pvc").mkdir()
    before = (user_kubeconfig.read_bytes(), user_kubeconfig.stat().st_mtime_ns)
    ctx = ["--context", EMULATOR_CONTEXT]
    commands = [
        ["run", "list", "--workspace", "vision", *ctx],
        ["run", "status", "nothing", "-n", "vision-team", *ctx],
        ["workspace", "list", *ctx],
        ["workspace", "status", "vision", *ctx],
        ["serve", "status", "chat", "-n", "serving", *ctx],
        ["serve", "status", "chat", "-n", "serving"],
        ["data", "dataset", "list", "--registry", "pvc", "-n", "vision-team", *ctx],
        ["data", "dataset", "list", "--registry", "pvc", "-n", "vision-team"],
    ]
    codes = []
    with FakeKubelet(kube_api, tmp_path / "pvc"):
        for args in commands:
            codes.append(main(args))
            err = capsys.readouterr().err
            assert "Traceback" not in err
            # Each command reached the emulator, never stopped at the kubeconfig.
            assert "kubeconfig" not in err, (args, err)
    # `run status` of a missing run exits 1, `serve status` of a missing service 3.
    assert codes == [0, 1, 0, 0, 3, 3, 0, 0], codes
    assert (user_kubeconfig.read_bytes(), user_kubeconfig.stat().st_mtime_ns) == before
    assert list(user_kubeconfig.parent.iterdir()) == [user_kubeconfig]
