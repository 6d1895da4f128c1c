"""The API server is reached through the proxy kubectl would use: HTTPS_PROXY / HTTP_PROXY /
NO_PROXY as Go's ProxyFromEnvironment reads them, the kubeconfig's proxy-url first; https through
a CONNECT tunnel, http with the absolute URI; a proxy's refusal said plainly, its password never.
"""

from __future__ import annotations

import base64
import ssl
from pathlib import Path
from typing import Any

import pytest
from connect_proxy import ConnectProxy
from test_cli_read_requests import cluster  # noqa: F401 (the fixture: a Job with a log)
from test_kube_transport import OK, Scripted, _certificates

from tau.errors import ClusterError
from tau.kube import proxy
from tau.kube.direct import DirectClient
from tau.kube.transport import Pool, TransportError

HTTPS = "https://api.example.com:6443"


@pytest.mark.parametrize(
    ("server", "no_proxy", "proxied"),
    [
        (HTTPS, "", True),
        ("https://localhost:6443", "", False),  # Go never proxies localhost
        ("https://127.0.0.9:6443", "", False),  # nor a loopback address
        ("https://[::1]:6443", "", False),
        (HTTPS, "*", False),
        (HTTPS, "example.com", False),  # a domain matches itself and the names below it
        ("https://example.com", "example.com", False),
        ("https://notexample.com", "example.com", True),
        (HTTPS, ".example.com", False),
        ("https://example.com", ".example.com", True),  # a leading dot: only names below
        (HTTPS, "*.example.com", False),
        (HTTPS, "api.example.com:6443", False),  # with the port
        (HTTPS, "api.example.com:443", True),  # another port
        ("https://10.1.2.3", "10.0.0.0/8", False),  # CIDR
        ("https://10.1.2.3", "10.1.2.3", False),
        ("https://11.1.2.3", "10.0.0.0/8", True),
        ("https://[2001:db8::1]:6443", "2001:db8::/32", False),
        (HTTPS, " other.org , EXAMPLE.COM ", False),  # spaces and case
        (HTTPS, "other.org,,", True),
    ],
)
def test_no_proxy_is_read_as_go_reads_it(server: str, no_proxy: str, proxied: bool) -> None:
    env = {"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": no_proxy}
    assert (proxy.for_server(server, env) is not None) is proxied


def test_the_scheme_picks_the_variable_and_upper_case_wins() -> None:
    env = {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2", "HTTP_PROXY": "plain:3"}
    assert proxy.for_server(HTTPS, env) == proxy.Proxy("up", 2)
    assert proxy.for_server("http://api.example.com", env) == proxy.Proxy("plain", 3)
    assert proxy.for_server("http://api.example.com", {"no_proxy": "*", **env}) is None
    assert proxy.for_server(HTTPS, {}) is None


def test_the_kubeconfig_proxy_url_wins_over_the_environment() -> None:
    env = {"HTTPS_PROXY": "http://env:1", "NO_PROXY": "*"}
    assert proxy.for_server(HTTPS, env, "http://kc:8080") == proxy.Proxy("kc", 8080)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("socks5://p:1080", "socks5:// is not supported"),
        ("http://:3128", "is not a proxy address"),
        ("http://user:s3cret@p:notaport", "is not a proxy address"),
    ],
)
def test_an_unusable_proxy_is_a_clear_error_without_its_password(value: str, words: str) -> None:
    with pytest.raises(ClusterError) as caught:
        proxy.for_server(HTTPS, {"HTTPS_PROXY": value})
    text = f"{caught.value} {caught.value.hint}"
    assert words in text and "HTTPS_PROXY" in text and "s3cret" not in text


