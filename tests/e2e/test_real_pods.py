"""A researcher's Jobs executed for real: pods on the real node (kubelet, containerd, runc), the
runtime image built here, cluster DNS, the data claim on a real volume. Each step goes through
tau's own commands as a researcher types them; what the pods print and write is the evidence.

Admitted ≠ scheduled, Running ≠ progressing, Completed ≠ evidence preserved: here every one of
those states is reached by containers that really run.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.node import NODE_NAME
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_portal_e2e import portal_ok

pytestmark = pytest.mark.e2e

#: Two pods × two processes join one gloo process group, all-reduce their ranks (0+1+2+3 = 6)
#: and rank 0 writes a checkpoint and a metrics history to the run's output on the claim.
DDP = """\
import json, os, pathlib, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
total = torch.tensor([rank])
dist.all_reduce(total)
print(f"rank {rank} of {world}: sum {int(total.item())}", flush=True)
out = pathlib.Path(os.environ["TAU_OUTPUT_DIR"])
if rank == 0:
    out.mkdir(parents=True, exist_ok=True)
    torch.save({"step": 3, "weights": torch.ones(4)}, out / "checkpoint.pt")
    with open(out / "metrics.jsonl", "w") as history:
        for step, loss in enumerate([1.0, 0.62, 0.41, 0.33]):
            row = {"_step": step, "_timestamp": time.time(), "loss": loss}
            history.write(json.dumps(row) + "\\n")
