"""A researcher behind a proxy reaches the real API server as kubectl would: through
`HTTPS_PROXY`'s CONNECT tunnel, and not through it for a host `NO_PROXY` names.

The kubeconfig names the API server by a host that resolves nowhere (its certificate's
`kubernetes` name checked through `tls-server-name`): only a proxy on loopback, which sends every
tunnel to the real API server, can reach it. The proxy runs in this process.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from tests.connect_proxy import ConnectProxy
from tests.e2e.conftest import Shell

pytestmark = pytest.mark.e2e

HOST = "kube-apiserver.proxied.test"


def proxied_kubeconfig(source: Path, target: Path) -> int:
    """A copy of `source` whose clusters name the API server as HOST; returns its port."""
    config: dict[str, Any] = yaml.safe_load(source.read_text())
    port = 0
    for entry in config["clusters"]:
        cluster = entry["cluster"]
        parts = urlsplit(cluster["server"])
        port = int(parts.port or 443)
        cluster["server"] = f"https://{HOST}:{port}"
        cluster["tls-server-name"] = "kubernetes"  # a name the serving certificate holds
    target.write_text(yaml.safe_dump(config))
    return port


def test_the_api_server_is_reached_through_the_proxy_and_no_proxy_is_honoured(
    researcher: Any, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    port = proxied_kubeconfig(researcher.kubeconfig, kubeconfig)
    relay = ConnectProxy(("127.0.0.1", port))
    env = {
        **researcher.admin_env,
        "KUBECONFIG": str(kubeconfig),
        "TAU_CONFIG_DIR": str(tmp_path / "cfg"),
        "HTTPS_PROXY": relay.url,
        "NO_PROXY": "example.org,10.0.0.0/8",
    }
    env.pop("TAU_CONTEXT", None)
    shell = Shell(env, tmp_path)
    args = ("run", "list", "-n", researcher.namespace, "--context", researcher.context)
    try:
        shell.ok(*args)
        assert relay.seen and all(line.startswith(f"CONNECT {HOST}:{port} ") for line in relay.seen)
        # The same command with the host exempted goes direct, where the name resolves nowhere.
        direct = Shell({**env, "NO_PROXY": ".proxied.test"}, tmp_path)
        seen = len(relay.seen)
        proc = direct.tau(*args)
        assert proc.returncode != 0 and "does not resolve" in proc.stderr, proc.stderr
        assert len(relay.seen) == seen and "Traceback" not in proc.stderr
    finally:
        relay.close()
