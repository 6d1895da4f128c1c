"""The Plan: everything render needs, resolved, as frozen hand-written types.

Pure. Generated models stop at resolve; render sees only these types, so a change of the
config schema cannot silently change a manifest.

Nested like the typed config (tau.intent.runconfig): the job shape, the Ray shape, resources,
environment, storage, Ray Tune, the profiler and capture are each one group. Typed NamedTuples
for the same reason as RunConfig: immutable and typed, without the per-class cost the
dataclass decorator pays at import on every command that renders.
"""

# No `from __future__ import annotations` here: typing.NamedTuple compiles every string
# annotation into a ForwardRef at import (milliseconds for a module of them), and this is imported
# by every command that reads a tau.yaml.
from typing import NamedTuple

UNRESOLVED_QUEUE = "<unresolved-queue>"
UNRESOLVED_NAMESPACE = "<unresolved-namespace>"
UNRESOLVED_SERVICE_ACCOUNT = "<unresolved-service-account>"
REDACTED = "<redacted>"


class SecretRef(NamedTuple):
    """An env var read from a Secret key."""

    env: str
    secret: str
    key: str


class Resources(NamedTuple):
    """CPU and memory requests and limits (Kubernetes quantities), any of them unset."""

    cpu_request: str | None = None
    memory_request: str | None = None
    cpu_limit: str | None = None
    memory_limit: str | None = None


class Volume(NamedTuple):
    """A PVC volume and where it is mounted."""

    name: str
    claim: str
    path: str
    read_only: bool = False


class ImageAsset(NamedTuple):
    name: str
    image: str
    source_path: str
    mount_path: str


class Script(NamedTuple):
    """The entrypoint file, read from disk, embedded in the manifest."""

    filename: str
    content: bytes
    shebang: str | None


class Placement(NamedTuple):
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


class JobShape(NamedTuple):
    """The Job's shape: GPUs per pod, pods, processes per pod, lifetime."""

    gpus: int = 0
    nodes: int = 1
    processes_per_node: int = 1
    ttl_seconds: int = 28800
    #: Python packages installed before the entrypoint runs (a managed workflow's runtime.pip).
    pip: tuple[str, ...] = ()
    #: run.execution_deadline_seconds: activeDeadlineSeconds and Kueue's max execution time.
    execution_deadline: int | None = None
    working_dir: str | None = None
    #: A Job script run as its own executable (its shebang), not under python3.
    shebang_script: bool = False

    @property
    def multi_node(self) -> bool:
        return self.nodes > 1


class RayShape(NamedTuple):
    """The RayJob's shape: the worker groups and the driver's runtime environment."""

    workers: int = 1
    gpus_per_worker: int = 1
    #: A CPU worker group beside the main one (compute.cpu_workers; a managed eval's workers).
    cpu_workers: int = 0
    mig_profile: str | None = None
    pip: tuple[str, ...] = ()
    #: run.working_dir: the zipped project and the entrypoint's module inside it.
    project_zip: bytes | None = None
    project_module: str | None = None


class PodResources(NamedTuple):
    """Resources of the Job main container / every Ray pod, then of the Ray head and workers."""

    main: Resources = Resources()
    head: Resources = Resources()
    worker: Resources = Resources()
    #: The CPU worker group's pods (RayShape.cpu_workers).
    cpu_worker: Resources = Resources()


class Environment(NamedTuple):
    """The env of the workload container: plain values, Secret references, launcher configs."""

    values: tuple[tuple[str, str], ...] = ()
    secrets: tuple[SecretRef, ...] = ()
    launcher_configs: tuple[tuple[str, object], ...] = ()


class Storage(NamedTuple):
    """Volumes, the result location, the checkpoint artifact, source and image assets."""

    data_pvc: str | None = None
    volumes: tuple[Volume, ...] = ()
    output: str | None = None
    result_pvc: str | None = None
    checkpoint_artifact: str | None = None
    source_image: str | None = None
    source_path: str | None = None
    source_entrypoint: str | None = None
    image_assets: tuple[ImageAsset, ...] = ()
    #: The run's folder name under checkpoints/finetunes/ ("": the run's name). A managed run
    #: uses its manifest's name, as the reference does, so a lineage path is predictable.
    finetune_run: str = ""


class Tune(NamedTuple):
    """Ray Tune's search settings."""

    metric: str | None = None
    mode: str | None = None
    num_samples: int | None = None
    max_concurrent: int | None = None


