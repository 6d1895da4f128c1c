"""Rules that hold for every rendered run, checked across the golden corpus and examples."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tests.manifest_check import (
    MODULE_CRDS,
    upstream_available,
    upstream_kinds,
    validate_upstream,
)

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_DOCS = [
    (case.name, doc)
    for case in sorted((ROOT / "golden").glob("*/rendered.yaml"))
    for doc in yaml.safe_load_all(case.read_text())
]


def _containers(doc):
    # A run's Secret (workflow.secret_payload) has no spec, and no containers.
    spec = doc.get("spec") or {}
    if doc["kind"] == "Job":
        yield from spec["template"]["spec"]["containers"]
    elif doc["kind"] == "RayJob":
        cluster = spec["rayClusterSpec"]
        yield from cluster["headGroupSpec"]["template"]["spec"]["containers"]
        for group in cluster["workerGroupSpecs"]:
            yield from group["template"]["spec"]["containers"]


#: Key prefixes of tau, Kueue, KubeRay, Kubernetes and AKS: declared only in src/tau/k8s/meta.py.
KEY_PREFIX = re.compile(
    r"(tau\.azure\.com|kueue\.x-k8s\.io|kueue\.azure\.com|ray\.io|kubernetes\.io"
    r"|kubernetes\.azure\.com)/"
)


def _string_constants(tree: ast.Module):
    """Every string literal of a module except docstrings (which may quote keys as examples)."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node


def test_no_label_or_annotation_key_literal_appears_outside_the_meta_module():
    offenders = []
    for path in (ROOT / "src" / "tau").rglob("*.py"):
        if path.relative_to(ROOT).as_posix() == "src/tau/k8s/meta.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _string_constants(tree):
            if KEY_PREFIX.search(node.value):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert offenders == []


@pytest.mark.parametrize(("case", "doc"), GOLDEN_DOCS, ids=[c for c, _ in GOLDEN_DOCS])
def test_every_golden_crd_document_conforms_to_the_upstream_crd(case, doc):
    if not upstream_available():
        pytest.skip("../shared/upstream-crds is not present")
    group = doc["apiVersion"].rpartition("/")[0]
    if (group, doc["kind"]) in MODULE_CRDS and (group, doc["kind"]) not in upstream_kinds():
        pytest.skip(f"the {doc['kind']} CRD is not in the Go module cache")
    if "/" in doc["apiVersion"] and group.endswith(("ray.io", "k8s.io")):
        assert validate_upstream(doc) == []


