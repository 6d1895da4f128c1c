"""The typed `schema_version: 1` managed-workflow manifest, as validation returns it.

Pure. These types are what the manifest parser (`tau.intent.workflow.manifest`) produces and
what the translation (`tau.intent.workflow.translate`) reads: the translation maps them onto
the one typed run config, so nothing below the config layer ever sees a manifest.

Typed NamedTuples for the reason `tau.intent.runconfig` gives (immutable, cheap at import).
"""

# No `from __future__ import annotations`: see tau.intent.runconfig.
from typing import NamedTuple

from tau.intent.load import SourceMap
from tau.intent.runconfig import Resources

SCHEMA_VERSION = 1
DEFAULT_PREFIX = "tau"
#: KubeRay derives Service names from a RayJob's name; longer names break them.
RAYJOB_NAME_LIMIT = 47
KINDS = ("job", "rayjob", "rayjob-eval")


class EnvVar(NamedTuple):
    """One runtime.env entry of a manifest: a literal value or a Secret key reference."""

    name: str
    value: str | None = None
    #: valueFrom.secretKeyRef: (secret name, key), or None for a literal.
    secret: tuple[str, str] | None = None
    optional: bool = False


class Mount(NamedTuple):
    """storage.mounts[i]: an extra PVC mounted into every pod."""

    name: str
    mount_path: str
    pvc: str
    read_only: bool = False


class ManifestCompute(NamedTuple):
    """compute.* after defaults: GPUs per worker (0 = CPU-only), workers, CPU and memory.

    The CPU and memory values are Kubernetes quantities as strings ("4", "32Gi"), None when the
    manifest left them to the renderer's defaults (only possible with gpus > 0: a CPU-only
    manifest gets the contract's CPU-only defaults filled in).
    """

    gpus: int = 1
    workers: int = 1
    cpus: str | None = None
    cpu_limit: str | None = None
    worker_cpus: str | None = None
    worker_cpu_limit: str | None = None
    memory: str | None = None
    memory_limit: str | None = None
    worker_memory: str | None = None
    worker_memory_limit: str | None = None


class Eval(NamedTuple):
    cpu_workers: int = 0
    upstream: str | None = None

    @property
    def is_eval(self) -> bool:
        """An eval manifest: CPU eval workers or an upstream run to evaluate."""
        return self.cpu_workers > 0 or bool(self.upstream)


class ManifestRuntime(NamedTuple):
    pip: tuple[str, ...] = ()
    image: str | None = None
    env: tuple[EnvVar, ...] = ()
    #: runtime.env_kv as written: ENV_NAME → "vault/secret" or "secret", in written order.
    env_kv: tuple[tuple[str, str], ...] = ()


class ManifestStorage(NamedTuple):
    data_pvc: str | None = None
    mounts: tuple[Mount, ...] = ()


class Model(NamedTuple):
    """model.*: how the registry names what this run trains (metadata only)."""

    name: str | None = None
    base: str | None = None
    task: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    primary_metric: str | None = None
    metric_direction: str | None = None


class Manifest(NamedTuple):
    """A validated manifest with every default applied."""

    name: str
    prefix: str = DEFAULT_PREFIX
    schema_version: int = SCHEMA_VERSION
    compute: ManifestCompute = ManifestCompute()
    eval: Eval = Eval()
    runtime: ManifestRuntime = ManifestRuntime()
    storage: ManifestStorage = ManifestStorage()
    #: artifacts.checkpoint: a relative pod path of the checkpoint the run produces.
    checkpoint: str | None = None
    #: research.experiment: the experiment the run belongs to.
    experiment: str | None = None
    model: Model = Model()

    @property
    def resource_name(self) -> str:
        """The workload's name: `<prefix>-<name>`."""
        return f"{self.prefix}-{self.name}"


class ParsedManifest(NamedTuple):
    """A manifest file after validation: the manifest, its text and where its values sit."""

    manifest: Manifest
    #: The file's bytes as read (a redacted copy ships to /manifest; the config hash covers it).
    text: bytes
    source: SourceMap


class KeyVaultRef(NamedTuple):
    """The Key Vault a managed run reads its runtime.env_kv from, resolved from the flags."""

    vault: str
    tenant_id: str
    client_id: str
    #: (env var, secret object name), sorted by env var.
    objects: tuple[tuple[str, str], ...]
    provider_class: str
    synced_secret: str


class Managed(NamedTuple):
    """What a managed run carries beyond the typed run config: resolve turns it into Plan parts.

    The run config (`ValidConfig.config`) holds everything the direct renderer already knows
    (name, engine, image, GPUs, workers, resources, env, storage, policy); this holds the rest.
    """

    #: job, rayjob or rayjob-eval.
    kind: str
    #: The manifest's file name under /manifest and its secret-redacted copy.
    manifest_file: str
    manifest_copy: bytes
    #: (file name in /script, bytes) of workflow.extra_scripts.
    extra_scripts: tuple[tuple[str, bytes], ...] = ()
    #: Arguments of /script/train.py.
    script_args: tuple[str, ...] = ()
    #: The workflow.secret_payload Secret: (name, sorted (key, value) pairs).
    secret: tuple[str, tuple[tuple[str, str], ...]] | None = None
    key_vault: KeyVaultRef | None = None
    #: CPU and memory of the CPU worker group.
    cpu_worker: Resources = Resources()
    #: TAU_UPSTREAM_CHECKPOINT of a rayjob-eval ("" renders the variable empty).
    upstream_checkpoint: str | None = None
    #: Lines for stderr (`tau: inferred workload_kind=rayjob (...)`).
    notes: tuple[str, ...] = ()
    #: The manifest's own name: it names the run's folder under /data/checkpoints/finetunes/,
    #: where the SDK's eval finds the train's checkpoint (the RayJob itself is tau-<name>).
    finetune_run: str = ""