def _tls_server(tmp_path: Path) -> tuple[Scripted, ssl.SSLContext]:
    ca, cert, key = _certificates(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    client = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    client.load_verify_locations(cadata=ca.decode())
    return Scripted([OK, OK, OK], tls), client


def _port(server: Scripted) -> int:
    return int(server.url.rsplit(":", 1)[1])


def test_https_goes_through_a_connect_tunnel_with_its_credentials(tmp_path: Path) -> None:
    server, client = _tls_server(tmp_path)
    token = base64.b64encode(b"alice:pa ss").decode()
    relay = ConnectProxy(("127.0.0.1", _port(server)), credentials=f"Basic {token}")
    try:
        # apiserver.test resolves nowhere: only the proxy can reach it.
        via = proxy.parse(f"http://alice:pa%20ss@127.0.0.1:{relay.port}", source="t")
        pool = Pool("https://apiserver.test:6443", client, proxy=via)
        answers = [pool.request("GET", "/api", body=None, headers={}, timeout=5).data]
        answers.append(pool.request("GET", "/api", body=None, headers={}, timeout=5).data)
        assert answers == [b"{}", b"{}"]
        assert len(relay.seen) == 1  # one tunnel, kept alive
        assert relay.seen[0].startswith("CONNECT apiserver.test:6443 HTTP/1.")
        assert server.requests[0].startswith(b"GET /api HTTP/1.1\r\nHost: apiserver.test:6443")
    finally:
        relay.close()
        server.close()


def test_a_proxy_that_refuses_is_named_without_its_password(tmp_path: Path) -> None:
    server, client = _tls_server(tmp_path)
    relay = ConnectProxy(("127.0.0.1", _port(server)), credentials="Basic other")
    try:
        via = proxy.parse(f"http://bob:hunter2@127.0.0.1:{relay.port}", source="t")
        pool = Pool("https://apiserver.test:6443", client, proxy=via)
        with pytest.raises(TransportError) as caught:
            pool.request("GET", "/api", body=None, headers={}, timeout=5)
        text = str(caught.value)
        assert "407" in text and f"http://127.0.0.1:{relay.port}" in text
        assert "hunter2" not in text and len(relay.seen) == 1  # refused once, not retried
    finally:
        relay.close()
        server.close()


def test_plain_http_is_asked_with_the_absolute_uri() -> None:
    server = Scripted([OK])
    relay = ConnectProxy(("127.0.0.1", _port(server)))
    try:
        via = proxy.parse(relay.url, source="t")
        pool = Pool("http://apiserver.test:8080", None, proxy=via)
        assert pool.request("GET", "/api", body=None, headers={}, timeout=5).data == b"{}"
        assert relay.seen == ["GET http://apiserver.test:8080/api HTTP/1.1"]
    finally:
        relay.close()
        server.close()


def test_the_lean_session_reads_the_environment_as_kubectl_does(tmp_path: Path) -> None:
    server, _ = _tls_server(tmp_path)
    relay = ConnectProxy(("127.0.0.1", _port(server)))
    ca = tmp_path / "ca.pem"
    ca.write_bytes(_certificates(tmp_path)[0])
    try:
        cluster: dict[str, Any] = {"server": "https://apiserver.test:6443"}
        env = {"HTTPS_PROXY": relay.url}
        assert DirectClient(cluster, {"token": "t"}, env)._pool.proxy == proxy.Proxy(
            "127.0.0.1", relay.port
        )
        assert (
            DirectClient(cluster, {"token": "t"}, {**env, "NO_PROXY": ".test"})._pool.proxy is None
        )
    finally:
        relay.close()
        server.close()


def test_the_official_client_is_pointed_at_the_same_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    from tau.kube import client as kube_client

    class Configuration:
        proxy = None
        proxy_headers = None

    config = {
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": HTTPS}}],
        "users": [{"name": "u", "user": {"exec": {"command": "kubelogin"}}}],
    }
    monkeypatch.setenv("HTTPS_PROXY", "http://u:p@proxy.corp:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    configuration = Configuration()
    kube_client._proxy(configuration, config, "c")
    assert configuration.proxy == "http://proxy.corp:3128"
    assert configuration.proxy_headers == {"Proxy-Authorization": "Basic dTpw"}
    monkeypatch.setenv("NO_PROXY", "example.com")
    configuration = Configuration()
    kube_client._proxy(configuration, config, "c")
    assert configuration.proxy is None


def test_tau_reaches_the_cluster_through_the_proxy_of_its_environment(
    cluster,  # noqa: F811 (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A researcher behind a proxy: the kubeconfig names the API server by a host only the proxy
    can reach, and `tau run logs` reads through it as kubectl would."""
    import os

    import yaml

    from tau import cli

    cluster.reset_requests()
    path = Path(os.environ["KUBECONFIG"])
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://kubeapi.test:{cluster.port}"
    path.write_text(yaml.safe_dump(config))
    relay = ConnectProxy(("127.0.0.1", cluster.port))
    try:
        monkeypatch.setenv("HTTP_PROXY", relay.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        assert cli.main(["run", "logs", "done", "-n", "team", "--context", "emulator"]) == 0
        # Every request the verb made reached the API server through the proxy, the log too.
        made = [f"{r.method} {r.path}" for r in cluster.requests]
        assert "GET /api/v1/namespaces/team/pods/done-0/log" in made
        assert len(relay.seen) == len(made)
        assert all(line.startswith("GET http://kubeapi.test:") for line in relay.seen)
    finally:
        relay.close()
