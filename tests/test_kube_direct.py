"""The lean session: which kubeconfigs it serves, and that it answers like the official client."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.errors import ClusterError
from tau.k8s.kinds import JOB, NODE, POD, RAYJOB
from tau.kube import resources, rest
from tau.kube.client import api_client
from tau.kube.direct import DirectClient, entries
from tests.kubeapi.fixtures import EMULATOR_CONTEXT


def config(cluster: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    users = [{"name": "u", "user": user}] if user is not None else []
    context: dict[str, Any] = {"cluster": "k", **({"user": "u"} if user is not None else {})}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "k", "cluster": cluster}],
        "users": users,
        "contexts": [{"name": "c", "context": context}],
    }


SERVER = {"server": "https://k.example"}


@pytest.mark.parametrize(
    "user",
    [
        {"token": "t"},
        {"tokenFile": "/var/run/token"},
        {"client-certificate": "/c.pem", "client-key": "/k.pem"},
        {"client-certificate-data": "Yw==", "client-key-data": "aw=="},
        None,
    ],
)
def test_static_credentials_are_served_by_the_lean_session(user: dict[str, Any] | None) -> None:
    assert entries(config(SERVER, user), "c") is not None


@pytest.mark.parametrize(
    ("cluster", "user"),
    [
        (SERVER, {"exec": {"command": "kubelogin", "apiVersion": "v1"}}),
        (SERVER, {"auth-provider": {"name": "oidc"}}),
        (SERVER, {"username": "u", "password": "p"}),
        ({}, {"token": "t"}),
    ],
)
def test_plugins_providers_and_passwords_go_to_the_official_client(
    cluster: dict[str, Any], user: dict[str, Any]
) -> None:
    assert entries(config(cluster, user), "c") is None


def test_an_unknown_context_is_left_to_the_official_client_and_its_error(tmp_path: Path) -> None:
    path = tmp_path / "k"
    path.write_text(yaml.safe_dump(config(SERVER, {"token": "t"})))
    assert entries(yaml.safe_load(path.read_text()), "nope") is None
    with pytest.raises(ClusterError, match='cannot use kubeconfig context "nope"'):
        api_client(path, "nope")


def test_an_exec_plugin_user_gets_the_official_client(tmp_path: Path) -> None:
    from kubernetes.client import ApiClient

    path = tmp_path / "k"
    exec_user = {"exec": {"command": "true", "apiVersion": "client.authentication.k8s.io/v1"}}
    path.write_text(yaml.safe_dump({**config(SERVER, exec_user), "current-context": "c"}))
    assert isinstance(api_client(path, "c"), ApiClient)


def test_a_client_certificate_given_inline_is_loaded(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
         "/CN=tau-test", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    inline = {
        "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
        "client-key-data": base64.b64encode(key.read_bytes()).decode(),
    }
    cluster = {**SERVER, "certificate-authority-data": inline["client-certificate-data"]}
    assert DirectClient(cluster, inline).host == "https://k.example"
    # A broken certificate is not silently dropped: the official client reports it instead.
    path = tmp_path / "k"
    broken = {**inline, "client-key-data": base64.b64encode(b"not a key").decode()}
    path.write_text(yaml.safe_dump(config(cluster, broken)))
    assert not isinstance(api_client(path, "c"), DirectClient)


def test_paths_follow_the_api_layout() -> None:
    assert rest.path(POD, "team", "p-0", "log") == "/api/v1/namespaces/team/pods/p-0/log"
    assert rest.path(JOB, "team") == "/apis/batch/v1/namespaces/team/jobs"
    assert rest.path(RAYJOB) == "/apis/ray.io/v1/rayjobs"  # every namespace
    assert rest.path(NODE, "team", "n 1") == "/api/v1/nodes/n%201"  # cluster-scoped


def test_the_lean_session_reads_writes_and_fails_like_the_official_one(
    kube_api, kubeconfig_file: Path
) -> None:
    lean = api_client(kubeconfig_file, EMULATOR_CONTEXT)
    assert isinstance(lean, DirectClient)
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "t"}}
    resources.create(lean, JOB, job, namespace="t")
    resources.patch(lean, JOB, "j", {"metadata": {"labels": {"a": "b"}}}, namespace="t")
    got = resources.get(lean, JOB, "j", namespace="t")
    assert got["metadata"]["labels"] == {"a": "b"}
    assert [j["metadata"]["name"] for j in resources.list_items(lean, JOB, namespace="t")] == ["j"]
    assert resources.find(lean, JOB, "ghost", namespace="t") is None
    with pytest.raises(ClusterError) as missing:
        resources.get(lean, JOB, "ghost", namespace="t")
    assert missing.value.status == 404 and missing.value.reason == "NotFound"
    assert resources.delete(lean, JOB, "j", namespace="t") is True
    assert resources.delete(lean, JOB, "j", namespace="t") is False


def test_a_rejected_token_is_a_401_cluster_error(kube_api, tmp_path: Path) -> None:
    from tests.kubeapi.fixtures import EMULATOR_TOKEN, write_kubeconfig

    kube_api.require_token(EMULATOR_TOKEN)
    lean = api_client(write_kubeconfig(kube_api, tmp_path / "k", token="wrong"), EMULATOR_CONTEXT)
    assert isinstance(lean, DirectClient)
    with pytest.raises(ClusterError) as caught:
        resources.list_items(lean, JOB, namespace="t")
    assert caught.value.status == 401 and "credentials" in caught.value.message


def test_a_token_file_is_read_on_every_request(kube_api, tmp_path: Path) -> None:
    from tests.kubeapi.fixtures import EMULATOR_TOKEN

    kube_api.require_token(EMULATOR_TOKEN)
    token = tmp_path / "token"
    token.write_text("stale\n")
    path = tmp_path / "k"
    path.write_text(yaml.safe_dump(config({"server": kube_api.url}, {"tokenFile": str(token)})))
    lean = api_client(path, "c")
    assert isinstance(lean, DirectClient)
    with pytest.raises(ClusterError):
        resources.list_items(lean, JOB, namespace="t")
    token.write_text(EMULATOR_TOKEN + "\n")  # rotated on disk, as a projected token is
    assert resources.list_items(lean, JOB, namespace="t") == []


class _Busy:
    """An API server that first answers `first` (with Retry-After: 0), then 200 with a list."""

    def __init__(self, first: int) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                outer.requests.append(self.command)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                busy = len(outer.requests) == 1
                body = json.dumps(
                    {"kind": "Status", "code": first, "message": "storage is (re)initializing"}
                    if busy
                    else {"kind": "JobList", "metadata": {}, "items": []}
                ).encode()
                self.send_response(first if busy else 200)
                if busy:
                    self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_read_answered_429_with_retry_after_is_retried_once() -> None:
    """An apiserver whose storage is (re)initializing answers 429 + Retry-After: a read waits
    and asks again, as the official client's connection pool does."""
    busy = _Busy(429)
    try:
        lean = DirectClient({"server": busy.url}, {"token": "t"})
        assert resources.list_items(lean, JOB, namespace="t") == []
        assert busy.requests == ["GET", "GET"]
    finally:
        busy.stop()


def test_a_create_answered_429_is_not_repeated() -> None:
    busy = _Busy(429)
    try:
        lean = DirectClient({"server": busy.url}, {"token": "t"})
        job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}}
        with pytest.raises(ClusterError) as caught:
            resources.create(lean, JOB, job, namespace="t")
        assert caught.value.status == 429 and busy.requests == ["POST"]
    finally:
        busy.stop()