class Profiler(NamedTuple):
    """The Nsight profiler: unset mode means no profiling."""

    mode: str | None = None
    rank: str = "0"
    warmup: str | None = None
    duration: str | None = None


class Capture(NamedTuple):
    """What the run records about itself: workspace, experiment fields, retry attempt env."""

    workspace: str | None = None
    experiment: tuple[tuple[str, str], ...] = ()
    retry_env: tuple[tuple[str, str], ...] = ()


class MetricsOffload(NamedTuple):
    """The metrics-offload sidecar of a single-pod Job or a RayJob head (metrics.offload.enabled).

    Everything the platform decides (image, store, credentials Secret) is resolved here, or a
    `<unresolved-...>` placeholder on a client dry-run; render only lays it out.
    """

    image: str
    #: The experiment store (TAU_EXP_STORE): a folder path or a team store URL, no secret in it.
    store: str
    #: The platform's Secret whose keys become the collector's env; None: the store needs none.
    credentials_secret: str | None
    #: tau.azure.com/metrics-session-id: one submission's id (lowercase, digits, '-').
    session_id: str
    project: str
    experiment: str
    group: str
    #: metrics.history resolved to absolute paths (globs kept).
    history: tuple[str, ...]
    #: The collector's spool and checkpoint on the data claim (survives restarts).
    out: str
    #: The delivery interval, Go-style (10s).
    interval: str
    artifact_uri: str | None = None
    checkpoint_uri: str | None = None
    #: TAU_RETRY_ATTEMPT of a retried or resumed attempt; None for the first.
    attempt: str | None = None


class Files(NamedTuple):
    """What ships beside the entrypoint through the payload transport (init containers).

    A run with any of these lands its entrypoint in /script too (no TAU_SCRIPT_B64), so the
    entrypoint can import the extra scripts next to it.
    """

    #: Extra scripts: (file name in /script, bytes), sorted by name.
    extra: tuple[tuple[str, bytes], ...] = ()
    #: Files for /manifest (a managed workflow's redacted manifest copy).
    manifest: tuple[tuple[str, bytes], ...] = ()
    #: Arguments after the entrypoint (`--manifest /manifest/x.yaml --smoke-pairs 0`).
    args: tuple[str, ...] = ()

    @property
    def shipped(self) -> bool:
        return bool(self.extra or self.manifest)


class SecretData(NamedTuple):
    """A Secret the run creates before its workload (a managed workflow's secret payload)."""

    name: str
    string_data: tuple[tuple[str, str], ...]


class KeyVault(NamedTuple):
    """Azure Key Vault secrets synced into a Secret by the Secrets Store CSI driver."""

    vault: str
    tenant_id: str
    client_id: str
    #: (env var, secret object name in the vault), sorted by env var.
    objects: tuple[tuple[str, str], ...]
    #: The SecretProviderClass and the Secret it syncs.
    provider_class: str
    synced_secret: str


class Plan(NamedTuple):
    """A resolved run, ready to render into a Job (+ Service) or a RayJob."""

    name: str
    engine: str
    namespace: str
    image: str
    placement: Placement
    launcher: str
    script: Script | None
    config_hash: str
    #: serviceAccountName of every pod; None leaves the namespace's default.
    service_account: str | None = None
    security_restricted: bool = False
    job: JobShape = JobShape()
    ray: RayShape = RayShape()
    resources: PodResources = PodResources()
    env: Environment = Environment()
    storage: Storage = Storage()
    tune: Tune = Tune()
    profiler: Profiler = Profiler()
    capture: Capture = Capture()
    #: The workload-kind label: job, rayjob or rayjob-eval ("" means the engine).
    kind: str = ""
    files: Files = Files()
    secret: SecretData | None = None
    key_vault: KeyVault | None = None
    #: GPUs come from DRA ResourceClaims (the platform's claim templates), not nvidia.com/gpu.
    dra: bool = False
    #: metrics.history, each entry absolute (relative ones under storage.output); a glob stays
    #: a glob (tau.plan.metrics_history).
    metrics_history: tuple[str, ...] = ()
    #: The metrics-offload sidecar (metrics.offload.enabled), or None.
    metrics_offload: MetricsOffload | None = None

    @property
    def kind_label(self) -> str:
        return self.kind or self.engine
