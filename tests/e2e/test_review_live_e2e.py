"""`tau run --diff NAME --live` on the real control plane: a run just submitted (and admitted by
Kueue, started by its controller) shows no difference; a changed env var in its config is one;
the fields the server and the controllers own never show.

Both kinds a researcher submits: a Job (the Job controller's selector and controller-uid labels,
Kueue's resume and flavor) and a RayJob (KubeRay's defaults, Kueue's resume).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_job_lifecycle import gpu_job, write_target
from tests.e2e.test_rayjob_lifecycle import RAY, ray_run

pytestmark = pytest.mark.e2e

JOB, RAYJOB = "rv-live-job", "rv-live-ray"
#: What the server or a controller writes; none of it may appear in a live diff.
SERVER_OWNED = (
    "resourceVersion",
    "managedFields",
    "creationTimestamp",
    "uid",
    "generation",
    "status",
    "suspend",
    "submission-id",
    "controller-uid",
    "ownerReferences",
)
CASES = {
    JOB: ("batch/v1", "Job", lambda: gpu_job(JOB, "hold")),
    RAYJOB: (RAY, "RayJob", lambda: ray_run(RAYJOB, "hold")),
}


@pytest.fixture(scope="module", autouse=True)
def _cleanup(repo: Shell, admin: Api, researcher) -> Iterator[None]:
    """Cancel the runs as a user does: a plain delete of a Job orphans its pods and its Kueue
    Workload (the batch API's default propagation), which would keep holding the queue's quota
    and block the operator's uninstall at the end of the suite."""
    yield
    for name, (api_version, kind, _) in CASES.items():
        repo.tau("run", "cancel", name)
        admin.delete(api_version, kind, name, researcher.namespace)


def diff(repo: Shell, name: str, *more: str) -> Any:
    proc = repo.tau("run", "--diff", name, "--live", *more)
    assert proc.returncode in (0, 1), (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    return proc


def admitted(admin: Api, namespace: str, api_version: str, kind: str, name: str) -> None:
    """Wait until Kueue has resumed the workload: its own writes are on the live object."""

    def resumed() -> bool:
        live = admin.get(api_version, kind, name, namespace) or {}
        # Kueue sets suspend false; KubeRay's RayJob omits a false suspend altogether. The
        # controller's status shows it has acted on the resume.
        return bool(live.get("status")) and live.get("spec", {}).get("suspend") is not True

    wait_for(f"Kueue to resume {kind} {name}", resumed)


@pytest.mark.parametrize("name", list(CASES))
def test_a_submitted_run_has_no_live_difference_until_its_env_changes(
    repo: Shell, admin: Api, researcher, name: str
) -> None:
    api_version, kind, make = CASES[name]
    config = make()
    write_target(repo, name, config)
    repo.ok("run", name)
    admitted(admin, researcher.namespace, api_version, kind, name)

    same = diff(repo, name)
    assert (same.returncode, same.stdout) == (0, "no change (1 target, live → submit)\n"), (
        same.stdout
    )

    config["runtime"]["env"]["REVIEW_LR"] = "0.1"
    write_target(repo, name, config)
    changed = diff(repo, name)
    assert changed.returncode == 1
    assert changed.stdout.splitlines()[0] == f"{name}: +1 env"
    assert "env[REVIEW_LR]" in changed.stdout
    doc = json.loads(diff(repo, name, "-o", "json").stdout)
    [target] = doc["targets"]
    paths = [c["path"] for o in target["objects"] for c in o["changes"]]
    assert paths and all("env[REVIEW_LR]" in p for p in paths), paths
    for word in SERVER_OWNED:
        assert word not in changed.stdout, word
        assert not any(word in p for p in paths), word
    # Nothing was created by the dry runs: the live object is the one submitted.
    assert admin.get(api_version, kind, name, researcher.namespace) is not None
    scratch = [
        o["metadata"]["name"]
        for o in admin.list(api_version, kind, researcher.namespace)
        if o["metadata"]["name"].startswith("t") and len(o["metadata"]["name"]) >= 12
    ]
    assert scratch == []
