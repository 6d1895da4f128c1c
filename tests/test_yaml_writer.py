"""The YAML writer of `--dry-run=client` (tau.render.manifests.dump_yaml) reads back as written.

A property test: random documents of the plain data a render produces (strings of any
character, numbers including NaN and the infinities, booleans, null, nested maps and lists)
go through the writer and back through PyYAML, pure and libyaml alike, unchanged. The examples
pin the forms: non-printables escaped as YAML 1.2 double-quoted escapes, non-finite floats as
YAML floats, and strings a YAML 1.2 reader would take for a number quoted.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau.render.manifests import canonical, dump_yaml

LOADERS = [yaml.SafeLoader, *([yaml.CSafeLoader] if hasattr(yaml, "CSafeLoader") else [])]


class _NaN:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NaN)

    def __repr__(self) -> str:
        return "NaN"


def comparable(value: Any) -> Any:
    """The value with NaN made equal to itself (NaN != NaN would fail every comparison)."""
    if isinstance(value, float) and math.isnan(value):
        return _NaN()
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def read_back(text: str) -> list[Any]:
    loaded = [list(yaml.load_all(text, Loader=loader)) for loader in LOADERS]
    assert all(comparable(docs) == comparable(loaded[0]) for docs in loaded)
    return loaded[0]


def roundtrip(doc: dict[str, Any]) -> None:
    text = dump_yaml([doc])
    assert comparable(read_back(text)) == [comparable(canonical(doc))], text


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
    # The characters that need care, more often than uniform text would give them.
    | st.text(
        st.sampled_from("\x00\x07\t\n\r\x1b\x7f\x85\xa0\u2028\u2029\ufeff\ufffe #:-'\" a1e.|>")
    )
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
documents = st.dictionaries(st.text(), values, min_size=1, max_size=5)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_random_documents_read_back_unchanged(doc: dict[str, Any]) -> None:
    roundtrip(doc)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("a\x7fb", '"a\\x7Fb"'),
        ("bell\x07", '"bell\\a"'),
        ("nul\x00", '"nul\\0"'),
        ("tab\tin", '"tab\\tin"'),
        ("nel\x85", '"nel\\N"'),
        ("ls\u2028", '"ls\\L"'),
        ("bom\ufeff", '"bom\\uFEFF"'),
        (float("nan"), ".nan"),
        (float("inf"), ".inf"),
        (float("-inf"), "-.inf"),
        (1e16, "1.0e+16"),
        (2.5, "2.5"),
        ("1e3", "'1e3'"),
        ("0o17", "'0o17'"),
        ("-.inf", "'-.inf'"),
        ("plain", "plain"),
    ],
)
def test_the_forms_written(value: Any, written: str) -> None:
    text = dump_yaml([{"env": value}])
    assert text == f"env: {written}\n"
    assert comparable(read_back(text)) == [comparable({"env": value})]


def test_an_env_value_with_del_renders_a_client_dry_run_pyyaml_reads(tmp_path, monkeypatch, capsys):
    from tau.cli import main

    (tmp_path / "train.py").write_text("print('hi')\n")
    (tmp_path / "tau.yaml").write_text(
        "name: del-env\nengine: job\nentrypoint: train.py\nruntime:\n  image: python:3.12\n"
        '  env:\n    ODD: "a\\x7fb"\npolicy:\n  profile: cpu\ncompute:\n  gpus: 0\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "tau.yaml", "--dry-run=client"]) == 0
    out = capsys.readouterr().out
    (job,) = [d for d in read_back(out) if d["kind"] == "Job"]
    env = {
        e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["ODD"] == "a\x7fb"
