"""The Plan: everything render needs, resolved, as frozen hand-written types.

Pure. Generated models stop at resolve; render sees only these types, so a change of the
config schema cannot silently change a manifest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

UNRESOLVED_QUEUE = "<unresolved-queue>"
UNRESOLVED_NAMESPACE = "<unresolved-namespace>"
UNRESOLVED_SERVICE_ACCOUNT = "<unresolved-service-account>"
REDACTED = "<redacted>"


@dataclass(frozen=True)
class SecretRef:
    """An env var read from a Secret key."""

    env: str
    secret: str
    key: str


@dataclass(frozen=True)
class Resources:
    """CPU and memory requests and limits (Kubernetes quantities), any of them unset."""

    cpu_request: str | None = None
    memory_request: str | None = None
    cpu_limit: str | None = None
    memory_limit: str | None = None


@dataclass(frozen=True)
class Volume:
    """A PVC volume and where it is mounted."""

    name: str
    claim: str
    path: str
    read_only: bool = False


@dataclass(frozen=True)
class ImageAsset:
    name: str
    image: str
    source_path: str
    mount_path: str


@dataclass(frozen=True)
class Script:
    """The entrypoint file, read from disk, embedded in the manifest."""

    filename: str
    content: bytes
    shebang: str | None


@dataclass(frozen=True)
class Placement:
    """Where and at what priority the workload runs: the preset merged with policy.*."""

    preset: str = ""
    profile: str = ""
    team: str = ""
    lane: str = ""
    mode: str = ""
    topology: str = ""
    gpu_class: str = ""
    queue: str = ""
    cluster_queue: str = ""
    resource_flavor: str = ""
    kueue_topology: str = ""
    topology_annotations: bool = True
    workload_priority_class: str = ""
    pod_priority_class: str = ""
    reclaimable: bool = False
    #: policy.preemptable, or implied by a reclaimable preset.
    preemptable: bool = False
    description: str = ""
    explain: str = ""
    source: str = ""
    node_selector: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Plan:
    """A resolved run, ready to render into a Job (+ Service) or a RayJob."""

    name: str
    engine: str
    namespace: str
    image: str
    placement: Placement
    launcher: str
    script: Script | None
    config_hash: str
    #: A Job script run as its own executable (its shebang), not under python3.
    shebang_script: bool = False
    #: serviceAccountName of every pod; None leaves the namespace's default.
    service_account: str | None = None
    # Job shape.
    gpus: int = 0
    nodes: int = 1
    processes_per_node: int = 1
    ttl_seconds: int = 28800
    #: run.execution_deadline_seconds: activeDeadlineSeconds and Kueue's max execution time.
    execution_deadline: int | None = None
    working_dir: str | None = None
    security_restricted: bool = False
    # Ray shape.
    workers: int = 1
    gpus_per_worker: int = 1
    mig_profile: str | None = None
    pip: tuple[str, ...] = ()
    #: run.working_dir: the zipped project and the entrypoint's module inside it.
    project_zip: bytes | None = None
    project_module: str | None = None
    # Resources: Job main container / every Ray pod, then Ray head and workers.
    resources: Resources = field(default_factory=Resources)
    head_resources: Resources = field(default_factory=Resources)
    worker_resources: Resources = field(default_factory=Resources)
    # Environment.
    env: tuple[tuple[str, str], ...] = ()
    secrets: tuple[SecretRef, ...] = ()
    launcher_configs: tuple[tuple[str, object], ...] = ()
    # Storage.
    data_pvc: str | None = None
    volumes: tuple[Volume, ...] = ()
    output: str | None = None
    result_pvc: str | None = None
    checkpoint_artifact: str | None = None
    source_image: str | None = None
    source_path: str | None = None
    source_entrypoint: str | None = None
    image_assets: tuple[ImageAsset, ...] = ()
    # Ray Tune.
    tune_metric: str | None = None
    tune_mode: str | None = None
    tune_num_samples: int | None = None
    tune_max_concurrent: int | None = None
    # Profiler.
    profiler_mode: str | None = None
    profiler_rank: str = "0"
    profiler_warmup: str | None = None
    profiler_duration: str | None = None
    # Capture.
    workspace: str | None = None
    experiment: tuple[tuple[str, str], ...] = ()
    retry_env: tuple[tuple[str, str], ...] = ()

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1