dist.barrier()
dist.destroy_process_group()
"""


def write_target(shell: Shell, config: dict[str, Any], script: str) -> str:
    name = config["name"]
    (shell.cwd / "tau" / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (shell.cwd / "tau" / config["entrypoint"]).write_text(script)
    return name


def job_config(name: str, image: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "engine": "job",
        "entrypoint": f"{name}.py",
        "runtime": {"image": image},
        "policy": {"preset": "azure.research.training.2x"},
        "storage": {"data_pvc": "training-data"},
        **extra,
    }


def status_doc(shell: Shell, name: str) -> dict[str, Any]:
    proc = shell.tau("run", "status", name, "-o", "json")
    assert proc.stdout, (proc.returncode, proc.stderr)
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def state(shell: Shell, name: str) -> str:
    return str(status_doc(shell, name)["status"]["state"])


def phase(shell: Shell, name: str, which: str) -> dict[str, Any]:
    """One phase of the status tree (empty before the run has one)."""
    phases = status_doc(shell, name).get("phases") or []
    return next((p for p in phases if p["name"] == which), {"detail": "", "status": ""})


def pods_of(admin: Api, namespace: str, job: str) -> list[dict[str, Any]]:
    return admin.list("v1", "Pod", namespace, label_selector=f"batch.kubernetes.io/job-name={job}")


def test_a_torchrun_job_runs_for_real_across_two_pods(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    config = job_config(
        "ddp",
        researcher.image,
        execution={"launcher": "torchrun", "nodes": 2, "processes_per_node": 2},
    )
    write_target(real_repo, config, DDP)
    out = real_repo.ok("run", "ddp")
    assert out.startswith("submitted ddp (") and f"ns={ns}" in out

    # The watch follows the kubelet's real phases and ends once startup is complete: the image
    # present on the node, the containers started, the pods Ready (or the run already done).
    watch = real_repo.tau("run", "status", "ddp", "--watch", timeout=900)
    assert watch.returncode == 0, (watch.stdout[-3000:], watch.stderr[-3000:])
    last = watch.stdout.rsplit("watching team-real/ddp every", 1)[-1]
    assert f"available: {researcher.image}" in last, last
    assert "[x] Container start" in last and ("[x] Ready" in last or "succeeded" in last), last
    wait_for("the run to succeed", lambda: state(real_repo, "ddp") == "succeeded", timeout=600)

    pods = pods_of(admin, ns, "ddp")
    assert len(pods) == 2 and {p["spec"]["nodeName"] for p in pods} == {NODE_NAME}
    # The kubelet really pulled nothing: the image was on the node; the containers ran and
    # exited 0.
    for pod in pods:
        main = pod["status"]["containerStatuses"][0]
        assert main["state"]["terminated"]["exitCode"] == 0, main
        assert main["imageID"], main

    done = status_doc(real_repo, "ddp")
    assert done["status"]["state"] == "succeeded"
    phases = {p["name"]: p["status"] for p in done.get("phases") or []}
    assert phases["Image pull"] == "done" and phases["Container start"] == "done", phases

    logs = real_repo.ok("run", "logs", "ddp")
    for rank in range(4):
        assert f"rank {rank} of 4: sum 6" in logs, logs[-3000:]

    got = real_repo.ok("run", "get", "ddp")
    assert "checkpoint.pt" in got and "metrics.jsonl" in got, got
    history = real_repo.tau("run", "get", "ddp", "--artifact", "metrics.jsonl")
    assert history.returncode == 0, history.stderr
    rows = [json.loads(line) for line in history.stdout.splitlines() if line.strip()]
    assert [r["loss"] for r in rows] == [1.0, 0.62, 0.41, 0.33]

    # Completed ≠ evidence preserved: the portal records the run and the metrics it wrote,
    # and they outlive the pods.
    store = real_repo.cwd / "expstore"
    portal_ok(real_repo.env, real_repo.cwd, "experiment", "init", "real", "--store", str(store))
    captured = json.loads(
        portal_ok(
            real_repo.env,
            real_repo.cwd,
            "experiment",
            "capture",
            "run-profile",
            "ddp",
            "-n",
            ns,
            "--group",
            "real-ddp",
            "-o",
            "json",
            "--store",
            str(store),
        )
    )
    assert captured["run"]["state"] == "succeeded"
    assert captured["history"]["rows"] == 4, captured["history"]
    found = portal_ok(
        real_repo.env,
        real_repo.cwd,
        "experiment",
        "search",
        "--metric-filter",
        "loss@min<0.34",
        "--store",
        str(store),
    )
    assert "ddp" in found, found
    page = real_repo.cwd / "ddp.html"
    portal_ok(
        real_repo.env,
        real_repo.cwd,
        "experiment",
        "stellar",
        "real-ddp",
        "--store",
        str(store),
        "-o",
        "html",
        "--out",
        str(page),
    )
    html = page.read_text()
    assert "loss" in html and "0.33" in html and "0.62" in html


FAILS = """\
import sys
print("about to fail with 3", flush=True)
sys.exit(3)
"""


def test_a_script_that_exits_3_fails_with_its_exit_code(real_repo: Shell, researcher: Any) -> None:
    write_target(real_repo, job_config("exits3", researcher.image), FAILS)
    real_repo.ok("run", "exits3")
    wait_for("the run to fail", lambda: state(real_repo, "exits3") == "failed", timeout=300)
    text = real_repo.tau("run", "status", "exits3")
    assert text.returncode == 1
    assert "State: failed" in text.stdout and "main=Error exit=3" in text.stdout, text.stdout
    assert "fix: researcher" in text.stdout, text.stdout
    assert "about to fail with 3" in real_repo.ok("run", "logs", "exits3")


#: Exhausts its memory on the first attempt only (tau injects the attempt number on retries).
OOM_ONCE = """\
import os
attempt = int(os.environ.get("TAU_RETRY_ATTEMPT", "0"))
print(f"attempt {attempt}", flush=True)
if attempt == 0:
    hog = []
    while True:
        hog.append(bytearray(64 * 1024 * 1024))
