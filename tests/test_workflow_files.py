"""workflow.extra_scripts and workflow.secret_payload (tau.intent.workflow.files).

Contract tests 1 and 5–8 (the reference's managed_workflow_test.go), every error of the
extra-script spec and of the secret payload, each at its config path, and the rule that no
secret value ever reaches a message.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tau.errors import ConfigError
from tau.intent.load import parse
from tau.intent.validate.findings import Findings
from tau.intent.workflow.files import (
    MAIN_SCRIPT,
    SecretPayload,
    load_extra_scripts,
    load_secret_payload,
    split_extra_script,
)
from tau.intent.workflow.problems import WorkflowInputError


def _write(path: Path, data: bytes | str = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _problems(specs, base_dir=None, **kwargs) -> list[tuple[tuple, str]]:
    with pytest.raises(WorkflowInputError) as info:
        load_extra_scripts(specs, base_dir, **kwargs)
    return [(p.path, p.message) for p in info.value.problems]


# --- contract 1, 5–8 --------------------------------------------------------------------------


def test_1_load_extra_scripts_names_and_data(tmp_path):
    loss = _write(tmp_path / "my_loss.py", "def loss(): ...\n")
    kernel = _write(tmp_path / "storm_kernel.cu", "__global__ void k() {}\n")
    out = load_extra_scripts([str(loss), f"{kernel}:kernel.cu"])
    assert out == (
        ("my_loss.py", b"def loss(): ...\n"),
        ("kernel.cu", b"__global__ void k() {}\n"),
    )


def test_5_a_source_path_then_dest_after_the_last_colon(tmp_path):
    src = _write(tmp_path / "tau_user_module.py")
    assert load_extra_scripts([f"{src}:user_module.py"]) == (("user_module.py", b"x"),)


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("/tmp/foo.py", ("/tmp/foo.py", "")),
        ("/tmp/foo.py:bar.py", ("/tmp/foo.py", "bar.py")),
        ("C:\\Users\\foo\\bar.py:bar.py", ("C:\\Users\\foo\\bar.py", "bar.py")),
        ("", ("", "")),
        # The drive letter's colon is never the separator (the reference's Windows-only case).
        ("C:\\Users\\foo\\bar.py", ("C:\\Users\\foo\\bar.py", "")),
        ("C:/Users/foo/bar.py", ("C:/Users/foo/bar.py", "")),
        ("a:b:c.py", ("a:b", "c.py")),
        ("x.py:", ("x.py", "")),
    ],
)
def test_6_split_extra_script_on_the_last_colon(spec, want):
    assert split_extra_script(spec) == want


def test_7_bad_specs(tmp_path):
    loss = _write(tmp_path / "my_loss.py")
    cases = [
        ("", "source path"),
        (f"{loss}:subdir/my_loss.py", "single filename"),
        (f"{loss}:/", "single filename"),
        (str(tmp_path), "directories are not supported"),
    ]
    for spec, want in cases:
        ((_, message),) = _problems([spec])
        assert want in message, (spec, message)


def test_8_a_duplicate_destination(tmp_path):
    a, b = _write(tmp_path / "a.py"), _write(tmp_path / "b.py")
    ((path, message),) = _problems([f"{a}:x.py", f"{b}:x.py"])
    assert path == ("workflow", "extra_scripts", 1)
    assert message == f'--extra-script "{b}:x.py": duplicate destination "x.py"'


# --- every error, worded as the reference's ---------------------------------------------------


def test_a_missing_source_path():
    assert _problems([":dest.py"]) == [
        (("workflow", "extra_scripts", 0), "--extra-script: source path is required")
    ]


@pytest.mark.parametrize("dest", ["sub/x.py", "sub\\x.py", "/", "."])
def test_dest_must_be_a_single_filename(tmp_path, dest):
    src = _write(tmp_path / "a.py")
    ((_, message),) = _problems([f"{src}:{dest}"])
    # Quoted as Go's %q quotes: a backslash is escaped.
    spec = json.dumps(f"{src}:{dest}")
    assert message == f"--extra-script {spec}: DEST must be a single filename mounted under /script"


@pytest.mark.parametrize("dest", ["my loss.py", "x$.py", "ünï.py"])
def test_dest_must_be_a_payload_file_name(tmp_path, dest):
    src = _write(tmp_path / "a.py")
    ((_, message),) = _problems([f"{src}:{dest}"])
    assert message == (
        f'extra script "{dest}": destination must be a payload file name using only letters, '
        "digits, '.', '_' or '-'"
    )


def test_dest_dot_dot_is_invalid(tmp_path):
    src = _write(tmp_path / "a.py")
    assert _problems([f"{src}:.."])[0][1] == 'extra script "..": invalid destination'


def test_a_source_file_name_that_is_no_payload_name_needs_a_dest(tmp_path):
    src = _write(tmp_path / "my loss.py")
    assert "destination must be a payload file name" in _problems([str(src)])[0][1]
    assert load_extra_scripts([f"{src}:my_loss.py"]) == (("my_loss.py", b"x"),)


@pytest.mark.parametrize("spec", ["train.py", "helper.py:train.py"])
def test_the_main_script_name_is_taken(tmp_path, spec):
    _write(tmp_path / "train.py")
    _write(tmp_path / "helper.py")
    ((_, message),) = _problems([spec], tmp_path)
    assert message == (
        'extra script "train.py" collides with an existing script entry '
        "(use a different destination name)"
    )
    assert MAIN_SCRIPT == "train.py"


def test_reserved_names_are_the_callers(tmp_path):
    _write(tmp_path / "train.py")
    assert load_extra_scripts(["train.py"], tmp_path, reserved=()) == (("train.py", b"x"),)
    assert "collides" in _problems(["train.py:run.py"], tmp_path, reserved=("run.py",))[0][1]


def test_a_missing_file_is_named_with_its_path(tmp_path):
    missing = tmp_path / "nope.py"
    ((_, message),) = _problems(["nope.py"], tmp_path)
    assert message == f"--extra-script {missing}: stat {missing}: no such file or directory"


def test_an_unreadable_file_is_named_with_its_path(tmp_path, monkeypatch):
    src = _write(tmp_path / "locked.py")

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    # Root reads any file whatever its mode, so the refusal is simulated.
    monkeypatch.setattr(Path, "read_bytes", refuse)
    ((_, message),) = _problems([str(src)])
    assert message == f"--extra-script {src}: open {src}: permission denied"


def test_a_directory_is_refused_with_its_path(tmp_path):
    folder = tmp_path / "pkg"
    folder.mkdir()
    ((_, message),) = _problems(["pkg:pkg.py"], tmp_path)
    assert (
        message == f"--extra-script {folder}: directories are not supported; pass files explicitly"
    )


def test_relative_sources_resolve_against_the_base_dir(tmp_path):
    _write(tmp_path / "lib" / "helpers.py", "H")
    assert load_extra_scripts(["lib/helpers.py"], tmp_path) == (("helpers.py", b"H"),)


def test_every_problem_is_reported_at_its_index(tmp_path):
    good = _write(tmp_path / "good.py")
    problems = _problems(
        ["", str(good), "missing.py", f"{good}:a/b.py", f"{good}:good.py"], tmp_path
    )
    assert [p[0][-1] for p in problems] == [0, 2, 3, 4]
    assert "duplicate destination" in problems[-1][1]


def test_no_specs_is_nothing():
    assert load_extra_scripts([]) == ()


def test_extra_script_problems_are_located_in_the_config(tmp_path):
    text = "workflow:\n  extra_scripts:\n    - ok.py\n    - missing.py\n"
    doc = parse(text, tmp_path / "tau.yaml")
    _write(tmp_path / "ok.py")
    findings = Findings(doc.source)
    with pytest.raises(WorkflowInputError) as info:
        load_extra_scripts(doc.data["workflow"]["extra_scripts"], tmp_path)
    info.value.report(findings)
    with pytest.raises(ConfigError) as raised:
        findings.raise_errors()
    text = raised.value.format()
    assert text.startswith(f"{tmp_path / 'tau.yaml'}:4:7: error: workflow.extra_scripts[1]: ")
    assert "hint: relative paths resolve against the config's folder" in text


# --- the secret payload -----------------------------------------------------------------------

SECRET_VALUE = "s3cr3t-value-never-shown"


def _payload(tmp_path: Path, body: object | str) -> Path:
    text = body if isinstance(body, str) else json.dumps(body)
    path = tmp_path / "tau-job-secrets.json"
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def _payload_problems(path, base_dir=None) -> list[str]:
    with pytest.raises(WorkflowInputError) as info:
        load_secret_payload(str(path), base_dir)
    for problem in info.value.problems:
        assert problem.path == ("workflow", "secret_payload")
        assert SECRET_VALUE not in problem.message
        assert SECRET_VALUE not in (problem.hint or "")
    assert SECRET_VALUE not in str(info.value)
    return [p.message for p in info.value.problems]


def test_a_secret_payload_loads_sorted(tmp_path):
    path = _payload(
        tmp_path, {"name": "tau-job-secrets", "stringData": {"Z": "z", "HF_TOKEN": SECRET_VALUE}}
    )
    assert load_secret_payload(str(path)) == SecretPayload(
        "tau-job-secrets", (("HF_TOKEN", SECRET_VALUE), ("Z", "z"))
    )


def test_unknown_keys_of_the_payload_are_ignored(tmp_path):
    # As the reference's json.Unmarshal into its struct.
    path = _payload(tmp_path, {"name": "s", "stringData": {"K": "v"}, "type": "Opaque"})
    assert load_secret_payload(str(path)) == SecretPayload("s", (("K", "v"),))


@pytest.mark.parametrize("path", [None, "", "  "])
def test_no_secret_payload(path):
    assert load_secret_payload(path) is None


def test_a_relative_payload_path_resolves_against_the_base_dir(tmp_path):
    _payload(tmp_path, {"name": "s", "stringData": {"K": "v"}})
    assert load_secret_payload("tau-job-secrets.json", tmp_path) == SecretPayload(
        "s", (("K", "v"),)
    )


def test_a_missing_payload_is_named_with_its_path(tmp_path):
    missing = tmp_path / "gone.json"
    assert _payload_problems("gone.json", tmp_path) == [
        f"--secret-payload: open {missing}: no such file or directory"
    ]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"name": "s", "stringData": {"K": "' + SECRET_VALUE, "line 1 column 35"),
        ('{"name": "s", "stringData": {"K": ' + SECRET_VALUE + "}}", "line 1 column 35"),
        ('{"name": "s",\n "stringData": {"K": "v"}} ' + SECRET_VALUE, "line 2 column 28"),
    ],
)
def test_a_json_syntax_error_names_the_place_never_the_text(tmp_path, text, where):
    (message,) = _payload_problems(_payload(tmp_path, text))
    assert message.startswith(f"--secret-payload: invalid JSON at {where}: ")


def test_a_payload_that_is_not_utf8(tmp_path):
    path = tmp_path / "p.json"
    path.write_bytes(b'{"name": "s", "stringData": {"K": "\xff\xfe"}}')
    assert _payload_problems(path) == ["--secret-payload: the file is not UTF-8 text"]


def test_a_payload_that_is_not_an_object(tmp_path):
    assert _payload_problems(_payload(tmp_path, [SECRET_VALUE])) == [
        "--secret-payload: expected a JSON object (got array)"
    ]


@pytest.mark.parametrize(
    "body",
    [
        {"stringData": {"K": SECRET_VALUE}},
        {"name": "", "stringData": {"K": SECRET_VALUE}},
        {"name": "s"},
        {"name": "s", "stringData": {}},
        {},
    ],
)
def test_name_and_string_data_are_required(tmp_path, body):
    assert _payload_problems(_payload(tmp_path, body)) == [
        "--secret-payload: requires name and stringData"
    ]


def test_values_must_be_strings_and_are_never_shown(tmp_path):
    body = {"name": "s", "stringData": {"A": 12345, "B": [SECRET_VALUE], "C": "ok"}}
    messages = _payload_problems(_payload(tmp_path, body))
    assert messages == [
        "--secret-payload: stringData.A must be a string (got number)",
        "--secret-payload: stringData.B must be a string (got array)",
    ]
    assert not any("12345" in m for m in messages)


def test_every_payload_problem_at_once(tmp_path):
    body = {"name": "Not_A_Name", "stringData": {"bad key": "v", "OK": 1}}
    assert _payload_problems(_payload(tmp_path, body)) == [
        '--secret-payload: name "Not_A_Name" is not a valid Secret name (lowercase letters, '
        "digits, '-' and '.', at most 253 characters)",
        "--secret-payload: stringData.OK must be a string (got number)",
        '--secret-payload: stringData key "bad key" is not a valid Secret key (letters, '
        "digits, '-', '_' and '.')",
    ]


@pytest.mark.parametrize(("name", "kind"), [(7, "number"), (True, "boolean"), ({"a": 1}, "object")])
def test_the_name_must_be_a_string(tmp_path, name, kind):
    body = {"name": name, "stringData": {"K": "v"}}
    assert _payload_problems(_payload(tmp_path, body)) == [
        f"--secret-payload: name must be a string (got {kind})"
    ]


def test_string_data_must_be_an_object(tmp_path):
    body = {"name": "s", "stringData": [SECRET_VALUE]}
    assert _payload_problems(_payload(tmp_path, body)) == [
        "--secret-payload: stringData must be an object of strings (got array)"
    ]


def test_a_too_long_secret_name(tmp_path):
    body = {"name": "a" * 254, "stringData": {"K": "v"}}
    (message,) = _payload_problems(_payload(tmp_path, body))
    assert "is not a valid Secret name" in message


def test_an_unreported_problem_is_still_a_plain_config_error(tmp_path):
    # A caller that does not locate the problems still gets an error, never a traceback.
    with pytest.raises(ConfigError) as info:
        load_secret_payload("gone.json", tmp_path)
    assert info.value.format() == (
        f"error: workflow.secret_payload: --secret-payload: open {tmp_path / 'gone.json'}: "
        "no such file or directory\n  hint: relative paths resolve against the config's folder"
    )
