"""`metrics.history` in the Plan: the history paths resolved, and `tau.log` shipped with the run.

Pure. Whenever a run sets `metrics.history` (offload or not):
- its entries resolve to absolute paths (relative ones under `storage.output`, as the
  run-config contract says), kept as `Plan.metrics_history`;
- the workload's env gets TAU_METRICS_HISTORY = the first entry (a path or a glob), where
  training code's `tau.log(...)` writes (tau.metric_log);
- `tau.log` ships with the payload, so `import tau; tau.log(...)` works in an image without
  tau: /script/tau.py (a shim that defers to an installed tau: tau/_pod_tau.py) and
  /script/_tau_metric_log.py (tau/metric_log.py, verbatim). /script is first on the
  entrypoint's sys.path; the command also puts it on PYTHONPATH for the processes it starts.

Both files travel as extra payload files, so a Job that sets `metrics.history` carries its
entrypoint in /script too. Not shipped where no Python entrypoint of tau's runs: a shebang
script, a source image's entrypoint or the image's own command (those need tau in the image),
nor to a managed workflow, whose wrapper installs its own stand-in `tau`.
"""

from __future__ import annotations

import os
import posixpath

from tau.plan.model import Plan

ENV = "TAU_METRICS_HISTORY"
#: The shipped names in /script: the shim `import tau` finds, and the logger it loads.
SHIM = "tau.py"
LOGGER = "_tau_metric_log.py"
#: Prepends /script and keeps the image's own PYTHONPATH (a container env value would replace it).
PYTHONPATH_EXPORT = 'export PYTHONPATH="/script${PYTHONPATH:+:$PYTHONPATH}"'


def resolve(history: tuple[str, ...], output: str | None) -> tuple[str, ...]:
    """Each entry as an absolute path; a relative one under `output` (kept relative without)."""
    out = []
    for entry in history:
        entry = entry.strip()
        if not entry.startswith("/") and output:
            entry = posixpath.join(output, entry)
        out.append(posixpath.normpath(entry) if entry.startswith("/") else entry)
    return tuple(out)


def shipped_files() -> tuple[tuple[str, bytes], ...]:
    """(name in /script, bytes) of the shim and the logger, as packaged with this tau."""
    # By path, not importlib.resources (pathlib and more on the render's hot path).
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = []
    for name, source in ((LOGGER, "metric_log.py"), (SHIM, "_pod_tau.py")):
        with open(os.path.join(package, source), "rb") as handle:
            out.append((name, handle.read()))
    return tuple(out)


def _runs_python_entrypoint(plan: Plan) -> bool:
    if plan.files.manifest:
        # A managed workflow's wrapper puts its own stand-in `tau` in sys.modules (and refuses
        # a staged tau.py); it does not offer tau.log yet.
        return False
    if plan.engine == "rayjob":
        return True
    return plan.script is not None and not plan.job.shebang_script and not plan.storage.source_image


def apply(plan: Plan, history: tuple[str, ...]) -> Plan:
    """`plan` with its resolved history, TAU_METRICS_HISTORY and the shipped `tau.log`."""
    if not history:
        return plan
    resolved = resolve(history, plan.storage.output)
    values = dict(plan.env.values)
    values[ENV] = resolved[0]  # runtime.env cannot set TAU_ keys (validate refuses them)
    plan = plan._replace(
        metrics_history=resolved,
        env=plan.env._replace(values=tuple(sorted(values.items()))),
    )
    if not _runs_python_entrypoint(plan):
        return plan
    # The run's own files keep their names: a user's tau.py is the tau it asked for.
    taken = {name for name, _ in plan.files.extra}
    if plan.script is not None:
        taken.add(plan.script.filename)
    ship = [(name, data) for name, data in shipped_files() if name not in taken]
    if not ship or SHIM in taken:
        return plan
    extra = tuple(sorted((*plan.files.extra, *ship)))
    return plan._replace(files=plan.files._replace(extra=extra))


def ships_logger(plan: Plan) -> bool:
    """True when the payload carries the `tau.py` shim (the command then exports PYTHONPATH)."""
    return any(name == SHIM for name, _ in plan.files.extra)


def user_files(plan: Plan) -> list[str]:
    """The names of the run's own extra scripts: its files.extra less the shipped `tau.log`."""
    ours = set(shipped_files()) if ships_logger(plan) else set()
    return [name for name, data in plan.files.extra if (name, data) not in ours]
