"""Submit generated workloads through the `tau run` path, in-process, and chain train → eval.

Performs I/O (a private temporary folder, the terminal, the cluster through `tau run` and
`tau.sdk.chain`). The reference SDK wrote a manifest and shelled out to the tau binary and to
kubectl; here the SDK is the same package as the CLI, so each workload goes through the very
function `tau run --config` calls (one render, one submit path, its exit codes) and the chain
waits on the train RayJob through tau's own Kubernetes client.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.sdk.errors import SdkError
from tau.sdk.generate import CONFIG_FILE, SecretLocator, Workload, canonical_yaml

#: The reference's file name of the run's Secret payload, next to the generated tau.yaml.
PAYLOAD_FILE = "tau-job-secrets.json"
INSIDE_JOB = (
    "tau-py: refusing to {action} from inside what looks like a cluster-submitted job "
    "(TAU_DATA_DIR is set). Submit from your local machine."
)


@dataclass(frozen=True)
class Launch:
    """How the workloads go out: the flags `submit` and `submit-build` share."""

    dry_run: str | None = None
    context: str | None = None
    timeout: float = 24 * 3600.0
    poll_interval: float = 15.0
    cleanup_timeout: float = 300.0
    keep_train_rayjob: bool = False


@dataclass(frozen=True)
class Step:
    """One workload ready for `tau run --config`: its config file and what to say about it."""

    kind: str
    name: str
    resource_name: str
    config_path: Path
    banner: str
    namespace: str | None = None


def refuse_inside_job(
    env: Mapping[str, str],
    action: str = ".submit()",
    hint: str | None = "run `tau python submit` from your own machine",
) -> None:
    """A pod of a submitted run has TAU_DATA_DIR set; submitting from there would fork runs."""
    if env.get("TAU_DATA_DIR"):
        raise SdkError(INSIDE_JOB.format(action=action), hint=hint)


def secret_values(locators: Sequence[SecretLocator], base: Path) -> dict[str, str]:
    """The Secret's data, read now from the local environment and files (never stored)."""
    from tau.sdk.secrets import read_value

    return {loc.key: read_value(loc.source, loc.env_name, base=base) for loc in locators}


