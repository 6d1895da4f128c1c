"""Command lines of the Job's main container: python, shebang script, torchrun.

Pure. The entrypoint travels in the TAU_SCRIPT_B64 env var and is decoded at start, so the
manifest is the whole run: no ConfigMap to create first, nothing to drift.
"""

from __future__ import annotations

import shlex

from tau.intent.duration import parse_duration
from tau.k8s import paths
from tau.plan import metrics_history
from tau.plan.model import Plan
from tau.render import artifact_index, metrics_offload

MASTER_PORT = 29500
PY_TARGET = "/tmp/tau-entrypoint.py"
SH_TARGET = "/tmp/run.sh"

# Checks that /mnt (node-local scratch) is writable, has room and is fast; otherwise the hot
# paths fall back to /data so a slow or full disk degrades speed instead of failing the run.
STORAGE_PREFLIGHT = """\
tau_hot_fallback() {
  export TAU_STORAGE_HOT_STATUS=fallback TAU_STORAGE_HOT_REASON="$1"
  export TAU_DATASETS_DIR=/data/datasets TAU_CHECKPOINTS_DIR=/data/checkpoints
  echo "tau: /mnt unusable ($1); hot datasets and checkpoints use /data" >&2
}
if ! mkdir -p /mnt/datasets /mnt/checkpoints 2>/dev/null \\
    || ! touch /mnt/.tau-probe 2>/dev/null; then
  tau_hot_fallback not-writable
elif [ "$(df -Pk /mnt | awk 'NR==2 {print $4}')" -lt 1048576 ]; then
  tau_hot_fallback low-space
else
  start=$(date +%s%N)
  dd if=/dev/zero of=/mnt/.tau-probe bs=1M count=64 conv=fsync status=none
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  mbps=$(( 64000 / (elapsed > 0 ? elapsed : 1) ))
  export TAU_STORAGE_HOT_WRITE_MBPS=$mbps
  if [ "$mbps" -lt 50 ]; then tau_hot_fallback slow-write; else export TAU_STORAGE_HOT_STATUS=ok; fi
fi
rm -f /mnt/.tau-probe
exec "$@\""""


def _flags(plan: Plan) -> str:
    parts = []
    for key, value in plan.env.launcher_configs:
        text = "true" if value is True else "false" if value is False else str(value)
        parts.append(f" --{key}" if text == "" else f" --{key}={shlex.quote(text)}")
    return "".join(parts)


def headless_host(plan: Plan) -> str:
    return f"{plan.name}-0.{plan.name}-headless"


def torchrun_args(plan: Plan) -> str:
    if plan.job.multi_node:
        return (
            f"--nnodes={plan.job.nodes} --node_rank=$JOB_COMPLETION_INDEX --rdzv-backend=c10d "
            f"--rdzv-endpoint={headless_host(plan)}:{MASTER_PORT} --rdzv-id={plan.name} "
            f"--nproc_per_node={plan.job.processes_per_node}"
        )
    return f"--standalone --nproc_per_node={plan.job.processes_per_node}"


# A missing Nsight binary would otherwise end the pod with a bare "nsys: not found".
PROFILER_GUARD = (
    'command -v "$TAU_PROFILE_TOOL" >/dev/null 2>&1 || { echo "tau: profiler.mode '
    "$TAU_PROFILE_MODE needs $TAU_PROFILE_TOOL on PATH, and the image has none; use an image "
    'with Nsight installed or remove profiler" >&2; exit 127; }'
)


def _exec(plan: Plan, argv: str) -> str:
    """`exec argv`, under Nsight on the profiled pod when profiler.mode is set.

    profiler.rank picks the pod by its rank (JOB_COMPLETION_INDEX; 0 for one pod), or `all`.
    The profile is written to TAU_PROFILE_OUT, or per rank after TAU_PROFILE_OUT_PATTERN.
    """
    if not plan.profiler.mode:
        return f"exec {argv}"
    if plan.profiler.rank == "all":
        out = '"$TAU_PROFILE_OUT_DIR/rank-${JOB_COMPLETION_INDEX:-0}.$TAU_PROFILE_EXT"'
    else:
        out = '"$TAU_PROFILE_OUT"'
    if plan.profiler.mode == "nsys":
        tool = f"nsys profile --force-overwrite=true -o {out}"
        if plan.profiler.warmup:
            tool += f" --delay={int(parse_duration(plan.profiler.warmup))}"
        if plan.profiler.duration:
            tool += f" --duration={int(parse_duration(plan.profiler.duration))}"
    else:
        tool = f"ncu --target-processes all --force-overwrite -o {out}"
    profiled = f'{PROFILER_GUARD} && mkdir -p "$TAU_PROFILE_OUT_DIR" && exec {tool} {argv}'
    if plan.profiler.rank == "all":
        return f"{{ {profiled}; }}"
    # Braced so a failed decode before `&&` skips the whole group, as with a plain exec.
    return (
        f'{{ if [ "${{JOB_COMPLETION_INDEX:-0}}" = "{plan.profiler.rank}" ]; then '
        f"{profiled}; fi; exec {argv}; }}"
    )


