"""A run that mounts a claim the workspace does not have, on the real control plane: the submit
warns at the config line, Kueue admits it, the real kube-scheduler refuses the pod with
`persistentvolumeclaim "x" not found`, and `tau run status` says the claim is missing in the
namespace and that the platform provisions claims, with no talk of node pools."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.researcher import Researcher

pytestmark = pytest.mark.e2e


def claim_doc(repo: Shell, name: str) -> dict[str, Any] | None:
    """The run's status document once the scheduler's verdict is in it, else None."""
    proc = repo.tau("run", "status", name, "-o", "json")
    assert proc.returncode == 0 and proc.stdout, (proc.returncode, proc.stderr)
    doc: dict[str, Any] = json.loads(proc.stdout)
    codes = [d["code"] for d in doc.get("diagnostics") or []]
    return doc if "ClaimNotFound" in codes else None


def test_a_missing_claim_is_named_with_its_namespace_and_the_platform_owner(
    repo: Shell, researcher: Researcher
) -> None:
    ns, suffix = researcher.namespace, uuid.uuid4().hex[:5]
    name, claim = f"noclaim-{suffix}", f"absent-data-{suffix}"
    config = {
        "name": name,
        "engine": "job",
        "entrypoint": f"{name}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2", "env": {"E2E_OUTCOME": "hold"}},
        "policy": {"preset": "azure.research.training.l"},
        "storage": {"data_pvc": claim},
    }
    text = yaml.safe_dump(config, sort_keys=False)
    (repo.cwd / "tau" / f"{name}.yaml").write_text(text)
    (repo.cwd / "tau" / f"{name}.py").write_text("print('training')\n")
    line = text.splitlines().index(f"  data_pvc: {claim}") + 1

    submitted = repo.tau("run", name)
    try:
        assert submitted.returncode == 0, submitted.stderr
        assert submitted.stdout.startswith(f"submitted {name} (")
        assert submitted.stderr.splitlines()[:2] == [
            f"tau/{name}.yaml:{line}:13: warning: storage.data_pvc: persistentvolumeclaim "
            f'"{claim}" not found in namespace {ns}',
            "  hint: a Ready workspace can still lack a PVC: the platform team provisions claims "
            "(tau does not create them); the run is submitted and waits Pending until the claim "
            "exists",
        ]

        doc = wait_for("the scheduler to refuse the pod", lambda: claim_doc(repo, name))
        assert doc["status"]["state"] == "starting"
        scheduling = next(p for p in doc["phases"] if p["name"] == "Pod scheduling")
        assert scheduling["status"] == "warning"
        # The real scheduler's words, quoted.
        assert f'persistentvolumeclaim "{claim}" not found' in scheduling["detail"]
        assert scheduling["hint"] == (
            f'the claim "{claim}" does not exist in namespace {ns}: the platform provisions '
            "claims, and a Ready workspace can still lack one"
        )
        (diagnostic,) = [d for d in doc["diagnostics"] if d["severity"] != "info"]
        assert (diagnostic["code"], diagnostic["owner"]) == ("ClaimNotFound", "platform")
        assert diagnostic["message"].startswith(
            f'persistentvolumeclaim "{claim}" not found in namespace {ns}; waiting: pod {name}-'
        )

        # The terminal view wraps its lines: read it as one line.
        view = " ".join(repo.ok("run", "status", name).split())
        missing = f'persistentvolumeclaim "{claim}" not found in namespace {ns}'
        assert f"ClaimNotFound — {missing}" in view
        assert "fix: platform — a Ready workspace can still lack a PVC" in view
        for wrong in ("node pool", "taints", "device plugins", "tau cluster validate"):
            assert wrong not in view, (wrong, view)
    finally:
        repo.tau("run", "cancel", name)