print("finished without exhausting memory", flush=True)
"""


def test_oomkilled_is_not_retried_by_default_and_is_retried_when_asked(
    real_repo: Shell, researcher: Any
) -> None:
    limits = {"memory_limit": "256Mi", "memory_request": "128Mi"}
    default = job_config(
        "oom-default",
        researcher.image,
        compute=limits,
        resilience={"max_retries": 1, "backoff_initial": "1s"},
    )
    write_target(real_repo, default, OOM_ONCE)
    refused = real_repo.tau("run", "oom-default", timeout=900)
    assert refused.returncode != 0
    assert "OOMKilled" in refused.stdout + refused.stderr, (refused.stdout, refused.stderr)
    assert "not in retry_on" in refused.stdout + refused.stderr

    asked = job_config(
        "oom-retry",
        researcher.image,
        compute=limits,
        resilience={"max_retries": 1, "retry_on": ["OOMKilled"], "backoff_initial": "1s"},
    )
    write_target(real_repo, asked, OOM_ONCE)
    retried = real_repo.tau("run", "oom-retry", timeout=900)
    assert retried.returncode == 0, (retried.stdout, retried.stderr)
    said = retried.stdout + retried.stderr
    assert "attempt 1/1 failed (OOMKilled)" in said and "completed successfully" in said, said
    assert "finished without exhausting memory" in real_repo.ok("run", "logs", "oom-retry")


#: Writes a checkpoint at step 5, then dies over its memory limit; resumed, it reads the step.
RESUMABLE = """\
import json, os, pathlib
ckpt = pathlib.Path(os.environ.get("TAU_RESUME_FROM") or "/data/checkpoints/finetunes/resumable")
state = ckpt / "state.json"
if state.exists() and os.environ.get("TAU_RESUME_FROM"):
    step = json.loads(state.read_text())["step"]
    print(f"resumed from step {step}", flush=True)
else:
    ckpt.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"step": 5}))
    print("checkpoint written at step 5", flush=True)
    hog = []
    while True:
        hog.append(bytearray(64 * 1024 * 1024))
"""


def test_resume_continues_from_the_checkpoint_the_failed_attempt_wrote(
    real_repo: Shell, researcher: Any
) -> None:
    config = job_config(
        "resumable",
        researcher.image,
        compute={"memory_limit": "256Mi", "memory_request": "128Mi"},
    )
    write_target(real_repo, config, RESUMABLE)
    real_repo.ok("run", "resumable")
    wait_for(
        "the first attempt to fail", lambda: state(real_repo, "resumable") == "failed", timeout=300
    )
    assert "checkpoint written at step 5" in real_repo.ok("run", "logs", "resumable")
    resumed = real_repo.tau(
        "run", "resume", "resumable", "--config", "tau/resumable.yaml", "--force", timeout=600
    )
    assert resumed.returncode == 0, (resumed.stdout, resumed.stderr)
    assert "resumed resumable after OOMKilled" in resumed.stdout, resumed.stdout
    wait_for(
        "the resumed run to succeed",
        lambda: state(real_repo, "resumable") == "succeeded",
        timeout=300,
    )
    assert "resumed from step 5" in real_repo.ok("run", "logs", "resumable")


def test_an_image_the_node_lacks_is_an_image_pull_error_naming_the_image(
    real_repo: Shell, researcher: Any
) -> None:
    missing = "tau-e2e.local/absent:never-built"
    write_target(real_repo, job_config("no-image", missing), "print('never runs')\n")
    real_repo.ok("run", "no-image")
    wait_for(
        "the image pull to fail",
        lambda: any(
            p["name"] == "Image pull" and p["status"] == "warning"
            for p in status_doc(real_repo, "no-image").get("phases") or []
        ),
        timeout=300,
    )
    text = real_repo.tau("run", "status", "no-image").stdout
    assert f"image={missing}" in text, text
    assert "ErrImagePull" in text or "ImagePullBackOff" in text, text
    # Who fixes it: the researcher's image, else the platform's registry access.
    assert "fix: researcher — fix runtime.image" in text, text
    real_repo.ok("run", "cancel", "no-image")


#: The driver asks Ray for a task on the worker (the head advertises no CPU to Ray) and prints
#: where it ran.
RAY_DRIVER = """\
import socket
import ray

ray.init()

@ray.remote(num_cpus=1)
def where():
    return socket.gethostname()

