"""Dry-run-stage rules: those that need the resolved preset, the GPU count or the entrypoint.

Pure. `tau run validate` cannot apply them (it resolves no preset and reads no script);
`--dry-run=client` and submit do, through plan.resolve, which reports each Problem at its
config path: preset resolution, GPU arithmetic, lane/placement policy, name lengths, the
entrypoint's interpreter, mounts and where output and checkpoints land. Offline rules live in
the sibling modules and run at validate time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from tau.intent.presets import Catalog, Preset, label_normal
from tau.k8s import paths

#: The stage that runs these rules: `--dry-run=client` and submit, never `tau run validate`.
STAGE = "client"


class Problem(NamedTuple):
    """A rejected combination (or, with `warning`, a questionable one): the config path to point
    at, the message and the fix.
    """

    path: str
    message: str
    hint: str | None = None
    warning: bool = False


#: KubeRay derives the RayCluster and its Services from the RayJob name.
RAYJOB_NAME_LIMIT = 47
#: A multi-node Job's headless Service `<name>-headless` must fit in 63 characters.
MULTI_NODE_NAME_LIMIT = 54


def profiler_engine(engine: str, profiler_mode: str | None) -> list[Problem]:
    """Tau profiles Job ranks (nsys/ncu wrappers); RayJobs are not profiled."""
    if engine != "rayjob" or not profiler_mode:
        return []
    return [
        Problem(
            "profiler.mode",
            "profiler.mode is for engine: job; RayJobs are not profiled by tau",
            "profile the Ray workers from the training code (e.g. torch.profiler)",
        )
    ]


def preset_usable(name: str, preset: Preset | None, catalog: Catalog) -> list[Problem]:
    """A named preset must exist in the catalog and not be disabled."""
    if not name:
        return []
    if preset is None:
        return [
            Problem(
                "policy.preset",
                f'topology preset "{name}" not found in {catalog.source} '
                f"(available: {', '.join(sorted(catalog.presets))})",
                "`tau run explain-config --presets` shows each preset's GPUs and queues",
            )
        ]
    if preset.disabled:
        return [
            Problem(
                "policy.preset", f'topology preset "{name}" is disabled: {preset.disabled_reason}'
            )
        ]
    return []


def preset_override(key: str, explicit: str, preset: Preset, inherited: str) -> list[Problem]:
    """An explicit policy field that differs from the preset's value wins, with a warning."""
    if not (explicit and inherited) or label_normal(explicit) == label_normal(inherited):
        return []
    return [
        Problem(
            f"policy.{key}",
            f'policy.{key}="{explicit}" overrides preset {preset.name} value "{inherited}"',
            warning=True,
        )
    ]


def topology(lane: str, mode: str, gpu_class: str, placement: str, tier: str) -> list[Problem]:
    """Lane, mode, GPU class, placement and tier combinations the cluster policy refuses.

    Worded as the reference's topology contract words them (`mode=elastic ...`).
    """
    out = []
    scarce = gpu_class.startswith("h200")
    if mode == "elastic":
        if lane != "elastic":
            out.append(
                Problem(
                    "policy.mode",
                    f'mode=elastic must route through lane=elastic, got lane="{lane}"',
                )
            )
        if scarce:
            out.append(
                Problem("policy.gpu_class", f"elastic jobs cannot request scarce {gpu_class}")
            )
        if placement and label_normal(placement) not in ("independent", "elastic-workers"):
            out.append(
                Problem(
                    "policy.topology",
                    "mode=elastic must use independent or elastic-workers placement, "
                    f'got "{placement}"',
                )
            )
        if tier == "priority":
            out.append(
                Problem(
                    "policy.priority_tier",
                    "priority=priority is not supported for lane=elastic; use explicit priority "
                    "class names if needed",
                )
            )
    elif scarce and lane and lane != "large-memory":
        out.append(
            Problem(
                "policy.gpu_class",
                f'{gpu_class} is reserved for lane=large-memory, got lane="{lane}"',
                "use a large-memory preset, e.g. azure.research.large-memory.xl",
            )
        )
    return out


def node_selector_class(key: str, value: str, gpu_class: str) -> list[Problem]:
    """A node selector on the GPU-class label must agree with the resolved GPU class."""
    from tau.k8s import meta

    if key == meta.NODE_GPU_CLASS and gpu_class and value != gpu_class:
        return [
            Problem(
                "policy.node_selector",
                f'gpu_class "{gpu_class}" requires {key}="{gpu_class}", but the workload node '
                f'selector uses "{value}"',
            )
        ]
    return []


