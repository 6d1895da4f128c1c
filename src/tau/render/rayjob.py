"""Plan → KubeRay ray.io/v1 RayJob: a CPU-only head and one worker group of GPU pods.

Pure. The head is control-only (num-gpus 0) and pinned to the system pool, so GPU nodes
hold only workers; the driver runs on the head in HTTP submission mode.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from tau.k8s import meta, paths
from tau.k8s.containers import DRIVER_LOG_CONTAINER, DRIVER_LOG_COPY_ENV, RAY_HEAD_CONTAINER
from tau.plan import metrics_history
from tau.plan.model import Plan, Resources
from tau.render import artifact_index, commands, metrics_offload, pod, shipped, tune_driver
from tau.render import labels as common

DEFAULT_RAY_VERSION = "2.56.0"
HEAD_DEFAULTS = Resources("2", "8Gi", "4", "16Gi")
GPU_WORKER_DEFAULTS = Resources("8", "64Gi", "16", "128Gi")
_RAY_VERSION = re.compile(r"-ray(\d+\.\d+\.\d+)")
_SIDECAR_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": 65532,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
_MONITORING = {
    "adx-mon/scrape": "true",
    "adx-mon/port": "8080",
    "adx-mon/log-destination": "Logs:ContainerLogs",
}
# The shell stays PID 1 with a TERM trap, and tails from the background: a process that is
# PID 1 without a handler ignores SIGTERM, so an exec'd tail held every head pod (and a
# `tau run cancel`) for the whole termination grace period.
DRIVER_LOG_TAIL = (
    "trap 'exit 0' TERM INT; mkdir -p /tmp/ray; while :; do for f in /tmp/ray/session_*/logs/"
    'job-driver-*.log; do if [ -f "$f" ]; then tail -F -n +1 "$f" & wait $!; exit 0; fi; '
    "done; sleep 2 & wait $!; done"
)


# With a copy on the claim, the tail goes through tee into it, so the driver's output outlives
# the head (KubeRay deletes it ttlSecondsAfterFinished after the driver ends). A claim the
# sidecar cannot write leaves it as it was: only the container log, nothing said on the
# driver's output (which is what this container's log is).
DRIVER_LOG_TEE = (
    "trap 'exit 0' TERM INT; mkdir -p /tmp/ray; K=\"$TAU_DRIVER_LOG_COPY\"; "
    'if ! { mkdir -p "${K%/*}" && : > "$K"; } 2>/dev/null; then K=; fi; '
    'while :; do for f in /tmp/ray/session_*/logs/job-driver-*.log; do if [ -f "$f" ]; then '
    'if [ -n "$K" ]; then tail -F -n +1 "$f" | tee "$K" & else tail -F -n +1 "$f" & fi; '
    "wait $!; exit 0; fi; done; sleep 2 & wait $!; done"
)


def driver_log_copy(plan: Plan) -> str | None:
    """Where the head's sidecar keeps the driver's output on the data claim:
    `<storage.output>/.tau/logs/attempt-<N>/ray-driver.log`; None when the run has no
    writable data claim holding its output (then the output lives in the pod alone).
    """
    output, claim = plan.storage.output, plan.storage.data_pvc
    if not output or not claim or plan.storage.result_pvc != claim or not paths.under_data(output):
        return None
    attempt = dict(plan.capture.retry_env).get("TAU_RETRY_ATTEMPT") or "0"
    return f"{output.rstrip('/')}/.tau/logs/attempt-{attempt}/ray-driver.log"


def _driver_log_sidecar(plan: Plan) -> dict[str, Any]:
    """The head's `ray-driver-log-offload` container: it tails the driver's log (and, with a
    data claim, tees it into the copy there).
    """
    sidecar: dict[str, Any] = {
        "name": DRIVER_LOG_CONTAINER,
        "image": plan.image,
        "command": ["sh", "-c", DRIVER_LOG_TAIL],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"cpu": "100m", "memory": "128Mi"},
        },
        "securityContext": dict(_SIDECAR_SECURITY),
        "volumeMounts": [{"name": "ray-tmp", "mountPath": "/tmp/ray", "readOnly": True}],
    }
    copy = driver_log_copy(plan)
    if copy is None:
        return sidecar
    sidecar["command"] = ["sh", "-c", DRIVER_LOG_TEE]
    sidecar["env"] = [{"name": DRIVER_LOG_COPY_ENV, "value": copy}]
    sidecar["volumeMounts"].append({"name": "data", "mountPath": pod.DATA_ROOT})
    # It writes the claim as the head does: as the image's user (the driver's output folder is
    # the driver's), not as a fixed UID that may not write a folder the driver created. Still
    # no privilege escalation, no capability, a read-only root; a restricted run pins every
    # container (this one too) to its one non-root UID.
    context = sidecar["securityContext"]
    for key in ("runAsNonRoot", "runAsUser"):
        context.pop(key)
    return sidecar


def ray_version(image: str) -> str:
    match = _RAY_VERSION.search(image)
    return match.group(1) if match else DEFAULT_RAY_VERSION


def _script_name(plan: Plan) -> str:
    return plan.script.filename if plan.script else "main.py"


def _module_name(filename: str) -> str:
    stem = filename.removesuffix(".py")
    return stem if stem.isidentifier() else "_tau_user_train"


def entrypoint(plan: Plan) -> str:
    """The driver shell script KubeRay runs on the head."""
    lines = [
        "set -eu",
        "if [ -s /script/requirements.txt ]; then python3 -m pip install --quiet --no-cache-dir "
        "-r /script/requirements.txt || python3 -m pip install --quiet --no-cache-dir --user -r "
        "/script/requirements.txt; fi",
        commands.USER_BIN_PATH,
    ]
    if metrics_history.ships_logger(plan):
        # The shipped `tau.log` (metrics.history); Ray adds /script to its workers' sys.path.
        lines.append(metrics_history.PYTHONPATH_EXPORT)
    if plan.ray.pip:
        lines.append(commands.pip_install(plan.ray.pip))
    lines.append("cd /data")
    if plan.launcher == "ray-tune":
        lines.append(f"python3 /script/{tune_driver.FILENAME}")
    elif plan.ray.project_module:
        # Ray unpacks the project as the job's working_dir; the module runs from inside it.
        lines.append(f"python3 -m {plan.ray.project_module}")
    else:
        script = shlex.quote(f"{paths.SCRIPT_ROOT}/{_script_name(plan)}")
        lines.append(f"python3 {script}{commands.script_args(plan)}")
    # After the driver succeeded (`set -e`): record the declared checkpoint, if any.
    if index := artifact_index.script(plan):
        lines.append(index)
    body = metrics_offload.wrap_script(plan, "\n".join(lines))
    # The completion marker lets the log sidecar and `tau run logs` tell "done" from "lost".
    return (
        "rc=0\n(\n" + body + "\n) || rc=$?\n"
        'printf \'{"exit_code":%d}\\n\' "$rc" > /tmp/ray/tau-driver-complete '
        "2>/dev/null || true\n"
        "exit $rc"
    )


def _env(plan: Plan, *, redact: bool, head: bool) -> list[dict[str, Any]]:
    gpus = plan.ray.gpus_per_worker
    env: dict[str, str] = {
        "TAU_DATA_DIR": pod.DATA_ROOT,
        "TAU_HOT_DIR": pod.HOT_ROOT,
        "HF_HOME": "/tmp/hf",
        "NCCL_DEBUG": "WARN",
        "NCCL_SOCKET_IFNAME": "eth0",
    }
    env.update(dict(plan.env.values))
    world = plan.ray.workers * gpus if gpus > 0 else plan.ray.workers
    env.update(
        {
            "TAU_DIST_BACKEND": "nccl" if gpus > 0 else "gloo",
            "TAU_NUM_WORKERS": str(world),
            "TAU_WORLD_SIZE": str(world),
        }
    )
    configs = dict(plan.env.launcher_configs)
    if plan.launcher == "ray-train":
        env["TAU_RAY_TRAIN_CONFIG_JSON"] = json.dumps(
            configs, sort_keys=True, separators=(",", ":")
        )
    else:
        script = _script_name(plan)
        env.update(
            {
                "TAU_TUNE_TRAIN_PATH": f"/script/{script}",
                "TAU_TUNE_TRAIN_MODULE": _module_name(script),
                "TAU_TUNE_METRIC": plan.tune.metric or "",
                "TAU_TUNE_PARAM_SPACE": json.dumps(configs, sort_keys=True, separators=(",", ":")),
            }
        )
        for key, value in (
            ("TAU_TUNE_MODE", plan.tune.mode),
            ("TAU_TUNE_NUM_SAMPLES", plan.tune.num_samples),
            ("TAU_TUNE_MAX_CONCURRENT_TRIALS", plan.tune.max_concurrent),
        ):
            if value is not None:
                env[key] = str(value)
    env.update(pod.output_env(plan))
    env.update(plan.capture.retry_env)
    del head
    return pod.env_list(env, plan.env.secrets, redact=redact)


def _shared_volumes(plan: Plan) -> list[dict[str, Any]]:
    data: dict[str, Any] = (
        {"persistentVolumeClaim": {"claimName": plan.storage.data_pvc}}
        if plan.storage.data_pvc
        else {"emptyDir": {}}
    )
    return [
        {"name": "data", **data},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
        {"name": "script", "emptyDir": {}},
        {"name": "tau-hot", "emptyDir": {}},
        *shipped.extra_volumes(plan)[0],
    ]


def _mounts(plan: Plan, *, ray_tmp: bool) -> list[dict[str, Any]]:
    mounts: list[dict[str, Any]] = [
        {"name": "script", "mountPath": "/script", "readOnly": True},
        {"name": "data", "mountPath": pod.DATA_ROOT},
        {"name": "tau-hot", "mountPath": pod.HOT_ROOT},
        {"name": "dshm", "mountPath": "/dev/shm"},
        *shipped.extra_volumes(plan)[1],
    ]
    if ray_tmp:
        mounts.insert(1, {"name": "ray-tmp", "mountPath": "/tmp/ray"})
    return mounts


def _labels(plan: Plan) -> dict[str, str]:
    """Labels of a Ray pod template."""
    return {**common.workload_labels(plan, "rayjob"), **shipped.pod_labels(plan)}


def _service_account(plan: Plan) -> dict[str, str]:
    """ServiceAccountName for a Ray pod: the head and every worker group run as the workspace's."""
    return {"serviceAccountName": plan.service_account} if plan.service_account else {}


