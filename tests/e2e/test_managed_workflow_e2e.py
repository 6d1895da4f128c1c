"""Managed workflows on the real control plane: a schema_version 1 manifest with an extra
script and a secret payload runs as a Job through Kueue; its Secret is created beside it,
owned by it, and goes when the run is cancelled; an eval manifest runs as a RayJob with its
CPU worker group beside the GPU worker; a wrapper config delegates to a manifest file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_job_lifecycle import finish as finish_job
from tests.e2e.test_job_lifecycle import job_pods, status_doc
from tests.e2e.test_rayjob_lifecycle import finish, ray_pods, workloads_of

pytestmark = pytest.mark.e2e

RAY = "ray.io/v1"
RAY_IMAGE = "mcr.microsoft.com/aks/ai-runtime/ray:py3.12-ray2.56.0-cuda13.0"
WRAPPER = "import argparse\nimport helpers\nhelpers.main()\n"
EVAL_RUN = "tau-mw-eval"


def write_managed(shell: Shell, target: str, manifest: dict[str, Any], **files: str) -> None:
    """tau/<target>.yaml as the SDK writes it (the manifest is the run config), and its files."""
    folder = shell.cwd / "tau"
    (folder / f"{target}.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    for name, text in files.items():
        (folder / name).write_text(text)


def managed_job(name: str, outcome: str | None, log: str = "") -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": f"tau-{name}-secrets", "key": "HF_TOKEN"}},
        },
    ]
    if outcome:
        env.append({"name": "E2E_OUTCOME", "value": outcome})
    if log:
        env.append({"name": "E2E_LOG", "value": log})
    return {
        "schema_version": 1,
        "name": name,
        "compute": {"gpus": 1, "cpus": 2, "memory": "8Gi"},
        "runtime": {"pip": ["torch==2.4.0"], "env": env},
        "run": {"entrypoint": "wrapper.py", "workload_kind": "job", "smoke_pairs": 4},
        "policy": {"preset": "azure.research.training.l"},
        "workflow": {"extra_scripts": ["helpers.py"], "secret_payload": "secrets.json"},
    }


def job_files(name: str) -> dict[str, str]:
    """The trainer, its extra script and the secret payload of managed_job(name)."""
    secret = {"name": f"tau-{name}-secrets", "stringData": {"HF_TOKEN": "hf_e2e_fake"}}
    return {
        "wrapper.py": WRAPPER,
        "helpers.py": "def main():\n    pass\n",
        "secrets.json": json.dumps(secret),
    }


def test_a_managed_job_runs_with_its_secret_and_scripts_and_cancel_removes_both(
    repo: Shell, admin: Api, researcher
) -> None:
    ns, run = researcher.namespace, "tau-mw-job"
    write_managed(
        repo,
        "mw-job",
        managed_job("mw-job", "hold", log="smoke pairs 4\\nloss 0.25"),
        **job_files("mw-job"),
    )
    # The server accepts every object (the Secret, the Job) and stores none of them.
    dry = [d for d in yaml.safe_load_all(repo.ok("run", "mw-job", "--dry-run=server")) if d]
    assert [d["kind"] for d in dry] == ["Job", "Secret"]
    assert admin.get("batch/v1", "Job", run, ns) is None

    out = repo.ok("run", "mw-job")
    assert out.startswith(f"submitted {run} (") and "scripts: /script/helpers.py" in out
    job = admin.get("batch/v1", "Job", run, ns)
    assert job is not None
    labels = job["metadata"]["labels"]
    assert labels["tau.azure.com/workload-kind"] == "job"
    assert labels["tau.azure.com/run-id"] == run
    # The Secret exists, owned by the Job, and the workload reads it by name and key.
    secret = admin.get("v1", "Secret", "tau-mw-job-secrets", ns)
    assert secret is not None
    owners = secret["metadata"].get("ownerReferences") or []
    assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [
        ("Job", run, job["metadata"]["uid"])
    ]
    pod_spec = job["spec"]["template"]["spec"]
    assert [c["name"] for c in pod_spec["initContainers"]] == [
        "tau-payload",
        "tau-manifest-payload",
    ]
    main = pod_spec["containers"][0]
    env = {e["name"]: e for e in main["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {
        "name": "tau-mw-job-secrets",
        "key": "HF_TOKEN",
    }
    assert (
        "/script/train.py --manifest /manifest/mw-job.yaml --smoke-pairs 4" in main["command"][-1]
    )

    wait_for(
        "a Running pod of the managed Job",
        lambda: [
            p for p in job_pods(admin, ns, run) if (p.get("status") or {}).get("phase") == "Running"
        ],
    )
    running = wait_for(
        "the status tree to say running",
        lambda: (d := status_doc(repo, run))["status"]["state"] == "running" and d,
    )
    assert running["metadata"] == {"name": run, "namespace": ns}
    logs = repo.ok("run", "logs", run)
    assert "smoke pairs 4" in logs

    listing = json.loads(repo.ok("run", "list", "-o", "json"))
    assert any(r["name"] == run and r["kind"] == "Job" for r in listing["runs"])

    repo.ok("run", "cancel", run)
    assert admin.get("batch/v1", "Job", run, ns) is None
    # The garbage collector removes the owned Secret after the Job.
    wait_for(
        "the run's Secret to be collected with its Job",
        lambda: admin.get("v1", "Secret", "tau-mw-job-secrets", ns) is None,
    )


def test_a_managed_job_runs_to_success(repo: Shell, admin: Api, researcher) -> None:
    ns, run = researcher.namespace, "tau-mw-ok"
    write_managed(
        repo,
        "mw-ok",
        managed_job("mw-ok", "hold", log="done"),
        **job_files("mw-ok"),
    )
    repo.ok("run", "mw-ok")
    wait_for(
        "a Running pod",
        lambda: [
            p for p in job_pods(admin, ns, run) if (p.get("status") or {}).get("phase") == "Running"
        ],
    )
    finish_job(admin, ns, run, "succeeded")
    wait_for(
        "the status tree to say succeeded",
        lambda: status_doc(repo, run)["status"]["state"] == "succeeded",
    )
    assert repo.ok("run", "status", run).startswith(f"Job {ns}/{run}\nState: succeeded\n")


@pytest.fixture
def eval_cleanup(admin: Api, researcher) -> Iterator[None]:
    """The eval's RayJob goes afterwards whatever happened, and the test waits until its
    Workload, RayCluster and pods are gone too: until then they hold the queue's quota and the
    fake nodes' room, which the next test (or the chart's uninstall) would meet.
    """
    yield
    ns = researcher.namespace
    rayjob = admin.get(RAY, "RayJob", EVAL_RUN, ns)
    admin.delete(RAY, "RayJob", EVAL_RUN, ns)

    def leftovers() -> list[str]:
        clusters = [
            c["metadata"]["name"]
            for c in admin.list(RAY, "RayCluster", ns)
            if c["metadata"]["name"].startswith(EVAL_RUN)
        ]
        pods = [
            p["metadata"]["name"]
            for p in admin.list("v1", "Pod", ns)
            if (p["metadata"].get("labels") or {}).get("ray.io/cluster", "").startswith(EVAL_RUN)
        ]
        workloads = [w["metadata"]["name"] for w in workloads_of(admin, rayjob)] if rayjob else []
        job = [EVAL_RUN] if admin.get(RAY, "RayJob", EVAL_RUN, ns) else []
        return [*job, *clusters, *pods, *workloads]

    wait_for(
        "the eval's RayJob, RayCluster, pods and Workload to be gone",
        lambda: not leftovers(),
        timeout=180,
    )


def test_an_eval_manifest_runs_as_a_rayjob_with_its_cpu_workers(
    repo: Shell, admin: Api, researcher, eval_cleanup: None
) -> None:
    ns, run = researcher.namespace, EVAL_RUN
    manifest = {
        "schema_version": 1,
        "name": "mw-eval",
        "eval": {"cpu_workers": 2, "upstream": "train-fullft"},
        "compute": {
            "gpus": 1,
            "cpus": 2,
            "memory": "8Gi",
            "worker_cpus": 1,
            "worker_memory": "2Gi",
        },
        "runtime": {
            "pip": ["torch==2.4.0"],
            "image": RAY_IMAGE,
            # The fake Ray head holds the driver until the RayJob is annotated to finish.
            "env": [{"name": "E2E_OUTCOME", "value": "hold"}],
        },
        "run": {"entrypoint": "eval.py"},
        # The fake nodes (KWOK), where the fake Ray head answers for the cluster.
        "policy": {"preset": "azure.research.training.l", "node_selector": {"type": "kwok"}},
        "workflow": {"upstream_checkpoint": "/data/checkpoints/train-fullft/last.safetensors"},
    }
    write_managed(repo, "mw-eval", manifest, **{"eval.py": "print('eval')\n"})
    proc = repo.tau("run", "mw-eval")
    assert proc.returncode == 0, proc.stderr
    # The kind was inferred from the manifest, and said so.
    assert "inferred workload_kind=rayjob-eval" in proc.stderr
    rayjob = admin.get(RAY, "RayJob", run, ns)
    assert rayjob is not None
    assert rayjob["metadata"]["labels"]["tau.azure.com/workload-kind"] == "rayjob-eval"
    groups = rayjob["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    assert [(g["groupName"], g["replicas"], g["rayStartParams"]["num-gpus"]) for g in groups] == [
        (f"{run}-w", 1, "1"),
        (f"{run}-cpu", 2, "0"),
    ]
    head_env = {
        e["name"]: e.get("value")
        for e in rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"][
            "containers"
        ][0]["env"]
    }
    assert head_env["TAU_UPSTREAM_CHECKPOINT"] == "/data/checkpoints/train-fullft/last.safetensors"
    # Kueue admits the eval once the queue has room for all three pod sets: on a shared queue
    # that can take a while after another run, so this waits on Kueue's own condition.
    wait_for(
        "Kueue to admit the eval's Workload",
        lambda: [
            w
            for w in workloads_of(admin, rayjob)
            if any(
                c["type"] == "Admitted" and c["status"] == "True"
                for c in (w.get("status") or {}).get("conditions") or []
            )
        ],
        timeout=180,
    )

    # KubeRay makes the cluster with both groups. Right after admission Kueue's unsuspend and
    # KubeRay's own status writes can race, and KubeRay may start over with a new cluster, so
    # the cluster is the one the RayJob names now, read afresh each time.
    def current_cluster() -> dict[str, Any] | None:
        status = (admin.get(RAY, "RayJob", run, ns) or {}).get("status") or {}
        name = status.get("rayClusterName")
        return admin.get(RAY, "RayCluster", name, ns) if name else None

    raycluster = wait_for("the eval's RayCluster", current_cluster)
    made = raycluster["spec"]["workerGroupSpecs"]
    assert [(g["groupName"], g["replicas"]) for g in made] == [(f"{run}-w", 1), (f"{run}-cpu", 2)]
    # The head and the three workers (one GPU, two CPU) come up Running on the fake nodes.
    pods = wait_for(
        "the eval's head and three workers Running",
        lambda: (
            p
            if (c := current_cluster())
            and len(p := ray_pods(admin, ns, c["metadata"]["name"])) == 4
            and all((x.get("status") or {}).get("phase") == "Running" for x in p)
            else None
        ),
        timeout=180,
    )
    groups_of_pods = sorted(p["metadata"]["labels"].get("ray.io/group", "") for p in pods)
    assert groups_of_pods == ["headgroup", f"{run}-cpu", f"{run}-cpu", f"{run}-w"]
    finish(admin, ns, run, "succeeded")
    wait_for(
        "the eval to succeed",
        lambda: status_doc(repo, run)["status"]["state"] == "succeeded",
        timeout=180,
    )


def test_a_wrapper_config_delegates_to_its_manifest_file(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    folder = repo.cwd / "tau"
    (folder / "manifests").mkdir(exist_ok=True)
    (folder / "manifests" / "mw-wrapped.yaml").write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "mw-wrapped",
                "compute": {"gpus": 1, "cpus": 2, "memory": "8Gi"},
                "runtime": {"pip": ["torch==2.4.0"]},
            }
        )
    )
    (folder / "wrapped.py").write_text("print('wrapped')\n")
    (folder / "mw-wrapped.yaml").write_text(
        yaml.safe_dump(
            {
                "run": {"entrypoint": "wrapped.py"},
                "policy": {"preset": "azure.research.training.l"},
                "workflow": {"file": "manifests/mw-wrapped.yaml", "workload_kind": "job"},
            }
        )
    )
    assert repo.ok("run", "validate", "mw-wrapped").endswith("is valid\n")
    dry = [d for d in yaml.safe_load_all(repo.ok("run", "mw-wrapped", "--dry-run=server")) if d]
    assert [d["kind"] for d in dry] == ["Job"]
    assert dry[0]["metadata"]["name"] == "tau-mw-wrapped"
    assert dry[0]["metadata"]["namespace"] == ns
    assert admin.get("batch/v1", "Job", "tau-mw-wrapped", ns) is None
