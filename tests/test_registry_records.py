"""Pure parts of the registry: names, references, record rules, digest rule and text output."""

from __future__ import annotations

import hashlib
import json

import pytest

from tau.registry import format as fmt
from tau.registry import records
from tau.registry.digest import FileFact, dataset_digest
from tau.registry.errors import RegistryError


@pytest.mark.parametrize("name", ["a", "web-1", "x" * 63, "0abc"])
def test_valid_names_pass(name):
    assert records.check_slug("dataset name", name) == name


@pytest.mark.parametrize("name", ["", "Web", "-a", "a-", "a_b", "a/b", "a.b", "x" * 64, "a b"])
def test_bad_names_are_refused_with_the_rule(name):
    with pytest.raises(RegistryError) as err:
        records.check_slug("dataset name", name)
    assert f'invalid dataset name "{name}"' in err.value.message
    assert "lowercase" in (err.value.hint or "")


@pytest.mark.parametrize("version", ["v1", "1.2.3", "2026.01-rc1"])
def test_versions_may_contain_dots(version):
    assert records.check_slug("version", version, dots=True) == version


@pytest.mark.parametrize("version", ["..", "v..1", ".v1", "v1.", "V1"])
def test_bad_versions_are_refused(version):
    with pytest.raises(RegistryError):
        records.check_slug("version", version, dots=True)


def test_dataset_refs_parse():
    assert records.parse_dataset_ref("web") == records.Ref("web")
    assert records.parse_dataset_ref("web@v1.2") == records.Ref("web", "v1.2", "@")
    with pytest.raises(RegistryError, match="names no version"):
        records.parse_dataset_version("web")


def test_model_refs_parse_every_form():
    assert records.parse_model_ref("m") == records.Ref("m")
    assert records.parse_model_ref("m:best") == records.Ref("m", "best", ":")
    assert records.parse_model_ref("m@run-1") == records.Ref("m", "run-1", "@")
    assert records.parse_model_ref("m/run-1") == records.Ref("m", "run-1", "/")
    with pytest.raises(RegistryError):
        records.parse_model_ref("m:../x")


def test_tags_parse_and_match():
    assert records.parse_tags(["a=1", "b = x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(RegistryError, match="invalid tag"):
        records.parse_tags(["nokey"])
    assert records.tags_match({"a": "1", "b": "2"}, {"a": "1"})
    assert not records.tags_match({"a": "1"}, {"a": "1", "b": "2"})


@pytest.mark.parametrize("path", ["/abs", "../up", "a/../b", "./a", "a//b", "", "a\\b", "."])
def test_unclean_paths_are_not_relative(path):
    assert not records.is_clean_relpath(path)


def test_digest_is_sha256_over_sorted_lines():
    files = [FileFact("b.txt", 1, "BB" * 32), FileFact("a.txt", 1, "aa" * 32)]
    lines = sorted([f"{'aa' * 32}  a.txt", f"{'bb' * 32}  b.txt"])
    want = "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert dataset_digest(files) == want
    assert dataset_digest([{"path": f.path, "sha256": f.sha256} for f in files]) == want


def _record(**over):
    files = [{"path": "a.bin", "bytes": 4, "sha256": "0" * 64}]
    base = dict(
        name="web",
        version="v1",
        purpose="eval",
        section={"task": "mmlu"},
        files=files,
        digest=dataset_digest(files),
        created_at="2026-01-01T00:00:00Z",
        tags={},
        source={"kind": "local"},
        location={"prefix": "/d"},
    )
    base.update(over)
    return records.build_dataset_record(**base)


def test_record_has_the_contract_fields_and_one_purpose_section():
    rec = _record()
    assert set(rec) == {
        "schema_version",
        "name",
        "version",
        "purpose",
        "source",
        "account",
        "container",
        "prefix",
        "files",
        "total_bytes",
        "digest",
        "assurance",
        "created_at",
        "tags",
        "components",
        "eval",
    }
    assert rec["total_bytes"] == 4 and rec["assurance"] == "verified"


def test_uint16_records_derive_token_counts():
    rec = _record(purpose="pretrain", section={"format": records.UINT16_FORMAT})
    assert rec["files"][0]["token_count"] == 2 and rec["pretrain"]["total_tokens"] == 2


def test_uint16_odd_sizes_are_invalid():
    files = [{"path": "a.bin", "bytes": 3, "sha256": "0" * 64}]
    with pytest.raises(RegistryError, match="token_count must be bytes/2"):
        _record(purpose="pretrain", section={"format": records.UINT16_FORMAT}, files=files)


def test_validation_reports_every_problem():
    rec = _record()
    rec.update(total_bytes=9, assurance="guess", rl={"kind": "prompts"})
    rec["files"][0]["path"] = "../x"
    problems = records.validate_dataset_record(rec)
    assert len(problems) == 4, problems


def test_purpose_sections_refuse_unknown_fields_and_values():
    assert records.check_purpose_section("rl", {"kind": "nope"})
    assert records.check_purpose_section("eval", {"bogus": 1})
    assert records.check_purpose_section("eval", {"split": "dev"})
    assert records.check_purpose_section("eval", {"task": "t", "split": "test"}) == []


def test_primary_metric_order_and_direction():
    flat = records.flatten_metrics({"eval": {"loss": 1, "acc": 0.5}, "score": 3, "note": "x"})
    assert flat == {"eval.acc": 0.5, "eval.loss": 1.0, "score": 3.0}
    assert records.primary_metric(flat) == {"name": "eval.loss", "value": 1.0, "direction": "lower"}
    assert records.metric_direction("accuracy") == "higher"


@pytest.mark.parametrize(
    ("n", "text"), [(0, "0B"), (1023, "1023B"), (1536, "1.5KiB"), (3 << 29, "1.5GiB")]
)
def test_human_bytes(n, text):
    assert fmt.human_bytes(n) == text


def test_table_is_aligned_without_trailing_blanks():
    out = fmt.table(("A", "LONGER"), [("xxxx", "1"), ("y", "")])
    assert out == "A     LONGER\nxxxx  1\ny\n"


def test_json_is_stable():
    text = fmt.to_json({"b": 1, "a": [1]})
    assert text == '{\n  "a": [\n    1\n  ],\n  "b": 1\n}\n'
    assert json.loads(text) == {"a": [1], "b": 1}
