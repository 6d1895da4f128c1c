"""A researcher's Job, end to end on the real control plane: server dry-run, submit through
Kueue, admission, pods on the fake GPU nodes, the status tree from Running to Succeeded, logs,
get and list, as the researcher identity that RBAC confines to its namespace."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api

pytestmark = pytest.mark.e2e

SCRIPT = "import time\nprint('training')\n"


def write_target(shell: Shell, name: str, config: dict[str, Any]) -> None:
    (shell.cwd / "tau" / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (shell.cwd / "tau" / config["entrypoint"]).write_text(SCRIPT)


def fake_env(outcome: str | None, log: str = "", **more: str) -> dict[str, str]:
    """runtime.env for the fake nodes: how the run ends and what it prints (kwok-stages.yaml)."""
    env = dict(more)
    if outcome:
        env["E2E_OUTCOME"] = outcome
    if log:
        env["E2E_LOG"] = log
    return env


def gpu_job(name: str, outcome: str | None, log: str = "", **extra: Any) -> dict[str, Any]:
    env = fake_env(outcome, log)
    return {
        "name": name,
        "engine": "job",
        "entrypoint": f"{name}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2", "env": env},
        "policy": {"preset": "azure.research.training.l"},
        "run": {"ttl_seconds_after_finished": 3600},
        **extra,
    }


def status_doc(shell: Shell, name: str) -> dict[str, Any]:
    """`tau run status -o json`; it exits 1 for a failed run, with the document all the same."""
    proc = shell.tau("run", "status", name, "-o", "json")
    assert proc.returncode in (0, 1) and proc.stdout, (proc.returncode, proc.stderr)
    doc: dict[str, Any] = json.loads(proc.stdout)
    assert (proc.returncode == 1) == (doc["status"]["state"] == "failed"), doc["status"]
    return doc


def phase_statuses(doc: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["status"] for p in doc.get("phases") or []}


def job_pods(admin: Api, namespace: str, job: str) -> list[dict[str, Any]]:
    return admin.list("v1", "Pod", namespace, label_selector=f"batch.kubernetes.io/job-name={job}")


def finish(admin: Api, namespace: str, job: str, outcome: str) -> None:
    """End a held workload: the fake node ends each pod the way it is told."""
    for pod in job_pods(admin, namespace, job):
        admin.patch(
            "v1",
            "Pod",
            pod["metadata"]["name"],
            {"metadata": {"annotations": {"tau-e2e/finish": outcome}}},
            namespace,
        )


def test_server_dry_run_shows_the_servers_objects_and_creates_nothing(
    repo: Shell, admin: Api, researcher
) -> None:
    write_target(repo, "dry", gpu_job("dry", None))
    out = repo.ok("run", "dry", "--dry-run=server")
    docs = [d for d in yaml.safe_load_all(out) if d]
    job = next(d for d in docs if d["kind"] == "Job")
    # The server defaulted and admitted it through Kueue's webhook, but stored nothing.
    assert job["metadata"]["namespace"] == researcher.namespace
    assert job["metadata"]["uid"]
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"]
    assert admin.get("batch/v1", "Job", "dry", researcher.namespace) is None


def test_a_gpu_job_runs_through_kueue_to_success(repo: Shell, admin: Api, researcher) -> None:
    ns = researcher.namespace
    write_target(repo, "gpu-one", gpu_job("gpu-one", "hold", log="epoch 1 loss 0.5\\nepoch 2"))
    out = repo.ok("run", "gpu-one")
    assert out.splitlines()[0].startswith("submitted gpu-one (") and f"ns={ns}" in out

    # Kueue made a Workload, admitted it and unsuspended the Job; the pod runs on a GPU node.
    workload = wait_for(
        "an admitted Workload",
        lambda: [
            w
            for w in admin.list("kueue.x-k8s.io/v1beta2", "Workload", ns)
            if any(
                c["type"] == "Admitted" and c["status"] == "True"
                for c in (w.get("status") or {}).get("conditions") or []
            )
            and any(o["name"] == "gpu-one" for o in w["metadata"].get("ownerReferences") or [])
        ],
    )[0]
    assert workload["spec"]["queueName"] == f"{ns}-queue"
    pod = wait_for(
        "a Running pod",
        lambda: [
            p
            for p in job_pods(admin, ns, "gpu-one")
            if (p.get("status") or {}).get("phase") == "Running"
        ],
    )[0]
    assert pod["spec"]["nodeName"].startswith("gpu-h100-")

    running = wait_for(
        "the status tree to say running",
        lambda: (d := status_doc(repo, "gpu-one"))["status"]["state"] == "running" and d,
    )
    assert running["metadata"] == {"name": "gpu-one", "namespace": ns}
    assert phase_statuses(running) == {
        "Submitted": "done",
        "Kueue admission": "done",
        "Pod scheduling": "done",
        "DRA allocation": "skipped",
        "Image pull": "done",
        "Init containers": "skipped",
        "Container start": "done",
        "Ready": "done",
    }
    assert running["workloads"][0]["clusterQueue"] == "taugrid-cq"
    assert running["pods"][0]["node"] == pod["spec"]["nodeName"]

    finish(admin, ns, "gpu-one", "succeeded")
    wait_for(
        "the status tree to say succeeded",
        lambda: status_doc(repo, "gpu-one")["status"]["state"] == "succeeded",
    )
    text = repo.ok("run", "status", "gpu-one")
    assert text.startswith(f"Job {ns}/gpu-one\nState: succeeded\n")

    logs = repo.ok("run", "logs", "gpu-one")
    assert "epoch 1 loss 0.5" in logs and "epoch 2" in logs

    listing = json.loads(repo.ok("run", "list", "-o", "json"))
    row = next(r for r in listing["runs"] if r["name"] == "gpu-one")
    assert (row["kind"], row["status"]) == ("Job", "Complete")
    # No storage.output: `get` says so, located and with the fix, and exits 1.
    got = repo.tau("run", "get", "gpu-one")
    assert got.returncode == 1
    assert got.stderr.startswith(f"error: Job {ns}/gpu-one recorded no durable result\n")