def _write_private(path: Path, data: bytes) -> None:
    """Owner-only, created fresh: the folder is private and a payload holds secret values."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def stage(
    folder: Path,
    config: dict[str, Any],
    files: Sequence[tuple[str, bytes]],
    *,
    secret_name: str | None,
    secrets: Mapping[str, str],
) -> Path:
    """Lay a workload out in `folder` as `tau run --config` reads it; returns the config path.

    The config's paths are relative to its folder (the staged files sit beside it), so the
    same tau.yaml a build writes is what runs; only the Secret payload is added here.
    """
    for name, data in files:
        if name != CONFIG_FILE:
            _write_private(folder / name, data)
    doc = dict(config)
    if secret_name and secrets:
        payload = {"name": secret_name, "stringData": dict(sorted(secrets.items()))}
        _write_private(folder / PAYLOAD_FILE, json.dumps(payload, indent=2).encode())
        doc["workflow"] = {**(doc.get("workflow") or {}), "secret_payload": PAYLOAD_FILE}
    path = folder / CONFIG_FILE
    _write_private(path, canonical_yaml(doc))
    return path


def module_steps(
    workloads: Sequence[Workload], base: Path, scratch: Path, prefix: str
) -> list[Step]:
    """Stage each generated workload of a module in its own folder under `scratch`."""
    steps = []
    for w in workloads:
        folder = scratch / f"{w.kind}-{w.name}"
        folder.mkdir(mode=0o700)
        values = secret_values(w.secret_sources, base)
        path = stage(
            folder,
            w.config,
            [(f.name, f.data) for f in w.files],
            secret_name=w.generated_secret,
            secrets=values,
        )
        steps.append(Step(w.kind, w.name, w.resource_name, path, _banner(w, prefix), w.namespace))
    return steps


def _banner(w: Workload, prefix: str) -> str:
    compute = w.config.get("compute") or {}
    gpus = compute.get("gpus", 1)
    if w.kind == "train":
        return (
            f"{prefix}: submitting @tau.train name='{w.name}' "
            f"(gpus={gpus}, workers={compute.get('workers', 1)})"
        )
    cpu_workers = (w.config.get("eval") or {}).get("cpu_workers", 1)
    return (
        f"{prefix}: submitting @tau.eval name='{w.name}' "
        f"(gpus={gpus}, cpu_workers={cpu_workers}, upstream='{w.upstream_checkpoint}')"
    )


def _launch_in_process(path: Path, launch: Launch) -> int:
    """`tau run --config PATH [--dry-run M] [--context C]`, in-process: the same code path."""
    from tau.cli.run import Where, run

    return run(config=path, dry_run=launch.dry_run, where=Where(context=launch.context))


#: The one way a workload goes out (tests replace it with a recorder).
launch_one = _launch_in_process


def _separate_documents() -> None:
    import sys

    sys.stdout.write("---\n")


def _namespace_of(path: Path) -> str | None:
    import yaml

    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return ((doc.get("policy") or {}).get("namespace")) or None


def _connect(launch: Launch, namespace: str | None) -> tuple[Any, str]:
    from tau.cli.run import Where

    session = Where(context=launch.context).session(namespace=namespace)
    return session.api, session.namespace


def run_chain(
    steps: Sequence[Step],
    launch: Launch,
    *,
    prefix: str,
    say: Callable[[str], None],
    wait_for: Callable[..., None] | None = None,
    delete: Callable[..., None] | None = None,
    follow: bool = True,
) -> int:
    """Submit the steps in order; without a dry run, a train followed by an eval waits for the
    train RayJob to succeed (then deletes it, freeing its RayCluster, unless kept), and every
    eval is waited for and deleted, as the reference does. `follow=False` (a handle's own
    `.submit()`) only submits.

    Whatever stops the chain (a failure, a timeout, Ctrl-C), the user is told what exists on
    the cluster and what was never submitted, then the error goes on.
    """
    from tau.sdk import chain

    wait_for = wait_for or chain.wait_rayjob
    delete = delete or chain.delete_rayjob
    submitted: list[tuple[Step, str]] = []
    pending = list(steps)
    try:
        for index, step in enumerate(steps):
            say(step.banner)
            if launch.dry_run and index and launch_one is _launch_in_process:
                # Each workload's preview is a YAML stream; one stream holds them all.
                _separate_documents()
            code = launch_one(step.config_path, launch)
            if code != 0:
                raise SdkError(f"{prefix}: tau run failed (exit={code})")
            pending.remove(step)
            if launch.dry_run or not follow:
                continue
            later_eval = any(s.kind == "eval" for s in steps[index + 1 :])
            if step.kind == "train" and not later_eval:
                continue
            api, ns = _connect(launch, _namespace_of(step.config_path))
            submitted.append((step, ns))
            wait_for(
                api,
                ns,
                step.resource_name,
                timeout=launch.timeout,
                poll_interval=launch.poll_interval,
                say=say,
                context=launch.context,
            )
            if step.kind == "train" and launch.keep_train_rayjob:
                continue
            say(
                f"{prefix}: deleting completed rayjob/{step.resource_name} to release "
                "RayCluster resources" + (" before eval..." if step.kind == "train" else "...")
            )
            delete(
                api,
                ns,
                step.resource_name,
                timeout=launch.cleanup_timeout,
                say=say,
                context=launch.context,
            )
            submitted.remove((step, ns))
    except (KeyboardInterrupt, Exception):
        _report_leftovers(submitted, pending, prefix, launch, say)
        raise
    return 0


def _report_leftovers(
    submitted: Sequence[tuple[Step, str]],
    pending: Sequence[Step],
    prefix: str,
    launch: Launch,
    say: Callable[[str], None],
) -> None:
    """What the interrupted chain left: runs on the cluster, workloads never submitted."""
    if launch.dry_run or not (submitted or pending):
        return
    ctx = f" --context {launch.context}" if launch.context else ""
    for step, ns in submitted:
        say(
            f"{prefix}: rayjob/{step.resource_name} ({step.kind} '{step.name}') still exists in "
            f"{ns}: follow it with `tau run status {step.resource_name} -n {ns}{ctx}`, stop it "
            f"with `tau run cancel {step.resource_name} -n {ns}{ctx}`"
        )
    for step in pending:
        say(f"{prefix}: {step.kind} '{step.name}' was not submitted")


def scratch_folder() -> Path:
    """A private (0700) folder for staged files and the Secret payload; removed after use."""
    return Path(tempfile.mkdtemp(prefix="tau-py-"))


def remove(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def submit_handle(
    handle: Any,
    *,
    dry_run: str | None = None,
    kube_context: str | None = None,
    upstream_checkpoint: str | None = None,
    **overrides: Any,
) -> int:
    """`handle.submit(...)`: one decorated function, submitted (or previewed) on its own.

    Keyword overrides are the build/submit flags (`namespace`, `queue`, `cpu_request`, ...).
    Returns 0; failures raise (SdkError, ConfigError, ClusterError) as the CLI reports them.
    """
    from tau.sdk.discover import Found, Handles
    from tau.sdk.generate import plan
    from tau.sdk.overrides import Overrides

    refuse_inside_job(os.environ)
    if dry_run not in (None, "client", "server"):
        raise SdkError("dry_run must be 'client' or 'server'")
    if "node_selector" in overrides and isinstance(overrides["node_selector"], Mapping):
        overrides["node_selector"] = tuple(sorted(overrides["node_selector"].items()))
    chosen = Overrides(**overrides)
    chosen.check()
    found = (Found(handle.name, handle),)
    is_train = bool(getattr(handle, "_tau_train_handle", False))
    source = Path(handle.source_path)
    handles = Handles(
        train=found if is_train else (),
        eval=() if is_train else found,
        serve=(),
        module_path=source,
    )
    prefix = "tau python submit"
    workloads = plan(handles, chosen, command=prefix, upstream_checkpoint=upstream_checkpoint)
    scratch = scratch_folder()
    try:
        steps = module_steps(workloads, source.parent, scratch, prefix)
        launch = Launch(dry_run=dry_run, context=kube_context)
        return run_chain(steps, launch, prefix=prefix, say=_stderr, follow=False)
    finally:
        remove(scratch)


def _stderr(line: str) -> None:
    import sys

    sys.stderr.write(line + "\n")
    sys.stderr.flush()
