"""The read verbs' hot path (tau.cli.fast_reads) answers exactly as the full cyclopts app would.

Each command line runs twice against the local API emulator: through the full app, and through
`tau.cli.main`, which takes the hot path when `fast_reads.parse` understands the line. Stdout,
stderr and the exit code must agree (ages and observation times normalized: a second may pass
between the two runs).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from tau import cli
from tau.cli import fast_reads
from tau.errors import run_command
from tau.k8s import meta

ROOT = Path(__file__).resolve().parents[1]
AGE = re.compile(r"\b\d+(?:s|m|h|d)\b")
#: When the status was read: the clock's, so it differs between the two runs by design.
OBSERVED = re.compile(r'"observedAt": "[^"]*"')


@pytest.fixture
def project(tmp_path, monkeypatch, kubeconfig_file, kube_api):
    shutil.copytree(ROOT / "examples" / "tau", tmp_path / "tau")
    (tmp_path / "tau" / "workspace.connection.yaml").unlink(missing_ok=True)
    train = tmp_path / "tau" / "train.yaml"
    train.write_text(train.read_text().split("\nresilience:")[0] + "\n")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    kube_api.register_kueue_kuberay_tau_kinds()
    assert cli.main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "scratch",
                "namespace": "team",
                "labels": {meta.LABEL_MANAGED_BY: "tau"},
            },
            "spec": {},
        }
    )
    return tmp_path


def outcome(call, capsys) -> tuple[int, str, str]:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    code = call()
    out, err = capsys.readouterr()
    out = OBSERVED.sub('"observedAt": "NOW"', out)
    return code, AGE.sub("AGE", out), AGE.sub("AGE", err)


@pytest.mark.parametrize(
    "line",
    [
        "run status eval -n team",
        "run status eval -n team -o json",
        "run status eval --namespace=team --output=json",
        "run status ghost -n team",
        "run status ghost -n team -o json",
        "run list -n team",
        "run list -o json -n team",
        "run get scratch -n team",
        "run get ghost -n team -o json",
        "run logs eval -n team",
        "run logs ghost -n team",
        "run status eval",  # no namespace outside a connected repository: a usage error
        "run list -n Bad_Namespace",
    ],
)
def test_the_hot_path_answers_as_the_full_app(project, capsys, line: str) -> None:
    argv = shlex.split(line)
    assert fast_reads.parse(argv) is not None, line
    cli._INVOCATION[:] = argv
    expected = outcome(lambda: run_command(lambda: cli.build_app()(argv)), capsys)
    assert outcome(lambda: cli.main(argv), capsys) == expected, line


@pytest.mark.parametrize(
    "line",
    [
        "run status -n team",  # no name: the full app says so
        "run status a b -n team",
        "run status eval -o yaml",
        "run status eval --watch",
        "run status eval --run-profile",
        "run status --help",
        "run status eval -n",
        "run status eval -n team -n other",
        "run status eval -n -o",
        "run list extra",
        "run list --queue q",
        "run get eval --artifact metrics.json",
        "run get eval -o raw",
        "run logs eval -f",
        "run logs eval -o json",
        "run cancel eval",
        "run eval --dry-run=client",
    ],
)
def test_every_other_line_goes_to_the_full_app(line: str) -> None:
    assert fast_reads.parse(shlex.split(line)) is None, line
