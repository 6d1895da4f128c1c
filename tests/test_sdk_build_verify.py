"""`tau python submit-build`'s verification (tau.sdk.artifact): every rule, one artifact each.

Each test starts from a valid build (written by tau.sdk.build.write) and breaks exactly one
thing in it, then checks the exact one-line message the reference SDK gives for that break.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.sdk import build
from tau.sdk.artifact import load_artifact, staged_config, staged_files
from tau.sdk.errors import BuildArtifactError
from tau.sdk.generate import SecretLocator
from tau.sdk.secrets import SecretSource
from tests.test_sdk_build import CHECKPOINT, workload

INDEX = "tau-build.yaml"
TRAIN = "workloads/train-train-model"


def made(tmp_path: Path, *, secrets: bool = False, eval_too: bool = False) -> Path:
    locs: tuple[SecretLocator, ...] = ()
    if secrets:
        locs = (
            SecretLocator("FROM_ENV", "env-token", SecretSource(key="env-token", env="TAU_T")),
            SecretLocator("FROM_FILE", "file-token", SecretSource(key="file-token", path="t.txt")),
        )
    ws = [workload(extra={"helpers.py": b"X = 1\n"}, secrets=locs)]
    if eval_too:
        ws.append(workload("eval", "eval-model", after="train-model", upstream=CHECKPOINT))
    return build.write(ws, tmp_path / "gen", force=False)


def index_of(out: Path) -> dict[str, Any]:
    return yaml.safe_load((out / INDEX).read_text())


def rewrite(out: Path, doc: Any) -> None:
    (out / INDEX).write_text(yaml.safe_dump(doc, sort_keys=False))


def refused(out: Path | str) -> str:
    with pytest.raises(BuildArtifactError) as err:
        load_artifact(Path(out))
    message = err.value.message
    assert "\n" not in message
    return message


# --- the index file ---------------------------------------------------------------------------


def test_the_index_file_itself_may_be_given(tmp_path: Path) -> None:
    out = made(tmp_path)
    assert load_artifact(out / INDEX).root == out.resolve()


def test_a_folder_without_an_index_is_not_a_build(tmp_path: Path) -> None:
    assert refused(tmp_path) == f"Tau build manifest not found: {tmp_path / INDEX}"


def test_a_missing_path_is_not_a_build(tmp_path: Path) -> None:
    gone = tmp_path / "nope"
    assert refused(gone) == f"Tau build manifest not found: {gone / INDEX}"


def test_an_unparsable_index_is_one_line(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / INDEX).write_text("workloads: [\n  - a\n  b: }\n")
    assert refused(out).startswith(f"cannot read Tau build manifest {out / INDEX}: ")


def test_a_binary_index_is_unreadable(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / INDEX).write_bytes(b"\xff\xfe\x00garbage")
    assert refused(out).startswith(f"cannot read Tau build manifest {out / INDEX}: ")


def test_the_index_must_be_a_mapping(tmp_path: Path) -> None:
    out = made(tmp_path)
    rewrite(out, ["a", "b"])
    assert refused(out) == f"{out / INDEX} must contain a mapping"


def test_an_empty_index_has_no_kind(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / INDEX).write_text("")
    assert refused(out) == f"{out / INDEX} kind must be 'tau.python.build', got None"


def test_the_kind_must_be_a_python_build(tmp_path: Path) -> None:
    out = made(tmp_path)
    rewrite(out, {**index_of(out), "kind": "tau.go.build"})
    assert refused(out) == f"{out / INDEX} kind must be 'tau.python.build', got 'tau.go.build'"


@pytest.mark.parametrize(
    ("value", "shown"), [(2, "2"), ("1", "'1'"), (None, "None"), (True, "True")]
)
def test_the_schema_version_must_be_1(tmp_path: Path, value: Any, shown: str) -> None:
    out = made(tmp_path)
    rewrite(out, {**index_of(out), "schema_version": value})
    assert refused(out) == f"{out / INDEX} schema_version must be 1, got {shown}"


@pytest.mark.parametrize("value", [[], None, {"a": 1}, "train"])
def test_workloads_must_be_a_non_empty_list(tmp_path: Path, value: Any) -> None:
    out = made(tmp_path)
    rewrite(out, {**index_of(out), "workloads": value})
    assert refused(out) == f"{out / INDEX} workloads must be a non-empty list"


def test_workload_entries_must_be_mappings(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"].append("eval-model")
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} workload entries must be mappings"


@pytest.mark.parametrize("value", [[], None, "tau.yaml"])
def test_workload_files_must_be_a_non_empty_list(tmp_path: Path, value: Any) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"] = value
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} workload files must be a non-empty list"


def test_file_entries_must_be_mappings(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"].append(f"{TRAIN}/tau.yaml")
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} file entries must be mappings"


# --- staged files -------------------------------------------------------------------------


def test_a_path_listed_twice_in_one_workload_is_refused(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"].append(dict(doc["workloads"][0]["files"][0]))
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} repeats staged file path '{TRAIN}/helpers.py'"


def test_a_path_shared_by_two_workloads_is_refused(tmp_path: Path) -> None:
    out = made(tmp_path, eval_too=True)
    doc = index_of(out)
    doc["workloads"][1]["files"].append(dict(doc["workloads"][0]["files"][0]))
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} repeats staged file path '{TRAIN}/helpers.py'"


@pytest.mark.parametrize("size", [-1, "6", None, 6.0, True])
def test_a_size_must_be_a_non_negative_integer(tmp_path: Path, size: Any) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"][0]["size"] = size
    rewrite(out, doc)
    assert refused(out) == f"{out / INDEX} has invalid size for '{TRAIN}/helpers.py'"


def test_a_file_that_grew_is_a_size_mismatch(tmp_path: Path) -> None:
    out = made(tmp_path)
    first = out / index_of(out)["workloads"][0]["files"][0]["path"]
    first.write_text(first.read_text() + "# modified\n")
    assert refused(out) == (
        f"Tau build file size mismatch for {TRAIN}/helpers.py: expected 6, got 17"
    )


def test_a_changed_file_of_the_same_size_is_a_digest_mismatch(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / TRAIN / "helpers.py").write_bytes(b"X = 2\n")
    good = hashlib.sha256(b"X = 1\n").hexdigest()
    bad = hashlib.sha256(b"X = 2\n").hexdigest()
    assert refused(out) == (
        f"Tau build digest mismatch for {TRAIN}/helpers.py: expected {good}, got {bad}"
    )


def test_a_missing_digest_is_a_digest_mismatch(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    del doc["workloads"][0]["files"][0]["sha256"]
    rewrite(out, doc)
    assert refused(out).startswith(
        f"Tau build digest mismatch for {TRAIN}/helpers.py: expected None, got "
    )


def test_the_config_must_be_among_the_files(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"] = [
        f for f in doc["workloads"][0]["files"] if not f["path"].endswith("tau.yaml")
    ]
    rewrite(out, doc)
    assert (
        refused(out) == f"{out / INDEX} workload config '{TRAIN}/tau.yaml' is not listed in files"
    )


# --- path safety, for both subjects ---------------------------------------------------------

UNSAFE = [
    "",
    "/etc/passwd",
    "../outside.yaml",
    f"{TRAIN}/../train-train-model/tau.yaml",
    f"./{TRAIN}/tau.yaml",
    f"{TRAIN}//tau.yaml",
    f"{TRAIN}/./tau.yaml",
    f"{TRAIN}/",
]


@pytest.mark.parametrize("raw", UNSAFE)
def test_an_unsafe_config_path_is_invalid(tmp_path: Path, raw: str) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["config"] = raw
    rewrite(out, doc)
    assert refused(out) == f"invalid workload config path in Tau build: {raw!r}"


def test_a_missing_config_key_is_an_invalid_path(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    del doc["workloads"][0]["config"]
    rewrite(out, doc)
    assert refused(out) == "invalid workload config path in Tau build: ''"


@pytest.mark.parametrize("raw", UNSAFE)
def test_an_unsafe_staged_file_path_is_invalid(tmp_path: Path, raw: str) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"][0]["path"] = raw
    rewrite(out, doc)
    assert refused(out) == f"invalid staged file path in Tau build: {raw!r}"


def test_a_config_reached_through_a_symlink_outside_escapes(tmp_path: Path) -> None:
    out = made(tmp_path)
    (tmp_path / "outside.yaml").write_text("name: x\n")
    (out / "workloads" / "link.yaml").symlink_to(tmp_path / "outside.yaml")
    doc = index_of(out)
    doc["workloads"][0]["config"] = "workloads/link.yaml"
    rewrite(out, doc)
    assert refused(out) == "workload config escapes Tau build root: 'workloads/link.yaml'"


def test_a_staged_file_in_a_symlinked_folder_outside_escapes(tmp_path: Path) -> None:
    out = made(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "helpers.py").write_bytes(b"X = 1\n")
    (out / "workloads" / "evil").symlink_to(outside)
    doc = index_of(out)
    doc["workloads"][0]["files"][0]["path"] = "workloads/evil/helpers.py"
    rewrite(out, doc)
    assert refused(out) == "staged file escapes Tau build root: 'workloads/evil/helpers.py'"


def test_a_symlink_that_stays_inside_the_root_is_followed(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / TRAIN / "helpers.py").unlink()
    (out / "workloads" / "shared.py").write_bytes(b"X = 1\n")
    (out / TRAIN / "helpers.py").symlink_to(out / "workloads" / "shared.py")
    assert load_artifact(out).workloads[0].name == "train-model"


def test_a_missing_config_is_not_found(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / TRAIN / "tau.yaml").unlink()
    assert refused(out) == f"workload config not found in Tau build: '{TRAIN}/tau.yaml'"


def test_a_missing_staged_file_is_not_found(tmp_path: Path) -> None:
    out = made(tmp_path)
    (out / TRAIN / "helpers.py").unlink()
    assert refused(out) == f"staged file not found in Tau build: '{TRAIN}/helpers.py'"


def test_a_folder_is_not_a_staged_file(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["files"][0]["path"] = TRAIN
    rewrite(out, doc)
    assert refused(out) == f"staged file not found in Tau build: '{TRAIN}'"


def test_a_build_reached_through_a_symlinked_root_verifies(tmp_path: Path) -> None:
    out = made(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(out)
    artifact = load_artifact(link)
    assert artifact.root == out.resolve()
    assert artifact.workloads[0].config_path == out.resolve() / TRAIN / "tau.yaml"


# --- workload records ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kind", "serve"),
        ("kind", None),
        ("name", None),
        ("name", ""),
        ("resource_name", None),
        ("resource_name", 7),
        ("namespace", ["ray"]),
        ("after", 3),
        ("upstream_checkpoint", {"a": 1}),
    ],
)
def test_an_incomplete_workload_record_is_invalid(tmp_path: Path, key: str, value: Any) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0][key] = value
    rewrite(out, doc)
    assert refused(out) == "Tau build contains an invalid workload record"


def test_a_record_without_a_namespace_leaves_it_to_the_workspace(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    del doc["workloads"][0]["namespace"]
    rewrite(out, doc)
    assert load_artifact(out).workloads[0].namespace is None


def test_files_are_verified_before_records_are_judged(tmp_path: Path) -> None:
    out = made(tmp_path)
    doc = index_of(out)
    doc["workloads"][0]["kind"] = "serve"
    rewrite(out, doc)
    (out / TRAIN / "helpers.py").write_bytes(b"changed!\n")
    assert refused(out).startswith("Tau build file size mismatch")


# --- secret locators ----------------------------------------------------------------------


def _secret_record(tmp_path: Path, change) -> str:
    out = made(tmp_path, secrets=True)
    doc = index_of(out)
    change(doc["workloads"][0])
    rewrite(out, doc)
    return refused(out)


def test_secret_sources_must_be_a_list(tmp_path: Path) -> None:
    message = _secret_record(tmp_path, lambda r: r.update(secret_sources={"a": 1}))
    assert message == "workload secret_sources must be a list"


@pytest.mark.parametrize(
    "entry",
    [
        "FROM_ENV",
        {"key": "k", "source": {"kind": "env", "name": "V"}},
        {"env_name": "A", "source": {"kind": "env", "name": "V"}},
        {"env_name": "A", "key": "k", "source": "V"},
        {"env_name": "A", "key": "k", "source": {"kind": "env"}},
        {"env_name": "A", "key": "k", "source": {"kind": "file", "path": ""}},
    ],
)
def test_malformed_secret_metadata_is_refused(tmp_path: Path, entry: Any) -> None:
    message = _secret_record(tmp_path, lambda r: r.update(secret_sources=[entry]))
    assert message == "invalid source-backed secret metadata in Tau build"


def test_an_unknown_secret_source_kind_is_refused(tmp_path: Path) -> None:
    entry = {"env_name": "A", "key": "k", "source": {"kind": "vault", "name": "V"}}
    message = _secret_record(tmp_path, lambda r: r.update(secret_sources=[entry]))
    assert message == "invalid source-backed secret kind for 'A': 'vault'"


def test_a_secret_env_name_twice_is_refused(tmp_path: Path) -> None:
    message = _secret_record(
        tmp_path, lambda r: r["secret_sources"].append(dict(r["secret_sources"][0]))
    )
    assert message == "duplicate source-backed secret env name 'FROM_ENV'"


def test_secret_sources_need_the_generated_secret_name(tmp_path: Path) -> None:
    message = _secret_record(tmp_path, lambda r: r.pop("generated_secret"))
    assert message == "workload with secret_sources is missing generated_secret"


# --- what submit-build gets (cases 24-26, as far as verification goes) ----------------------


def test_a_verified_workload_carries_its_secret_locators(tmp_path: Path) -> None:
    w = load_artifact(made(tmp_path, secrets=True)).workloads[0]
    assert w.generated_secret == "tau-train-model-secrets"
    assert w.secret_sources == [
        SecretLocator("FROM_ENV", "env-token", SecretSource(key="env-token", env="TAU_T")),
        SecretLocator("FROM_FILE", "file-token", SecretSource(key="file-token", path="t.txt")),
    ]


def test_staged_config_is_the_verified_config_with_the_payload_named(tmp_path: Path) -> None:
    out = made(tmp_path, secrets=True)
    before = (out / TRAIN / "tau.yaml").read_bytes()
    w = load_artifact(out).workloads[0]
    plain = staged_config(w, secret_payload=None)
    assert plain == yaml.safe_load(before)
    assert "secret_payload" not in plain["workflow"]
    payload = tmp_path / "private" / "tau-job-secrets.json"
    doc = staged_config(w, secret_payload=payload)
    assert doc["workflow"]["secret_payload"] == str(payload)
    assert (out / TRAIN / "tau.yaml").read_bytes() == before  # the build is never edited


def test_staged_config_paths_resolve_inside_the_workload_folder(tmp_path: Path) -> None:
    w = load_artifact(made(tmp_path)).workloads[0]
    doc = staged_config(w, secret_payload=None)
    assert not Path(doc["run"]["entrypoint"]).is_absolute()
    assert (w.folder / doc["run"]["entrypoint"]).is_file()
    for spec in doc["workflow"]["extra_scripts"]:
        source = spec.split(":", 1)[0]
        assert not Path(source).is_absolute()
        assert (w.folder / source).is_file()


def test_staged_files_are_the_verified_bytes_by_name(tmp_path: Path) -> None:
    w = load_artifact(made(tmp_path)).workloads[0]
    files = {f.name: f.data for f in staged_files(w)}
    assert sorted(files) == ["helpers.py", "tau.yaml", "tau_py_wrapper.py", "tau_user_module.py"]
    assert files["helpers.py"] == b"X = 1\n"
    wrapper = next(f for f in staged_files(w) if f.name == "tau_py_wrapper.py")
    assert (wrapper.role, wrapper.staged_as) == ("entrypoint", "train.py")
    assert w.config_rel == f"{TRAIN}/tau.yaml"


def test_the_artifact_offers_the_same_reads_as_methods(tmp_path: Path) -> None:
    artifact = load_artifact(made(tmp_path, secrets=True))
    w = artifact.workloads[0]
    assert artifact.files(w) == staged_files(w)
    assert artifact.staged_config(w) == staged_config(w, secret_payload=None)
    payload = tmp_path / "p.json"
    assert artifact.staged_config(w, secret_payload=payload)["workflow"]["secret_payload"] == str(
        payload
    )


def test_a_file_changed_after_loading_is_caught_when_read(tmp_path: Path) -> None:
    out = made(tmp_path)
    w = load_artifact(out).workloads[0]
    (out / TRAIN / "tau.yaml").write_text("name: swapped\n")
    with pytest.raises(BuildArtifactError, match="size mismatch"):
        staged_config(w, secret_payload=None)
    (out / TRAIN / "helpers.py").write_bytes(b"X = 9\n")
    with pytest.raises(BuildArtifactError, match="digest mismatch"):
        staged_files(w)