@pytest.mark.parametrize(("case", "doc"), GOLDEN_DOCS, ids=[c for c, _ in GOLDEN_DOCS])
def test_workloads_are_created_suspended_with_a_queue_label(case, doc):
    if doc["kind"] in ("Job", "RayJob"):
        assert doc["spec"]["suspend"] is True
        assert doc["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]


@pytest.mark.parametrize(("case", "doc"), GOLDEN_DOCS, ids=[c for c, _ in GOLDEN_DOCS])
def test_gpu_is_requested_and_limited_alike_and_absent_on_cpu_containers(case, doc):
    for container in _containers(doc):
        resources = container.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        gpu_keys = [k for k in {*requests, *limits} if k.startswith("nvidia.com/")]
        for key in gpu_keys:
            assert requests.get(key) == limits.get(key) and int(requests[key]) > 0


@pytest.mark.parametrize(("case", "doc"), GOLDEN_DOCS, ids=[c for c, _ in GOLDEN_DOCS])
def test_client_dry_run_never_shows_a_secret_name_or_key(case, doc):
    text = yaml.safe_dump(doc)
    for ref in re.findall(r"secretKeyRef:\n\s+key: (\S+)\n\s+name: (\S+)", text):
        assert ref == ("<redacted>", "<redacted>")
    for secret in ("hf-credentials", "wandb", "api-key"):
        assert secret not in text.replace("WANDB_API_KEY", "")


def test_client_dry_run_is_byte_identical_across_runs_and_working_directories(
    monkeypatch, capsys, tmp_path
):
    config = ROOT / "examples" / "tau" / "train.yaml"
    outputs = []
    for cwd in (ROOT / "examples", tmp_path, ROOT / "examples"):
        monkeypatch.chdir(cwd)
        assert main(["run", "--config", str(config), "--dry-run=client"]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] == outputs[2]


def test_the_placeholder_warning_names_only_what_was_substituted(monkeypatch, capsys):
    monkeypatch.chdir(ROOT / "golden" / "job-env-secret-redacted")
    assert main(["run", "--config", "tau.yaml", "--dry-run=client"]) == 0
    err = capsys.readouterr().err
    assert "namespace shown as a placeholder" in err and "queue and namespace" not in err


def test_an_unknown_dry_run_mode_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.chdir(ROOT / "examples")
    assert main(["run", "train", "--dry-run=local"]) == 1
    assert "--dry-run must be one of: client, server" in capsys.readouterr().err


def test_json_output_holds_the_same_objects_as_yaml(monkeypatch, capsys):
    import json

    from tau.k8s import meta
    from tests.test_golden import GOLDEN_CODE_SHA

    monkeypatch.chdir(ROOT / "golden" / "job-torchrun-multi-node")
    monkeypatch.setattr("tau.provenance.code_sha", lambda _directory: GOLDEN_CODE_SHA)
    argv = ["run", "--config", "tau.yaml", "--dry-run=client", "-o", "json"]
    assert main(argv) == 0
    as_json = json.loads(capsys.readouterr().out)
    as_yaml = list(
        yaml.safe_load_all(
            (ROOT / "golden" / "job-torchrun-multi-node" / "rendered.yaml").read_text()
        )
    )
    # The same objects; only the recorded command line says -o json.
    for doc in as_yaml:
        notes = doc["metadata"].get("annotations") or {}
        if meta.ANNOTATION_TAU_COMMAND in notes:
            notes[meta.ANNOTATION_TAU_COMMAND] = "tau " + " ".join(argv)
    assert as_json["kind"] == "List" and as_json["items"] == as_yaml


def test_the_catalog_comes_from_tau_topology_policy_when_the_config_names_none(
    monkeypatch, capsys, tmp_path
):
    case = ROOT / "golden" / "job-topology-policy-file"
    (tmp_path / "train.py").write_text((case / "train.py").read_text())
    (tmp_path / "tau.yaml").write_text(
        "name: lab-env\nengine: job\nentrypoint: train.py\npolicy:\n  preset: lab.training.2x\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TAU_TOPOLOGY_POLICY", str(case / "lab-policy.yaml"))
    assert main(["run", "--config", "tau.yaml", "--dry-run=client"]) == 0
    out = capsys.readouterr().out
    assert "tau.azure.com/topology-policy-source: lab-policy.yaml" in out
    assert "kueue.x-k8s.io/queue-name: lab-training" in out


def test_offline_commands_never_import_the_kubernetes_client():
    import subprocess
    import sys

    code = (
        "import sys; from tau.cli import main; "
        "main(['run', 'train', '--dry-run=client']); main(['run', 'validate', 'finetune']); "
        "sys.exit(3 if 'kubernetes' in sys.modules else 0)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT / "examples",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(("case", "doc"), GOLDEN_DOCS, ids=[c for c, _ in GOLDEN_DOCS])
def test_every_rendered_shell_script_parses(case, doc):
    import shutil
    import subprocess

    if shutil.which("bash") is None:
        pytest.skip("bash is not installed")
    scripts = []
    if doc["kind"] == "Job":
        for container in doc["spec"]["template"]["spec"]["containers"]:
            argv = container.get("command") or []
            scripts += [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("-c", "-lc")]
    elif doc["kind"] == "RayJob":
        scripts.append(doc["spec"]["entrypoint"])
    for script in scripts:
        proc = subprocess.run(
            ["bash", "-n", "-c", script], capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, f"{case}: {proc.stderr}"
