"""Pytest fixtures: a started emulator, a kubeconfig pointing at it, and an official ApiClient.

Loaded for the whole suite through ``pytest_plugins`` in ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config

from .server import KubeApiServer

EMULATOR_CONTEXT = "emulator"
EMULATOR_TOKEN = "emulator-token"


@pytest.fixture
def kube_api() -> Iterator[KubeApiServer]:
    server = KubeApiServer().start()
    try:
        yield server
    finally:
        server.stop()
    assert not server.internal_errors, f"the emulator failed internally: {server.internal_errors}"


def write_kubeconfig(server: KubeApiServer, path: Path, token: str = EMULATOR_TOKEN) -> Path:
    """Write a kubeconfig whose ``emulator`` context targets ``server`` with a bearer token."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": EMULATOR_CONTEXT, "cluster": {"server": server.url}}],
        "users": [{"name": EMULATOR_CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": EMULATOR_CONTEXT,
                "context": {
                    "cluster": EMULATOR_CONTEXT,
                    "user": EMULATOR_CONTEXT,
                    "namespace": "default",
                },
            }
        ],
        "current-context": EMULATOR_CONTEXT,
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def api_client_for(server: KubeApiServer, tmp_path: Path) -> client.ApiClient:
    """An official ApiClient for a server a test started itself (e.g. with an injected clock)."""
    kubeconfig = write_kubeconfig(server, tmp_path / f"kubeconfig-{server.port}")
    return config.new_client_from_config(config_file=str(kubeconfig), context=EMULATOR_CONTEXT)


@pytest.fixture
def kubeconfig_file(kube_api: KubeApiServer, tmp_path: Path) -> Path:
    return write_kubeconfig(kube_api, tmp_path / "kubeconfig")


@pytest.fixture
def kube_client(kubeconfig_file: Path) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(
        config_file=str(kubeconfig_file), context=EMULATOR_CONTEXT
    )
    try:
        yield api_client
    finally:
        api_client.close()


def point_shell_at(
    kubeconfig: Path, work: Path, config_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell in `work` whose kubeconfig is `kubeconfig`, with a private tau config folder and
    no TAU_CONTEXT or TAU_SYSTEM_NAMESPACE from the test's own environment."""
    work.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(config_dir))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    monkeypatch.delenv("TAU_SYSTEM_NAMESPACE", raising=False)


def researcher_shell(
    server: KubeApiServer, kubeconfig: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> KubeApiServer:
    """The emulator with the Tau kinds installed, and a researcher's shell at it, working in a
    fresh folder `tmp_path/work`."""
    server.register_kueue_kuberay_tau_kinds()
    point_shell_at(kubeconfig, tmp_path / "work", tmp_path / "cfg", monkeypatch)
    return server


@pytest.fixture
def emulator_env(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """`tmp_path` as the working directory, with tau pointed at the emulator (its Kueue, KubeRay
    and Tau kinds registered): $KUBECONFIG, a private $TAU_CONFIG_DIR (`tmp_path/cfg`), no
    $TAU_CONTEXT.
    """
    kube_api.register_kueue_kuberay_tau_kinds()
    point_shell_at(kubeconfig_file, tmp_path, tmp_path / "cfg", monkeypatch)
    return tmp_path
