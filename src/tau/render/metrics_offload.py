"""The metrics-offload shape of a pod: the collector sidecar and the main container's wrapper.

Pure. A run with `metrics.offload.enabled` (plan.metrics_offload) gets, on its single Job pod
or its RayJob head:

- the `metrics-offload` collector (`taugrid-portal experiment offload metrics --watch`) as a
  native sidecar: an init container with `restartPolicy: Always`. The kubelet restarts it when
  it dies (it resumes from its checkpoint on the data claim), the pod still completes when the
  workload exits, and at termination it is stopped only after the workload, so it can drain.
  The reference renders a plain container; that one would keep a Job's pod running after the
  workload ended and would be signalled at the same moment as the workload.
- `shareProcessNamespace`, so the collector sums the pod's processes' CPU and memory.
- an emptyDir at /var/run/tau/metrics shared by both: the collector's ready and done files and
  the workload's completion sentinel.
- the main command wrapped (WRAPPER): wait for the collector, run the entrypoint, write how it
  ended, wait for the collector to confirm delivery, exit with the entrypoint's code.
"""

from __future__ import annotations

from typing import Any

from tau.k8s import meta
from tau.plan.model import REDACTED, Plan
from tau.render import pod

CONTAINER = "metrics-offload"
VOLUME = "tau-metrics"
RUNTIME_DIR = "/var/run/tau/metrics"
COMPLETION_FILE = f"{RUNTIME_DIR}/completion.json"
READY_FILE = f"{RUNTIME_DIR}/ready"
DONE_FILE = f"{RUNTIME_DIR}/done"
#: The source offloaded rows carry in the store.
SOURCE = "stellar-online"
#: tau.azure.com/experiment-source: the run's evidence is in the experiment store.
EXPERIMENT_SOURCE = "stellar"
#: Seconds the wrapper waits for the collector to be ready, then for it to confirm delivery.
READY_TIMEOUT = 120
DONE_TIMEOUT = 120
#: Beyond DONE_TIMEOUT, what the collector's final drain may take before the kubelet kills it.
DRAIN_GRACE = 30
COMMAND = ("taugrid-portal", "experiment", "offload", "metrics", "--watch")
RESOURCES = {
    "requests": {"cpu": "100m", "memory": "128Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}

# POSIX sh (a RayJob's driver runs under /bin/sh); @LAUNCH@ starts the workload in the
# background so the TERM trap runs while it works. Every sentinel is written to a dotfile and
# renamed, so the collector never reads half of one.
WRAPPER = """\
tau_completion=@COMPLETION@
tau_ready=@READY@
tau_done=@DONE@
tau_child=""
tau_terminated=0
tau_not_ready=0
tau_status=0
tau_on_term() {
  tau_terminated=1
  if [ -n "$tau_child" ]; then kill -TERM "$tau_child" 2>/dev/null || true; fi
}
trap tau_on_term TERM INT
tau_deadline=$(( $(date +%s) + @READY_TIMEOUT@ ))
while [ ! -f "$tau_ready" ]; do
  if [ "$tau_terminated" -eq 1 ]; then tau_status=143; break; fi
  if [ "$(date +%s)" -ge "$tau_deadline" ]; then
    echo "tau: the metrics-offload sidecar was not ready within @READY_TIMEOUT@s;" \
      "the entrypoint did not run" >&2
    tau_not_ready=1
    tau_status=1
    break
  fi
  sleep 1
done
if [ "$tau_status" -eq 0 ]; then
  @LAUNCH@
  tau_child=$!
  if [ "$tau_terminated" -eq 1 ]; then kill -TERM "$tau_child" 2>/dev/null || true; fi
  while :; do
    wait "$tau_child"
    tau_status=$?
    kill -0 "$tau_child" 2>/dev/null || break
  done
  # A wait the TERM trap interrupted says 128+15, even when the entrypoint ended meanwhile
  # with its own code: the shell remembers that code, and a last wait gives it.
  if [ "$tau_status" -gt 128 ]; then
    wait "$tau_child" 2>/dev/null
    tau_last=$?
    if [ "$tau_last" -ne 127 ]; then tau_status=$tau_last; fi
  fi
fi
trap - TERM INT
tau_message="entrypoint exited with code $tau_status"
if [ "$tau_not_ready" -eq 1 ]; then
  tau_state=failed
  tau_reason=metrics-offloader-not-ready
  tau_message="the metrics-offload sidecar was not ready within @READY_TIMEOUT@s"
elif [ "$tau_terminated" -eq 1 ]; then
  tau_state=cancelled
  tau_reason=workload-termination
  tau_message="the workload was terminated (SIGTERM); entrypoint exit code $tau_status"
elif [ "$tau_status" -eq 0 ]; then
  tau_state=succeeded
  tau_reason=workload-entrypoint-exit
else
  tau_state=failed
  tau_reason=workload-entrypoint-exit
fi
tau_partial="$(dirname "$tau_completion")/.completion.json.$$"
printf '{"state":"%s","reason":"%s","message":"%s","completed_at":"%s"}\\n' \\
  "$tau_state" "$tau_reason" "$tau_message" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tau_partial"
mv -f "$tau_partial" "$tau_completion"
tau_deadline=$(( $(date +%s) + @DONE_TIMEOUT@ ))
while [ ! -f "$tau_done" ]; do
  if [ "$(date +%s)" -ge "$tau_deadline" ]; then
    echo "tau: the metrics-offload sidecar did not confirm delivery within" \
      "@DONE_TIMEOUT@s; the run's evidence may be incomplete" >&2
    break
  fi
  sleep 1
done
exit "$tau_status\""""


def wrapper_script(
    launch: str,
    *,
    runtime_dir: str = RUNTIME_DIR,
    ready_timeout: int = READY_TIMEOUT,
    done_timeout: int = DONE_TIMEOUT,
) -> str:
    """WRAPPER with `launch` starting the workload (the defaults are the pod's; tests run it
    against a temporary directory and short timeouts).
    """
    text = WRAPPER
    for token, value in (
        ("@COMPLETION@", f"{runtime_dir}/completion.json"),
        ("@READY@", f"{runtime_dir}/ready"),
        ("@DONE@", f"{runtime_dir}/done"),
        ("@READY_TIMEOUT@", str(ready_timeout)),
        ("@DONE_TIMEOUT@", str(done_timeout)),
        ("@LAUNCH@", launch),
    ):
        text = text.replace(token, value)
    return text


def wrap_command(plan: Plan, argv: list[str]) -> list[str]:
    """The Job main container's argv inside the wrapper; unchanged without offload."""
    if plan.metrics_offload is None:
        return argv
    return ["bash", "-c", wrapper_script('"$@" &'), "tau-metrics-offload", *argv]


def wrap_script(plan: Plan, body: str) -> str:
    """A RayJob driver script inside the wrapper (run in a subshell); unchanged without offload."""
    if plan.metrics_offload is None:
        return body
    return wrapper_script("(\n" + body + "\n) &")


def session_annotations(plan: Plan) -> dict[str, str]:
    """The session id and the experiment source, on the workload and its pods."""
    offload = plan.metrics_offload
    if offload is None:
        return {}
    return {
        meta.ANNOTATION_METRICS_SESSION_ID: offload.session_id,
        meta.ANNOTATION_EXPERIMENT_SOURCE: EXPERIMENT_SOURCE,
    }


def args(plan: Plan) -> list[str]:
    """The collector's arguments after COMMAND."""
    offload = plan.metrics_offload
    assert offload is not None
    out = [
        "--run",
        plan.name,
        "--project",
        offload.project,
        "--experiment",
        offload.experiment,
        "--group",
        offload.group,
        "--source",
        SOURCE,
        "--out",
        offload.out,
        "--completion-file",
        COMPLETION_FILE,
        "--ready-file",
        READY_FILE,
        "--done-file",
        DONE_FILE,
        "--interval",
        offload.interval,
    ]
    for history in offload.history:
        out += ["--history", history]
    if offload.artifact_uri:
        out += ["--status-artifact-uri", offload.artifact_uri]
    if offload.checkpoint_uri:
        out += ["--status-checkpoint-uri", offload.checkpoint_uri]
    return out


def _env(plan: Plan) -> list[dict[str, Any]]:
    offload = plan.metrics_offload
    assert offload is not None
    env: list[dict[str, Any]] = [
        {"name": "TAU_EXP_STORE", "value": offload.store},
        # From the pod's own annotation: the one place the id is written, so a review of the
        # rendered objects against the live ones sees no per-submission difference here.
        {
            "name": "TAU_METRICS_SESSION_ID",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": f"metadata.annotations['{meta.ANNOTATION_METRICS_SESSION_ID}']"
                }
            },
        },
    ]
    if offload.attempt:
        env.append({"name": "TAU_RETRY_ATTEMPT", "value": offload.attempt})
    return sorted(env, key=lambda e: e["name"])