def shape_gpus(shape: str) -> int | None:
    """GPU count of a shape `Nx...`; None when there is no `x`. Raises ValueError on a bad N."""
    head, sep, _ = shape.partition("x")
    if not sep:
        return None
    count = int(head)
    if count <= 0:
        raise ValueError(shape)
    return count


class JobGpus(NamedTuple):
    """The GPU count per node of a direct Job, and why it could not be decided."""

    gpus: int
    problems: list[Problem]


def job_gpus(
    gpus: int | None,
    *,
    shape: str,
    shape_path: str,
    preset_named: str,
    preset: str,
    profile: str,
    intent: str,
) -> JobGpus:
    """The reference's resolveDirectJobGPUCount: compute.gpus, else the shape `Nx...`.

    Args:
        gpus: compute.gpus as written (None: unset).
        shape: policy.shape, else the preset's shape.
        shape_path: the config path the shape came from.
        preset_named: policy.preset as written; preset: the preset that resolved ("" if none).
        profile: the resolved policy.profile.
        intent: how the engine was chosen, as the messages quote it.
    """
    count: int | None = None
    if shape:
        try:
            count = shape_gpus(shape)
        except ValueError:
            return JobGpus(
                gpus or 0,
                [
                    Problem(
                        shape_path,
                        f'policy.shape "{shape}" does not prove a direct Job GPU count; '
                        "set compute.gpus explicitly",
                    )
                ],
            )
    if count is not None:
        if gpus is not None and gpus != count:
            conflict = Problem(
                "compute.gpus",
                f'compute.gpus={gpus} conflicts with policy shape "{shape}" ({count} GPUs)',
            )
            return JobGpus(gpus, [conflict])
        return JobGpus(count if gpus is None else gpus, [])
    if gpus is not None:
        return JobGpus(gpus, [])
    if preset_named and not preset:
        return JobGpus(0, [])  # the preset itself was reported: unknown or disabled
    if preset:
        problem = Problem(
            "policy.preset",
            f'preset "{preset}" does not define a direct Job GPU '
            "count; set compute.gpus explicitly (0 for CPU, positive for GPU)",
        )
    elif profile:
        problem = Problem(
            "policy.profile",
            f"{intent} has ambiguous resources: set compute.gpus "
            "explicitly (0 for CPU, positive for GPU) or use a preset with a GPU shape; "
            "policy.profile does not define Job resources",
        )
    else:
        problem = Problem(
            "policy",
            "policy.profile or policy.preset is required",
            "set policy.preset to a catalog preset (e.g. azure.research.training.l), or "
            "compute.gpus (0 for CPU)",
        )
    return JobGpus(0, [problem])


def name_length(engine: str, name: str, nodes: int) -> list[Problem]:
    """Names the run's objects derive from must fit the Kubernetes limits of those objects."""
    if engine == "job":
        if nodes > 1 and len(name) > MULTI_NODE_NAME_LIMIT:
            return [
                Problem(
                    "name",
                    f'job name "{name}" is too long for multi-node: "{name}-headless" must fit '
                    f"DNS label limit (63 chars); max name length is {MULTI_NODE_NAME_LIMIT}",
                    "the headless Service <name>-headless must fit in 63 characters",
                )
            ]
        return []
    if len(name) > RAYJOB_NAME_LIMIT:
        return [
            Problem(
                "name",
                f'RayJob name "{name}" is too long ({len(name)} chars; KubeRay limit is '
                f"{RAYJOB_NAME_LIMIT})",
            )
        ]
    return []


def mounts(declared: Mapping[str, str], specs: tuple[str, ...]) -> list[Problem]:
    """Each storage.mounts entry `volume:path[:ro]` names a declared volume and a new path."""
    out, seen = [], set()
    for i, spec in enumerate(specs):
        vol, _, rest = spec.partition(":")
        path = rest.partition(":")[0]
        if vol not in declared:
            out.append(
                Problem(
                    f"storage.mounts[{i}]",
                    f'mount "{vol}" references unknown volume "{vol}"',
                    f'declare it in storage.volumes (storage.mounts[{i}] is "{spec}")',
                )
            )
        elif path in seen:
            out.append(
                Problem(f"storage.mounts[{i}]", f'mountPath "{path}" declared more than once')
            )
        else:
            seen.add(path)
    return out


