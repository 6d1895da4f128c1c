"""Every example target of examples/tau runs on the project's own control plane as the README
shows it: `tau run TARGET` in a repository whose connection names the workspace. The platform
provisioned the `training-data` claim the examples name, and the examples name no queue (the
workspace does), so each run is admitted and its pods are scheduled; then it is cancelled.

The runs land on the KWOK nodes of the suite's workspace: the examples' images are public
registry images that the real node cannot pull.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Shell, connected_repo, wait_for

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tau"
#: The example targets and the run each submits (a managed workflow's run is tau-<name>).
TARGETS = {"train": "train", "finetune": "finetune", "sft": "tau-sft", "eval": "eval"}


@pytest.fixture(scope="module")
def examples(researcher: Any, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    root = tmp_path_factory.mktemp("examples")
    shutil.copytree(EXAMPLES, root / "tau")
    # The checked-in descriptor names the README's AKS cluster: this one names the suite's.
    (root / "tau" / "workspace.connection.yaml").unlink()
    return connected_repo(root, researcher.workspace, researcher.context, researcher.kubeconfig)


def phases(shell: Shell, run: str) -> dict[str, str]:
    proc = shell.tau("run", "status", run, "-o", "json")
    assert proc.stdout, (proc.returncode, proc.stderr)
    doc = json.loads(proc.stdout)
    return {p["name"]: p["status"] for p in doc.get("phases") or []}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_an_example_target_is_admitted_and_scheduled(examples: Shell, target: str) -> None:
    run = TARGETS[target]
    out = examples.ok("run", target, timeout=600)
    assert out.startswith(f"submitted {run} ("), out
    try:
        wait_for(
            f"{run}'s pods to be scheduled",
            lambda: (
                (p := phases(examples, run)).get("Kueue admission") == "done"
                and p.get("Pod scheduling") == "done"
            ),
            timeout=300,
        )
        text = examples.ok("run", "status", run)
        assert "persistentvolumeclaim" not in text, text
    finally:
        examples.ok("run", "cancel", run, timeout=600)
