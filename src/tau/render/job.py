"""Plan → batch/v1 Job, and the headless Service of a multi-node torchrun Job.

Pure. The Job is created suspended with a Kueue queue label: Kueue admits it by flipping
`suspend`, so quota, not the API server, decides when it starts.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from tau.k8s import meta, paths
from tau.plan.model import Plan
from tau.render import labels as common
from tau.render import metrics_offload, pod, shipped
from tau.render.commands import MASTER_PORT, headless_host, main_command

SHM_SIZE = "16Gi"


def plan_to_service(plan: Plan) -> dict[str, Any]:
    """The headless Service that gives rank 0 a stable DNS name for c10d rendezvous."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": f"{plan.name}-headless",
            "namespace": plan.namespace,
            "labels": {meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE, meta.LABEL_RUN_ID: plan.name},
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {meta.JOB_NAME_SELECTOR: plan.name},
            "ports": [{"name": "c10d", "port": MASTER_PORT, "protocol": "TCP"}],
        },
    }


def _env(plan: Plan, *, redact: bool) -> list[dict[str, Any]]:
    env: dict[str, str] = {"TAU_PROFILE": common.profile_name(plan)}
    if plan.script is not None and not plan.storage.source_image and not plan.files.shipped:
        env["TAU_SCRIPT_B64"] = base64.b64encode(plan.script.content).decode()
        env["TAU_SCRIPT_SRC"] = plan.script.filename
    if any(v.path == pod.DATA_ROOT for v in plan.storage.volumes):
        env.update(pod.STORAGE_ENV)
    env.update(pod.output_env(plan))
    if plan.launcher == "torchrun":
        env["MASTER_ADDR"] = headless_host(plan) if plan.job.multi_node else "localhost"
        env["MASTER_PORT"] = str(MASTER_PORT)
        if plan.job.processes_per_node > 1 or plan.job.multi_node:
            env["OMP_NUM_THREADS"] = "1"
    env.update(common.profiler_env(plan))
    env.update(dict(plan.env.values))
    # A retry's values replace the user's own TAU_RESUME_FROM / TAU_RETRY_* entries.
    env.update(plan.capture.retry_env)
    return pod.env_list(env, plan.env.secrets, redact=redact)


