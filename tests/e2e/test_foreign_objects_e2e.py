"""tau deletes only what it created, on the real control plane: a Job another tool made under
the name of a run is refused by `tau run cancel` and `tau run resume` (as the researcher), named
by its labels and owner, and is still there afterwards."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import Researcher

pytestmark = pytest.mark.e2e

HINT = (
    "  hint: tau deletes only the runs it submitted: give your run another name, or ask whoever "
    "created that object to remove it"
)


def foreign_job(namespace: str, name: str) -> dict[str, Any]:
    """A pipeline's Job, suspended so it never needs a node: its own labels, none of tau's."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "app.kubernetes.io/managed-by": "nightly-pipeline",
                "team": "data-eng",
            },
        },
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"labels": {"team": "data-eng"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "etl", "image": "busybox:1.36"}],
                },
            },
        },
    }


def write_config(shell: Shell, name: str) -> None:
    config = {
        "name": name,
        "engine": "job",
        "entrypoint": f"{name}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2"},
        "policy": {"preset": "azure.research.training.l"},
    }
    (shell.cwd / "tau" / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (shell.cwd / "tau" / f"{name}.py").write_text("print('training')\n")


def test_cancel_and_resume_refuse_a_job_tau_did_not_create(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    ns, name = researcher.namespace, f"etl-{uuid.uuid4().hex[:5]}"
    created = admin.apply(foreign_job(ns, name))
    what = (
        f"Job {ns}/{name}: tau did not create it (no tau.azure.com/managed-by=tau label; "
        "app.kubernetes.io/managed-by=nightly-pipeline; labels: team=data-eng); "
        "nothing was deleted"
    )
    try:
        cancel = repo.tau("run", "cancel", name)
        assert (cancel.returncode, cancel.stdout) == (1, ""), cancel.stderr
        assert cancel.stderr.splitlines() == [f"error: refusing to cancel {what}", HINT]

        write_config(repo, name)
        resume = repo.tau("run", "resume", name, "--config", f"tau/{name}.yaml")
        assert (resume.returncode, resume.stdout) == (1, ""), resume.stderr
        assert resume.stderr.splitlines() == [f"error: refusing to delete for resume {what}", HINT]

        # Read back from the server: the very same object, not being deleted.
        job = admin.get("batch/v1", "Job", name, ns)
        assert job is not None
        assert job["metadata"]["uid"] == created["metadata"]["uid"]
        assert "deletionTimestamp" not in job["metadata"]
        assert job["spec"]["suspend"] is True
    finally:
        admin.delete("batch/v1", "Job", name, ns)
