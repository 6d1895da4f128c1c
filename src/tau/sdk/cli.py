"""`tau python`: author train/eval workflows as decorated Python functions, natively.

Performs I/O (the terminal, the user's module, the build folder, the cluster through the
`tau run` path). The reference ran a separate SDK package through `python3 -m tau.cli`; this
package is itself `tau`, so the SDK runs in-process: no subprocess, no kubectl. Exit codes follow
tau's table (1 invalid input, 3 cluster), where the reference's argparse used 2; the messages
keep the reference's words.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from cyclopts import App, Parameter

from tau.cli._common import ContextFlag
from tau.errors import NotImplementedYet, UsageError

if TYPE_CHECKING:
    from tau.sdk.overrides import Overrides
    from tau.sdk.submission import Launch

app = App(
    name="python",
    help="Author decorator-based workflows with the Python SDK (@tau.train, @tau.eval): inspect, "
    "build, submit.",
)

RUNS_YOUR_CODE = (
    "MODULE is imported to find its handles: its top-level code runs, as `python MODULE` would "
    "run it."
)
PythonFlag = Annotated[
    Path | None,
    Parameter(
        name="--python",
        help="The project's Python (or its virtual environment) to import MODULE with; default "
        "$VIRTUAL_ENV's, else a .venv beside MODULE or above it, else tau's own. It needs tau "
        "installed too (MODULE imports it).",
    ),
]
DryRunFlag = Annotated[
    str | None,
    Parameter(help="client (offline render, no cluster) or server (API-server dry run)."),
]


@Parameter(name="*")
@dataclass(frozen=True)
class OverrideFlags:
    """The workload overrides `build` and `submit` share (the reference's flag names)."""

    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None
    """Namespace of every workload (default: the decorator's, else the workspace's at submit)."""
    data_pvc: str | None = None
    """PVC mounted at /data (beats the decorator's data_pvc)."""
    queue: str | None = None
    """Kueue LocalQueue of the train workload (eval keeps its lane)."""
    gpu_class: str | None = None
    """GPU class: any, a100-80gb, h200-141gb, gb300-288gb, ..."""
    disable_default_priorities: Annotated[bool, Parameter(negative=())] = False
    """Do not apply the default Kueue priority classes."""
    node_selector: Annotated[tuple[str, ...], Parameter(negative=())] = ()
    """key=value node selector; repeat for several."""
    cpu_request: int | None = None
    """Head CPU request (cores)."""
    memory_request: str | None = None
    """Head memory request, e.g. 64Gi."""
    cpu_limit: int | None = None
    """Head CPU limit (cores)."""
    memory_limit: str | None = None
    """Head memory limit."""
    worker_cpu_request: int | None = None
    """Worker CPU request (cores)."""
    worker_memory_request: str | None = None
    """Worker memory request."""
    worker_cpu_limit: int | None = None
    """Worker CPU limit (cores)."""
    worker_memory_limit: str | None = None
    """Worker memory limit."""
    profiler: str | None = None
    """nsys: profile the train workload with Nsight Systems."""
    profile_rank: str | None = None
    """Ranks to profile: 0, 0,8 or all."""
    profile_warmup: str | None = None
    """Wait this long before profiling, e.g. 30s."""
    profile_duration: str | None = None
    """Profile for this long, e.g. 2m."""

    def overrides(self) -> Overrides:
        """The checked domain value (`tau.sdk.overrides.Overrides`)."""
        from tau.sdk.overrides import Overrides, parse_node_selector

        # The flags are the domain value's fields, by name; only the selector is parsed.
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values["node_selector"] = parse_node_selector(self.node_selector)
        chosen = Overrides(**values)
        chosen.check()
        return chosen


@Parameter(name="*")
@dataclass(frozen=True)
class ChainFlags:
    """How `submit` and `submit-build` send the workloads and follow a train → eval chain."""

    context: ContextFlag = None
    dry_run: DryRunFlag = None
    timeout: str = "24h"
    """How long to wait for each RayJob of a chain to succeed (e.g. 30m, 2h)."""
    poll_interval: float = 15.0
    """Seconds between status checks when the watch cannot be used."""
    cleanup_timeout: str = "5m"
    """How long to wait for a finished RayJob to be deleted."""
    keep_train_rayjob: Annotated[bool, Parameter(negative=())] = False
    """Keep the train RayJob (and its RayCluster) after it succeeds instead of deleting it
    before the eval."""

    def launch(self) -> Launch:
        from tau.sdk.chain import parse_duration
        from tau.sdk.submission import Launch

        if self.dry_run not in (None, "client", "server"):
            raise UsageError(
                f"--dry-run: invalid choice {self.dry_run!r} (choose from 'client', 'server')"
            )
        if self.poll_interval <= 0:
            raise UsageError(f"--poll-interval must be > 0 (got {self.poll_interval})")
        return Launch(
            dry_run=self.dry_run,
            context=self.context,
            timeout=parse_duration(self.timeout, "--timeout"),
            poll_interval=self.poll_interval,
            cleanup_timeout=parse_duration(self.cleanup_timeout, "--cleanup-timeout"),
            keep_train_rayjob=self.keep_train_rayjob,
        )


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _in_project_interpreter(module: Path, python: Path | None) -> int | None:
    """The exit code of this command run again by the project's interpreter
    (`tau.sdk.interpreter`), or None to import MODULE in this process.
    """
    from tau.cli import invocation
    from tau.sdk import interpreter

    found = interpreter.project_python(module, python, os.environ)
    if found is None:
        return None
    chosen, how = found
    if not interpreter.has_tau(chosen):
        if python is not None:
            raise UsageError(
                f"--python {python}: tau is not installed for that interpreter, and MODULE "
                "imports it",
                hint=f"install tau there too (`{chosen} -m pip install ...`, as the README's "
                "Install says), or drop --python to use tau's own interpreter",
            )
        _err(f"note: {chosen} ({how}) has no tau; importing {module} with tau's own Python")
        return None
    return interpreter.rerun(chosen, invocation())


def _module_path(module: Path) -> Path:
    if not module.is_file():
        raise UsageError(
            f"MODULE {module}: no such file",
            hint="pass the path of a Python file that defines @tau.train / @tau.eval functions",
        )
    return module


@app.command
def inspect(module: Path, *, python: PythonFlag = None) -> int:
    """Print the manifest each @tau.train / @tau.eval function of MODULE would submit (YAML).

    MODULE is imported to find its handles: its top-level code runs, as
    `python MODULE` would run it.

    Args:
        module: Python file defining the decorated functions.
    """
    elsewhere = _in_project_interpreter(module, python)
    if elsewhere is not None:
        return elsewhere
    import yaml

    from tau.sdk.discover import discover
    from tau.sdk.errors import SdkError

    handles = discover(_module_path(module))
    found = [("train", f) for f in handles.train] + [("eval", f) for f in handles.eval]
    if not found:
        raise SdkError(f"no @tau.train or @tau.eval functions found in {module}")
    for kind, item in found:
        source = Path(item.handle.source_path).resolve()
        print(f"# {item.attribute} (kind={kind}, source: {source})")
        sys.stdout.write(
            yaml.safe_dump(item.handle.manifest(), sort_keys=False, allow_unicode=True)
        )
        print()
    return 0


@app.command
def build(
    module: Path,
    *,
    output: Annotated[Path, Parameter(name=["--output", "-o"])],
    force: Annotated[bool, Parameter(negative=())] = False,
    upstream_checkpoint: str | None = None,
    python: PythonFlag = None,
    flags: OverrideFlags | None = None,
) -> int:
    """Export a deterministic build artifact of MODULE's train/eval workflow.

    Writes OUTPUT/tau-build.yaml and OUTPUT/workloads/<kind>-<name>/
    (tau.yaml, the cluster wrapper, the module and its extra scripts, each
    sized and SHA-256'd); no host paths, no timestamps, no secret values.
    MODULE is imported to find its handles: its top-level code runs, as
    `python MODULE` would run it.

    Args:
        module: Python file defining the decorated functions.
        output: Folder to write (refused when it exists, unless --force).
        force: Replace an existing build artifact at OUTPUT.
        upstream_checkpoint: Pod path of the checkpoint an eval-only module evaluates.
    """
    elsewhere = _in_project_interpreter(module, python)
    if elsewhere is not None:
        return elsewhere
    from tau.sdk import build as writer
    from tau.sdk.discover import discover
    from tau.sdk.generate import plan

    prefix = "tau python build"
    chosen = (flags or OverrideFlags()).overrides()
    handles = discover(_module_path(module))
    workloads = plan(handles, chosen, command=prefix, upstream_checkpoint=upstream_checkpoint)
    serve = [(f.attribute, f.handle.name) for f in handles.serve]
    out = writer.write(workloads, output, force=force, serve=serve)
    if serve:
        names = ", ".join(sorted(name for _, name in serve))
        _err(
            f"{prefix}: tau.serve handles remain separate and were not exported ({names}); "
            "use ServeHandle.deploy() or tau serve deploy"
        )
    print(out)
    return 0


@app.command
def submit(
    module: Path,
    *,
    python: PythonFlag = None,
    flags: OverrideFlags | None = None,
    chain: ChainFlags | None = None,
) -> int:
    """Submit MODULE's @tau.train and @tau.eval functions as a chained pipeline.

    Each workload goes through the `tau run` path (render, Kueue, Secret).
    Without a dry run, a train followed by an eval waits for the train
    RayJob to succeed, deletes it (unless --keep-train-rayjob) and submits
    the eval with the train's checkpoint; an eval-only module takes its
    checkpoint from $TAU_UPSTREAM_CHECKPOINT. MODULE is imported to find its
    handles: its top-level code runs, as `python MODULE` would run it.

    Args:
        module: Python file defining the decorated functions.
    """
    elsewhere = _in_project_interpreter(module, python)
    if elsewhere is not None:
        return elsewhere
    from tau.sdk import submission
    from tau.sdk.discover import discover
    from tau.sdk.generate import plan

    prefix = "tau python submit"
    submission.refuse_inside_job(os.environ)
    chosen = (flags or OverrideFlags()).overrides()
    launch = (chain or ChainFlags()).launch()
    path = _module_path(module)
    handles = discover(path)
    # An eval-only module evaluates this checkpoint; plan says what is missing and why.
    upstream = None if handles.train else os.environ.get("TAU_UPSTREAM_CHECKPOINT") or None
    workloads = plan(handles, chosen, command=prefix, upstream_checkpoint=upstream)
    scratch = submission.scratch_folder()
    try:
        steps = submission.module_steps(workloads, path.resolve().parent, scratch, prefix)
        return submission.run_chain(steps, launch, prefix=prefix, say=_err)
    finally:
        submission.remove(scratch)


@app.command(name="submit-build")
def submit_build(build: Path, *, chain: ChainFlags | None = None) -> int:
    """Verify every file of a build artifact, then submit its workloads like `submit`.

    BUILD is the artifact folder or its tau-build.yaml. Sizes and SHA-256
    digests are checked before anything is sent; secret values are read now
    from the local environment and the files the artifact names (a relative
    path is read from the current directory).

    Args:
        build: Build artifact folder (or its tau-build.yaml).
    """
    from tau.sdk import submission
    from tau.sdk.artifact import load_artifact

    prefix = "tau python submit-build"
    submission.refuse_inside_job(os.environ)
    launch = (chain or ChainFlags()).launch()
    artifact = load_artifact(build)
    scratch = submission.scratch_folder()
    try:
        steps = []
        for w in artifact.workloads:
            banner = f"{prefix}: submitting {w.kind} name='{w.name}' from {w.config_rel}"
            path = w.config_path
            if w.secret_sources:
                folder = scratch / f"{w.kind}-{w.name}"
                folder.mkdir(mode=0o700)
                path = submission.stage(
                    folder,
                    artifact.staged_config(w),
                    [(f.name, f.data) for f in artifact.files(w)],
                    secret_name=w.generated_secret,
                    secrets=submission.secret_values(w.secret_sources, Path.cwd()),
                )
            steps.append(
                submission.Step(w.kind, w.name, w.resource_name, path, banner, w.namespace)
            )
        return submission.run_chain(steps, launch, prefix=prefix, say=_err)
    finally:
        submission.remove(scratch)


@app.command
def doctor(
    *,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    context: ContextFlag = None,
) -> int:
    """Check what submit needs: Python, tau, taugrid-portal, the workspace connection, and the
    permissions submit uses (SelfSubjectAccessReview). Exits 1 when any check fails.

    Args:
        namespace: Namespace to check (default: the workspace's).
    """
    from tau.sdk import doctor as checks

    return checks.run(namespace=namespace, context=context, out=sys.stdout, err=sys.stderr)


@app.command
def bootstrap(*tokens: Annotated[str, Parameter(allow_leading_hyphen=True)]) -> int:
    """Not needed: this tau is both the CLI and the Python SDK (exits 2)."""
    refusal = NotImplementedYet("tau python bootstrap")
    refusal.message = (
        "tau python bootstrap: nothing to bootstrap: this tau is both the CLI and the Python "
        "SDK, installed together"
    )
    refusal.hint = "run `tau python doctor` to check the installation"
    raise refusal
