"""Every label and annotation key tau writes or reads, declared once; label-value sanitizing.

Pure. The `tau.azure.com/*` keys are tau's own; the Kueue, KubeRay, Kubernetes and AKS keys
below are the upstream ones tau relies on. A test fails on any literal of these prefixes
elsewhere in the package, so docs and code can never name different keys.
"""

from __future__ import annotations

import re

GROUP = "tau.azure.com"
_P = GROUP + "/"

# Ownership and identity.
LABEL_MANAGED_BY = _P + "managed-by"
LABEL_WORKSPACE = _P + "workspace"
LABEL_RUN_ID = _P + "run-id"
LABEL_WORKLOAD_KIND = _P + "workload-kind"
LABEL_PROFILE = _P + "profile"
# Scheduling.
LABEL_PRESET = _P + "preset"
LABEL_GPU_CLASS = _P + "gpu-class"
LABEL_PREEMPTIBLE = _P + "preemptible"
LABEL_RECLAIMABLE = _P + "reclaimable"
ANNOTATION_CLUSTER_QUEUE = _P + "cluster-queue"
ANNOTATION_RESOURCE_FLAVOR = _P + "resource-flavor"
ANNOTATION_POD_PRIORITY_CLASS = _P + "pod-priority-class"
ANNOTATION_WORKLOAD_PRIORITY_CLASS = _P + "workload-priority-class"
ANNOTATION_KUEUE_TOPOLOGY = _P + "kueue-topology"
ANNOTATION_PRESET_DESCRIPTION = _P + "preset-description"
ANNOTATION_PRESET_EXPLAIN = _P + "preset-explain"
ANNOTATION_TOPOLOGY_POLICY_SOURCE = _P + "topology-policy-source"
# GPUs and storage.
ANNOTATION_GPU_COUNT = _P + "gpu-count"
# How a ResourceFlavor's GPUs are requested: device-plugin or dra (read by validate topology).
ANNOTATION_GPU_CONTRACT = _P + "gpu-contract"
# The ResourceClaimTemplate a DRA run's GPU pods claim their devices from.
ANNOTATION_DRA_CLAIM_TEMPLATE = _P + "dra-claim-template"
ANNOTATION_STORAGE_MOUNTS = _P + "storage-mounts"
# Results.
ANNOTATION_RESULT_PATH = _P + "result-path"
ANNOTATION_RESULT_PVC = _P + "result-pvc"
ANNOTATION_CHECKPOINT_ARTIFACT = _P + "checkpoint-artifact"
# A Secret tau renders for a managed workflow (workflow.secret_payload): the workload it
# belongs to, by name and kind, so it can be adopted (ownerReferences) after the workload exists.
ANNOTATION_OWNER_NAME = _P + "owner-name"
ANNOTATION_OWNER_KIND = _P + "owner-kind"
# Experiment (the `stellar-` keys are the reference's experiment-index names).
LABEL_STELLAR_PROJECT = _P + "stellar-project"
LABEL_STELLAR_EXPERIMENT = _P + "stellar-experiment"
LABEL_STELLAR_GROUP = _P + "stellar-group"
# The experiment identity as written (labels carry the sanitized form).
ANNOTATION_STELLAR_PROJECT_VALUE = _P + "stellar-project-value"
ANNOTATION_STELLAR_EXPERIMENT_ID = _P + "stellar-experiment-id"
ANNOTATION_STELLAR_GROUP_VALUE = _P + "stellar-group-value"
ANNOTATION_CAPTURE_VERSION = _P + "capture-version"
ANNOTATION_NAMESPACE = _P + "namespace"
# Provenance.
ANNOTATION_CONFIG_HASH = _P + "config-hash"
ANNOTATION_IMAGE = _P + "image"
ANNOTATION_IMAGE_DIGEST = _P + "image-digest"
# The Git commit of the config's repository (`-dirty` when the work tree differs) and the tau
# command line that submitted the run (secret values redacted); set by tau.provenance.
ANNOTATION_CODE_SHA = _P + "code-sha"
ANNOTATION_TAU_COMMAND = _P + "tau-command"
ANNOTATION_SUBMISSION_ID = _P + "submission-id"
ANNOTATION_PAYLOAD_DIGEST = _P + "payload-digest"
ANNOTATION_SCRIPT_PAYLOAD_DIGEST = _P + "script-payload-digest"
ANNOTATION_MANIFEST_PAYLOAD_DIGEST = _P + "manifest-payload-digest"
#: Azure workload identity injects its federated token into pods carrying this label.
LABEL_AZURE_WORKLOAD_IDENTITY_USE = "azure.workload.identity/use"
ANNOTATION_WORKLOADSPEC_EXECUTION = _P + "workloadspec-execution"
# Nsight profiler.
ANNOTATION_PROFILE_MODE = _P + "profile-mode"
ANNOTATION_PROFILE_RANK = _P + "profile-rank"
ANNOTATION_PROFILE_PATH = _P + "profile-path"
ANNOTATION_PROFILE_PVC = _P + "profile-pvc"
ANNOTATION_PROFILE_WARMUP = _P + "profile-warmup"
ANNOTATION_PROFILE_DURATION = _P + "profile-duration"
# Retry bookkeeping (written by the retry loop and resume).
ANNOTATION_RETRY_ATTEMPT = _P + "retry-attempt"
ANNOTATION_RETRY_REASON = _P + "retry-reason"
# Metrics offload: the submission's collector session, and where the run's evidence lives.
ANNOTATION_METRICS_SESSION_ID = _P + "metrics-session-id"
ANNOTATION_EXPERIMENT_SOURCE = _P + "experiment-source"
# Node label of the GPU class (the same key as the workload label).
NODE_GPU_CLASS = LABEL_GPU_CLASS

