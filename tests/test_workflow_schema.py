"""The manifest's JSON Schema, its generated model and the parser agree, and the CLI prints them.

spec/tau-workflow-manifest.schema.json documents the schema_version: 1 manifest; codegen.py
generates tau_models.workflow_manifest from it; tau.intent.workflow.manifest parses it. The
field set of the schema is exactly what the parser reads (a drift guard in both directions),
and the three accept and reject the same documents.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pydantic
import pytest
import yaml
from tau_models.workflow_manifest import WorkflowManifest

from tau.cli import main
from tau.errors import ConfigError
from tau.intent.load import parse as parse_yaml
from tau.intent.spec import (
    WORKFLOW_MANIFEST_SCHEMA,
    spec_path,
    workflow_manifest_schema,
    workflow_manifest_schema_bytes,
)
from tau.intent.workflow import unknown
from tau.intent.workflow.manifest import FIELDS, parse
from tests.test_workflow_manifest import BASE, SDK_EVAL, SDK_TRAIN

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "spec" / "tau-workflow-manifest.schema.json"
MODEL_FILE = ROOT / "generated" / "tau_models" / "workflow_manifest.py"
Cap = pytest.CaptureFixture[str]

FULL = """\
schema_version: 1
name: full
resource_naming: {prefix: team}
compute:
  gpus: 2
  workers: 2
  cpus: 4
  cpu_limit: "8"
  worker_cpus: 2
  worker_cpu_limit: 4
  memory: 16Gi
  memory_limit: 32Gi
  worker_memory: 8Gi
  worker_memory_limit: 16Gi
eval: {cpu_workers: 2, upstream: train-full}
runtime:
  pip: [torch==2.4.0]
  image: example.invalid/ray:2
  env:
    - {name: MODE, value: train}
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: tau-full-secrets, key: TOKEN, optional: false}}
  env_kv: {OPENAI_KEY: vault/openai}
storage:
  data_pvc: data
  mounts:
    - {name: cache, mountPath: /cache, pvc: cache, readOnly: true}
artifacts: {checkpoint: last.safetensors}
research: {experiment: sweep}
model:
  name: full-model
  base: base
  task: task
  tags: {k: v}
  primary_metric: loss
  metric_direction: lower
"""


def schema_fields(schema: dict[str, Any]) -> set[str]:
    """Every dotted field path of a schema; list items share their list's path."""
    found: set[str] = set()

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, child in node.get("properties", {}).items():
            found.add(prefix + key)
            walk(child, f"{prefix}{key}.")
            if isinstance(child.get("items"), dict):
                walk(child["items"], f"{prefix}{key}.")

    walk(schema, "")
    return found


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = workflow_manifest_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["title"] == "Tau managed workflow manifest"
    assert schema["required"] == ["schema_version", "name", "runtime"]


def test_the_schema_documents_exactly_the_fields_the_parser_reads() -> None:
    assert schema_fields(workflow_manifest_schema()) == set(FIELDS)


def test_every_schema_field_has_a_description_and_a_status() -> None:
    def walk(node: dict[str, Any], path: str) -> None:
        for key, child in node.get("properties", {}).items():
            assert child.get("description"), f"{path}{key}"
            assert child.get("x-tau-status") in ("supported", "unsupported"), f"{path}{key}"
            walk(child, f"{path}{key}.")
            if isinstance(child.get("items"), dict):
                walk(child["items"], f"{path}{key}.")

    walk(workflow_manifest_schema(), "")


def _bad_value(node: dict[str, Any]) -> Any:
    kind = node.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds:
        return {"not": "a list"}
    if "string" in kinds or "object" in kinds:
        return ["not", "a", "scalar"]
    return "not-a-number-or-boolean"


def _with_bad(field: str) -> dict[str, Any]:
    """FULL with `field` (in the last item of a list on the way) replaced by a wrong type."""
    data = yaml.safe_load(FULL)
    node: Any = data
    schema = workflow_manifest_schema()
    parts = field.split(".")
    for i, part in enumerate(parts):
        schema = schema["properties"][part]
        if i == len(parts) - 1:
            node[part] = _bad_value(schema)
            break
        node = node.setdefault(part, {})
        if schema.get("type") == "array":
            node, schema = node[-1], schema["items"]
    return data


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_every_schema_field_is_checked_by_the_parser(field: str) -> None:
    text = yaml.safe_dump(_with_bad(field), sort_keys=False)
    with pytest.raises(ConfigError) as caught:
        parse(parse_yaml(text, Path("m.yaml")), text.encode())
    where = {
        ".".join(p for p in d.path.replace("[", ".[").split(".") if not p.startswith("["))
        for d in caught.value.diagnostics
        if d.severity == "error"
    }
    # A field of runtime.rdma is refused as the whole block.
    expected = "runtime.rdma" if field.startswith("runtime.rdma") else field
    assert expected in where, (field, where)


