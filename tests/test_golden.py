"""The golden corpus: each golden/<case>/ holds a tau.yaml and the exact CLI output.

golden/<case>/rendered.yaml is byte for byte `tau run --config tau.yaml --dry-run=client`
run in the case directory; golden/invalid/<case>/error.txt is its stderr and exit code.
An optional `args` file adds command-line arguments (one per line). Adding a case is
adding a directory; `make golden` writes the outputs.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tests.golden_plugin import assert_error_golden, assert_golden
from tests.manifest_check import validate_document

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
VALID = sorted(p.parent for p in GOLDEN.glob("*/tau.yaml"))
INVALID = sorted(p.parent for p in (GOLDEN / "invalid").glob("*/tau.yaml"))


def _argv(case: Path) -> list[str]:
    extra = case / "args"
    args = shlex.split(extra.read_text()) if extra.exists() else []
    return ["run", *args, "--config", "tau.yaml", "--dry-run=client"]


#: The code-sha every golden shows. The cases live inside this repository, whose HEAD changes
#: with every commit; the harness pins the one function that asks Git, so the annotation's
#: presence and place are checked while its value stays fixed (tests/test_provenance.py covers
#: the real Git lookup).
GOLDEN_CODE_SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _run(
    case: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.chdir(case)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    # The platform side of metrics offload: a developer's own values must not leak into goldens.
    monkeypatch.delenv("TAU_METRICS_OFFLOAD_IMAGE", raising=False)
    monkeypatch.delenv("TAU_METRICS_OFFLOAD_INTERVAL", raising=False)
    monkeypatch.setattr("tau.provenance.code_sha", lambda _directory: GOLDEN_CODE_SHA)
    code = main(_argv(case))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_golden_case_renders_exactly_its_rendered_yaml(case, monkeypatch, capsys, update_golden):
    code, out, err = _run(case, monkeypatch, capsys)
    assert code == 0, err
    assert_golden(out, case / "rendered.yaml", update_golden)
    warnings = case / "warnings.txt"
    if err or warnings.exists():
        assert_golden(err, warnings, update_golden)


@pytest.mark.parametrize("case", VALID, ids=[c.name for c in VALID])
def test_every_golden_document_passes_the_kubernetes_and_crd_schemas(case):
    for doc in yaml.safe_load_all((case / "rendered.yaml").read_text()):
        assert validate_document(doc) == [], f"{case.name}: {doc['kind']} is not valid"


@pytest.mark.parametrize("case", INVALID, ids=[c.name for c in INVALID])
def test_invalid_golden_case_fails_with_exactly_its_error_txt(
    case, monkeypatch, capsys, update_golden
):
    code, out, err = _run(case, monkeypatch, capsys)
    assert_error_golden(code, out, err, case / "error.txt", update_golden)


def test_golden_outputs_have_inputs():
    """A rendered.yaml or error.txt whose tau.yaml is gone is stale."""
    for output in [*GOLDEN.glob("*/rendered.yaml"), *GOLDEN.glob("invalid/*/error.txt")]:
        assert (output.parent / "tau.yaml").exists(), f"orphan golden output {output}"


def test_the_corpus_has_at_least_thirty_cases():
    assert len(VALID) + len(INVALID) >= 30
