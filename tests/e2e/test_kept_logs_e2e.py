"""Logs that outlive their pods, on the real node: the Ray driver's output read back from the
data claim once KubeRay has deleted the head, and a retried Job's failed attempt read back
with `--attempt` after tau deleted it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_real_pods import OOM_ONCE, job_config, ray_config, state, write_target

pytestmark = pytest.mark.e2e

RAY_PRINTS = """\
import ray

ray.init()
print("kept-logs: the driver says hello", flush=True)
"""


def test_a_rayjobs_driver_output_is_read_from_the_claim_after_the_head_is_gone(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    config = ray_config("ray-kept", researcher.image, storage={"data_pvc": "training-data"})
    write_target(real_repo, config, RAY_PRINTS)
    real_repo.ok("run", "ray-kept")
    wait_for(
        "the driver to succeed", lambda: state(real_repo, "ray-kept") == "succeeded", timeout=900
    )
    cluster = (admin.get("ray.io/v1", "RayJob", "ray-kept", ns) or {})["status"]["rayClusterName"]
    # ttlSecondsAfterFinished: KubeRay deletes the RayCluster, its head pod and the sidecar's log.
    wait_for(
        "the head pod to be gone",
        lambda: not admin.list("v1", "Pod", ns, label_selector=f"ray.io/cluster={cluster}"),
        timeout=300,
    )
    proc = real_repo.tau("run", "logs", "ray-kept", timeout=300)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "kept-logs: the driver says hello" in proc.stdout, proc.stdout
    (line,) = proc.stderr.splitlines()
    assert (
        line.startswith("showing the Ray driver's output of attempt 0 of ")
        and ("kept on the claim training-data at /data/ray-kept/.tau/logs/attempt-0/ray-driver.log")
        in line
    ), line


def test_an_oomkilled_attempt_that_was_retried_is_read_with_attempt(
    real_repo: Shell, researcher: Any
) -> None:
    limits = {"memory_limit": "256Mi", "memory_request": "128Mi"}
    config = job_config(
        "oom-kept",
        researcher.image,
        compute=limits,
        resilience={"max_retries": 1, "retry_on": ["OOMKilled"], "backoff_initial": "1s"},
    )
    write_target(real_repo, config, OOM_ONCE)
    retried = real_repo.tau("run", "oom-kept", timeout=900)
    assert retried.returncode == 0, (retried.stdout, retried.stderr)
    assert "kept the logs of attempt 0 of " in retried.stderr, retried.stderr
    first = real_repo.tau("run", "logs", "oom-kept", "--attempt", "0")
    assert first.returncode == 0, (first.stdout, first.stderr)
    assert first.stdout.startswith("attempt 0\n"), first.stdout
    assert "showing the logs of attempt 0 of " in first.stderr, first.stderr
    current = real_repo.ok("run", "logs", "oom-kept", "--attempt", "1")
    assert "attempt 1" in current and "finished without exhausting memory" in current, current
    missing = real_repo.tau("run", "logs", "oom-kept", "--attempt", "5")
    assert missing.returncode == 1
    assert "has no attempt 5; its attempts: 0 (kept in " in missing.stderr, missing.stderr
    assert "1 (the current one)" in missing.stderr
