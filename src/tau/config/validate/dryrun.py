"""Dry-run-stage rules: those that need the resolved preset, the GPU count or the entrypoint.

Pure. `tau run validate` cannot apply them (it resolves no preset and reads no script);
`--dry-run=client` and submit do, through plan.resolve, which reports each Problem at its
config path. Offline rules live in the sibling modules and run at validate time.
"""

from __future__ import annotations

from typing import NamedTuple

#: The stage that runs these rules: `--dry-run=client` and submit, never `tau run validate`.
STAGE = "client"


class Problem(NamedTuple):
    """A rejected combination: the config path to point at, the message and the fix."""

    path: str
    message: str
    hint: str | None = None


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
                f'script "{entry}" starts with a bare "#!" that names no interpreter',
                "complete the shebang (e.g. #!/usr/bin/env python3) or remove the line",
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
                f'script "{entry}" has a non-Python shebang ({shebang}) but '
                "execution.launcher is python",
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
