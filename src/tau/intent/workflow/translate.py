"""Translate a managed manifest and its wrapper config into the one typed run config.

Pure. This is the whole difference between a managed workflow and a direct run: after it, the
run config goes through the same resolve and the same Job/RayJob renderer as any other, and
`Managed` carries only what a direct config cannot say (the files that ship beside the
entrypoint, the Secret, Key Vault, the CPU worker group, the kind label).
"""

from __future__ import annotations

from typing import NamedTuple

from tau.intent import runconfig
from tau.intent.runconfig import JOB, RAYJOB, RunConfig
from tau.intent.workflow.model import KeyVaultRef, Managed, Manifest

#: The trainer's sizing when a GPU manifest leaves CPU and memory unset (the reference's).
GPU_TRAINER_DEFAULTS = ("8", "64Gi", "16", "128Gi")
#: Job TTL of a managed run: a day to read its logs and results (the reference's default).
MANAGED_TTL_SECONDS = 86400


class KindChoice(NamedTuple):
    """The workload kind a manifest runs as, or why it cannot run as the requested one."""

    kind: str
    #: Set when the kind was inferred: the note the CLI prints on stderr.
    note: str | None = None
    #: Set when the requested kind cannot host the manifest (the reference's message).
    problem: str | None = None
    #: Which value the problem is about: "kind" (the requested kind) or "manifest".
    subject: str = "kind"


def choose_kind(requested: str, manifest: Manifest) -> KindChoice:
    """The reference's kind inference and conflicts, in its order: CPU-only, multi-node, eval.

    `manifest` already carries the run config's overrides (workers, eval.cpu_workers).
    """
    compute, ev = manifest.compute, manifest.eval
    kind = requested
    note = None
    if compute.gpus == 0:
        if kind == JOB:
            return KindChoice(
                kind,
                problem="workload_kind=job cannot host a CPU-only manifest (compute.gpus=0); "
                "omit workload_kind or set workload_kind: rayjob",
            )
        if not kind:
            kind = RAYJOB
            note = (
                "tau: inferred workload_kind=rayjob (compute.gpus=0 requests the CPU RayJob path; "
                "set workload_kind to silence this)"
            )
    if compute.workers > 1:
        if kind == JOB:
            return KindChoice(
                kind,
                problem=f"workload_kind=job cannot be multi-node (compute.workers="
                f"{compute.workers}); omit workload_kind or set workload_kind: rayjob",
            )
        if not kind:
            kind = RAYJOB
            note = (
                f"tau: inferred workload_kind=rayjob (compute.workers={compute.workers} is "
                "multi-node; set workload_kind to silence this)"
            )
    if ev.is_eval:
        if kind in (JOB, RAYJOB):
            return KindChoice(
                kind,
                problem=f"workload_kind={kind} cannot host an eval manifest (eval.cpu_workers="
                f'{ev.cpu_workers}, eval.upstream="{ev.upstream or ""}"); omit workload_kind or '
                "set workload_kind: rayjob-eval",
            )
        if not kind:
            kind = "rayjob-eval"
            note = (
                f"tau: inferred workload_kind=rayjob-eval (eval.cpu_workers={ev.cpu_workers}"
                f"{', eval.upstream=' + ev.upstream if ev.upstream else ''}; set workload_kind to "
                "silence this)"
            )
    elif kind == "rayjob-eval":
        return KindChoice(
            kind,
            problem="workload_kind=rayjob-eval requires eval.cpu_workers > 0 (set it in the "
            "manifest or the run config)",
        )
    if kind == "rayjob-eval" and compute.workers != 1:
        return KindChoice(
            kind,
            problem=f"workload_kind=rayjob-eval runs one GPU worker (compute.workers="
            f"{compute.workers}); set compute.workers: 1 or use workload_kind: rayjob",
            subject="manifest",
        )
    if kind == RAYJOB and compute.gpus == 0 and not manifest.runtime.image:
        return KindChoice(
            kind,
            problem='workload kind "rayjob" with compute.gpus=0 requires runtime.image; CPU '
            "RayJobs do not have a stable default image",
            subject="manifest",
        )
    return KindChoice(kind or JOB, note)


class Inputs(NamedTuple):
    """What the dispatch read from disk and the command line, for the translation."""

    kind: str
    main_script: str
    manifest_file: str
    manifest_copy: bytes
    extra_scripts: tuple[tuple[str, bytes], ...] = ()
    secret: tuple[str, tuple[tuple[str, str], ...]] | None = None
    key_vault: KeyVaultRef | None = None
    smoke_pairs: int | None = None
    upstream_checkpoint: str | None = None
    notes: tuple[str, ...] = ()


def _cpu_workers(manifest: Manifest) -> runconfig.Resources:
    """Each CPU worker (a CPU RayJob's, an eval's): limits default to the requests."""
    c = manifest.compute
    return runconfig.Resources(
        c.worker_cpus,
        c.worker_memory,
        c.worker_cpu_limit or c.worker_cpus,
        c.worker_memory_limit or c.worker_memory,
    )


