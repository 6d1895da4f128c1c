"""ServeSpec → manifests: a KubeRay ray.io/v1 RayService, or an apps/v1 Deployment (+ v1 Service).

Pure. The same spec always gives the same documents, in apply order; `--dry-run=client`
prints exactly these (Secret references redacted) and deploy sends them (unredacted).
A service is long-running and not a Kueue workload: no suspend flag and no queue label.
"""

from __future__ import annotations

from typing import Any

import yaml

from tau.k8s import meta
from tau.plan import pod_parts
from tau.plan.model import REDACTED, Resources
from tau.plan.service import CHECKPOINTS_ROOT, DATA_ROOT, ServeSpec
from tau.render import pod
from tau.render.rayjob import GPU_WORKER_DEFAULTS, HEAD_DEFAULTS

DATA_VOLUME = pod_parts.CHECKPOINT_VOLUME
WORKER_GROUP = "serve"
DEPLOYMENT_CONTAINER = pod_parts.SERVER_CONTAINER
#: A CPU-only Deployment pod; GPU pods get the GPU worker defaults of Ray workers.
DEPLOYMENT_DEFAULTS = Resources("1", "4Gi", "2", "8Gi")


def labels(spec: ServeSpec) -> dict[str, str]:
    """Identity labels of every object and pod of the service; the Deployment selects on
    the service label.
    """
    out = {
        meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE,
        meta.LABEL_SERVICE: spec.name,
        meta.LABEL_WORKLOAD_KIND: spec.kind,
        meta.LABEL_PROFILE: meta.label_value(spec.profile),
    }
    if spec.preset:
        out[meta.LABEL_PRESET] = meta.label_value(spec.preset.name)
        if spec.gpu_class:
            out[meta.LABEL_GPU_CLASS] = spec.gpu_class
    return out


def selector(spec: ServeSpec) -> dict[str, str]:
    return {meta.LABEL_SERVICE: spec.name}


def provenance(spec: ServeSpec) -> dict[str, str]:
    """Provenance: the image (and its digest) and the checkpoint the service was deployed from."""
    notes = {meta.ANNOTATION_IMAGE: spec.image}
    if "@" in spec.image:
        notes[meta.ANNOTATION_IMAGE_DIGEST] = spec.image.split("@", 1)[1]
    if spec.gpus > 0:
        notes[meta.ANNOTATION_GPU_COUNT] = str(spec.gpus)
    if spec.checkpoint and spec.checkpoint.uri:
        notes[meta.ANNOTATION_CHECKPOINT_URI] = spec.checkpoint.uri
    return notes


def _metadata(spec: ServeSpec, name: str | None = None) -> dict[str, Any]:
    return {
        "name": name or spec.name,
        "namespace": spec.namespace,
        "labels": labels(spec),
        "annotations": provenance(spec),
    }


def env(spec: ServeSpec, *, redact: bool) -> list[dict[str, Any]]:
    """The container env: --env, the checkpoint variables, --env-secret references."""
    literal = dict(spec.env)
    literal["TAU_SERVICE_NAME"] = spec.name
    if spec.checkpoint:
        literal.update(
            {
                "TAU_MODEL_PATH": spec.checkpoint.path,
                "TAU_DATA_DIR": DATA_ROOT,
                "TAU_DURABLE_CHECKPOINTS_DIR": CHECKPOINTS_ROOT,
            }
        )
    return pod.env_list(literal, spec.secrets, redact=redact)


def _volume(volume: pod_parts.Volume, *, redact: bool) -> dict[str, Any]:
    """One --volume as a pod volume; a Secret's name is redacted like --env-secret's."""
    source: dict[str, Any]
    if volume.kind == "pvc":
        source = {"persistentVolumeClaim": {"claimName": volume.source}}
    elif volume.kind == "configMap":
        source = {"configMap": {"name": volume.source}}
    elif volume.kind == "secret":
        source = {"secret": {"secretName": REDACTED if redact else volume.source}}
    else:
        source = {"emptyDir": {}}
    return {"name": volume.name, **source}


def volumes(spec: ServeSpec, *, redact: bool) -> list[dict[str, Any]]:
    """The checkpoint PVC (read-only: a service reads a checkpoint; only training writes to the
    durable PVC), then the --volume volumes in flag order.
    """
    out = []
    if spec.checkpoint:
        out.append(
            {
                "name": DATA_VOLUME,
                "persistentVolumeClaim": {"claimName": spec.checkpoint.pvc, "readOnly": True},
            }
        )
    return out + [_volume(v, redact=redact) for v in spec.volumes]


