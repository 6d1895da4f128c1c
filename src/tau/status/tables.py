"""Typed tables mapping upstream states and reasons to tau's phase statuses and diagnostic codes.

Pure. One entry per upstream value, each with a comment saying what the upstream state means,
so a new Kueue/KubeRay/kubelet value is a one-line change reviewed against upstream docs.
The table tests in tests/test_status_interpret.py walk every key.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from tau.status.model import PhaseStatus, State

# KubeRay v1 RayJob `status.jobDeploymentStatus` (ray-operator/apis/ray/v1/rayjob_types.go).
RAYJOB_DEPLOYMENT_PHASE: Mapping[str, PhaseStatus] = MappingProxyType(
    {
        # Not reconciled by KubeRay yet.
        "": PhaseStatus.PENDING,
        # Created; KubeRay has not started initialising.
        "New": PhaseStatus.PENDING,
        # spec.suspend=true: Kueue has not admitted it (or preempted it).
        "Suspended": PhaseStatus.PENDING,
        # Kueue asked for suspension; KubeRay is tearing the RayCluster down.
        "Suspending": PhaseStatus.ACTIVE,
        # The RayCluster is being created and the submitter is not running yet.
        "Initializing": PhaseStatus.ACTIVE,
        # InteractiveMode: cluster up, waiting for a job id to be provided.
        "Waiting": PhaseStatus.ACTIVE,
        # The Ray job was submitted and runs.
        "Running": PhaseStatus.DONE,
        # An attempt failed and KubeRay retries within spec.backoffLimit.
        "Retrying": PhaseStatus.WARNING,
        # Finished; `jobStatus` says whether it succeeded.
        "Complete": PhaseStatus.DONE,
        # The job failed (KubeRay >= 1.2 reports application failures here too).
        "Failed": PhaseStatus.WARNING,
        # The RayJob spec was rejected by KubeRay's validation.
        "ValidationFailed": PhaseStatus.WARNING,
    }
)

# Ray's own job status, mirrored in RayJob `status.jobStatus` (ray dashboard JobStatus).
RAY_JOB_STATUS_PHASE: Mapping[str, PhaseStatus] = MappingProxyType(
    {
        # Submitted, waiting for the driver to start.
        "PENDING": PhaseStatus.ACTIVE,
        # The driver runs.
        "RUNNING": PhaseStatus.DONE,
        # The driver exited 0.
        "SUCCEEDED": PhaseStatus.DONE,
        # The driver failed.
        "FAILED": PhaseStatus.WARNING,
        # Stopped by a user or by KubeRay (deadline, deletion).
        "STOPPED": PhaseStatus.WARNING,
    }
)

# The canonical State a RayJob deployment status implies when it is terminal.
RAYJOB_TERMINAL_STATE: Mapping[str, State] = MappingProxyType(
    {
        # Finished; success still depends on jobStatus (see RAY_JOB_TERMINAL_STATE).
        "Complete": State.SUCCEEDED,
        # Failed for good (application failure, deadline, backoff exhausted).
        "Failed": State.FAILED,
        # Never ran: the spec is invalid.
        "ValidationFailed": State.FAILED,
    }
)

# The canonical State a terminal Ray job status implies.
RAY_JOB_TERMINAL_STATE: Mapping[str, State] = MappingProxyType(
    {
        # The driver exited 0.
        "SUCCEEDED": State.SUCCEEDED,
        # The driver failed.
        "FAILED": State.FAILED,
        # Stopped before finishing: the run did not complete.
        "STOPPED": State.FAILED,
    }
)

# batch/v1 Job condition types that end a Job, and the State each means (checked in order).
JOB_TERMINAL_CONDITIONS: tuple[tuple[str, State], ...] = (
    # All completions succeeded.
    ("Complete", State.SUCCEEDED),
    # successPolicy met (1.31+); Complete follows once pods are gone.
    ("SuccessCriteriaMet", State.SUCCEEDED),
    # backoffLimit, activeDeadlineSeconds or podFailurePolicy ended it.
    ("Failed", State.FAILED),
    # The Job will fail once its pods terminate (1.31+).
    ("FailureTarget", State.FAILED),
)

# Container waiting reasons meaning the image cannot be pulled (kubelet images/types.go).
IMAGE_PULL_FAILURES: Mapping[str, str] = MappingProxyType(
    {
        # The last pull attempt failed (tag, credentials, egress).
        "ErrImagePull": "the last pull failed",
        # Several pulls failed; kubelet backs off between attempts.
        "ImagePullBackOff": "pulls keep failing; kubelet backs off",
        # The image reference cannot be parsed.
        "InvalidImageName": "the image reference is invalid",
        # imagePullPolicy: Never and the image is not on the node.
        "ErrImageNeverPull": "imagePullPolicy Never and the image is absent",
    }
)

# Container waiting reasons meaning the container will not start by itself (kubelet).
CONTAINER_FAILURES: Mapping[str, str] = MappingProxyType(
    {
        # It started and exited repeatedly; kubelet backs off restarts.
        "CrashLoopBackOff": "CrashLoopBackOff",
        # A referenced Secret/ConfigMap or key is missing.
        "CreateContainerConfigError": "ContainerConfigError",
        # The runtime could not create the container.
        "CreateContainerError": "ContainerConfigError",
        # The runtime could not start it (bad command, permissions).
        "RunContainerError": "ContainerFailed",
        # A generic start failure reported by the runtime.
        "Error": "ContainerFailed",
        # The entrypoint could not be executed.
        "StartError": "ContainerFailed",
    }
)

# Container waiting reasons that are normal progress, with what they mean for the reader.
CONTAINER_PROGRESS: Mapping[str, str] = MappingProxyType(
    {
        # Volumes mount and the image pulls; a long wait often means a mount problem.
        "ContainerCreating": "volumes are mounting and images pulling; a long wait often means a "
        "volume mount problem (see the pod events)",
        # Init containers are still running.
        "PodInitializing": "init containers are still running",
    }
)

# Substrings of Kueue pending messages meaning the queue's flavor cannot place pods by topology
# at all (tau asks for topology-aware placement; the flavor names no Topology): a platform fix.
TOPOLOGY_UNSUPPORTED_MARKERS: tuple[str, ...] = ("does not support topologyawarescheduling",)

# Substrings of Kueue's topology-aware placement messages meaning no node (topology domain) has
# room for the pods now: busy nodes free up, but a pod larger than any node never fits.
TOPOLOGY_NO_ROOM_MARKERS: tuple[str, ...] = ("doesn't allow to fit", "allows to fit only")

# Substrings of Kueue pending messages meaning the request exceeds the most the ClusterQueue can
# ever hold (nominal quota plus what it may borrow): waiting for quota to free up never helps.
QUOTA_NEVER_FITS_MARKERS: tuple[str, ...] = ("> maximum capacity", "exceeds the maximum capacity")

# Substrings of Kueue pending messages meaning "no quota" (scheduler flavorassigner messages).
QUOTA_MARKERS: tuple[str, ...] = (
    "insufficient quota",
    "quota",
    "exceeds the maximum capacity",
    "couldn't assign flavors",
)

# Scheduler messages meaning no node publishes devices that satisfy a pod's claims (the
# dynamicresources plugin: "cannot allocate all claims" since Kubernetes 1.34).
DRA_NO_DEVICE_MARKERS: tuple[str, ...] = ("no suitable devices", "cannot allocate all claims")

# Event reasons of DRA allocation failures (scheduler dynamicresources plugin, kubelet).
DRA_FAILURE_MARKERS: tuple[str, ...] = (
    "no suitable devices",
    "cannot allocate all claims",
    "resourceclaim",
    "failedpreparedynamicresources",
)