def _head(plan: Plan, payloads: shipped.Payloads, *, redact: bool) -> dict[str, Any]:
    inits = (
        []
        if plan.security_restricted
        else [
            {
                "name": "prepare-ray-tmp",
                "image": plan.image,
                "command": ["sh", "-c", "mkdir -p /tmp/ray && chmod 1777 /tmp/ray"],
                "securityContext": {
                    "runAsUser": 0,
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER"]},
                },
                "volumeMounts": [{"name": "ray-tmp", "mountPath": "/tmp/ray"}],
            }
        ]
    )
    inits.extend(payloads.inits(manifest=True))
    head = {
        "name": RAY_HEAD_CONTAINER,
        "image": plan.image,
        "ports": [
            {"containerPort": 8080, "name": "metrics"},
            {"containerPort": 6379, "name": "gcs"},
            {"containerPort": 8265, "name": "dashboard"},
            {"containerPort": 10001, "name": "client"},
        ],
        "env": _env(plan, redact=redact, head=True),
        "resources": pod.resources(
            pod.merge(plan.resources.main, plan.resources.head),
            0,
            defaults=HEAD_DEFAULTS,
            limit_follows_request=True,
        ),
        "volumeMounts": [*_mounts(plan, ray_tmp=True), *shipped.manifest_mount(plan)],
    }
    if plan.security_restricted:
        head["securityContext"] = pod.restricted_security()
    sidecar = _driver_log_sidecar(plan)
    spec: dict[str, Any] = {
        "affinity": pod.SYSTEM_POOL_AFFINITY,
        "tolerations": [
            {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
        ],
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 600,
        **_service_account(plan),
        "initContainers": inits,
        "containers": [head, sidecar],
        "volumes": sorted(
            [
                *_shared_volumes(plan),
                *shipped.manifest_volume(plan),
                {"name": "ray-tmp", "emptyDir": {}},
            ],
            key=lambda v: v["name"],
        ),
    }
    if plan.placement.pod_priority_class:
        spec["priorityClassName"] = plan.placement.pod_priority_class
    metrics_offload.apply(spec, plan, RAY_HEAD_CONTAINER, redact=redact)
    if plan.security_restricted:
        spec["securityContext"] = pod.restricted_pod_security()
        pod.restrict_containers(spec)
    notes = {**_MONITORING, **common.correlation_annotations(plan)}
    return {
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0"},
        "template": {
            "metadata": {"labels": _labels(plan), "annotations": notes},
            "spec": spec,
        },
    }


def _worker(
    plan: Plan, payloads: shipped.Payloads, *, redact: bool, cpu_group: bool = False
) -> dict[str, Any]:
    """The GPU (or CPU-only) worker group; `cpu_group` the CPU group beside it."""
    gpus = 0 if cpu_group else plan.ray.gpus_per_worker
    replicas = plan.ray.cpu_workers if cpu_group else plan.ray.workers
    own = plan.resources.cpu_worker if cpu_group else plan.resources.worker
    gpu_resource = (
        f"nvidia.com/mig-{plan.ray.mig_profile}" if plan.ray.mig_profile else pod.GPU_RESOURCE
    )
    defaults = GPU_WORKER_DEFAULTS if gpus > 0 else HEAD_DEFAULTS
    health = (
        "/api/healthz"
        if tuple(map(int, ray_version(plan.image).split("."))) >= (2, 53)
        else "/api/local_raylet_healthz"
    )
    # Workers import what the driver ships (the Tune driver, the project, extra scripts).
    ships_payload = (
        plan.launcher == "ray-tune" or plan.ray.project_zip is not None or bool(plan.files.extra)
    )
    container: dict[str, Any] = {
        "name": "ray-worker",
        "image": plan.image,
        "ports": [{"containerPort": 8080, "name": "metrics"}],
        "env": _env(plan, redact=redact, head=False),
        "resources": pod.resources(
            pod.merge(plan.resources.main, own),
            0 if plan.dra else gpus,
            gpu_resource=gpu_resource,
            defaults=defaults,
            limit_follows_request=True,
        ),
        "startupProbe": {
            "httpGet": {"path": health, "port": 52365},
            "periodSeconds": 5,
            "timeoutSeconds": 2,
            "failureThreshold": 60,
        },
        "readinessProbe": {
            "tcpSocket": {"port": 52365},
            "initialDelaySeconds": 60,
            "periodSeconds": 10,
            "timeoutSeconds": 10,
            "failureThreshold": 3,
        },
        "livenessProbe": {
            "tcpSocket": {"port": 52365},
            "initialDelaySeconds": 60,
            "periodSeconds": 30,
            "timeoutSeconds": 10,
            "failureThreshold": 6,
        },
        "volumeMounts": [
            m for m in _mounts(plan, ray_tmp=False) if ships_payload or m["name"] != "script"
        ],
    }
    if plan.security_restricted:
        container["securityContext"] = pod.restricted_security()
    volumes = [v for v in _shared_volumes(plan) if ships_payload or v["name"] != "script"]
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "terminationGracePeriodSeconds": 600,
        **_service_account(plan),
        "containers": [container],
        "volumes": volumes,
    }
    if ships_payload:
        spec["initContainers"] = payloads.inits(manifest=False)
    if gpus > 0:
        spec["tolerations"] = [dict(t) for t in pod.GPU_TOLERATIONS]
    if claim := pod.gpu_claim(plan, gpus):
        pod.claim_devices(container["resources"], spec, claim)
    if plan.placement.node_selector:
        spec["nodeSelector"] = dict(plan.placement.node_selector)
    if plan.placement.pod_priority_class:
        spec["priorityClassName"] = plan.placement.pod_priority_class
    if plan.security_restricted:
        spec["securityContext"] = pod.restricted_pod_security()
        pod.restrict_containers(spec)
    notes = {**_MONITORING, **common.pod_annotations(plan)}
    return {
        "groupName": f"{plan.name}-cpu" if cpu_group else f"{plan.name}-w",
        "replicas": replicas,
        "minReplicas": replicas,
        "maxReplicas": replicas,
        "rayStartParams": {"num-gpus": str(gpus)},
        "template": {
            "metadata": {"labels": _labels(plan), "annotations": notes},
            "spec": spec,
        },
    }


