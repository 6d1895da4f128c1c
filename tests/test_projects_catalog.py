"""tau.projects.yaml is checked against spec/tau-projects.schema.json: every problem of the
catalog at once, each located at file:line:col with its config path, the bad value and the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau.errors import ConfigError
from tau.intent import projects
from tau.intent.spec import spec_path
from tests.projects_helpers import CATALOG, monorepo, tau, write


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monorepo(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def problems(root: Path, text: str) -> list[str]:
    """The formatted diagnostics of `text` as the catalog of `root`."""
    with pytest.raises(ConfigError) as caught:
        projects.parse(text, Path("tau.projects.yaml"), root)
    return [d.format() for d in caught.value.diagnostics]


def test_the_schema_is_checked_in_and_names_the_catalog_format() -> None:
    schema = json.loads(spec_path("tau-projects.schema.json").read_text())
    assert schema["properties"]["schema"]["const"] == projects.SCHEMA == "tau.projects.v1"
    entry = schema["properties"]["projects"]["additionalProperties"]
    assert entry["required"] == ["path", "connection"]
    assert set(entry["properties"]) == {"path", "connection", "workspace"}


def test_a_valid_catalog_loads_its_projects_with_resolved_paths(repo: Path) -> None:
    catalog = projects.find(repo / "projects" / "vision")
    assert catalog is not None and catalog.names() == ["language", "vision"]
    language = catalog.get("language")
    assert language.root == (repo / "projects" / "language").resolve()
    assert language.connection == (repo / "connections" / "shared.yaml").resolve()
    assert language.workspace == "language-team"
    assert catalog.get("vision").workspace is None


def test_every_problem_of_the_catalog_is_reported_at_once_and_located(repo: Path) -> None:
    text = """\
schema: tau.projects.v2
projects:
  Vision:
    path: projects/vision
    connection: projects/vision/tau/workspace.connection.yaml
  language:
    path: ../language
    conection: connections/shared.yaml
    workspace: Language_Team
  typed:
    path: 3
    connection: connections/shared.yaml
"""
    assert problems(repo, text) == [
        'tau.projects.yaml:1:9: error: schema: unsupported schema "tau.projects.v2"\n'
        "  hint: use `schema: tau.projects.v1`",
        'tau.projects.yaml:3:3: error: projects.Vision: project name "Vision" is not valid\n'
        "  hint: use lower-case letters, digits and inner hyphens (a DNS-1123 label)",
        'tau.projects.yaml:6:3: error: projects.language: project "language" has no '
        "`connection`\n  hint: add `connection:`, the project's workspace connection descriptor",
        'tau.projects.yaml:7:11: error: projects.language.path "../language" must be a plain '
        "slash-separated path (no `.`, `..` or empty parts)\n"
        f"  hint: write it relative to the Git root {repo.resolve()}, e.g. projects/language",
        'tau.projects.yaml:8:5: error: projects.language.conection: unknown key "conection"\n'
        "  hint: did you mean `connection`? known keys here: path, connection, workspace",
        "tau.projects.yaml:9:16: error: projects.language.workspace: "
        '"Language_Team" is not a DNS-1123 subdomain\n'
        "  hint: use lower-case letters, digits, - and .",
        "tau.projects.yaml:11:11: error: projects.typed.path must be a string (got integer 3)\n"
        "  hint: quote the value to make it a string",
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("/abs/dir", "must be relative to the Git root"),
        ("projects/./vision", "must be a plain slash-separated path"),
        ("projects\\\\vision", "must be a plain slash-separated path"),
        ("projects/nowhere", "is not an existing directory under"),
        ("tau.projects.yaml", "is not an existing directory under"),
    ],
)
def test_a_project_path_must_be_an_existing_directory_inside_the_repository(
    repo: Path, value: str, message: str
) -> None:
    text = CATALOG.replace("path: projects/vision", f'path: "{value}"')
    (found,) = problems(repo, text)
    assert found.startswith("tau.projects.yaml:4:11: error: projects.vision.path ")
    assert message in found


def test_a_project_directory_may_not_escape_through_a_symlink(repo: Path, tmp_path_factory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (repo / "projects" / "escape").symlink_to(outside)
    text = CATALOG.replace("path: projects/vision", "path: projects/escape")
    (found,) = problems(repo, text)
    assert 'projects.vision.path "projects/escape" resolves outside the repository' in found


def test_the_connection_must_be_an_existing_file(repo: Path) -> None:
    text = CATALOG.replace("connection: connections/shared.yaml", "connection: connections")
    (found,) = problems(repo, text)
    assert found.startswith(
        'tau.projects.yaml:8:17: error: projects.language.connection "connections" is not an '
        "existing file under "
    )


def test_project_directories_may_not_nest(repo: Path) -> None:
    text = CATALOG.replace("path: projects/language", "path: projects/vision/tau")
    (found,) = problems(repo, text)
    assert 'project "vision" (projects/vision) overlaps project "language"' in found
    assert "project directories do not nest" in found


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("projects: {}\n", ["`schema` is required", "projects: lists no project"]),
        ("schema: tau.projects.v1\n", ["`projects` is required"]),
        ("- vision\n", ["a project catalog is a mapping of fields, got list"]),
        ("projects: [\n", ["invalid YAML"]),
    ],
)
def test_malformed_catalogs(repo: Path, text: str, expected: list[str]) -> None:
    found = "\n".join(problems(repo, text))
    for message in expected:
        assert message in found


def test_an_invalid_catalog_fails_the_command_with_exit_1_and_no_traceback(
    repo: Path, capsys
) -> None:
    write(repo / "tau.projects.yaml", CATALOG.replace("path: projects/vision", "path: 7"))
    code, out, err = tau(capsys, "run", "validate", "train", "--project", "vision")
    assert (code, out) == (1, "")
    assert err.startswith("tau.projects.yaml:4:11: error: projects.vision.path must be a string")
    assert "Traceback" not in err


def test_only_the_catalog_at_the_git_root_counts(tmp_path: Path, monkeypatch) -> None:
    # A catalog above the repository (or in a directory that is no repository) routes nothing.
    write(tmp_path / "tau.projects.yaml", CATALOG)
    inner = tmp_path / "inner"
    (inner / ".git").mkdir(parents=True)
    assert projects.find(inner) is None
    assert projects.find(tmp_path) is None  # no .git at or above tmp_path


def test_the_readme_example_runs_offline(tmp_path: Path, monkeypatch, capsys) -> None:
    """The README's catalog, as written, with the offline commands it shows."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = readme.split("## Monorepos (offline)")[1].split("\n## ")[0]
    catalog = section.split("```yaml\n")[1].split("```")[0]
    commands = section.split("```sh\n")[1].split("```")[0].splitlines()
    monorepo(tmp_path, catalog)  # the helper's layout matches the README's paths
    monkeypatch.chdir(tmp_path)
    offline = [c.split("#")[0].split()[1:] for c in commands if "status" not in c]
    assert len(offline) == 2
    for argv in offline:
        code, _, err = tau(capsys, *argv)
        assert code == 0, (argv, err)


@pytest.mark.parametrize(
    ("value", "message"), [("", "is empty"), (" projects/vision", "has surrounding whitespace")]
)
def test_blank_and_padded_paths_are_named(repo: Path, value: str, message: str) -> None:
    text = CATALOG.replace("path: projects/vision", f'path: "{value}"')
    (found,) = problems(repo, text)
    assert found.startswith("tau.projects.yaml:4:11: error: projects.vision.path ")
    assert message in found
