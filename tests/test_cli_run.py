"""The offline `tau run` surface through `tau.cli.main`: validate, schema, explain-config, targets.

Also the shape of the CLI: exactly seven roots, and the run subcommands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tau
from tau.cli import ROOTS, build_app, main
from tau.cli.run import SUBCOMMANDS
from tau.intent.spec import spec_path

Cap = pytest.CaptureFixture[str]

VALID = "name: train\nengine: job\nentrypoint: train.py\ncompute:\n  gpus: 0\n"
INVALID = "name: train\nengine: job\nentrypoint: train.py\ncompute:\n  gpu: 1\n  workers: 2\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty repository directory that is the working directory."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(path: Path, text: str = VALID) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run(capsys: Cap, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# validate: targets and --config


@pytest.mark.parametrize("ext", ["yaml", "yml"])
def test_validate_target_resolves_tau_target_yaml_and_says_it_is_valid(
    repo: Path, capsys: Cap, ext: str
) -> None:
    write(repo / "tau" / f"train.{ext}")
    assert run(capsys, "run", "validate", "train") == (0, f"tau/train.{ext} is valid\n", "")


def test_validate_config_reads_an_explicit_path(repo: Path, capsys: Cap) -> None:
    write(repo / "configs" / "exp.yaml")
    assert run(capsys, "run", "validate", "--config", "configs/exp.yaml") == (
        0,
        "configs/exp.yaml is valid\n",
        "",
    )
    assert run(capsys, "run", "validate", "-c", "configs/exp.yaml") == (
        0,
        "configs/exp.yaml is valid\n",
        "",
    )


def test_validate_config_outside_the_working_directory_prints_the_path_given(
    repo: Path, tmp_path_factory: pytest.TempPathFactory, capsys: Cap
) -> None:
    elsewhere = write(tmp_path_factory.mktemp("other") / "tau.yaml")
    assert run(capsys, "run", "validate", "--config", str(elsewhere)) == (
        0,
        f"{elsewhere} is valid\n",
        "",
    )


def test_validate_target_with_config_uses_the_target_as_the_run_name(
    repo: Path, capsys: Cap
) -> None:
    write(repo / "exp.yaml", "engine: job\nentrypoint: train.py\n")
    assert run(capsys, "run", "validate", "named", "--config", "exp.yaml") == (
        0,
        "exp.yaml is valid\n",
        "",
    )
    code, _, err = run(capsys, "run", "validate", "--config", "exp.yaml")
    assert code == 1
    assert "error: name: job runs require NAME" in err


@pytest.mark.parametrize("name", ["tau.yaml", "tau.yml", ".tau.yaml"])
def test_validate_with_no_argument_reads_a_default_file(repo: Path, capsys: Cap, name: str) -> None:
    write(repo / name)
    assert run(capsys, "run", "validate") == (0, f"{name} is valid\n", "")


def test_default_files_are_tried_in_order(repo: Path, capsys: Cap) -> None:
    write(repo / ".tau.yaml", INVALID)
    write(repo / "tau.yml")
    assert run(capsys, "run", "validate") == (0, "tau.yml is valid\n", "")


def test_an_invalid_config_prints_every_diagnostic_on_stderr_and_exits_1(
    repo: Path, capsys: Cap
) -> None:
    write(repo / "tau" / "train.yaml", INVALID)
    code, out, err = run(capsys, "run", "validate", "train")
    assert code == 1
    assert out == ""
    assert err == (
        "tau/train.yaml:5:3: error: compute.gpu: field gpu not found in type runconfig.Compute\n"
        "  hint: did you mean `compute.gpus`?\n"
        "tau/train.yaml:6:12: error: compute.workers: engine=job cannot set compute.workers=2; "
        "use engine: rayjob or remove compute.workers\n"
    )
    assert "Traceback" not in err


def test_a_yaml_syntax_error_is_a_diagnostic_not_a_traceback(repo: Path, capsys: Cap) -> None:
    write(repo / "tau.yaml", "name: train\ncompute: {gpus: 1\n")
    code, out, err = run(capsys, "run", "validate")
    assert (code, out) == (1, "")
    assert err.startswith("tau.yaml:3:1: error: invalid YAML: ")
    assert "Traceback" not in err


def test_warnings_go_to_stderr_and_validation_still_passes(repo: Path, capsys: Cap) -> None:
    write(repo / "tau.yaml", "name: train\nengine: ray\nentrypoint: train.py\n")
    assert run(capsys, "run", "validate") == (
        0,
        "tau.yaml is valid\n",
        'tau.yaml:2:9: warning: engine value "ray" is deprecated; tau reads it as "rayjob"\n'
        "  hint: write `engine: rayjob`\n",
    )


def test_a_managed_manifest_is_rejected_by_validate(repo: Path, capsys: Cap) -> None:
    write(repo / "tau.yaml", "schema_version: 1\nname: train\n")
    code, _, err = run(capsys, "run", "validate")
    assert code == 1
    assert err.splitlines()[0] == (
        "tau.yaml:1:1: error: schema_version: managed workflow manifests are outside tau run "
        "validate; validate direct tau run --config files with this command"
    )


@pytest.mark.parametrize(
    "target", ["tau/train.yaml", "tau/train", "./train", "train.yaml", "train.yml", "..\\train"]
)
def test_a_target_that_is_a_path_is_rejected(repo: Path, capsys: Cap, target: str) -> None:
    write(repo / "tau" / "train.yaml")
    assert run(capsys, "run", "validate", target) == (
        1,
        "",
        f'error: run target "{target}" must be a name, not a path; use --config for '
        "explicit paths\n",
    )


@pytest.mark.parametrize("target", ["Train", "train_v2", "train-"])
def test_a_target_that_is_not_a_run_name_is_rejected(repo: Path, capsys: Cap, target: str) -> None:
    assert run(capsys, "run", "validate", target) == (
        1,
        "",
        f'error: run target "{target}" is not a valid run name (lowercase letters, '
        "digits and '-')\n",
    )


def test_the_smoke_target_is_the_platform_probe_not_a_config(repo: Path, capsys: Cap) -> None:
    write(repo / "tau" / "smoke.yaml", "name: not-the-probe\n")
    code, out, err = run(capsys, "run", "validate", "smoke")
    assert (code, err) == (0, "")
    assert out.endswith("smoke/tau.yaml is valid\n") and "tau/smoke.yaml" not in out


def test_the_smoke_probe_renders_a_bounded_cpu_job_from_any_directory(
    tmp_path, monkeypatch, capsys: Cap
) -> None:
    import yaml

    monkeypatch.chdir(tmp_path)
    assert main(["run", "smoke", "--dry-run=client"]) == 0
    (job,) = yaml.safe_load_all(capsys.readouterr().out)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert job["metadata"]["name"] == "tau-smoke" and "nvidia.com/gpu" not in str(container)
    assert container["resources"]["limits"] == {"cpu": "500m", "memory": "128Mi"}


def test_a_target_with_both_extensions_is_ambiguous(repo: Path, capsys: Cap) -> None:
    write(repo / "tau" / "train.yaml")
    write(repo / "tau" / "train.yml")
    assert run(capsys, "run", "validate", "train") == (
        1,
        "",
        'error: run target "train" has both tau/train.yaml and tau/train.yml; keep exactly '
        "one extension\n",
    )


def test_a_target_that_does_not_exist_is_not_found(repo: Path, capsys: Cap) -> None:
    write(repo / "train.yaml")  # not under tau/: a bare target never reads it
    assert run(capsys, "run", "validate", "train") == (
        1,
        "",
        'error: run target "train" not found; expected tau/train.yaml or pass --config\n',
    )


def test_no_target_and_no_default_file_is_an_error(repo: Path, capsys: Cap) -> None:
    write(repo / "tau" / "train.yaml")
    assert run(capsys, "run", "validate") == (
        1,
        "",
        "error: no Tau run config found; create tau.yaml or pass --config\n",
    )


def test_a_missing_config_path_is_an_error(repo: Path, capsys: Cap) -> None:
    assert run(capsys, "run", "validate", "--config", "nope.yaml") == (
        1,
        "",
        'error: config file "nope.yaml" not found\n',
    )


@pytest.mark.parametrize("argv", [["run", "retry"], ["run", "validate", "retry"]])
def test_run_retry_is_a_target_name_not_a_subcommand(
    repo: Path, capsys: Cap, argv: list[str]
) -> None:
    write(repo / "tau.yaml")
    assert run(capsys, *argv) == (
        1,
        "",
        'error: run target "retry" not found; expected tau/retry.yaml or pass --config\n',
    )


def test_run_retry_with_a_retry_config_validates_it(repo: Path, capsys: Cap) -> None:
    write(repo / "tau" / "retry.yaml", VALID.replace("train", "retry"))
    assert run(capsys, "run", "validate", "retry") == (0, "tau/retry.yaml is valid\n", "")


def test_the_examples_validate(monkeypatch: pytest.MonkeyPatch, capsys: Cap) -> None:
    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "examples")
    for target in ("train", "finetune", "eval", "sft"):
        assert run(capsys, "run", "validate", target) == (0, f"tau/{target}.yaml is valid\n", "")


# schema and explain-config


def test_run_schema_prints_the_checked_in_schema_byte_for_byte(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    repo_root = Path(__file__).resolve().parents[1]
    expected = (repo_root / "spec" / "tau-run-config.schema.json").read_bytes()
    assert spec_path("tau-run-config.schema.json").read_bytes() == expected
    for argv in ([], ["-o", "json"], ["--output", "json"]):
        argv = ["run", "schema", *argv]
        assert main(argv) == 0
        out, err = capsysbinary.readouterr()
        assert out == expected
        assert err == b""


@pytest.mark.parametrize("fmt", ["yaml", "JSON", "markdown"])
def test_run_schema_accepts_only_json(capsys: Cap, fmt: str) -> None:
    assert run(capsys, "run", "schema", "-o", fmt) == (1, "", "error: --output must be json\n")


def schema_field_paths() -> list[str]:
    """Every dotted field path of the schema: properties, and properties of list items."""
    schema = json.loads(spec_path("tau-run-config.schema.json").read_text())
    paths: list[str] = []

    def walk(node: dict, prefix: str) -> None:
        for key, child in node.get("properties", {}).items():
            paths.append(prefix + key)
            walk(child, f"{prefix}{key}.")
            if isinstance(child.get("items"), dict):
                walk(child["items"], f"{prefix}{key}.")

    walk(schema, "")
    return paths


def test_explain_config_has_a_markdown_row_for_every_schema_field(capsys: Cap) -> None:
    code, out, err = run(capsys, "run", "explain-config")
    assert (code, err) == (0, "")
    assert out.startswith("# Tau run config reference\n")
    run_config_part = out.split("\n# Managed workflow manifest reference\n")[0]
    rows = [line for line in run_config_part.splitlines() if line.startswith("| `")]
    fields = [row.split("`")[1] for row in rows]
    expected = schema_field_paths()
    assert sorted(fields) == sorted(expected)
    assert fields == sorted(fields)
    assert len(expected) > 100
    for required in (
        "compute.gpus",
        "storage.image_assets.mount_path",
        "resilience.backoff_max",
        "execution.launcher",
        "runtime.env_secret",
    ):
        assert required in fields
    header = next(line for line in out.splitlines() if line.startswith("| Field"))
    assert header == "| Field | Type | Status | Description | Values / defaults |"
    assert all(row.count(" | ") >= 4 for row in rows)


def test_explain_config_rows_carry_status_values_and_defaults(capsys: Cap) -> None:
    _, out, _ = run(capsys, "run", "explain-config")
    out = out.split("\n# Managed workflow manifest reference\n")[0]
    rows = {line.split("`")[1]: line for line in out.splitlines() if line.startswith("| `")}
    assert "| supported |" in rows["engine"]
    assert "values: job, rayjob; deprecated: ray" in rows["engine"]
    assert "| workflow-only |" in rows["runtime.env_kv"]
    assert "default: 30s" in rows["resilience.backoff_initial"]


def test_explain_config_json_parses_and_lists_the_same_fields(capsys: Cap) -> None:
    code, out, err = run(capsys, "run", "explain-config", "-o", "json")
    assert (code, err) == (0, "")
    doc = json.loads(out)
    fields = {row["field"]: row for row in doc["fields"]}
    assert sorted(fields) == sorted(schema_field_paths())
    assert fields["compute.gpu_resource_mode"]["values"] == [
        "device-plugin",
        "nvidia",
        "dra",
        "mig",
    ]
    assert fields["policy.gpu_class"]["deprecated_values"] == [
        "a100-nvlink-80gb",
        "h100-standalone-95gb",
        "h200-nvlink-141gb",
    ]


def test_explain_config_rejects_other_formats(capsys: Cap) -> None:
    assert run(capsys, "run", "explain-config", "-o", "yaml") == (
        1,
        "",
        "error: --output must be one of: markdown, json\n",
    )


# the shape of the CLI


def command_names(app) -> set[str]:
    """Commands registered on a cyclopts App, without its help and version flags."""
    flags = {*app.help_flags, *app.version_flags}
    return {name for name in app if name not in flags and not name.startswith("-")}


def test_tau_has_exactly_seven_roots() -> None:
    app = build_app()
    assert command_names(app) == {
        "cluster",
        "workspace",
        "run",
        "serve",
        "data",
        "python",
        "version",
    }
    assert ROOTS == ("cluster", "workspace", "run", "serve", "data", "python", "version")


def test_the_run_subcommands_are_exactly_the_documented_ones() -> None:
    assert set(SUBCOMMANDS) == {
        "validate",
        "schema",
        "explain-config",
        "list",
        "status",
        "logs",
        "get",
        "cancel",
        "resume",
        "history",
    }
    assert command_names(build_app()["run"]) == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", ["render", "diff"])
@pytest.mark.parametrize("path", ["hot", "full"])
def test_a_target_named_like_a_review_flag_runs(
    repo: Path, capsys: Cap, name: str, path: str
) -> None:
    """Review is `--render`/`--diff` on the run root: `render` and `diff` are target names,
    on the hot path (tau.cli.fast) and through the full app alike.
    """
    from tau.errors import run_command

    write(repo / "tau" / f"{name}.yaml", VALID.replace("name: train", f"name: {name}"))
    write(repo / "tau" / "train.py", "print('hello')\n")
    argv = ["run", name, "--dry-run=client", "-o", "json"]
    code = main(argv) if path == "hot" else run_command(lambda: build_app()(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    job = json.loads(out)
    assert (job["kind"], job["metadata"]["name"]) == ("Job", name)
    assert run(capsys, "run", "validate", name) == (0, f"tau/{name}.yaml is valid\n", "")


def unbuilt_run_subcommands() -> list[str]:
    """Run subcommands still registered as stubs (tau.cli._common.not_built)."""
    run_app = build_app()["run"]
    return [
        name
        for name in SUBCOMMANDS
        if run_app[name].default_command.__qualname__.startswith("not_built.")
    ]


def test_the_offline_run_subcommands_are_built() -> None:
    assert not {"validate", "schema", "explain-config"} & set(unbuilt_run_subcommands())


def test_an_unbuilt_subcommand_says_not_implemented_yet_and_exits_2(capsys: Cap) -> None:
    from cyclopts import App

    from tau.cli._common import not_built
    from tau.errors import ExitCode, NotImplementedYet

    for sub in unbuilt_run_subcommands():  # whichever run verbs are still stubs
        assert run(capsys, "run", sub, "some-run") == (
            2,
            "",
            f"error: tau run {sub}: not implemented yet\n",
        )
    app = App(name="thing", result_action="return_value")
    not_built(app, "frob", "Frobnicate a run", "tau thing frob")
    with pytest.raises(NotImplementedYet) as caught:
        app(["frob", "a-run"])
    assert caught.value.format() == "error: tau thing frob: not implemented yet"
    assert caught.value.exit_code == ExitCode.NOT_IMPLEMENTED == 2


@pytest.mark.parametrize("root", ["submit", "finetune", "experiment", "portal", "exp", "queue"])
def test_pre_split_roots_do_not_exist(capsys: Cap, root: str) -> None:
    assert main([root]) == 1
    _, err = capsys.readouterr()
    assert err.startswith(f'error: tau {root}: unknown command "{root}"\n')


def test_tau_version_prints_version_commit_and_build(capsys: Cap) -> None:
    code, out, err = run(capsys, "version")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"tau {tau.__version__}"
    assert out.splitlines()[1].startswith("  commit: ")
    assert out.splitlines()[2].startswith("  built:  ")


def test_tau_version_short_prints_only_the_version(capsys: Cap) -> None:
    assert run(capsys, "version", "--short") == (0, f"{tau.__version__}\n", "")