def plan_to_rayjob(plan: Plan, *, redact: bool) -> dict[str, Any]:
    """The suspended RayJob; KubeRay creates the RayCluster once Kueue admits it."""
    from tau.intent.project import ARCHIVE_NAME

    files = {_script_name(plan): plan.script.content if plan.script else b""}
    if plan.ray.project_zip is not None:
        # The project replaces the lone script; Ray Tune's driver still loads the script file.
        files = {
            ARCHIVE_NAME: plan.ray.project_zip,
            **(files if plan.launcher == "ray-tune" else {}),
        }
    if plan.launcher == "ray-tune":
        files[tune_driver.FILENAME] = tune_driver.SOURCE.encode()
    files.update(plan.files.extra)
    payloads = shipped.Payloads(plan, files)
    notes = common.workload_annotations(plan)
    notes.update(payloads.annotations())
    notes[meta.ANNOTATION_WORKLOADSPEC_EXECUTION] = json.dumps(
        {"launcher": plan.launcher}, separators=(",", ":")
    )
    gpus_total = plan.ray.workers * plan.ray.gpus_per_worker
    if gpus_total > 0:
        notes[meta.ANNOTATION_GPU_COUNT] = str(gpus_total)
    if claim := pod.gpu_claim(plan, plan.ray.gpus_per_worker):
        notes[meta.ANNOTATION_DRA_CLAIM_TEMPLATE] = claim
    spec: dict[str, Any] = {
        "suspend": True,
        "shutdownAfterJobFinishes": True,
        # Short: the cluster is torn down soon after the driver ends so its GPUs free up.
        "ttlSecondsAfterFinished": 15,
        "submissionMode": "HTTPMode",
        "entrypoint": entrypoint(plan),
        "rayClusterSpec": {
            "rayVersion": ray_version(plan.image),
            "headGroupSpec": _head(plan, payloads, redact=redact),
            "workerGroupSpecs": [
                _worker(plan, payloads, redact=redact),
                *(
                    [_worker(plan, payloads, redact=redact, cpu_group=True)]
                    if plan.ray.cpu_workers > 0
                    else []
                ),
            ],
        },
    }
    runtime_env = ""
    if plan.ray.project_zip is not None:
        runtime_env += f'working_dir: "file:///script/{ARCHIVE_NAME}"\n'
    if plan.ray.pip:
        runtime_env += "pip:\n" + "".join(f"  - {p}\n" for p in plan.ray.pip)
    if runtime_env:
        spec["runtimeEnvYAML"] = runtime_env
    return {
        "apiVersion": meta.RAY_API_VERSION,
        "kind": "RayJob",
        "metadata": {
            "name": plan.name,
            "namespace": plan.namespace,
            "labels": common.workload_labels(plan, "rayjob"),
            "annotations": notes,
        },
        "spec": spec,
    }