VALID = {
    "base": BASE,
    "full": FULL,
    "sdk-train": SDK_TRAIN,
    "sdk-eval": SDK_EVAL,
    "cpu-only": BASE.replace("{gpus: 1}", '{gpus: 0, cpus: "500m", memory: 512Mi}'),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_a_valid_manifest_passes_schema_model_and_parser(name: str) -> None:
    text = VALID[name]
    data = yaml.safe_load(text)
    jsonschema.Draft202012Validator(workflow_manifest_schema()).validate(data)
    WorkflowManifest.model_validate(data)
    parse(parse_yaml(text, Path("m.yaml")), text.encode())


def _edit(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(yaml.safe_load(FULL))
    node = data
    *parents, last = path.split(".")
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return data


INVALID = {
    "schema-version": _edit("schema_version", 2),
    "name-pattern": _edit("name", "Bad_Name"),
    "no-name": _edit("name", KeyError),
    "gpus-above-8": _edit("compute.gpus", 9),
    "gpus-string": _edit("compute.gpus", "two"),
    "no-pip": _edit("runtime.pip", KeyError),
    "empty-pip": _edit("runtime.pip", []),
    "env-name": _edit("runtime.env.0.name", "1BAD"),
    "env-map": _edit("runtime.env", {"A": "b"}),
    "mount-name": _edit("storage.mounts.0.name", "a b"),
    "mount-relative-path": _edit("storage.mounts.0.mountPath", "cache"),
    "mount-no-pvc": _edit("storage.mounts.0.pvc", KeyError),
    "eval-negative": _edit("eval.cpu_workers", -1),
    "metric-direction": _edit("model.metric_direction", "sideways"),
    "prefix-pattern": _edit("resource_naming.prefix", "Bad_Prefix"),
    "cpus-list": _edit("compute.cpus", [4]),
    "tags-not-strings": _edit("model.tags", {"k": 1}),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_an_invalid_manifest_is_rejected_by_schema_model_and_parser(name: str) -> None:
    data = INVALID[name]
    assert list(jsonschema.Draft202012Validator(workflow_manifest_schema()).iter_errors(data))
    with pytest.raises(pydantic.ValidationError):
        WorkflowManifest.model_validate(data)
    text = yaml.safe_dump(data, sort_keys=False)
    with pytest.raises(ConfigError):
        parse(parse_yaml(text, Path("m.yaml")), text.encode())


def test_the_generated_model_header_names_its_source_and_that_sources_sha256() -> None:
    digest = hashlib.sha256(SCHEMA_FILE.read_bytes()).hexdigest()
    first, second = MODEL_FILE.read_text().splitlines()[:2]
    assert first == (
        f"# Generated by codegen.py from spec/tau-workflow-manifest.schema.json (sha256:{digest})"
    )
    assert "Do not edit" in second


def test_the_schema_is_packaged_with_the_other_spec_files() -> None:
    assert spec_path(WORKFLOW_MANIFEST_SCHEMA).read_bytes() == SCHEMA_FILE.read_bytes()
    assert workflow_manifest_schema_bytes() == SCHEMA_FILE.read_bytes()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = pyproject["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    assert include["spec"] == "tau/_spec"  # the whole spec/ directory, this schema included


def test_every_manifest_field_is_a_known_key_of_the_managed_path() -> None:
    assert set(FIELDS) <= set(unknown.known_paths())


# the CLI


def test_run_schema_manifest_prints_the_checked_in_schema_byte_for_byte(
    capsysbinary: pytest.CaptureFixture[bytes],
) -> None:
    for argv in (["--manifest"], ["--manifest", "-o", "json"]):
        assert main(["run", "schema", *argv]) == 0
        out, err = capsysbinary.readouterr()
        assert out == SCHEMA_FILE.read_bytes()
        assert err == b""


def test_run_schema_help_says_what_manifest_prints(capsys: Cap) -> None:
    main(["run", "schema", "--help"])
    out = capsys.readouterr().out
    assert "--manifest" in out and "managed workflow manifest" in out


def _sections(out: str) -> tuple[str, str]:
    run_config, manifest = out.split("\n# Managed workflow manifest reference\n")
    return run_config, manifest


def _row_fields(markdown: str) -> list[str]:
    return [line.split("`")[1] for line in markdown.splitlines() if line.startswith("| `")]


def test_explain_config_has_a_manifest_section_with_a_row_per_field(capsys: Cap) -> None:
    assert main(["run", "explain-config"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    _, manifest = _sections(out)
    fields = _row_fields(manifest)
    assert fields == sorted(FIELDS)
    rows = {line.split("`")[1]: line for line in manifest.splitlines() if line.startswith("| `")}
    assert (
        "| integer | supported |" in rows["compute.gpus"] and "default: 1" in rows["compute.gpus"]
    )
    assert "| number or string | supported |" in rows["compute.cpus"]
    assert "| unsupported |" in rows["runtime.rdma"]
    assert "values: lower, higher" in rows["model.metric_direction"]
    assert "default: 2Gi when compute.gpus is 0" in rows["compute.memory"]
    assert "`tau run schema --manifest`" in manifest


def test_explain_config_says_workflow_file_renders_the_manifest(capsys: Cap) -> None:
    main(["run", "explain-config"])
    run_config, _ = _sections(capsys.readouterr().out)
    rows = {line.split("`")[1]: line for line in run_config.splitlines() if line.startswith("| `")}
    assert "renders the managed workload it names" in rows["workflow.file"]
    assert "tau run schema --manifest" in rows["workflow"]
    assert "outside" not in rows["workflow"]


def test_explain_config_json_lists_the_manifest_fields(capsys: Cap) -> None:
    assert main(["run", "explain-config", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    manifest = {row["field"]: row for row in doc["manifest_fields"]}
    assert sorted(manifest) == sorted(FIELDS)
    assert manifest["resource_naming.prefix"]["default"] == "tau"
    assert manifest["schema_version"]["values"] == ["1"]
    assert "workflow.file" in {row["field"] for row in doc["fields"]}