print(f"driver on {socket.gethostname()}", flush=True)
print(f"remote task ran on {ray.get(where.remote())}", flush=True)
"""


def ray_config(name: str, image: str, **extra: Any) -> dict[str, Any]:
    """One CPU-sized worker beside the head: what fits the real node's two cores."""
    return {
        "name": name,
        "engine": "rayjob",
        "entrypoint": f"{name.replace('-', '_')}.py",
        "runtime": {"image": image},
        "compute": {
            "workers": 1,
            "gpus_per_worker": 1,
            "head_cpu_request": "200m",
            "head_cpu_limit": "1",
            "head_memory_request": "1Gi",
            "head_memory_limit": "3Gi",
            "worker_cpu_request": "200m",
            "worker_cpu_limit": "1",
            "worker_memory_request": "1Gi",
            "worker_memory_limit": "3Gi",
        },
        "policy": {"preset": "azure.research.training.2x"},
        **extra,
    }


def ray_pods(admin: Api, namespace: str, rayjob: str) -> list[dict[str, Any]]:
    job = admin.get("ray.io/v1", "RayJob", rayjob, namespace) or {}
    cluster = (job.get("status") or {}).get("rayClusterName")
    if not cluster:
        return []
    return admin.list("v1", "Pod", namespace, label_selector=f"ray.io/cluster={cluster}")