MANAGED_BY_VALUE = "tau"
CAPTURE_VERSION = "v1alpha1"

# Kueue and Kubernetes keys tau relies on (not tau-owned).
KUEUE_QUEUE_NAME = "kueue.x-k8s.io/queue-name"
KUEUE_PRIORITY_CLASS = "kueue.x-k8s.io/priority-class"
KUEUE_MAX_EXEC_TIME = "kueue.x-k8s.io/max-exec-time-seconds"
KUEUE_PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
KUEUE_JOB_UID = "kueue.x-k8s.io/job-uid"
#: Prefix of Kueue's `managedBy` values (a Job managed by Kueue's MultiKueue and the like).
KUEUE_MANAGED_BY_PREFIX = "kueue.x-k8s.io/"
KUEUE_MULTIKUEUE_MANAGED_BY = KUEUE_MANAGED_BY_PREFIX + "multikueue"
AZURE_GPU_SERIES = "kueue.azure.com/gpu-series"
JOB_NAME_SELECTOR = "batch.kubernetes.io/job-name"
#: The KubeRay group/version of RayJob, RayCluster and RayService.
RAY_API_VERSION = "ray.io/v1"
RAY_CLUSTER_LABEL = "ray.io/cluster"
RAY_NODE_TYPE_LABEL = "ray.io/node-type"
APP_MANAGED_BY = "app.kubernetes.io/managed-by"
APP_COMPONENT = "app.kubernetes.io/component"
APP_INSTANCE = "app.kubernetes.io/instance"
NODE_HOSTNAME = "kubernetes.io/hostname"
NODE_ZONE = "topology.kubernetes.io/zone"
#: The node's VM size (an AKS node's SKU); the portal's fleet card counts it.
NODE_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
#: AKS node-pool mode (`system` or `user`): heads and controllers stay on the system pool.
AKS_NODE_MODE = "kubernetes.azure.com/mode"
#: The Secrets Store CSI driver (runtime.env_kv): its CRD group/version, and the CSI driver a
#: pod volume names to mount a SecretProviderClass. The mount is what makes the driver fetch the
#: Key Vault objects and sync them into the SecretProviderClass's Secret, so every pod that reads
#: that Secret also mounts the volume (read-only, where the reference mounts it).
SECRETS_STORE_API_VERSION = "secrets-store.csi.x-k8s.io/v1"
SECRETS_STORE_CSI_DRIVER = "secrets-store.csi.k8s.io"
SECRETS_STORE_VOLUME = "kv-secrets"
SECRETS_STORE_MOUNT_PATH = "/mnt/secrets-store"

_INVALID_RUN = re.compile(r"[^a-z0-9._-]+")


def label_value(text: str) -> str:
    """A string made safe as a label value; long values keep a hash of the original."""
    value = _INVALID_RUN.sub("-", text.lower()).strip("-_.")
    if len(value) > 63:
        import hashlib  # rare (names over 63 characters): not loaded by every read

        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        value = value[: 63 - 13].rstrip("-_.") + "-" + digest
    return value


# Serving (tau serve): the service a Deployment, Service or RayService belongs to, and the
# checkpoint it was deployed from (pvc://CLAIM/PATH).
LABEL_SERVICE = _P + "service"
ANNOTATION_CHECKPOINT_URI = _P + "checkpoint-uri"
#: A RayService worker group's size ("2", or "1-4" when autoscaling) on its pod template:
#: KubeRay leaves replicas/minReplicas/maxReplicas out of the cluster hash it compares on an
#: update, so without it a redeploy that changes only the size never reaches the RayCluster.
ANNOTATION_SERVE_WORKERS = _P + "serve-workers"