def _trainer(manifest: Manifest) -> runconfig.Resources:
    """The Job trainer (or each GPU worker): the manifest's sizing over the GPU defaults."""
    c = manifest.compute
    cpu, mem, cpu_lim, mem_lim = GPU_TRAINER_DEFAULTS
    return runconfig.Resources(
        c.cpus or cpu,
        c.memory or mem,
        c.cpu_limit or (c.cpus if c.cpus else cpu_lim),
        c.memory_limit or (c.memory if c.memory else mem_lim),
    )


def translate(manifest: Manifest, wrapper: RunConfig, inputs: Inputs) -> RunConfig:
    """The run config of a managed run: the manifest's shape under the wrapper's policy.

    Args:
        manifest: the validated manifest, with the run config's overrides already applied
            (storage.data_pvc, runtime.image, compute.workers, compute.cpu_workers).
        wrapper: the run config around it (the managed tau.yaml itself, or the direct config
            whose workflow.file names the manifest): policy, profiler, experiment, resilience.
        inputs: the kind and what was read from disk.
    """
    engine = JOB if inputs.kind == JOB else RAYJOB
    name = manifest.resource_name
    c = manifest.compute
    compute = runconfig.Compute(
        workers=1 if engine == JOB else c.workers,
        gpus=c.gpus if engine == JOB else None,
        gpus_per_worker=c.gpus,
        cpu_workers=manifest.eval.cpu_workers if inputs.kind == "rayjob-eval" else None,
        gpu_resource_mode=wrapper.compute.gpu_resource_mode,
        mig_profile=wrapper.compute.mig_profile,
    )
    if engine == JOB:
        compute = compute._replace(resources=_trainer(manifest))
    elif c.gpus > 0:
        compute = compute._replace(worker=_trainer(manifest))
    else:
        compute = compute._replace(worker=_cpu_workers(manifest))
    env = {v.name: v.value or "" for v in manifest.runtime.env if v.secret is None}
    secrets = {v.name: f"{v.secret[0]}:{v.secret[1]}" for v in manifest.runtime.env if v.secret}
    # The run config's env lands in the manifest's (the reference merges it in).
    for key, value in wrapper.runtime.env:
        secrets.pop(key, None)
        env[key] = value
    for key, ref in wrapper.runtime.env_secret:
        env.pop(key, None)
        secrets[key] = ref
    storage = manifest.storage
    volumes = tuple(f"{m.name}={m.pvc}" for m in storage.mounts)
    mounts = tuple(f"{m.name}:{m.mount_path}{':ro' if m.read_only else ''}" for m in storage.mounts)
    data_pvc = storage.data_pvc
    experiment = wrapper.experiment
    if manifest.experiment and not experiment.name:
        experiment = experiment._replace(name=manifest.experiment)
    gpus = c.gpus
    torchrun = engine == JOB and gpus > 1
    return RunConfig(
        name=name,
        engine=engine,
        entrypoint=inputs.main_script,
        run=runconfig.Run(
            smoke_pairs=inputs.smoke_pairs,
            ttl_seconds_after_finished=MANAGED_TTL_SECONDS,
            execution_deadline_seconds=wrapper.run.execution_deadline_seconds,
        ),
        workflow=wrapper.workflow,
        runtime=runconfig.Runtime(
            image=manifest.runtime.image,
            pip=manifest.runtime.pip,
            env=tuple(sorted(env.items())),
            env_secret=tuple(sorted(secrets.items())),
            env_kv=manifest.runtime.env_kv,
            security=wrapper.runtime.security,
        ),
        compute=compute,
        policy=wrapper.policy,
        storage=runconfig.Storage(
            data_pvc=data_pvc,
            result_pvc=wrapper.storage.result_pvc,
            output=wrapper.storage.output,
            volumes=volumes,
            mounts=mounts,
            # Both are paths relative to the run's checkpoint folders (the artifact index's).
            # Without a PVC at /data nothing persists, so there is no index to write.
            checkpoint=manifest.checkpoint if data_pvc else None,
        ),
        profiler=wrapper.profiler,
        metrics=runconfig.Metrics(),
        experiment=experiment,
        execution=runconfig.Execution(
            launcher="torchrun" if torchrun else ("python" if engine == JOB else "ray-train"),
            processes_per_node=gpus if torchrun else 1,
        ),
        resilience=wrapper.resilience,
    )


def managed_parts(manifest: Manifest, inputs: Inputs) -> Managed:
    """The parts of the run the typed run config does not hold."""
    return Managed(
        kind=inputs.kind,
        manifest_file=inputs.manifest_file,
        manifest_copy=inputs.manifest_copy,
        extra_scripts=inputs.extra_scripts,
        script_args=(
            "--manifest",
            f"/manifest/{inputs.manifest_file}",
            "--smoke-pairs",
            str(inputs.smoke_pairs or 0),
        ),
        secret=inputs.secret,
        key_vault=inputs.key_vault,
        cpu_worker=_cpu_workers(manifest),
        upstream_checkpoint=inputs.upstream_checkpoint,
        finetune_run=manifest.name,
        notes=inputs.notes,
    )