def test_a_rayjob_runs_a_real_ray_head_and_worker(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    config = ray_config("ray-real", researcher.image)
    write_target(real_repo, config, RAY_DRIVER)
    real_repo.ok("run", "ray-real")
    pods = wait_for(
        "the Ray head and worker to run on the real node",
        lambda: (
            (found := ray_pods(admin, ns, "ray-real"))
            and len(found) == 2
            and all(p["spec"].get("nodeName") == NODE_NAME for p in found)
            and found
        ),
        timeout=600,
    )
    assert pods
    # Running is not Ready: a Ray worker's readiness probe waits a minute after its start, and
    # status says which pod is running yet not ready, and why.
    wait_for(
        "status to read a Ray pod as running, not ready",
        lambda: "running, not ready: " in phase(real_repo, "ray-real", "Ready")["detail"],
        timeout=300,
    )
    wait_for(
        "the driver to succeed", lambda: state(real_repo, "ray-real") == "succeeded", timeout=600
    )
    logs = real_repo.ok("run", "logs", "ray-real")
    assert "remote task ran on " in logs and "-worker-" in logs.split("remote task ran on ")[1], (
        logs
    )
    # shutdownAfterJobFinishes: KubeRay deletes the RayCluster once the job is done.
    wait_for(
        "the RayCluster to be gone",
        lambda: not admin.list("ray.io/v1", "RayCluster", ns),
        timeout=300,
    )


HOLD_DRIVER = """\
import time
import ray

ray.init()
print("driver holding", flush=True)
time.sleep(3600)
"""


def test_cancel_of_a_running_rayjob_removes_its_ray_cluster(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    write_target(real_repo, ray_config("ray-cancel", researcher.image), HOLD_DRIVER)
    real_repo.ok("run", "ray-cancel")
    wait_for("the driver to run", lambda: state(real_repo, "ray-cancel") == "running", timeout=600)
    wait_for(
        "the driver's first line",
        lambda: "driver holding" in real_repo.tau("run", "logs", "ray-cancel").stdout,
        timeout=300,
    )
    real_repo.ok("run", "cancel", "ray-cancel", timeout=600)
    assert admin.get("ray.io/v1", "RayJob", "ray-cancel", ns) is None
    assert not ray_pods(admin, ns, "ray-cancel")
    assert not [
        c
        for c in admin.list("ray.io/v1", "RayCluster", ns)
        if "ray-cancel" in c["metadata"]["name"]
    ]


#: A managed workflow's trainer: it imports its extra script (unpacked by an init container
#: from the workload itself) and reads the run's secret from its env (never printing it).
MANAGED_TRAINER = """\
import os
import helpers

token = os.environ["HF_TOKEN"]
print(f"helper says {helpers.greeting()}; token of {len(token)} characters", flush=True)
"""


def test_a_managed_workflow_unpacks_its_scripts_and_reads_its_secret(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns, run = researcher.real_workspace, "tau-mw-real"
    manifest = {
        "schema_version": 1,
        "name": "mw-real",
        "compute": {"gpus": 2, "cpus": 1, "memory": "2Gi"},
        # Already in the image: pip is satisfied without reaching any index.
        "runtime": {
            "image": researcher.image,
            "pip": ["torch==2.14.1"],
            "env": [
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {
                        "secretKeyRef": {"name": "tau-mw-real-secrets", "key": "HF_TOKEN"}
                    },
                }
            ],
        },
        "run": {"entrypoint": "trainer.py", "workload_kind": "job", "smoke_pairs": 4},
        "policy": {"preset": "azure.research.training.2x"},
        "workflow": {"extra_scripts": ["helpers.py"], "secret_payload": "secrets.json"},
    }
    folder = real_repo.cwd / "tau"
    (folder / "mw-real.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    (folder / "trainer.py").write_text(MANAGED_TRAINER)
    (folder / "helpers.py").write_text("def greeting():\n    return 'hello from helpers'\n")
    secret = {"name": "tau-mw-real-secrets", "stringData": {"HF_TOKEN": "hf_e2e_0123456789"}}
    (folder / "secrets.json").write_text(json.dumps(secret))

    real_repo.ok("run", "mw-real")
    wait_for(
        "the managed run to succeed", lambda: state(real_repo, run) == "succeeded", timeout=600
    )
    logs = real_repo.ok("run", "logs", run)
    assert "helper says hello from helpers; token of 17 characters" in logs, logs
    assert "hf_e2e_0123456789" not in logs
    pod = pods_of(admin, ns, run)[0]
    inits = {s["name"]: s["state"] for s in pod["status"]["initContainerStatuses"]}
    assert all(s["terminated"]["exitCode"] == 0 for s in inits.values()), inits
    assert admin.get("v1", "Secret", "tau-mw-real-secrets", ns) is not None
    real_repo.ok("run", "cancel", run, timeout=600)
    wait_for(
        "the run's Secret to be collected with its Job",
        lambda: admin.get("v1", "Secret", "tau-mw-real-secrets", ns) is None,
        timeout=120,
    )


#: A model server for the torchrun job's checkpoint: it loads what the run wrote on the claim and
#: answers with it. It ends on SIGTERM (as PID 1 it would otherwise ignore it).
SERVER = """\
import http.server, json, os, pathlib, signal, sys
import torch

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
ckpt = torch.load(pathlib.Path(os.environ["TAU_MODEL_PATH"]) / "checkpoint.pt")

class Model(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"step": ckpt["step"], "weights": ckpt["weights"].tolist()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

http.server.HTTPServer(("", 8000), Model).serve_forever()
"""


def test_a_deployment_serves_the_torchrun_jobs_checkpoint_through_its_service(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    import urllib.request

    ns, name = researcher.real_workspace, "ddp-model"
    serve = ("-n", ns, "--context", researcher.context)
    out = real_repo.ok(
        "serve",
        "deploy",
        name,
        "--kind=deployment",
        # A CPU profile: no GPU preset's sizing (8 cores) fits the node's two.
        "--profile",
        "cpu-serving",
        "--image",
        researcher.image,
        "--checkpoint",
        "workflows/ddp",
        "--checkpoint-pvc",
        "training-data",
        "--command",
        "python3",
        "--arg=-c",
        f"--arg={SERVER}",
        "--readiness-path",
        "/",
        *serve,
    )
    assert out.startswith(f"deployed service {name} (kind=deployment"), out
    try:
        wait_for(
            "tau serve status to count an available replica",
            lambda: (
                json.loads(
                    real_repo.ok(
                        "serve", "status", name, "--kind", "deployment", "-o", "json", *serve
                    )
                )["available"]
                == 1
            ),
            timeout=600,
        )
        (pod,) = admin.list("v1", "Pod", ns, label_selector=f"tau.azure.com/service={name}")
        assert pod["spec"]["nodeName"] == NODE_NAME
        # Through the Service: its address is routed into the node, where kube-proxy's rules
        # take it to the pod.
        service = admin.get("v1", "Service", name, ns) or {}
        address = f"http://{service['spec']['clusterIP']}:8000/"
        with urllib.request.urlopen(address, timeout=10) as resp:
            answer = json.load(resp)
        assert answer == {"step": 3, "weights": [1.0, 1.0, 1.0, 1.0]}
    finally:
        real_repo.ok("serve", "delete", name, "--kind", "deployment", *serve, timeout=300)


#: A server that dies on start, and one that never becomes ready (its health check answers
#: 503): the kubelet's crash loop and failing readiness probe. Both mount the data claim (the
#: checkpoint they would serve), a volume of the real node: their pods run there.
CRASHING = "import sys; print('loading model', flush=True); sys.exit(1)"
UNHEALTHY = """\
import http.server, signal, sys

signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))

class Unhealthy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.end_headers()

http.server.HTTPServer(("", 8000), Unhealthy).serve_forever()
"""


def test_a_crash_loop_and_a_failing_readiness_probe_read_as_such(
    real_repo: Shell, admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    flags = ("--kind", "deployment", "-n", ns, "--context", researcher.context)

    def not_ready(name: str) -> list[dict[str, Any]]:
        problems: list[dict[str, Any]] = json.loads(
            real_repo.ok("serve", "status", name, *flags, "-o", "json")
        )["not_ready"]
        return problems

    def shows(name: str, *fragments: str) -> str:
        """The text view once it holds every fragment: it is read until it does."""
        text: str = wait_for(
            f"the text view of {name} to show {fragments}",
            lambda: [
                text
                for text in [real_repo.ok("serve", "status", name, *flags)]
                if all(f in text for f in fragments)
            ],
            timeout=300,
        )[0]
        return text

    for name, script, readiness in (
        ("crashy", CRASHING, None),
        ("unhealthy", UNHEALTHY, "/healthz"),
    ):
        real_repo.ok(
            "serve",
            "deploy",
            name,
            "--profile",
            "cpu-serving",
            "--image",
            researcher.image,
            "--command",
            "python3",
            "--arg=-c",
            f"--arg={script}",
            "--checkpoint",
            "workflows/ddp",
            "--checkpoint-pvc",
            "training-data",
            *(("--readiness-path", readiness) if readiness else ()),
            *flags,
        )
        try:
            (pod,) = wait_for(
                f"the pod of {name} to be placed",
                lambda name=name: [
                    p
                    for p in admin.list(
                        "v1", "Pod", ns, label_selector=f"tau.azure.com/service={name}"
                    )
                    if p["spec"].get("nodeName")
                ],
                timeout=300,
            )
            assert pod["spec"]["nodeName"] == NODE_NAME
            if name == "crashy":
                (crash,) = wait_for(
                    "the kubelet to back off restarting the server",
                    lambda: [
                        p
                        for p in not_ready("crashy")
                        if p["reason"] == "CrashLoopBackOff" and p["restarts"] >= 1
                    ],
                    timeout=300,
                )
                assert crash["last_exit_code"] == 1, crash
                # Without a readiness probe the restarted server is Ready for the moments it
                # runs, between two back-offs: the text view is read until it meets one.
                shows(
                    "crashy", f"pod {crash['pod']}: CrashLoopBackOff, restarted ", ", last exit 1"
                )
            else:
                (probe,) = wait_for(
                    "the kubelet to report the failing readiness probe",
                    lambda: [
                        p
                        for p in not_ready("unhealthy")
                        if p["reason"] == "NotReady" and "503" in p["message"]
                    ],
                    timeout=300,
                )
                shows(
                    "unhealthy", f"pod {probe['pod']}: running, not ready: Readiness probe failed"
                )
        finally:
            real_repo.ok("serve", "delete", name, *flags, timeout=300)