def sidecar(plan: Plan, data_mounts: list[dict[str, Any]], *, redact: bool) -> dict[str, Any]:
    """The collector: a native sidecar (init container, restartPolicy Always)."""
    offload = plan.metrics_offload
    assert offload is not None
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": offload.image,
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "command": [*COMMAND, *args(plan)],
        "env": _env(plan),
        "resources": {k: dict(v) for k, v in RESOURCES.items()},
        "securityContext": (
            pod.restricted_security()
            if plan.security_restricted
            else {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        ),
        "volumeMounts": [*data_mounts, {"name": VOLUME, "mountPath": RUNTIME_DIR}],
    }
    if offload.credentials_secret:
        # The platform's Secret: its keys (PGPASSWORD, AWS_*) become the collector's env; only
        # the name is in the manifest, and not even that on a client dry-run.
        name = REDACTED if redact else offload.credentials_secret
        container["envFrom"] = [{"secretRef": {"name": name}}]
    return container


def apply(pod_spec: dict[str, Any], plan: Plan, main: str, *, redact: bool) -> None:
    """Add the offload shape to a pod spec whose workload container is named `main`.

    The collector mounts the PVC volumes the workload mounts, at the same paths, so the
    history paths and its spool (on storage.output) mean the same in both containers.
    """
    if plan.metrics_offload is None:
        return
    claims = {v["name"] for v in pod_spec.get("volumes", []) if "persistentVolumeClaim" in v}
    workload = next(c for c in pod_spec["containers"] if c["name"] == main)
    data_mounts = [dict(m) for m in workload.get("volumeMounts", []) if m["name"] in claims]
    workload.setdefault("volumeMounts", []).append({"name": VOLUME, "mountPath": RUNTIME_DIR})
    pod_spec.setdefault("volumes", []).append({"name": VOLUME, "emptyDir": {}})
    pod_spec.setdefault("initContainers", []).append(sidecar(plan, data_mounts, redact=redact))
    pod_spec["shareProcessNamespace"] = True
    # The kubelet must not kill the pod before the wrapper's bounded wait for the collector's
    # final delivery and that drain end (the reference's ShutdownGracePeriodSeconds).
    pod_spec["terminationGracePeriodSeconds"] = max(
        int(pod_spec.get("terminationGracePeriodSeconds", 0)), DONE_TIMEOUT + DRAIN_GRACE
    )
