"""Every pod a submit creates runs as the workspace's service account (or --service-account)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tests.test_workspace_objects import tau_workspace

ROOT = Path(__file__).resolve().parents[1]
PLACEHOLDER = "<unresolved-service-account>"


@pytest.fixture
def project(tmp_path, monkeypatch, kubeconfig_file):
    shutil.copytree(ROOT / "examples" / "tau", tmp_path / "tau")
    (tmp_path / "tau" / "workspace.connection.yaml").unlink(missing_ok=True)
    for name in ("train", "finetune"):
        path = tmp_path / "tau" / f"{name}.yaml"
        path.write_text(path.read_text().split("\nresilience:")[0] + "\n")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    return tmp_path


def _pod_specs(doc: dict) -> list[dict]:
    """The pod specs of a Job (its template) or a RayJob (head and every worker group)."""
    if doc["kind"] == "Job":
        return [doc["spec"]["template"]["spec"]]
    if doc["kind"] == "RayJob":
        cluster = doc["spec"]["rayClusterSpec"]
        groups = cluster.get("workerGroupSpecs") or []
        return [cluster["headGroupSpec"]["template"]["spec"]] + [
            g["template"]["spec"] for g in groups
        ]
    return []


def _accounts(text: str) -> list[str | None]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    return [spec.get("serviceAccountName") for d in docs for spec in _pod_specs(d)]


@pytest.mark.parametrize("target", ["train", "finetune"])
def test_a_client_dry_run_shows_the_placeholder_on_every_pod(project, capsys, target):
    assert main(["run", target, "--dry-run=client"]) == 0
    accounts = _accounts(capsys.readouterr().out)
    assert accounts and set(accounts) == {PLACEHOLDER}


def test_a_client_dry_run_shows_the_service_account_flag(project, capsys):
    assert main(["run", "train", "--dry-run=client", "--service-account", "trainer"]) == 0
    accounts = _accounts(capsys.readouterr().out)
    assert len(accounts) >= 2 and set(accounts) == {"trainer"}


@pytest.mark.parametrize(("target", "kind"), [("train", "RayJob"), ("finetune", "Job")])
def test_a_server_dry_run_runs_every_pod_as_the_workspace_account(
    project, kube_api, capsys, target, kind
):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(tau_workspace("vision", namespace="vision-team", queue="vision-q", generation=1))
    args = ["run", target, "--workspace", "vision", "--context", "emulator", "--dry-run=server"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"kind: {kind}" in out
    accounts = _accounts(out)
    assert accounts and set(accounts) == {"tau-runner"}


def test_the_flag_overrides_the_workspace_account_on_a_real_submit(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(tau_workspace("vision", namespace="vision-team", queue="vision-q", generation=1))
    args = ["run", "finetune", "--workspace", "vision", "--context", "emulator"]
    assert main([*args, "--service-account", "override"]) == 0
    job = kube_api.get_object("batch/v1", "Job", "finetune", namespace="vision-team")
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "override"


def test_a_namespace_without_a_workspace_leaves_the_namespace_default(project, kube_api, capsys):
    assert main(["run", "finetune", "-n", "team"]) == 0
    job = kube_api.get_object("batch/v1", "Job", "finetune", namespace="team")
    assert "serviceAccountName" not in job["spec"]["template"]["spec"]
