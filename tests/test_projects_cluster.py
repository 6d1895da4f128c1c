"""--project on the cluster side: the selected project's connection descriptor and workspace
feed the session of a submit and of every lifecycle verb, which inherit the flag."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau.errors import UsageError
from tests.kubeapi.server import KubeApiServer
from tests.projects_helpers import monorepo, tau
from tests.test_workspace_cli_e2e import put_ws
from tests.test_workspace_objects import tau_workspace

Cap = pytest.CaptureFixture[str]

LIFECYCLE = (
    ["list"],
    ["status", "r1"],
    ["logs", "r1"],
    ["get", "r1"],
    ["cancel", "r1"],
    ["history", "r1"],
)


class Stop(UsageError):
    """Raised by the recording connect: the test needs the arguments, not a cluster."""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monorepo(tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    return tmp_path / "repo"


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every `tau.session.connect` call of the command, by parameter name."""
    seen: list[dict[str, Any]] = []

    def record(context=None, namespace=None, workspace=None, **kwargs):
        seen.append({"context": context, "namespace": namespace, "workspace": workspace, **kwargs})
        raise Stop("recorded")

    monkeypatch.setattr("tau.session.connect", record)
    return seen


def connected(capsys: Cap, calls: list[dict[str, Any]], *argv: str) -> dict[str, Any]:
    code, _, err = tau(capsys, *argv)
    assert (code, err) == (1, "error: recorded\n")
    (call,) = calls
    calls.clear()
    return call


# help: the flag is on the run root and inherited by the subcommands that take a config or run


def help_text(capsys: Cap, *argv: str) -> str:
    code, out, _ = tau(capsys, *argv, "--help")
    assert code == 0
    return out


def test_run_help_shows_the_contract_flags(capsys: Cap) -> None:
    # The reference's command-tree test: these are visible on `tau run --help`, those hidden.
    text = help_text(capsys, "run")
    for flag in ("--config", "--dry-run", "--context", "--namespace", "--project"):
        assert flag in text, flag
    for hidden in ("--engine", "--script", "--file", "--queue", "--gpu-class", "--runtime-pip"):
        assert hidden not in text, hidden


@pytest.mark.parametrize(
    "sub", ["validate", "list", "status", "logs", "get", "cancel", "history", "resume"]
)
def test_every_subcommand_with_a_config_or_a_run_inherits_project(sub: str, capsys: Cap) -> None:
    assert "--project" in help_text(capsys, "run", sub)


@pytest.mark.parametrize("sub", ["schema", "explain-config"])
def test_subcommands_without_a_config_do_not_take_project(sub: str, capsys: Cap) -> None:
    assert "--project" not in help_text(capsys, "run", sub)


# lifecycle verbs: --project, then the working directory, then the only project


@pytest.mark.parametrize("verb", LIFECYCLE)
def test_a_lifecycle_verb_connects_through_the_named_project(repo, calls, capsys, verb) -> None:
    call = connected(capsys, calls, "run", *verb, "--project", "language")
    assert call["descriptor_file"] == (repo / "connections" / "shared.yaml").resolve()
    assert call["start"] == (repo / "projects" / "language").resolve()
    assert call["workspace"] == "language-team"  # the catalog's workspace


def test_a_lifecycle_verb_inside_a_project_uses_that_project(repo, calls, monkeypatch, capsys):
    monkeypatch.chdir(repo / "projects" / "vision" / "tau")
    call = connected(capsys, calls, "run", "status", "r1")
    assert (
        call["descriptor_file"]
        == (repo / "projects/vision/tau/workspace.connection.yaml").resolve()
    )
    assert call["workspace"] is None  # the descriptor's own


def test_flags_override_the_projects_workspace(repo, calls, capsys) -> None:
    call = connected(capsys, calls, "run", "list", "--project", "language", "--workspace", "w2")
    assert call["workspace"] == "w2"


def test_a_lifecycle_verb_at_the_root_of_several_projects_is_ambiguous(repo, calls, capsys):
    assert tau(capsys, "run", "status", "r1") == (
        1,
        "",
        "error: the project is ambiguous: language, vision\n"
        "  hint: rerun with --project NAME (projects of tau.projects.yaml), or run from inside "
        "a project directory\n",
    )
    assert calls == []