def _volumes(
    plan: Plan, payloads: shipped.Payloads | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """volumes, main-container mounts and init containers."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    inits: list[dict[str, Any]] = []
    if payloads is not None:
        inits.extend(payloads.inits(manifest=True))
        volumes.append({"name": "script", "emptyDir": {}})
        mounts.append({"name": "script", "mountPath": paths.SCRIPT_ROOT, "readOnly": True})
        volumes.extend(shipped.manifest_volume(plan))
        mounts.extend(shipped.manifest_mount(plan))
    kv_volumes, kv_mounts = shipped.key_vault_volume(plan)
    for vol in plan.storage.volumes:
        volumes.append({"name": vol.name, "persistentVolumeClaim": {"claimName": vol.claim}})
        mount: dict[str, Any] = {"name": vol.name, "mountPath": vol.path}
        if vol.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    mounted = {v.path for v in plan.storage.volumes}
    if pod.DATA_ROOT in mounted and pod.HOT_ROOT not in mounted:
        # Node-local scratch for hot datasets and checkpoints; the preflight checks it.
        volumes.append({"name": "tau-hot", "emptyDir": {}})
        mounts.append({"name": "tau-hot", "mountPath": pod.HOT_ROOT})
    if plan.launcher == "torchrun" and (plan.job.processes_per_node > 1 or plan.job.multi_node):
        # NCCL and dataloader workers share memory through /dev/shm; the default 64Mi is too small.
        volumes.append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}})
        mounts.append({"name": "dshm", "mountPath": "/dev/shm"})
    if plan.storage.source_image:
        volumes.append({"name": "tau-source", "emptyDir": {}})
        mounts.append({"name": "tau-source", "mountPath": "/tau/source"})
        inits.append(
            {
                "name": "tau-source",
                "image": plan.storage.source_image,
                "command": [
                    "/bin/sh",
                    "-c",
                    'cp -R -- "$1"/. /tau-source/ && chmod -R a+rwX '
                    '/tau-source && chmod a+x "/tau-source/$2"',
                ],
                "args": [
                    "tau-source",
                    plan.storage.source_path or "",
                    plan.storage.source_entrypoint or "",
                ],
                "volumeMounts": [{"name": "tau-source", "mountPath": "/tau-source"}],
            }
        )
    for asset in plan.storage.image_assets:
        asset_vol = f"tau-asset-{asset.name}"
        volumes.append({"name": asset_vol, "emptyDir": {}})
        mounts.append({"name": asset_vol, "mountPath": asset.mount_path, "readOnly": True})
        inits.append(
            {
                "name": asset_vol,
                "image": asset.image,
                "command": ["/bin/cp", "-a", "--", f"{asset.source_path}/.", "/tau-asset/"],
                "volumeMounts": [{"name": asset_vol, "mountPath": "/tau-asset"}],
            }
        )
    return volumes + kv_volumes, mounts + kv_mounts, inits


def _container(plan: Plan, mounts: list[dict[str, Any]], *, redact: bool) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "main",
        "image": plan.image,
        "env": _env(plan, redact=redact),
    }
    command = main_command(plan)
    if command is not None:
        container["command"] = command
    # A DRA run's GPUs come from the pod's claim (plan_to_job), never nvidia.com/gpu too.
    res = pod.resources(plan.resources.main, 0 if plan.dra else plan.job.gpus)
    if res:
        container["resources"] = res
    if mounts:
        container["volumeMounts"] = mounts
    working_dir = plan.job.working_dir or ("/tau/source" if plan.storage.source_image else None)
    if working_dir is None and any(v.path == pod.DATA_ROOT for v in plan.storage.volumes):
        working_dir = pod.DATA_ROOT
    if working_dir:
        container["workingDir"] = working_dir
    if plan.security_restricted:
        container["securityContext"] = pod.restricted_security()
    return container


def _annotations(plan: Plan, payloads: shipped.Payloads | None) -> dict[str, str]:
    notes = common.workload_annotations(plan)
    if payloads is not None:
        notes.update(payloads.annotations())
    elif plan.script is not None:
        digest = hashlib.sha256(plan.script.content).hexdigest()
        notes[meta.ANNOTATION_SCRIPT_PAYLOAD_DIGEST] = digest
    store = plan.storage
    if store.source_image:
        source = f"{store.source_image}\n{store.source_path}\n{store.source_entrypoint}"
        notes[meta.ANNOTATION_PAYLOAD_DIGEST] = hashlib.sha256(source.encode()).hexdigest()
    if plan.job.gpus > 0:
        notes[meta.ANNOTATION_GPU_COUNT] = str(plan.job.gpus)
    if claim := pod.gpu_claim(plan, plan.job.gpus):
        notes[meta.ANNOTATION_DRA_CLAIM_TEMPLATE] = claim
    if plan.launcher == "torchrun":
        notes[meta.ANNOTATION_WORKLOADSPEC_EXECUTION] = json.dumps(
            {
                "launcher": "torchrun",
                "processes_per_node": max(plan.job.processes_per_node, 1),
                "nodes": max(plan.job.nodes, 1),
            },
            separators=(",", ":"),
        )
    extra = [v for v in plan.storage.volumes if v.name != "data"]
    if extra:
        notes[meta.ANNOTATION_STORAGE_MOUNTS] = json.dumps(
            [
                {"source": v.name, "path": v.path, "read_only": v.read_only, "source_ref": v.claim}
                for v in extra
            ],
            separators=(",", ":"),
        )
    return notes


def plan_to_job(plan: Plan, *, redact: bool) -> dict[str, Any]:
    """The suspended Job; Indexed with `nodes` completions for multi-node torchrun."""
    payloads = (
        shipped.Payloads(plan, shipped.script_files(plan))
        if plan.files.shipped and plan.script is not None
        else None
    )
    volumes, mounts, inits = _volumes(plan, payloads)
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # Long enough for a training loop to write a final checkpoint after SIGTERM.
        "terminationGracePeriodSeconds": 600,
        "containers": [_container(plan, mounts, redact=redact)],
    }
    if plan.service_account:
        pod_spec["serviceAccountName"] = plan.service_account
    if plan.job.gpus > 0:
        pod_spec["tolerations"] = [dict(t) for t in pod.GPU_TOLERATIONS]
    if claim := pod.gpu_claim(plan, plan.job.gpus):
        main = pod_spec["containers"][0]
        pod.claim_devices(main.setdefault("resources", {}), pod_spec, claim)
    if plan.placement.pod_priority_class:
        pod_spec["priorityClassName"] = plan.placement.pod_priority_class
    if plan.placement.node_selector:
        pod_spec["nodeSelector"] = dict(plan.placement.node_selector)
    if plan.job.multi_node:
        pod_spec["subdomain"] = f"{plan.name}-headless"
    if volumes:
        pod_spec["volumes"] = volumes
    if inits:
        pod_spec["initContainers"] = inits
    metrics_offload.apply(pod_spec, plan, "main", redact=redact)
    if plan.security_restricted:
        pod_spec["securityContext"] = pod.restricted_pod_security()
        for init in inits:
            init["securityContext"] = pod.restricted_security()
        pod.restrict_containers(pod_spec)
    template_meta: dict[str, Any] = {
        "labels": {**common.pod_labels(plan, "job"), **shipped.pod_labels(plan)}
    }
    pod_notes = common.pod_annotations(plan)
    if pod_notes:
        template_meta["annotations"] = pod_notes
    spec: dict[str, Any] = {
        "suspend": True,
        # tau's own retry loop decides about retries; Kubernetes must not restart silently.
        "backoffLimit": 0,
        "ttlSecondsAfterFinished": plan.job.ttl_seconds,
        "template": {"metadata": template_meta, "spec": pod_spec},
    }
    if plan.job.execution_deadline is not None:
        spec["activeDeadlineSeconds"] = plan.job.execution_deadline
    if plan.job.multi_node:
        spec.update(
            {
                "completionMode": "Indexed",
                "completions": plan.job.nodes,
                "parallelism": plan.job.nodes,
            }
        )
    metadata: dict[str, Any] = {
        "name": plan.name,
        "namespace": plan.namespace,
        "labels": common.workload_labels(plan, "job"),
    }
    if plan.job.execution_deadline is not None:
        # Kueue deactivates the workload once it has run this long (its maximum execution time).
        metadata["labels"][meta.KUEUE_MAX_EXEC_TIME] = str(plan.job.execution_deadline)
    notes = _annotations(plan, payloads)
    if notes:
        metadata["annotations"] = notes
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}


def plan_to_documents(plan: Plan, *, redact: bool) -> list[dict[str, Any]]:
    """Every object of a Job run, in the order they are applied."""
    job = plan_to_job(plan, redact=redact)
    workload = [plan_to_service(plan), job] if plan.job.multi_node else [job]
    return shipped.around(plan, workload, redact=redact)