def mounts(spec: ServeSpec) -> list[dict[str, Any]]:
    """The serving container's mounts: /data for the checkpoint, then each --mount."""
    out: list[dict[str, Any]] = []
    if spec.checkpoint:
        out.append({"name": DATA_VOLUME, "mountPath": DATA_ROOT, "readOnly": True})
    for m in spec.mounts:
        out.append(
            {"name": m.name, "mountPath": m.path, **({"readOnly": True} if m.read_only else {})}
        )
    return out


def probes(spec: ServeSpec, port: int | str) -> dict[str, Any]:
    """HTTP probes on the serving port; startup allows threshold x 10s for a model to load."""
    p = spec.probes
    out: dict[str, Any] = {}
    if p.startup:
        out["startupProbe"] = {
            "httpGet": {"path": p.startup, "port": port},
            "periodSeconds": 10,
            "failureThreshold": p.startup_failure_threshold,
        }
    if p.readiness:
        out["readinessProbe"] = {
            "httpGet": {"path": p.readiness, "port": port},
            "periodSeconds": 10,
            "failureThreshold": 3,
        }
    if p.liveness:
        out["livenessProbe"] = {
            "httpGet": {"path": p.liveness, "port": port},
            "periodSeconds": 20,
            "failureThreshold": 3,
        }
    return out


def _pod_spec(
    spec: ServeSpec, pod_spec: dict[str, Any], *, gpu_pod: bool, redact: bool
) -> dict[str, Any]:
    """The pod spec around its containers: GPU tolerations and the preset's node selector (GPU
    pods), the preset's pod priority class, and the checkpoint volume.
    """
    if gpu_pod and spec.gpus > 0:
        pod_spec["tolerations"] = [dict(t) for t in pod.GPU_TOLERATIONS]
    if gpu_pod and spec.node_selector:
        pod_spec["nodeSelector"] = spec.node_selector
    if spec.preset and spec.preset.pod_priority_class:
        pod_spec["priorityClassName"] = spec.preset.pod_priority_class
    if volumes(spec, redact=redact):
        pod_spec["volumes"] = volumes(spec, redact=redact)
    return pod_spec


# ------------------------------------------------------------------------------ RayService


def serve_config(spec: ServeSpec) -> str:
    """serveConfigV2: one application at route "/"; the app's own deployments set replica counts
    (Serve rejects a config naming a deployment the app lacks, so tau names none).
    """
    app: dict[str, Any] = {"name": spec.name, "import_path": spec.import_path, "route_prefix": "/"}
    if spec.runtime_pip:
        app["runtime_env"] = {"pip": list(spec.runtime_pip)}
    config = {"http_options": {"host": "0.0.0.0", "port": spec.port}, "applications": [app]}
    return yaml.safe_dump(config, sort_keys=True, default_flow_style=False)


def _ray_container(
    spec: ServeSpec, name: str, ports: list[dict[str, Any]], *, gpus: int, redact: bool
) -> dict[str, Any]:
    defaults = GPU_WORKER_DEFAULTS if gpus > 0 else HEAD_DEFAULTS
    container: dict[str, Any] = {
        "name": name,
        "image": spec.image,
        "ports": [*ports, {"containerPort": spec.port, "name": "serve"}],
        "env": env(spec, redact=redact),
        "resources": pod.resources(Resources(), gpus, defaults=defaults),
        **probes(spec, spec.port),
    }
    if mounts(spec):
        container["volumeMounts"] = mounts(spec)
    return container