def output_on_pvc(output: str, pvc_paths: list[str]) -> list[Problem]:
    """storage.output must lie on a mounted PVC, or `tau run get` cannot retrieve it."""
    if not output:
        return []
    if not pvc_paths:
        return [
            Problem(
                "storage.output",
                f'storage.output "{output}": no PVC supplied by '
                "storage.data_pvc or storage.volumes/mounts; output "
                "cannot be retrieved by `tau run get`",
            )
        ]
    if not any(output == p or output.startswith(p + "/") for p in pvc_paths):
        return [
            Problem(
                "storage.output",
                # Go's %v of a list: brackets, space-separated.
                f'storage.output "{output}": not under any mounted '
                f"PVC path [{' '.join(pvc_paths)}]",
            )
        ]
    return []


def checkpoint_on_data(checkpoint: str | None, pvc_paths: list[str], name: str) -> list[Problem]:
    """The artifact index of storage.checkpoint is written under /data: a PVC must be there."""
    if not checkpoint or paths.DATA_ROOT in pvc_paths:
        return []
    return [
        Problem(
            "storage.checkpoint",
            "storage.checkpoint requires writable durable PVC storage to write the artifact "
            f'index ("{checkpoint}": no PVC is mounted at /data, where '
            f"checkpoints/finetunes/{name}/artifacts.json is written)",
            "set storage.data_pvc, or drop storage.checkpoint and serve with --checkpoint PATH",
        )
    ]


def elastic(
    mode: str, *, preemptable: bool, checkpoint: bool, mode_path: str = "policy.mode"
) -> list[Problem]:
    """Elastic capacity is reclaimed: the run must accept preemption and resume from a checkpoint.

    Args:
        mode: the resolved placement mode (explicit, the preset's, or implied by the lane).
        preemptable: policy.preemptable, or a reclaimable preset.
        checkpoint: resilience.checkpoint_path, or a preset with checkpointEvery.
    """
    if mode != "elastic":
        return []
    out = []
    if not preemptable:
        out.append(
            Problem(
                mode_path,
                "mode=elastic requires policy.preemptable=true: elastic capacity is "
                "reclaimed, so the run must tolerate preemption",
                "set policy.preemptable: true, or use an elastic preset "
                "(e.g. azure.research.elastic.gpu)",
            )
        )
    if not checkpoint:
        out.append(
            Problem(
                mode_path,
                "mode=elastic requires checkpoint/restart semantics: a preempted run must "
                "resume from a checkpoint",
                "set resilience.checkpoint_path (read back as TAU_RESUME_FROM), or use a "
                "preset with checkpointEvery",
            )
        )
    return out


def torchrun_gpu_count(launcher: str, processes_per_node: int, gpus: int) -> list[Problem]:
    """Torchrun starts one process per GPU: several processes need a GPU count to split."""
    if launcher != "torchrun" or processes_per_node <= 1:
        return []
    if gpus == 0:
        return [
            Problem(
                "execution.processes_per_node",
                f"processes_per_node ({processes_per_node}) with torchrun requires a known "
                "GPU count, but the profile does not declare one",
                "set compute.gpus, or use a preset or policy.shape with a GPU count (Nx...)",
            )
        ]
    if processes_per_node > gpus:
        return [
            Problem(
                "execution.processes_per_node",
                f"processes_per_node ({processes_per_node}) exceeds profile GPU count ({gpus})",
                "lower execution.processes_per_node or pick a preset with more GPUs per node",
            )
        ]
    return []


def script_interpreter(
    launcher: str | None, filename: str, shebang: str | None, entry: str
) -> list[Problem]:
    """How a Job runs its entrypoint file, and the combinations that cannot run.

    With no launcher a shebang wins over the `.py` suffix; a bare `#!` names no interpreter.
    An explicit `launcher: python` runs python3, so a non-Python shebang contradicts it.
    """
    if launcher not in (None, "python"):
        return []
    if shebang is not None and not shebang.strip():
        return [
            Problem(
                "entrypoint",
                f'script "{entry}" has an empty shebang; add an interpreter after #!',
                "e.g. #!/usr/bin/env python3, or remove the line",
            )
        ]
    if launcher is None and shebang is None and not filename.endswith(".py"):
        return [
            Problem(
                "entrypoint",
                f'script "{entry}" has no shebang and is not a .py file; add a '
                "shebang or set execution.launcher: python",
            )
        ]
    if launcher == "python" and shebang and "python" not in shebang:
        return [
            Problem(
                "entrypoint",
                f'script "{entry}" has a non-Python shebang but execution.launcher is python '
                f"(#!{shebang})",
                "remove execution.launcher to run it as a script",
            )
        ]
    return []


def interpreter(launcher: str | None, filename: str, shebang: str | None) -> str:
    """`python` (exec python3 FILE) or `shebang` (exec the file itself) for a Job script."""
    if launcher == "python":
        return "python"
    if shebang:
        return "shebang"
    return "python" if filename.endswith(".py") else "shebang"
