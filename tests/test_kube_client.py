"""The client factory reads only the dedicated kubeconfig it is given."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tau.errors import ClusterError
from tau.kube.client import api_client


def kubeconfig(path: Path, server: str, context: str = "c") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": context,
                "clusters": [{"name": "k", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": context, "context": {"cluster": "k", "user": "u"}}],
            }
        )
    )
    return path


def test_the_given_file_wins_over_kubeconfig_env(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig(tmp_path / "main", "https://main.example")))
    client = api_client(kubeconfig(tmp_path / "dedicated", "https://dedicated.example"), "c")
    assert client.configuration.host == "https://dedicated.example"


def test_unknown_context_is_a_cluster_error(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match='cannot use kubeconfig context "nope"'):
        api_client(kubeconfig(tmp_path / "k", "https://x.example"), "nope")
