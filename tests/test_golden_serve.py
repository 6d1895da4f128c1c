"""The serve golden corpus: golden/serve/<case>/args → the exact `tau serve deploy` output.

golden/serve/<case>/args is one shell line, the arguments after `tau serve deploy`;
rendered.yaml is stdout byte for byte (warnings.txt holds stderr when there is any).
golden/serve/invalid/<case>/error.txt is the exit code and stderr. Adding a case is adding
a directory; `make golden` writes the outputs.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tests.golden_plugin import assert_error_golden, assert_golden
from tests.manifest_check import upstream_available, validate_document, validate_upstream

SERVE = Path(__file__).resolve().parents[1] / "golden" / "serve"
VALID = sorted(p.parent for p in SERVE.glob("*/args"))
INVALID = sorted(p.parent for p in (SERVE / "invalid").glob("*/args"))


def _run(
    case: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.chdir(case)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    code = main(["serve", "deploy", *shlex.split((case / "args").read_text())])
    out, err = capsys.readouterr()
    return code, out, err


def _documents(case: Path) -> list[dict]:
    text = (case / "rendered.yaml").read_text()
    if text.startswith("{"):
        body = json.loads(text)
        return body["items"] if body["kind"] == "List" else [body]
    return list(yaml.safe_load_all(text))


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_serve_golden_case_prints_exactly_its_rendered_yaml(
    case, monkeypatch, capsys, update_golden
):
    assert "--dry-run=client" in (case / "args").read_text(), "a golden never contacts a cluster"
    code, out, err = _run(case, monkeypatch, capsys)
    assert code == 0, err
    assert_golden(out, case / "rendered.yaml", update_golden)
    warnings = case / "warnings.txt"
    if err or warnings.exists():
        assert_golden(err, warnings, update_golden)


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_every_serve_document_passes_the_kubernetes_and_crd_schemas(case):
    for doc in _documents(case):
        assert validate_document(doc) == [], f"{case.name}: {doc['kind']} is not valid"


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_every_rayservice_conforms_to_the_upstream_kuberay_crd(case):
    if not upstream_available():
        pytest.skip("../shared/upstream-crds is not present")
    for doc in _documents(case):
        if doc["kind"] == "RayService":
            assert validate_upstream(doc) == []


@pytest.mark.parametrize("case", INVALID, ids=[c.name for c in INVALID])
def test_invalid_serve_case_fails_with_exactly_its_error_txt(
    case, monkeypatch, capsys, update_golden
):
    code, out, err = _run(case, monkeypatch, capsys)
    assert_error_golden(code, out, err, case / "error.txt", update_golden)


def test_serve_golden_outputs_have_inputs():
    """A rendered.yaml or error.txt whose args file is gone is stale."""
    for output in [*SERVE.glob("*/rendered.yaml"), *SERVE.glob("invalid/*/error.txt")]:
        assert (output.parent / "args").exists(), f"orphan golden output {output}"


def test_the_serve_corpus_covers_the_required_cases():
    names = {c.name for c in VALID}
    assert len(VALID) >= 8 and len(INVALID) >= 5
    assert {
        "rayservice-default",
        "rayservice-autoscaling",
        "checkpoint-relative",
        "checkpoint-absolute",
        "checkpoint-projects",
        "env-secret-redacted",
        "deployment-with-service",
        "deployment-without-service",
    } <= names
