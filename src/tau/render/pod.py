"""Pod-level helpers shared by the Job and RayJob renderers: env, resources, tolerations.

Pure.
"""

from __future__ import annotations

from typing import Any

from tau.k8s import dra, meta, paths
from tau.plan.model import REDACTED, Plan, Resources, SecretRef

GPU_RESOURCE = "nvidia.com/gpu"
#: A Ray head (the GCS, the Serve controller) belongs on the AKS system pool, or anywhere on a
#: cluster without node modes, so that GPU nodes hold only workers and replicas.
SYSTEM_POOL_AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": meta.AKS_NODE_MODE, "operator": "In", "values": ["system"]}
                    ]
                },
                {"matchExpressions": [{"key": meta.AKS_NODE_MODE, "operator": "DoesNotExist"}]},
            ]
        }
    }
}

GPU_TOLERATIONS = (
    {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
    {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
)

# The storage layout every run sees (the reference's storage paths).
DATA_ROOT = paths.DATA_ROOT
HOT_ROOT = paths.HOT_ROOT
STORAGE_ENV = (
    ("TAU_CHECKPOINTS_DIR", "/mnt/checkpoints"),
    ("TAU_DATASETS_DIR", "/mnt/datasets"),
    ("TAU_DATA_DIR", DATA_ROOT),
    ("TAU_DURABLE_CHECKPOINTS_DIR", paths.DURABLE_CHECKPOINTS),
    ("TAU_DURABLE_DATASETS_DIR", paths.DURABLE_DATASETS),
    ("TAU_HOT_DIR", HOT_ROOT),
)


def env_list(
    literal: dict[str, str], secrets: tuple[SecretRef, ...], *, redact: bool
) -> list[dict[str, Any]]:
    """Env entries sorted by name; secret refs keep their shape, redacted on client dry-run."""
    entries: dict[str, dict[str, Any]] = {k: {"name": k, "value": v} for k, v in literal.items()}
    for ref in secrets:
        name, key = (REDACTED, REDACTED) if redact else (ref.secret, ref.key)
        entries[ref.env] = {
            "name": ref.env,
            "valueFrom": {"secretKeyRef": {"name": name, "key": key}},
        }
    return [entries[k] for k in sorted(entries)]


def resources(
    base: Resources,
    gpu: int,
    *,
    gpu_resource: str = GPU_RESOURCE,
    defaults: Resources | None = None,
    limit_follows_request: bool = False,
) -> dict[str, Any]:
    """requests/limits from explicit values over defaults, plus the GPU in both."""
    d = defaults or Resources()
    cpu_req = base.cpu_request or d.cpu_request
    mem_req = base.memory_request or d.memory_request
    cpu_lim = base.cpu_limit or (
        base.cpu_request if limit_follows_request and base.cpu_request else d.cpu_limit
    )
    mem_lim = base.memory_limit or (
        base.memory_request if limit_follows_request and base.memory_request else d.memory_limit
    )
    requests = {k: v for k, v in (("cpu", cpu_req), ("memory", mem_req)) if v}
    limits = {k: v for k, v in (("cpu", cpu_lim), ("memory", mem_lim)) if v}
    if gpu > 0:
        requests[gpu_resource] = str(gpu)
        limits[gpu_resource] = str(gpu)
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    return out


def gpu_claim(plan: Plan, gpus: int) -> str:
    """The claim template a pod with `gpus` GPUs names on a DRA run; "" otherwise."""
    return dra.claim_template(gpus) if plan.dra else ""


def claim_devices(resources: dict[str, Any], pod_spec: dict[str, Any], template: str) -> None:
    """Ask for the GPUs through the DRA claim made from `template` instead of nvidia.com/gpu:
    the pod names the claim, its container uses the claim's devices.
    """
    resources["claims"] = dra.container_claims()
    pod_spec["resourceClaims"] = dra.pod_claims(template)


def merge(*layers: Resources) -> Resources:
    """Later layers override earlier ones field by field."""
    out = Resources()
    for layer in layers:
        out = Resources(
            layer.cpu_request or out.cpu_request,
            layer.memory_request or out.memory_request,
            layer.cpu_limit or out.cpu_limit,
            layer.memory_limit or out.memory_limit,
        )
    return out


def output_env(plan: Plan) -> dict[str, str]:
    return (
        {"TAU_OUTPUT_DIR": plan.storage.output}
        if plan.storage.output and plan.storage.result_pvc
        else {}
    )


# The pod half of runtime.security.mode restricted: non-root, a shared fsGroup so volumes are
# writable by the non-root user, and the runtime's default seccomp profile.
RESTRICTED_FS_GROUP = 65532


def restricted_pod_security() -> dict[str, Any]:
    """The Kubernetes Restricted pod-security pod fields."""
    return {
        "fsGroup": RESTRICTED_FS_GROUP,
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restricted_security() -> dict[str, Any]:
    """The Kubernetes Restricted pod-security container fields."""
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def restrict_containers(spec: dict[str, Any]) -> None:
    """Run every container of a restricted pod (Job or Ray) as user and group 65532.

    runAsNonRoot alone leaves the user to the image, and an image whose user is root (or a
    name, not a number) is refused at container start; a fixed non-root UID runs any image.
    The containers share emptyDirs (/script, /tmp/ray) whose files the pod's fsGroup owns, so
    that GID as every container's primary group keeps what one writes readable by the others,
    as the reference renders it on Job and Ray pods alike.
    """
    for field in ("initContainers", "containers"):
        for container in spec.get(field, []):
            context = dict(container.get("securityContext") or {})
            context.setdefault("runAsUser", RESTRICTED_FS_GROUP)
            context.setdefault("runAsGroup", RESTRICTED_FS_GROUP)
            container["securityContext"] = context