def pip_install(packages: tuple[str, ...]) -> str:
    """Install `packages`; an image whose site-packages is read-only falls back to --user."""
    pkgs = " ".join(shlex.quote(p) for p in packages)
    return (
        f"python3 -m pip install --quiet --no-cache-dir {pkgs} || "
        f"python3 -m pip install --quiet --no-cache-dir --user {pkgs}"
    )


USER_BIN_PATH = 'export PATH="$(python3 -m site --user-base)/bin:$PATH"'


def script_args(plan: Plan) -> str:
    """The entrypoint's own arguments (a managed workflow's --manifest and --smoke-pairs)."""
    return "".join(f" {shlex.quote(a)}" for a in plan.files.args)


def _shipped_line(plan: Plan, flags: str) -> str:
    """The command of a Job whose entrypoint the payload init container wrote into /script."""
    assert plan.script is not None
    path = shlex.quote(f"{paths.SCRIPT_ROOT}/{plan.script.filename}")
    args = script_args(plan)
    if plan.launcher == "torchrun":
        argv = f"python3 -m torch.distributed.run {torchrun_args(plan)}{flags} {path}{args}"
    else:
        argv = f"python3 {path}{flags}{args}"
    # The shipped `tau.log` (metrics.history) importable by every process the entrypoint starts.
    env = f"{metrics_history.PYTHONPATH_EXPORT} && " if metrics_history.ships_logger(plan) else ""
    if not plan.job.pip:
        return env + _exec(plan, argv)
    return f"{env}{{ {pip_install(plan.job.pip)}; }} && {USER_BIN_PATH} && " + _exec(plan, argv)


def main_command(plan: Plan) -> list[str] | None:
    """Argv of the main container, or None to run the image's own ENTRYPOINT."""
    flags = _flags(plan)
    if plan.storage.source_image:
        path = shlex.quote(f"/tau/source/{plan.storage.source_entrypoint}")
        if plan.launcher == "torchrun":
            argv = f"python3 -m torch.distributed.run {torchrun_args(plan)}{flags} {path}"
        elif (plan.storage.source_entrypoint or "").endswith(".py"):
            argv = f"python3 {path}{flags}"
        else:
            argv = f"{path}{flags}"
        return _wrap(plan, _exec(plan, argv))
    if plan.script is None:
        return None
    if plan.files.shipped:
        return _wrap(plan, _shipped_line(plan, flags))
    decode = 'printf %s "$TAU_SCRIPT_B64" | base64 -d > '
    if plan.launcher == "torchrun":
        line = f"{decode}{PY_TARGET} && " + _exec(
            plan, f"python3 -m torch.distributed.run {torchrun_args(plan)}{flags} {PY_TARGET}"
        )
    elif not plan.job.shebang_script:
        line = f"{decode}{PY_TARGET} && " + _exec(plan, f"python3 {PY_TARGET}{flags}")
    else:
        line = f"{decode}{SH_TARGET} && chmod +x {SH_TARGET} && " + _exec(
            plan, f"{SH_TARGET}{flags}"
        )
    return _wrap(plan, line)


def _wrap(plan: Plan, line: str) -> list[str]:
    if any(v.path == paths.DATA_ROOT for v in plan.storage.volumes):
        argv = ["bash", "-lc", STORAGE_PREFLIGHT, "tau-entrypoint", "bash", "-c", line]
    else:
        argv = ["bash", "-c", line]
    # The artifact index nests outside the preflight, metrics offload outside both (the
    # contract's wrapper order), so the sentinel records the index step's failure too.
    return metrics_offload.wrap_command(plan, artifact_index.wrap_command(plan, argv))
