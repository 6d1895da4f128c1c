"""The metrics-offload pod shape on a real kubelet, with a stand-in collector.

tau renders the Job of a `metrics.offload.enabled` run for the real node's workspace; only the
sidecar's image and command are swapped for a shell stand-in that speaks the collector's file
protocol (ready file, completion sentinel, done file), so this checks what the render decides
and the kubelet enforces: the native sidecar starts first and is restarted when it dies, the
wrapper waits for it, the sentinel says how the entrypoint ended, the Job completes with the
entrypoint's code, the collector sees the workload's processes and reads the session id from
the pod's annotation. The real collector (`taugrid-portal experiment offload metrics`) and the
store are the evidence e2e tests' subject.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from tau import pipeline
from tau.intent import load, validate
from tau.k8s import meta
from tau.workspaces.readiness import view
from tau.workspaces.target import WorkspaceTarget, workspace_target
from tests.e2e.conftest import wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import SYSTEM_NAMESPACE

pytestmark = pytest.mark.e2e

PIN = "sha256:" + "0" * 64
RUNTIME = "/var/run/tau/metrics"

# The collector's side of the protocol. The first start dies right after it came up (the
# kubelet must restart it, the native sidecar's point); the second one reports ready, waits
# for the sentinel, prints it and the processes it can see, and confirms with the done file.
STAND_IN = f"""\
trap 'echo stand-in: TERM; exit 0' TERM
if [ ! -f {RUNTIME}/.started ]; then
  touch {RUNTIME}/.started
  echo stand-in: first start
  exit 1
fi
echo "stand-in: session $TAU_METRICS_SESSION_ID store $TAU_EXP_STORE"
touch {RUNTIME}/ready
seen=0
while [ ! -f {RUNTIME}/completion.json ]; do
  if [ "$seen" = 0 ] && cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' \\
      | grep -q 'script/train[.]py'; then
    seen=1  # (the pattern does not match this script's own text)
    echo "stand-in: sees the workload"
  fi
  sleep 0.2
