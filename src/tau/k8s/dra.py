"""The DRA vocabulary of a TauGrid cluster: the GPU claim templates and the parallel DRA queue.

Pure. A platform that hands out GPUs through Dynamic Resource Allocation pre-creates one
ResourceClaimTemplate per GPU count in each workspace namespace (`full-gpu` for one GPU,
`ds-<N>gpus` for N GPUs of one node) and admits DRA workloads on a Kueue queue parallel to the
shared device-plugin one, whose flavors carry a `-dra` suffix and no topology. tau creates none
of these: a run names them (the reference's managed workflow contract).
"""

from __future__ import annotations

#: The pod-level claim name; the trainer container asks for it in resources.claims.
CLAIM_NAME = "gpu"
#: The shared device-plugin queue, and the DRA queue a DRA run moves to from it. The
#: ClusterQueue name is the one of every built-in preset, the chart's baseline queue and
#: `tau cluster validate topology`'s default (the seed's `taugrid-cq`).
SHARED_QUEUE = "jobqueue"
SHARED_CLUSTER_QUEUE = "taugrid-cq"
DRA_QUEUE = "jobqueue-dra"
DRA_CLUSTER_QUEUE = "tau-dra-cq"
#: A DRA ResourceFlavor is its device-plugin series' name with this suffix.
FLAVOR_SUFFIX = "-dra"


def claim_template(gpus: int) -> str:
    """The ResourceClaimTemplate of a pod with `gpus` GPUs; "" for a CPU pod."""
    if gpus <= 0:
        return ""
    return "full-gpu" if gpus == 1 else f"ds-{gpus}gpus"


def pod_claims(template: str) -> list[dict[str, str]]:
    """The pod's spec.resourceClaims for one claim made from `template`."""
    return [{"name": CLAIM_NAME, "resourceClaimTemplateName": template}]


def container_claims() -> list[dict[str, str]]:
    """The container's resources.claims: the devices of the pod's GPU claim."""
    return [{"name": CLAIM_NAME}]
