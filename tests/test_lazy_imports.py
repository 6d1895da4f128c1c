"""Offline commands stay fast: `tau run validate` never imports the Kubernetes client.

Each check runs a fresh interpreter, because this test process has long imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tau.cli import ROOTS

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, sys
from tau.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def modules_after(argv: list[str], cwd: Path) -> tuple[int, set[str]]:
    """Run `tau ARGV` in a fresh interpreter; its exit code and every module it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.splitlines()[-1])
    return report["code"], set(report["modules"])


def imported(modules: set[str], package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in modules)


@pytest.fixture(scope="module")
def validate_modules() -> set[str]:
    code, modules = modules_after(["run", "validate", "train"], ROOT / "examples")
    assert code == 0
    return modules


def test_run_validate_does_not_import_the_kubernetes_client(validate_modules: set[str]) -> None:
    assert "tau.intent.validate" in validate_modules  # the probe did run validation
    assert not imported(validate_modules, "kubernetes")


def test_run_validate_does_not_import_the_renderer_or_the_cluster_layers(
    validate_modules: set[str],
) -> None:
    for package in (
        "tau.render",
        "tau.runs.submit",
        "tau.kube",
        "tau.registry",
        "tau.connection",
        "urllib3",
    ):
        assert not imported(validate_modules, package), package


def test_run_validate_loads_only_the_run_root_of_the_cli(validate_modules: set[str]) -> None:
    assert "tau.cli.run" in validate_modules
    for root in ("cluster", "workspace", "serve", "data", "python", "version"):
        assert f"tau.cli.{root}" not in validate_modules, root


@pytest.mark.parametrize("argv", [["run", "schema"], ["run", "explain-config"], ["version"]])
def test_other_offline_commands_do_not_import_the_kubernetes_client(argv: list[str]) -> None:
    code, modules = modules_after(argv, ROOT)
    assert code == 0
    assert not imported(modules, "kubernetes")


@pytest.mark.parametrize(
    "argv", [["run", "validate", "train"], ["run", "schema"], ["version"], ["--help"]]
)
def test_tau_never_imports_the_portal_or_pyarrow(argv: list[str]) -> None:
    code, modules = modules_after(argv, ROOT / "examples")
    assert code == 0
    for package in ("tau.portal", "pyarrow", "kubernetes"):
        assert not imported(modules, package), package


@pytest.mark.parametrize("argv", [["--help"], ["run", "validate", "train"], ["version"]])
def test_tau_does_not_import_the_python_sdk(argv: list[str]) -> None:
    """`tau.train` & co. resolve on first access (tau/__init__.py); no command here touches them."""
    code, modules = modules_after(argv, ROOT / "examples")
    assert code == 0
    assert not imported(modules, "tau.sdk")


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "train", "--dry-run=client"],
        ["run", "finetune", "--dry-run", "client", "-o", "json"],
        ["run", "--config", "tau/eval.yaml", "--dry-run=client"],
    ],
)
def test_a_client_dry_run_imports_neither_cyclopts_nor_the_kubernetes_client(
    argv: list[str],
) -> None:
    """The hot path (tau.cli.fast) renders without the CLI framework or any cluster layer."""
    code, modules = modules_after(argv, ROOT / "examples")
    assert code == 0
    assert "tau.render.manifests" in modules  # the probe did render
    for package in ("cyclopts", "rich", "kubernetes", "urllib3", "tau.kube", "tau.session"):
        assert not imported(modules, package), package
    for root in ROOTS:
        assert f"tau.cli.{root}" not in modules, root


def test_a_line_outside_the_hot_path_still_builds_the_full_app() -> None:
    code, modules = modules_after(["run", "validate", "train"], ROOT / "examples")
    assert code == 0
    assert "cyclopts" in modules and "tau.cli.run" in modules
    assert "tau.cli.fast" not in modules  # not even its parser


PORTAL_PROBE = """
import json, sys
from tau.portal.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def test_portal_help_and_search_do_not_import_pyarrow_or_kubernetes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    for argv in (
        ["--help"],
        ["experiment", "init", "demo", "--store", str(store)],
        ["experiment", "search", "--store", str(store)],
    ):
        proc = subprocess.run(
            [sys.executable, "-c", PORTAL_PROBE, *argv],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        modules = set(json.loads(proc.stdout.splitlines()[-1])["modules"])
        for package in ("pyarrow", "kubernetes", "tau.portal.capture.jsonl", "psycopg"):
            assert not imported(modules, package), (argv, package)


@pytest.mark.parametrize(
    "module", ["tau.intent.workflow.probe", "tau.intent.validate", "tau.cli.loading"]
)
def test_each_config_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    """probe and validate import each other's parts: either may be the first one loaded."""
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    "verb", [["status", "train"], ["list"], ["logs", "train"], ["get", "train"]]
)
def test_lifecycle_verbs_never_load_the_official_clients_models(
    verb: list[str], kube_api, kubeconfig_file: Path, tmp_path: Path, monkeypatch
) -> None:
    """A read of a few objects costs less than importing the official client's generated API
    classes (hundreds of typed models); with a static credential it does not import the
    client at all (tau.kube.direct), nor urllib3, nor the CLI framework (tau.cli.fast_reads).
    """
    kube_api.register_kueue_kuberay_tau_kinds()
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    argv = ["run", *verb, "-n", "team", "--context", "emulator"]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.replace("code = main", "code = 0; main"), *argv],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    modules = set(json.loads(proc.stdout.splitlines()[-1])["modules"])
    assert "tau.kube.resources" in modules  # the probe did read the cluster
    for package in ("kubernetes", "urllib3", "cyclopts"):
        assert not imported(modules, package), (verb, package)


LOG_PROBE = """
import sys
before = set(sys.modules)
import tau
tau.log({"loss": 0.5}, step=1)
print(",".join(sorted(set(sys.modules) - before)))
"""


def test_tau_log_loads_only_its_own_module_and_c_builtins(tmp_path: Path) -> None:
    """Training code pays for `import tau; tau.log(...)` only tau/__init__ and tau.metric_log:
    no yaml, cyclopts, rich, kubernetes, pyarrow or pydantic, and not even json, re, typing,
    signal or threading (their C cores do the work). bench/metric_log.py times it.
    """
    proc = subprocess.run(
        [sys.executable, "-c", LOG_PROBE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, "TAU_METRICS_HISTORY": str(tmp_path / "m.jsonl")},
    )
    assert proc.returncode == 0, proc.stderr
    added = set(proc.stdout.strip().split(","))
    allowed = {"tau", "tau.metric_log", "__future__", "_collections", "_json", "_signal"}
    allowed |= {"_thread", "atexit"}
    assert "tau.metric_log" in added and added <= allowed, sorted(added - allowed)
    assert (tmp_path / "m.jsonl").read_text().count("\n") == 1  # the probe did log
