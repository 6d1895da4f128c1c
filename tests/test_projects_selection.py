"""Which project a `tau run` means, in the contract's order: --project, then the explicit
config path, then the working directory, then a unique target name, then the only catalog entry.
Ambiguity is an error listing the candidates; --project without a catalog is an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tau.errors import UsageError
from tau.intent import target as targets
from tests.projects_helpers import CATALOG, git_init, monorepo, tau, write

Cap = pytest.CaptureFixture[str]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monorepo(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def chosen(cwd: Path, target: str | None = None, config: str | None = None, project=None):
    found = targets.resolve(target, Path(config) if config else None, cwd, project)
    assert found.project is not None
    return found.project.name, os.path.relpath(found.path.resolve(), cwd.resolve())


# 1. --project


def test_project_flag_selects_the_project_and_its_target(repo: Path, capsys: Cap) -> None:
    code, out, _ = tau(capsys, "run", "validate", "train", "--project", "vision")
    assert (code, out) == (0, "projects/vision/tau/train.yaml is valid\n")


def test_project_flag_wins_over_the_working_directory(repo: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(repo / "projects" / "vision")
    code, out, _ = tau(capsys, "run", "validate", "train", "--project", "language")
    assert code == 0 and out.endswith("/projects/language/tau/train.yaml is valid\n")


def test_project_flag_without_a_target_reads_the_projects_default_file(repo: Path, capsys) -> None:
    code, out, _ = tau(capsys, "run", "validate", "--project", "language")
    assert (code, out) == (0, "projects/language/tau.yaml is valid\n")


def test_a_target_missing_from_the_named_project_names_the_project(repo: Path, capsys) -> None:
    assert tau(capsys, "run", "validate", "eval", "--project", "vision") == (
        1,
        "",
        'error: run target "eval" not found in project "vision"; expected '
        "projects/vision/tau/eval.yaml or pass --config\n",
    )
    assert tau(capsys, "run", "validate", "--project", "vision") == (
        1,
        "",
        'error: no Tau run config found in project "vision"; create projects/vision/tau.yaml '
        "or pass --config\n",
    )


def test_an_unknown_project_offers_the_nearest_name_and_lists_them(repo: Path, capsys) -> None:
    assert tau(capsys, "run", "validate", "train", "--project", "visoin") == (
        1,
        "",
        'error: unknown project "visoin"\n'
        "  hint: did you mean `--project vision`? "
        "projects in tau.projects.yaml: language, vision\n",
    )
    _, _, err = tau(capsys, "run", "validate", "train", "--project", "zzz")
    assert err.endswith("hint: projects in tau.projects.yaml: language, vision\n")


# 2. the explicit config path


def test_the_config_path_selects_the_project_that_holds_it(repo: Path) -> None:
    assert chosen(repo, config="projects/language/tau/eval.yaml") == (
        "language",
        "projects/language/tau/eval.yaml",
    )
    # ... even from inside another project: the config path comes before the working directory.
    vision = repo / "projects" / "vision"
    found = targets.resolve(None, Path("../language/tau/eval.yaml"), vision)
    assert found.project is not None and found.project.name == "language"


def test_the_catalog_is_the_one_of_the_configs_repository(repo: Path, tmp_path_factory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    found = targets.resolve(None, repo / "projects/vision/tau/detect.yaml", elsewhere)
    assert found.project is not None and found.project.name == "vision"


def test_a_config_outside_every_project_is_an_error(repo: Path, capsys) -> None:
    write(repo / "stray.yaml", "name: stray\n")
    assert tau(capsys, "run", "validate", "--config", "stray.yaml") == (
        1,
        "",
        "error: --config stray.yaml is not inside any project of tau.projects.yaml\n"
        "  hint: move it into a project directory (language=projects/language, "
        "vision=projects/vision), or add its project there\n",
    )


def test_a_config_of_another_project_than_the_flag_names_is_an_error(repo: Path, capsys) -> None:
    argv = ("run", "validate", "-c", "projects/language/tau/eval.yaml", "--project", "vision")
    assert tau(capsys, *argv) == (
        1,
        "",
        "error: --config projects/language/tau/eval.yaml belongs to project "
        '"language", not "vision"\n  hint: drop --project, or pass --project language\n',
    )


def test_the_target_with_a_config_is_still_the_run_name(repo: Path) -> None:
    found = targets.resolve("renamed", Path("projects/vision/tau/train.yaml"), repo)
    assert found.name == "renamed" and found.project is not None


# 3. the working directory


def test_the_working_directory_selects_the_project_holding_it(repo: Path) -> None:
    nested = repo / "projects" / "language" / "src" / "deep"
    nested.mkdir(parents=True)
    assert chosen(nested, "train") == ("language", "../../tau/train.yaml")
    assert chosen(repo / "projects" / "vision", "train") == ("vision", "tau/train.yaml")
    assert chosen(repo / "projects" / "language") == ("language", "tau.yaml")


# 4. a unique target name


def test_a_target_only_one_project_has_selects_it(repo: Path, capsys: Cap) -> None:
    assert chosen(repo, "eval") == ("language", "projects/language/tau/eval.yaml")
    assert chosen(repo, "detect") == ("vision", "projects/vision/tau/detect.yaml")
    code, out, _ = tau(capsys, "run", "eval", "--dry-run=client")
    assert code == 0 and "name: language-eval" in out


def test_a_target_several_projects_have_is_ambiguous(repo: Path, capsys: Cap) -> None:
    assert tau(capsys, "run", "validate", "train") == (
        1,
        "",
        'error: run target "train" exists in several projects: language, vision\n'
        "  hint: rerun with --project NAME (projects of tau.projects.yaml), or run from inside "
        "a project directory\n",
    )


# 5. the only catalog entry


def test_a_catalog_of_one_project_selects_it(tmp_path: Path, monkeypatch) -> None:
    only = CATALOG.split("  language:")[0]
    monorepo(tmp_path, only)
    monkeypatch.chdir(tmp_path)
    assert chosen(tmp_path, "train") == ("vision", "projects/vision/tau/train.yaml")
    with pytest.raises(UsageError, match='run target "eval" not found in project "vision"'):
        targets.resolve("eval", None, tmp_path)


def test_no_target_at_the_root_of_several_projects_is_ambiguous(repo: Path, capsys) -> None:
    assert tau(capsys, "run", "validate") == (
        1,
        "",
        "error: the project is ambiguous: language, vision\n"
        "  hint: rerun with --project NAME (projects of tau.projects.yaml), or run from inside "
        "a project directory\n",
    )


def test_a_target_no_project_has_falls_through_to_the_only_entry_rule(repo: Path, capsys) -> None:
    _, _, err = tau(capsys, "run", "validate", "nope")
    assert err.startswith("error: the project is ambiguous: language, vision")


# the smoke probe and repositories without a catalog


def test_smoke_is_the_builtin_probe_inside_the_selected_project(repo: Path) -> None:
    found = targets.resolve("smoke", None, repo, "vision")
    assert found.project is not None and found.project.name == "vision"
    assert found.path.name == "tau.yaml" and found.path.parent.name == "smoke"
    with pytest.raises(UsageError, match="the project is ambiguous"):
        targets.resolve("smoke", None, repo)


def test_project_without_a_catalog_says_where_it_looked(tmp_path: Path, monkeypatch, capsys):
    git_init(tmp_path)
    write(tmp_path / "tau" / "train.yaml", "name: train\n")
    monkeypatch.chdir(tmp_path)
    assert tau(capsys, "run", "validate", "train", "--project", "vision") == (
        1,
        "",
        "error: --project needs a project catalog, but there is no tau.projects.yaml at the Git "
        f"root {tmp_path.resolve()}\n"
        "  hint: add tau.projects.yaml (schema: tau.projects.v1) there, or drop --project\n",
    )


def test_project_outside_a_git_repository_says_so(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = tau(capsys, "run", "train", "--dry-run=client", "--project", "x")
    assert code == 1
    assert err == (
        f"error: --project needs tau.projects.yaml at the Git root, but {tmp_path} is not "
        "inside a Git repository\n  hint: run from the monorepo's checkout, or drop --project\n"
    )


def test_without_a_catalog_targets_resolve_as_before(tmp_path: Path, monkeypatch, capsys):
    git_init(tmp_path)
    write(tmp_path / "tau" / "train.yaml", "name: train\nengine: job\nentrypoint: t.py\n")
    write(tmp_path / "t.py", "")
    monkeypatch.chdir(tmp_path)
    found = targets.resolve("train", None, tmp_path)
    assert found.project is None and found.path == tmp_path / "tau" / "train.yaml"


def test_choosing_a_project_stays_offline(tmp_path: Path) -> None:
    from tests.test_lazy_imports import imported, modules_after

    monorepo(tmp_path)
    code, modules = modules_after(["run", "validate", "train", "--project", "vision"], tmp_path)
    assert code == 0 and "tau.intent.projects" in modules
    for package in ("kubernetes", "tau.kube", "tau.connection", "tau.render", "urllib3"):
        assert not imported(modules, package), package
