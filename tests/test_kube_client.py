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
    assert client.host == "https://dedicated.example"


def test_unknown_context_is_a_cluster_error(tmp_path: Path) -> None:
    with pytest.raises(ClusterError, match='cannot use kubeconfig context "nope"'):
        api_client(kubeconfig(tmp_path / "k", "https://x.example"), "nope")


def test_writes_ask_for_strict_field_validation(kube_api, kube_client) -> None:
    """As kubectl does: an unknown field is the server's error, never silently dropped."""
    from tau.k8s.kinds import BY_KIND
    from tau.kube import resources

    kube_api.register_kueue_kuberay_tau_kinds()
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "t"}}
    ray = {"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r", "namespace": "t"}}
    resources.create(kube_client, BY_KIND["Job"], job, namespace="t", dry_run=True)
    resources.create(kube_client, BY_KIND["RayJob"], ray, namespace="t")
    writes = [r for r in kube_api.requests if r.method == "POST"]
    assert [(r.path, r.query.get("fieldValidation")) for r in writes] == [
        ("/apis/batch/v1/namespaces/t/jobs", "Strict"),
        ("/apis/ray.io/v1/namespaces/t/rayjobs", "Strict"),
    ]
    assert writes[0].query.get("dryRun") == "All"