def test_an_explicit_context_is_used_directly_without_choosing_a_project(
    repo, calls, monkeypatch, capsys
) -> None:
    # Contract §1.4: an explicit context (flag or $TAU_CONTEXT) is used as is.
    call = connected(capsys, calls, "run", "list", "--context", "other")
    assert call["context"] == "other" and call["descriptor_file"] is None
    monkeypatch.setenv("TAU_CONTEXT", "other")
    assert connected(capsys, calls, "run", "list")["descriptor_file"] is None


def test_lifecycle_project_errors(repo, calls, capsys, tmp_path, monkeypatch) -> None:
    _, _, err = tau(capsys, "run", "cancel", "r1", "--project", "langauge")
    assert err.startswith(
        'error: unknown project "langauge"\n  hint: did you mean `--project language`?'
    )
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    _, _, err = tau(capsys, "run", "logs", "r1", "--project", "vision")
    assert "--project needs tau.projects.yaml at the Git root" in err
    assert calls == []


# submit and resume: the project of the config


def test_a_submit_connects_through_the_project_of_its_config(repo, calls, capsys) -> None:
    call = connected(capsys, calls, "run", "eval")  # tau/eval.yaml only exists in language
    assert call["descriptor_file"] == (repo / "connections" / "shared.yaml").resolve()
    assert call["workspace"] == "language-team"
    call = connected(capsys, calls, "run", "train", "--project", "vision", "--dry-run=server")
    assert (
        call["descriptor_file"]
        == (repo / "projects/vision/tau/workspace.connection.yaml").resolve()
    )


def test_the_configs_workspace_comes_before_the_projects(repo, calls, capsys) -> None:
    config = repo / "projects/language/tau/eval.yaml"
    config.write_text(config.read_text() + "policy:\n  workspace: from-config\n")
    assert connected(capsys, calls, "run", "eval")["workspace"] == "from-config"


def test_resume_connects_through_the_project_of_its_config(repo, calls, capsys) -> None:
    argv = ("run", "resume", "language-eval", "-c", "projects/language/tau/eval.yaml")
    call = connected(capsys, calls, *argv)
    assert call["descriptor_file"] == (repo / "connections" / "shared.yaml").resolve()


def test_a_client_dry_run_stays_offline(repo, calls, capsys) -> None:
    code, out, _ = tau(capsys, "run", "detect", "--dry-run=client")
    assert code == 0 and "name: vision-detect" in out
    assert calls == []


# end to end: the project's descriptor is activated (trusted once) and its workspace resolved


def test_a_project_runs_through_its_trusted_descriptor_on_the_cluster(
    repo: Path, kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    kube_api.register_kueue_kuberay_tau_kinds()
    put_ws(kube_api, tau_workspace("vision-team", namespace="vision-ns", queue="vision-q"))
    descriptor = "projects/vision/tau/workspace.connection.yaml"
    code, _, err = tau(capsys, "run", "status", "ghost", "--project", "vision")
    assert code == 1 and "tau workspace connection --trust" in err
    assert tau(capsys, "workspace", "connection", descriptor, "--trust")[0] == 0
    code, out, _ = tau(capsys, "run", "detect", "--project", "vision")
    assert code == 0
    assert (
        out.splitlines()[1] == "status:  tau run status vision-detect -n vision-ns --project vision"
    )
    job = kube_api.get_object("batch/v1", "Job", "vision-detect", namespace="vision-ns")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "vision-q"
    code, out, _ = tau(capsys, "run", "list", "--project", "vision", "-o", "json")
    assert code == 0 and [r["name"] for r in json.loads(out)["runs"]] == ["vision-detect"]


def test_the_projects_descriptor_is_checked_when_it_connects(repo: Path, capsys: Cap) -> None:
    # Like tau/workspace.connection.yaml: offline commands never read it, a connection does.
    shared = repo / "connections" / "shared.yaml"
    shared.write_text("schema: tau.workspace.connection.v1\nworkspace: Bad_Name\n")
    assert tau(capsys, "run", "validate", "eval")[0] == 0
    code, out, err = tau(capsys, "run", "status", "r1", "--project", "language")
    assert (code, out) == (1, "")
    assert f"{shared.resolve()}:2:12: error: workspace: " in err
    assert "Traceback" not in err