def _head_group(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    ports = [
        {"containerPort": 6379, "name": "gcs-server"},
        {"containerPort": 8265, "name": "dashboard"},
        {"containerPort": 10001, "name": "client"},
    ]
    pod_spec = _pod_spec(
        spec,
        {
            "affinity": pod.SYSTEM_POOL_AFFINITY,
            "containers": [_ray_container(spec, "ray-head", ports, gpus=0, redact=redact)],
            "tolerations": [
                {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"}
            ],
        },
        gpu_pod=False,
        redact=redact,
    )
    return {
        # num-cpus 0: no Serve replica lands on the head, only the controller and proxy.
        "rayStartParams": {"dashboard-host": "0.0.0.0", "num-cpus": "0", "num-gpus": "0"},
        "template": {"metadata": {"labels": labels(spec)}, "spec": pod_spec},
    }


def _worker_group(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    low, high = (
        (spec.min_replicas, spec.max_replicas)
        if spec.autoscaling
        else (spec.replicas, spec.replicas)
    )
    pod_spec = _pod_spec(
        spec,
        {"containers": [_ray_container(spec, "ray-worker", [], gpus=spec.gpus, redact=redact)]},
        gpu_pod=True,
        redact=redact,
    )
    # The size is also a template annotation: KubeRay ignores a change of the replica fields
    # alone (they are the autoscaler's), so a redeploy with a new size must change the template
    # for KubeRay to roll out a RayCluster of that size (a zero-downtime upgrade).
    size = f"{low}-{high}" if spec.autoscaling else str(spec.replicas)
    return {
        "groupName": WORKER_GROUP,
        "replicas": spec.replicas,
        "minReplicas": low,
        "maxReplicas": high,
        "rayStartParams": {"num-gpus": str(spec.gpus)},
        "template": {
            "metadata": {
                "labels": labels(spec),
                "annotations": {meta.ANNOTATION_SERVE_WORKERS: size},
            },
            "spec": pod_spec,
        },
    }


def spec_to_rayservice(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    """The RayService; with autoscaling the Ray autoscaler adds worker pods between
    --min-replicas and --max-replicas as Serve replicas need room.
    """
    cluster: dict[str, Any] = {
        "rayVersion": spec.ray_version,
        "headGroupSpec": _head_group(spec, redact=redact),
        "workerGroupSpecs": [_worker_group(spec, redact=redact)],
    }
    if spec.autoscaling:
        cluster["enableInTreeAutoscaling"] = True
    return {
        "apiVersion": meta.RAY_API_VERSION,
        "kind": "RayService",
        "metadata": _metadata(spec),
        "spec": {"serveConfigV2": serve_config(spec), "rayClusterConfig": cluster},
    }


# ------------------------------------------------------------------------------ Deployment


def _deployment_container(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    defaults = GPU_WORKER_DEFAULTS if spec.gpus > 0 else DEPLOYMENT_DEFAULTS
    container: dict[str, Any] = {
        "name": DEPLOYMENT_CONTAINER,
        "image": spec.image,
        "ports": [{"containerPort": spec.port, "name": "http"}],
        "env": env(spec, redact=redact),
        "resources": pod.resources(Resources(), spec.gpus, defaults=defaults),
        **probes(spec, "http"),
    }
    if spec.command:
        container["command"] = list(spec.command)
    if spec.args:
        container["args"] = list(spec.args)
    if mounts(spec):
        container["volumeMounts"] = mounts(spec)
    return container


def _deployment_pod(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    """The server container, then --sidecar containers after it and --init containers before
    it (each runs its image's own entrypoint).
    """
    pod_spec: dict[str, Any] = {
        "containers": [
            _deployment_container(spec, redact=redact),
            *({"name": c.name, "image": c.image} for c in spec.sidecars),
        ]
    }
    if spec.init_containers:
        pod_spec["initContainers"] = [
            {"name": c.name, "image": c.image} for c in spec.init_containers
        ]
    return _pod_spec(spec, pod_spec, gpu_pod=True, redact=redact)


def spec_to_deployment(spec: ServeSpec, *, redact: bool) -> dict[str, Any]:
    """The Deployment; the image's own entrypoint serves (the app owns loading the model)."""
    body: dict[str, Any] = {
        "replicas": spec.replicas,
        "selector": {"matchLabels": selector(spec)},
        "template": {
            "metadata": {"labels": labels(spec)},
            "spec": _deployment_pod(spec, redact=redact),
        },
    }
    if spec.gpus > 0:
        # GPUs are scarce: a surge pod would wait for a free GPU, so replace in place instead.
        body["strategy"] = {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
        }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(spec),
        "spec": body,
    }


def spec_to_service(spec: ServeSpec) -> dict[str, Any]:
    """The ClusterIP Service in front of the Deployment's pods."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(spec),
        "spec": {
            "type": "ClusterIP",
            "selector": selector(spec),
            "ports": [
                {
                    "name": "http",
                    "port": spec.service_port,
                    "protocol": "TCP",
                    "targetPort": spec.service_target_port,
                }
            ],
        },
    }


def render(spec: ServeSpec, *, redact: bool) -> list[dict[str, Any]]:
    """The service's documents in apply order (a Service before the pods it fronts).

    Args:
        spec: the resolved service.
        redact: replace Secret names and keys with a placeholder (client dry-run).
    """
    if spec.kind == "rayservice":
        return [spec_to_rayservice(spec, redact=redact)]
    docs = [spec_to_deployment(spec, redact=redact)]
    if spec.service_port > 0:
        docs.insert(0, spec_to_service(spec))
    return docs