done
echo "stand-in: sentinel $(cat {RUNTIME}/completion.json)"
touch {RUNTIME}/done
while :; do sleep 1; done
"""

WORKLOAD = """\
import sys, time
print("workload running", flush=True)
time.sleep(3)
sys.exit(@CODE@)
"""


def _target(admin: Api, workspace: str) -> WorkspaceTarget:
    obj = admin.get("tau.azure.com/v1alpha1", "TauWorkspace", workspace, SYSTEM_NAMESPACE)
    assert obj is not None, workspace
    ws = workspace_target(view(obj))
    return WorkspaceTarget(
        ws.namespace,
        ws.queue,
        ws.workspace,
        ws.service_account,
        experiments_store="/data/evidence",
        offload_image=f"registry.invalid/taugrid-portal@{PIN}",
    )


def _job(
    tmp: Path, name: str, image: str, target: WorkspaceTarget, code: int, hold: int = 3
) -> dict[str, Any]:
    workload = WORKLOAD.replace("time.sleep(3)", f"time.sleep({hold})")
    (tmp / "train.py").write_text(workload.replace("@CODE@", str(code)))
    (tmp / "tau.yaml").write_text(
        json.dumps(
            {
                "name": name,
                "engine": "job",
                "entrypoint": "train.py",
                "runtime": {"image": image},
                "policy": {"preset": "azure.research.training.2x"},
                "storage": {"data_pvc": "training-data"},
                "metrics": {"history": ["metrics.jsonl"], "offload": {"enabled": True}},
                "experiment": {"project": "e2e", "name": "offload-shape"},
            }
        )
    )
    valid = validate.validate(load.load(tmp / "tau.yaml"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAU_METRICS_OFFLOAD")}
    (job,) = pipeline.cluster_render(
        valid, env, namespace=target.namespace, queue=target.queue, workspace=target
    ).documents
    spec = job["spec"]["template"]["spec"]
    (sidecar,) = [c for c in spec["initContainers"] if c["name"] == "metrics-offload"]
    sidecar["image"] = image
    sidecar["command"] = ["sh", "-c", STAND_IN]
    return job


def _pod(admin: Api, ns: str, job: str) -> dict[str, Any]:
    pods = admin.list("v1", "Pod", ns, label_selector=f"batch.kubernetes.io/job-name={job}")
    assert len(pods) == 1, pods
    return pods[0]


def _finished(admin: Api, ns: str, name: str) -> str:
    job = admin.get("batch/v1", "Job", name, ns) or {}
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond["type"] in ("Complete", "Failed") and cond["status"] == "True":
            return str(cond["type"])
    return ""


@pytest.mark.parametrize("code", [0, 3])
def test_the_offload_pod_runs_the_wrapper_beside_a_native_sidecar(
    admin: Api, researcher: Any, tmp_path: Path, code: int
) -> None:
    assert researcher.real_workspace and researcher.image, "the control plane has no real node"
    target = _target(admin, researcher.real_workspace)
    name = f"offload-shape-{code}"
    job = _job(tmp_path, name, researcher.image, target, code)
    ns = target.namespace
    admin.delete("batch/v1", "Job", name, ns)
    admin.apply(job)
    try:
        outcome = wait_for("the Job to finish", lambda: _finished(admin, ns, name), timeout=600)
        assert outcome == ("Complete" if code == 0 else "Failed")
        pod = _pod(admin, ns, name)
        (main,) = pod["status"]["containerStatuses"]
        assert main["state"]["terminated"]["exitCode"] == code, main
        (side,) = [
            s for s in pod["status"]["initContainerStatuses"] if s["name"] == "metrics-offload"
        ]
        assert side["restartCount"] >= 1, side  # the kubelet restarted the collector
        core = k8s.CoreV1Api(admin.api_client)
        logs = core.read_namespaced_pod_log(
            pod["metadata"]["name"], ns, container="metrics-offload"
        )
        session = pod["metadata"]["annotations"][meta.ANNOTATION_METRICS_SESSION_ID]
        assert f"stand-in: session {session} store /data/evidence" in logs, logs
        assert "stand-in: sees the workload" in logs, logs
        line = next(x for x in logs.splitlines() if x.startswith("stand-in: sentinel "))
        sentinel = json.loads(line.removeprefix("stand-in: sentinel "))
        assert sentinel["state"] == ("succeeded" if code == 0 else "failed"), sentinel
        assert sentinel["reason"] == "workload-entrypoint-exit"
        assert sentinel["message"] == f"entrypoint exited with code {code}"
        workload = core.read_namespaced_pod_log(pod["metadata"]["name"], ns, container="main")
        assert "workload running" in workload, workload
    finally:
        admin.delete("batch/v1", "Job", name, ns)


def test_a_terminated_pod_records_cancelled_before_the_collector_stops(
    admin: Api, researcher: Any, tmp_path: Path
) -> None:
    """SIGTERM reaches the wrapper first; the collector is stopped only after the workload
    ended, so it still reads the `cancelled` sentinel: the native sidecar's termination order.
    """
    assert researcher.real_workspace and researcher.image, "the control plane has no real node"
    target = _target(admin, researcher.real_workspace)
    name = "offload-shape-cancel"
    job = _job(tmp_path, name, researcher.image, target, 0, hold=300)
    ns = target.namespace
    admin.delete("batch/v1", "Job", name, ns)
    admin.apply(job)
    core = k8s.CoreV1Api(admin.api_client)

    def logs(pod: str) -> str:
        try:
            return str(core.read_namespaced_pod_log(pod, ns, container="metrics-offload"))
        except k8s.ApiException:
            return ""

    try:
        pod = wait_for(
            "the workload to run beside the collector",
            lambda: next(
                (
                    p["metadata"]["name"]
                    for p in admin.list(
                        "v1", "Pod", ns, label_selector=f"batch.kubernetes.io/job-name={name}"
                    )
                    if "stand-in: sees the workload" in logs(p["metadata"]["name"])
                ),
                None,
            ),
            timeout=600,
        )
        core.delete_namespaced_pod(pod, ns)
        line = wait_for(
            "the collector to read the sentinel",
            lambda: next(
                (x for x in logs(pod).splitlines() if x.startswith("stand-in: sentinel ")), None
            ),
            timeout=120,
        )
        sentinel = json.loads(line.removeprefix("stand-in: sentinel "))
        assert (sentinel["state"], sentinel["reason"]) == ("cancelled", "workload-termination")
    finally:
        admin.delete("batch/v1", "Job", name, ns)
