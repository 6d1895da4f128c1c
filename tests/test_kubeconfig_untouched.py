"""No command writes the user's kubeconfig: every cluster root goes through tau's own copy.

The user's kubeconfig authenticates through a credential the client must refresh: an exec
credential plugin whose token expires at once, or an OIDC auth-provider whose id-token has
expired (the client refreshes it at the issuer) — the situations in which a client built on the
user's file (persist_config) writes refreshed credentials back into it.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

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


def _jwt(expires: float) -> str:
    """An unsigned JWT with `exp`: the client reads only the expiry of an OIDC id-token."""

    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': int(expires), 'sub': 'researcher'})}.sig"


#: The id-token the issuer hands out on refresh; the API server then accepts only it.
FRESH_ID_TOKEN = _jwt(time.time() + 3600)


class _Issuer(BaseHTTPRequestHandler):
    """A minimal OIDC issuer: discovery document and a refresh-token grant."""

    def do_GET(self) -> None:
        host = f"http://{self.headers['Host']}"
        self._answer({"issuer": host, "token_endpoint": f"{host}/token"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer(
            {
                "access_token": "access",
                "token_type": "Bearer",
                "expires_in": 3600,
                "id_token": FRESH_ID_TOKEN,
                "refresh_token": "refresh-2",
            }
        )

    def _answer(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def oidc_issuer() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Issuer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _exec_user(tmp_path) -> dict[str, Any]:
    plugin = tmp_path / "credential-plugin"
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(CREDENTIAL))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": str(plugin),
            "interactiveMode": "Never",
        }
    }


def _oidc_user(issuer: str) -> dict[str, Any]:
    return {
        "auth-provider": {
            "name": "oidc",
            "config": {
                "client-id": "tau",
                "client-secret": "not-a-real-secret",
                "idp-issuer-url": issuer,
                "id-token": _jwt(time.time() - 3600),
                "refresh-token": "refresh-1",
            },
        }
    }


@pytest.fixture(params=["exec", "oidc"])
def user_kubeconfig(request, kube_api, tmp_path, monkeypatch):
    if request.param == "exec":
        user = _exec_user(tmp_path)
    else:
        user = _oidc_user(request.getfixturevalue("oidc_issuer"))
        # The local issuer speaks plain HTTP on loopback; oauthlib insists on HTTPS otherwise.
        monkeypatch.setenv("OAUTHLIB_INSECURE_TRANSPORT", "1")
        # Only the refreshed token opens the API: proof that the refresh happened.
        kube_api.require_token(FRESH_ID_TOKEN)
    path = tmp_path / "home" / ".kube" / "config"
    path.parent.mkdir(parents=True)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": EMULATOR_CONTEXT, "cluster": {"server": kube_api.url}}],
        "users": [{"name": EMULATOR_CONTEXT, "user": user}],
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
    # A name no object has exits 1: a missing run, a missing service alike.
    assert codes == [0, 1, 0, 0, 1, 1, 0, 0], codes
    assert (user_kubeconfig.read_bytes(), user_kubeconfig.stat().st_mtime_ns) == before
    assert list(user_kubeconfig.parent.iterdir()) == [user_kubeconfig]


@pytest.mark.parametrize("user_kubeconfig", ["oidc"], indirect=True)
def test_a_failed_oidc_refresh_is_a_plain_error(user_kubeconfig, kube_api, monkeypatch, capsys):
    # Without the loopback exception oauthlib refuses the refresh: tau must say so plainly.
    monkeypatch.delenv("OAUTHLIB_INSECURE_TRANSPORT")
    before = user_kubeconfig.read_bytes()
    code = main(["workspace", "list", "--context", EMULATOR_CONTEXT])
    err = capsys.readouterr().err
    assert code == 3 and "Traceback" not in err
    assert f'cannot sign in with kubeconfig context "{EMULATOR_CONTEXT}"' in err
    assert "InsecureTransportError" in err and "not-a-real-secret" not in err
    assert user_kubeconfig.read_bytes() == before
