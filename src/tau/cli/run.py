"""`tau run`: TARGET is positional; validate, schema and explain-config are offline.

Performs I/O (terminal, files). Anything that is not one of the subcommands below is a
target name, so `tau run retry` resolves tau/retry.yaml: retry is configuration, not a verb.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from cyclopts import App, Parameter

from tau.cli import reads
from tau.cli._common import ContextFlag, check_output
from tau.cli.loading import display as _display
from tau.cli.loading import load_valid as _load_valid
from tau.cli.verbs import SUBCOMMANDS  # noqa: F401  (one list for this app and the hot path)

if TYPE_CHECKING:
    from tau.cli.reads import Connected
    from tau.intent.projects import Project
    from tau.session import Session

app = App(name="run", help="Validate, render, submit and follow runs described by tau.yaml.")

ConfigFlag = Annotated[Path | None, Parameter(name=["--config", "-c"])]
AllFlag = Annotated[bool, Parameter(name="--all", negative=())]
Switch = Annotated[bool, Parameter(negative=())]
OutputFlag = Annotated[str, Parameter(name=["--output", "-o"])]
NamespaceFlag = Annotated[str | None, Parameter(name=["--namespace", "-n"])]
#: --project: one help text for the run root, validate and every lifecycle verb.
ProjectFlag = Annotated[
    str | None,
    Parameter(
        help="Project of the monorepo catalog tau.projects.yaml at the Git root (default: the "
        "one holding --config or the working directory, a unique TARGET, or the only one)."
    ),
]


@Parameter(name="*")
@dataclass(frozen=True)
class Where:
    """The lifecycle flags every run verb shares: where the run lives."""

    namespace: NamespaceFlag = None
    """Namespace of the run (default: from the workspace)."""
    workspace: str | None = None
    """TauWorkspace name; must be Ready."""
    context: ContextFlag = None
    project: ProjectFlag = None

    def session(
        self,
        *,
        namespace: str | None = None,
        workspace: str | None = None,
        queue: str | None = None,
        project: Project | None = None,
    ) -> Session:
        """The run's cluster session; the arguments are the config's own values, which the
        flags override. A monorepo `project` brings its connection descriptor and, below the
        flag and the config, its workspace.
        """
        from tau.session import connect

        return connect(
            self.context,
            self.namespace or namespace,
            self.workspace or workspace or (project.workspace if project else None),
            queue=queue,
            start=project.root if project else None,
            descriptor_file=project.connection if project else None,
        )

    def connect(self) -> Connected:
        """(ApiClient, namespace, system namespace) of the run's cluster, through the project
        the working directory (or --project) selects in a monorepo (`tau.cli.reads.Place`).
        """
        from tau.cli.reads import Place

        return Place(self.namespace, self.workspace, self.context, self.project).connect()


def _provenance(valid: Any) -> Any:
    """The run's code-sha (its config's Git commit) and this command line."""
    from tau.cli import invocation
    from tau.provenance import collect

    return collect(valid.config_dir, invocation())


def _check_key_vault_identity(valid: Any, service_account: str | None) -> None:
    """A Key Vault run needs a ServiceAccount with workload identity (the reference's rule)."""
    if valid.managed is None or valid.managed.key_vault is None or service_account:
        return
    from tau.errors import ConfigError, Diagnostic
    from tau.intent.workflow.keyvault import SERVICE_ACCOUNT_REQUIRED

    raise ConfigError(
        [
            Diagnostic(
                "runtime.env_kv",
                SERVICE_ACCOUNT_REQUIRED,
                "pass --service-account, or use a workspace whose ServiceAccount has workload "
                "identity",
                valid.where("runtime.env_kv"),
            )
        ]
    )


#: The review flags of the run root: the modes each belongs to, and a use of it.
_REVIEW_ONLY = {
    "--all": (("render", "diff"), "--render --all"),
    "--out": (("render",), "--render --all --out DIR"),
    "--check": (("render",), "--render --all --check"),
    "--against": (("diff",), "--diff --all --against REV"),
    "--live": (("diff",), "--diff TARGET --live"),
}


@app.default
def run(
    *targets: str,
    config: ConfigFlag = None,
    dry_run: str | None = None,
    where: Where | None = None,
    output: Annotated[str | None, Parameter(name=["--output", "-o"])] = None,
    service_account: str | None = None,
    key_vault: str | None = None,
    tenant_id: str | None = None,
    workload_identity_client_id: str | None = None,
    render: Switch = False,
    diff: Switch = False,
    all_: AllFlag = False,
    out: Path | None = None,
    check: Switch = False,
    against: str | None = None,
    live: Switch = False,
) -> int:
    """Submit a run, or preview it with --dry-run; review renders with --render or --diff.

    A managed workflow (a schema_version 1 manifest, or a config whose workflow.file names
    one) is translated onto the same run config and rendered like any other run.

    Review (`tau run --render` and `tau run --diff`) takes several targets, or --all:
    --render writes each target's client render to tau/rendered/NAME.yaml, byte-stable, to
    check in; --diff says what a change does to the objects a target renders (exit 0
    unchanged, 1 changed): named lists by key, quantities by value, shipped scripts as a
    unified diff, a Secret's data never shown.

    Args:
        targets: Run name: resolves tau/TARGET.yaml (--render and --diff take several); with
            --config it overrides the run name.
        config: Explicit config file.
        dry_run: client (offline render) or server (API-server dry run).
        output: yaml or json (the manifest of --dry-run; default yaml); with --diff: text,
            markdown (a pull-request comment) or json (default text).
        service_account: ServiceAccount every pod of the run uses (default: the workspace's).
        key_vault: Key Vault of bare secret names in a managed manifest's runtime.env_kv.
        tenant_id: Microsoft Entra tenant of that Key Vault (managed runtime.env_kv only).
        workload_identity_client_id: Client ID of the managed identity that reads the vault
            (managed runtime.env_kv only).
        render: Review: write each target's client render to a file (tau/rendered/NAME.yaml).
        diff: Review: what a change does to the objects each target renders.
        all_: With --render or --diff: every target of tau/ (in a monorepo, of every project).
        out: With --render: folder for the files (default tau/rendered/; a monorepo:
            DIR/PROJECT/).
        check: With --render: write nothing; exit 1 with the diff when a file is stale (a CI
            gate).
        against: With --diff: Git revision to compare the work tree with (default HEAD; no
            checkout).
        live: With --diff: compare the run's live objects with what a submit would create now.
    """
    from tau.errors import UsageError
    from tau.intent.workflow.probe import Options

    where = where or Where()
    given = {
        "--all": all_, "--out": out is not None, "--check": check,
        "--against": against is not None, "--live": live,
    }  # fmt: skip
    mode = _review_mode(render, diff, given, dry_run=dry_run, config=config)
    if mode is not None:
        # The flags of a submit, and the cluster's flags where nothing reaches a cluster, would
        # do nothing in a review: refused rather than ignored.
        submit = {
            "--service-account": service_account, "--key-vault": key_vault,
            "--tenant-id": tenant_id, "--workload-identity-client-id": workload_identity_client_id,
        }  # fmt: skip
        cluster = {
            "--namespace": where.namespace, "--workspace": where.workspace,
            "--context": where.context,
        }  # fmt: skip
        unused = [(f, "it belongs to a submit") for f, v in submit.items() if v is not None]
        if not live:
            offline = "this review reaches no cluster (only --diff --live does)"
            unused += [(f, offline) for f, v in cluster.items() if v is not None]
        if unused:
            flag, why = unused[0]
            raise UsageError(f"{flag} does nothing with --{mode}: {why}", hint=f"drop {flag}")
    if mode == "render":
        return _render(targets, all_, out, check, where.project, output)
    if mode == "diff":
        return _diff(targets, all_, against, live, output or "text", where)
    fmt = check_output(output or "yaml", ("yaml", "json"))
    if dry_run not in (None, "client", "server"):
        raise UsageError("--dry-run must be one of: client, server")
    if len(targets) > 1:
        from tau.cli.verbs import SUBCOMMANDS

        first = targets[0]
        raise UsageError(
            f"tau run takes one TARGET, got {len(targets)}: {' '.join(targets)}",
            hint=f"`{first}` is not a subcommand, so it is read as the target tau/{first}.yaml "
            f"(the subcommands: {', '.join(SUBCOMMANDS)}); run targets one at a time, or "
            f"review several with `tau run --diff {' '.join(targets)}`",
        )
    target = targets[0] if targets else None
    managed = Options(
        key_vault=key_vault, tenant_id=tenant_id, client_id=workload_identity_client_id
    )
    valid, found = _load_valid(target, config, where.project, managed=managed)
    if dry_run != "client":
        return _submit(
            valid,
            where,
            server_dry_run=dry_run == "server",
            fmt=fmt,
            service_account=service_account,
            project=found.project,
        )
    _check_key_vault_identity(valid, service_account)
    from tau.cli import invocation
    from tau.cli.loading import print_preview

    return print_preview(valid, invocation(), output=fmt, service_account=service_account)


def _review_mode(
    render: bool, diff: bool, given: dict[str, bool], *, dry_run: str | None, config: Any
) -> str | None:
    """The mode: "render", "diff" or None (a run); a review flag without its mode is refused."""
    from tau.errors import UsageError

    if render and diff:
        raise UsageError("--render and --diff are two reviews; pass one")
    mode = "render" if render else "diff" if diff else None
    for flag, is_set in given.items():
        modes, example = _REVIEW_ONLY[flag]
        if is_set and mode not in modes:
            belongs = " or ".join(f"--{m}" for m in modes)
            raise UsageError(
                f"{flag} belongs to {belongs}" + (f", not --{mode}" if mode else ""),
                hint=f"e.g. `tau run {example}`",
            )
    if mode is not None and dry_run is not None:
        raise UsageError(f"--dry-run submits or previews one run; --{mode} reviews; pass one")
    if mode is not None and config is not None:
        raise UsageError(
            f"--{mode} reviews targets by name (tau/NAME.yaml), not --config",
            hint=f"e.g. `tau run --{mode} train`, or `tau run --{mode} --all`",
        )
    return mode


@app.command
def validate(
    target: str | None = None, *, config: ConfigFlag = None, project: ProjectFlag = None
) -> int:
    """Check a run config offline: schema, engine vocabulary, env, storage; no render.

    Args:
        target: Run name: resolves tau/TARGET.yaml; with --config it overrides the run name.
        config: Explicit config file.
    """
    valid, _ = _load_valid(target, config, project)
    print(f"{valid.path} is valid")
    return 0


@app.command
def schema(*, output: OutputFlag = "json", manifest: bool = False) -> int:
    """Print the JSON Schema of tau.yaml, or of the managed workflow manifest.

    Args:
        output: Only json.
        manifest: Print the schema of the managed workflow manifest (schema_version: 1).
    """
    from tau.intent.spec import run_config_schema_bytes, workflow_manifest_schema_bytes

    check_output(output, ("json",))
    chosen = workflow_manifest_schema_bytes() if manifest else run_config_schema_bytes()
    sys.stdout.buffer.write(chosen)
    sys.stdout.flush()
    return 0


@app.command(name="explain-config")
def explain_config(*, output: OutputFlag = "markdown", presets: bool = False) -> int:
    """Print the field reference: path, type, status, values and defaults, description.

    The run config's fields come first, then those of the managed workflow manifest.

    Args:
        output: markdown or json.
        presets: List the presets policy.preset takes instead (the catalog of
            $TAU_TOPOLOGY_POLICY, else the built-in one): GPUs, workers, lane, queues.
    """
    fmt = check_output(output, ("markdown", "json"))
    if presets:
        import os

        from tau.intent import preset_list
        from tau.intent.presets import load_catalog

        catalog = load_catalog(None, os.environ.get("TAU_TOPOLOGY_POLICY"))
        listing = preset_list.markdown if fmt == "markdown" else preset_list.as_json
        sys.stdout.write(listing(catalog))
        return 0
    from tau.intent import explain

    sys.stdout.write(explain.markdown() if fmt == "markdown" else explain.as_json())
    return 0


def _submit(
    valid,
    where: Where,
    *,
    server_dry_run: bool,
    fmt: str,
    service_account: str | None,
    project: Project | None,
) -> int:
    import os
    import secrets

    from tau import pipeline
    from tau.runs.submit import submit

    session = where.session(
        namespace=valid.config.policy.namespace,
        workspace=valid.config.policy.workspace,
        queue=valid.config.policy.queue,
        project=project,
    )
    api, target = session.api, session.target
    assert target is not None  # the session looked the workspace up
    ns = target.namespace
    provenance = _provenance(valid)
    # --service-account overrides the workspace's; every pod of the run runs as it.
    account = service_account or target.service_account
    _check_key_vault_identity(valid, account)
    rendered = pipeline.cluster_render(
        valid,
        os.environ,
        namespace=ns,
        queue=target.queue,
        service_account=account,
        provenance=provenance,
        workspace=target,
    )
    for line in rendered.warnings:
        print(line, file=sys.stderr)
    from tau.runs import claims

    for warning in claims.missing(api, ns, rendered.documents, valid):
        print(warning.format(), file=sys.stderr)
    result = submit(
        api, rendered.documents, submission_id=secrets.token_hex(12), server_dry_run=server_dry_run
    )
    if server_dry_run:
        sys.stdout.write(pipeline.dump(result.objects, fmt))
        return 0
    plan = rendered.resolved.plan

    ctx = f" --context {where.context}" if where.context else ""
    if project is not None:
        # From a monorepo's root a bare follow-up cannot tell whose cluster to ask.
        ctx += f" --project {project.name}"
    verb = "recovered" if result.recovered else "submitted"
    print(f"{verb} {plan.name} (profile={pipeline.profile_name(plan)}, ns={ns})")
    print(f"status:  tau run status {plan.name} -n {ns}{ctx}")
    print(f"logs:    tau run logs {plan.name} -n {ns} -f{ctx}")
    print(f"profile: tau run status {plan.name} -n {ns} --run-profile{ctx}")
    from tau.plan.metrics_history import user_files

    if extra := user_files(plan):  # not the tau.log files tau ships itself
        print("scripts: " + ", ".join(f"/script/{name}" for name in extra))
    from tau.runs import retry

    policy = retry.policy_of(valid)
    if policy.max_retries <= 0:
        return 0
    from tau.runs.recovery import ClusterRun

    return retry.run(
        policy,
        ns,
        plan.name,
        ClusterRun(
            api,
            ns,
            valid,
            os.environ,
            queue=target.queue,
            service_account=account,
            provenance=provenance,
            workspace=target,
            system_namespace=session.system_namespace,
        ),
    )


@app.command(name="list")
def list_(
    *,
    where: Where = Where(),
    queue: str | None = None,
    output: OutputFlag = "table",
    include_external: bool = False,
    history_limit: int = 200,
    kusto_endpoint: str | None = None,
    kusto_database: str | None = None,
) -> int:
    """List Tau-managed Jobs and RayJobs, newest first.

    Args:
        queue: Only runs of this Kueue LocalQueue.
        output: table or json.
        include_external: Also list Kueue-managed Jobs and RayJobs tau did not create (adds a SOURCE
            column).
        history_limit: Show at most this many runs, newest first.
        kusto_endpoint: Kusto-backed run history: not built (exits 2).
        kusto_database: Kusto-backed run history: not built (exits 2).
    """
    from tau.errors import NotImplementedYet, UsageError

    if kusto_endpoint or kusto_database:
        not_built = NotImplementedYet("tau run list --kusto-endpoint/--kusto-database")
        not_built.hint = (
            "Kusto-backed run history is not in scope for tau; `tau run list` shows the runs "
            "live on the cluster"
        )
        raise not_built
    fmt = check_output(output, ("table", "json"))
    if history_limit < 1:
        raise UsageError(f"--history-limit must be at least 1 (got {history_limit})")
    return reads.runs(
        where.connect,
        fmt=fmt,
        queue=queue,
        include_external=include_external,
        history_limit=history_limit,
    )


@app.command
def get(
    name: str, *, where: Where = Where(), artifact: str | None = None, output: OutputFlag = "table"
) -> int:
    """Durable results recorded by storage.output.

    Args:
        name: Run name.
        artifact: A file inside the results to print.
        output: table, json or raw (raw prints the --artifact bytes).
    """
    fmt = check_output(output, ("table", "json", "raw"))
    if fmt == "raw" and not artifact:
        from tau.errors import UsageError

        raise UsageError("-o raw prints one file: pass --artifact PATH")
    return reads.results(where.connect, name, fmt=fmt, artifact=artifact)


@app.command
def logs(
    name: str,
    *,
    where: Where = Where(),
    follow: Annotated[bool, Parameter(name=["--follow", "-f"])] = False,
    tail: int = 200,
    container: Annotated[str | None, Parameter(name=["--container", "-c"])] = None,
    all_containers: bool = False,
    previous: bool = False,
    timestamps: bool = False,
    prefix: bool = False,
    attempt: int | None = None,
) -> int:
    """Ray driver output, or Job pod logs; once the pods are gone, the copy kept of them.

    Args:
        name: Run name.
        follow: Keep streaming.
        tail: Lines from the end (-1: all).
        container: Container of a Job pod (default main).
        all_containers: Every container of each Job pod, init containers first.
        previous: The previous (crashed) container instance of a Job pod.
        timestamps: Start each line with its RFC3339 timestamp.
        prefix: Start each line of a Job pod with [pod/POD/CONTAINER].
        attempt: An attempt of a retried or resumed run (0: the first submit): an earlier one
            shows the logs tau kept before deleting it (default: the current attempt).
    """
    from tau.runs import logs as run_logs

    opts = run_logs.LogOptions(
        follow=follow,
        tail=tail,
        container=container,
        all_containers=all_containers,
        previous=previous,
        timestamps=timestamps,
        prefix=prefix,
        attempt=attempt,
    )
    return reads.logs(where.connect, name, opts)


@app.command
def cancel(
    name: str,
    *,
    where: Where = Where(),
    wait: bool = True,
    timeout: float = 720.0,
    keep_logs: bool = True,
) -> int:
    """Delete a run's workload; Kueue reclaims the quota.

    Args:
        name: Run name.
        wait: Wait until the workload, its pods and the RayCluster are gone.
        timeout: Seconds to wait for teardown (the default outlasts a pod's 600-second grace
            period: a process that ignores SIGTERM is killed only then).
        keep_logs: First keep each container's logs in the run's evidence (`tau run logs NAME`
            reads them once the pods are gone); --no-keep-logs deletes at once.
    """
    from tau.errors import UsageError
    from tau.runs.cancel import cancel as do_cancel

    if not timeout > 0:  # `not >` also refuses NaN
        raise UsageError(
            f"--timeout {timeout:g} must be a positive number of seconds",
            hint="e.g. --timeout 300, or --no-wait to return once deletion is requested",
        )
    api, ns, system = where.connect()
    result = do_cancel(
        api,
        ns,
        name,
        wait=wait,
        timeout=timeout,
        say=lambda line: print(line, file=sys.stderr),
        keep=keep_logs,
        system_namespace=system,
    )
    print(result.message())
    return 0


@app.command
def history(name: str, *, where: Where = Where(), output: OutputFlag = "table") -> int:
    """The attempts of a run, from its retry Events.

    Args:
        name: Run name.
        output: table or json.
    """
    from tau.runs import events

    fmt = check_output(output, ("table", "json"))
    api, ns, _ = where.connect()
    rows = events.fetch(api, ns, name)
    sys.stdout.write(
        events.table(rows, ns, name) if fmt == "table" else events.as_json(rows, ns, name)
    )
    return 0


@app.command
def status(
    name: str,
    *,
    where: Where = Where(),
    output: OutputFlag = "table",
    watch: bool = False,
    interval: float = 2.0,
    max_iterations: int = 0,
    run_profile: bool = False,
) -> int:
    """The startup phase tree of a run: read it top down; the first phase not done is the layer.

    Exits 1 when the run failed (or is not found), 0 otherwise.

    Args:
        name: Run name.
        output: table or json (the RunStatus document).
        watch: Follow the run (Kubernetes watch streams) until it completes or fails.
        interval: Minimum seconds between redraws with --watch.
        max_iterations: Stop --watch after this many redraws (0: until done).
        run_profile: Add where the time went, phase by phase (queueing, startup, running), and the
            results.
    """
    from tau.errors import UsageError

    fmt = check_output(output, ("table", "json"))
    if watch and fmt == "json":
        raise UsageError("--watch redraws a terminal view; use -o json without --watch")
    if watch and run_profile:
        raise UsageError("--run-profile is a snapshot view; drop --watch to see it")
    if interval <= 0 or max_iterations < 0:
        raise UsageError("--interval must be > 0 and --max-iterations >= 0")
    if not watch:
        return reads.status(where.connect, name, fmt=fmt, run_profile=run_profile)
    from rich.console import Console

    from tau.cli import evidence_read
    from tau.status.watch import watch as follow

    api, ns, _ = where.connect()
    result = follow(
        api,
        ns,
        name,
        console=Console(),
        interval=interval,
        max_iterations=max_iterations,
        evidence=evidence_read.attach,
    )
    if result.message:
        print(result.message, file=sys.stderr)
    return int(result.exit_code)


@app.command
def resume(
    name: str,
    *,
    config: Annotated[Path, Parameter(name=["--config", "-c"])],
    where: Where = Where(),
    from_: Annotated[str | None, Parameter(name="--from")] = None,
    force: bool = False,
    dry_run: str | None = None,
    output: OutputFlag = "yaml",
) -> int:
    """Replace a failed run with one that resumes from its durable checkpoint.

    Args:
        name: Run name.
        config: The run's config file (required: resume re-renders it).
        from_: Checkpoint directory to resume from (default resilience.checkpoint_path).
        force: Resume an OOMKilled run (raise its memory first).
        dry_run: client: print the replacement and change nothing.
        output: Format of --dry-run=client: yaml or json.
    """
    import os

    from tau import pipeline
    from tau.errors import UsageError
    from tau.runs import retry
    from tau.runs.recovery import ClusterRun, plan_resume
    from tau.runs.submit import submit

    fmt = check_output(output, ("yaml", "json"))
    if dry_run not in (None, "client"):
        raise UsageError("--dry-run for resume must be client")
    valid, found = _load_valid(name, config, where.project)
    session = where.session(
        namespace=valid.config.policy.namespace,
        workspace=valid.config.policy.workspace,
        queue=valid.config.policy.queue,
        project=found.project,
    )
    api, target = session.api, session.target
    assert target is not None  # the session looked the workspace up
    run = ClusterRun(
        api,
        target.namespace,
        valid,
        os.environ,
        queue=target.queue,
        service_account=target.service_account,
        provenance=_provenance(valid),
        workspace=target,
        system_namespace=session.system_namespace,
    )
    plan = plan_resume(run, retry.policy_of(valid), force=force, resume_from=from_)
    # The reference's lines; beside a client dry run's manifests they go to stderr.
    said = sys.stderr if dry_run == "client" else sys.stdout
    print(f"failure reason: {plan.reason}", file=said)
    for line in plan.warnings:
        print(line, file=sys.stderr)
    print(f"checkpoint: {plan.env['TAU_RESUME_FROM']}", file=said)
    if dry_run == "client":
        docs = run.render(plan.env, redact=True)
        sys.stdout.write(pipeline.dump(docs, fmt))
        return 0
    # The replacement rendered cleanly (plan_resume rendered it): only now is anything deleted.
    print(f"deleting failed workload {target.namespace}/{name}...", flush=True)
    run.delete_and_wait("resume")
    import secrets

    submit(api, plan.documents, submission_id=secrets.token_hex(12))
    print(
        f"resumed {name} after {plan.reason} (attempt {plan.attempt}, "
        f"TAU_RESUME_FROM={plan.env['TAU_RESUME_FROM']}, ns={target.namespace})"
    )
    return 0


def _check_selection(names: tuple[str, ...], all_: bool) -> None:
    """A review command takes TARGET names or --all."""
    from tau.errors import UsageError

    if bool(names) == all_:
        raise UsageError(
            "name the targets or pass --all"
            if not names
            else "pass TARGET names or --all, not both",
            hint="e.g. `tau run --render train`, or `tau run --render --all`",
        )


def _review_targets(names: tuple[str, ...], all_: bool, project: str | None) -> list[Any]:
    """The targets a review command means: the names given, or every one with --all."""
    from tau.errors import UsageError
    from tau.review import targets

    _check_selection(names, all_)
    if names:
        return targets.named(list(names), Path.cwd(), project)
    found = [
        e
        for e in targets.discover(Path.cwd())
        if project is None or (e.project and e.project.name == project)
    ]
    if not found:
        raise UsageError(
            f"--all found no targets: no tau/NAME.yaml in {Path.cwd()}"
            + (f" (project {project})" if project else ""),
            hint="run from the folder holding tau/, or name a target",
        )
    return found


def _render(
    targets: tuple[str, ...],
    all_: bool,
    out: Path | None,
    check: bool,
    project: str | None,
    output: str | None,
) -> int:
    """`tau run --render`: each target's client render in a file for review.

    The files carry no per-submission values, so the same config renders the same bytes
    anywhere: check them in, and a pull request shows what a change does to the objects a
    cluster runs.
    """
    import os

    from tau.errors import UsageError
    from tau.review import rendered

    if output is not None:
        raise UsageError(
            "--output belongs to --dry-run and --diff; --render writes YAML files",
            hint="drop --output",
        )
    entries = _review_targets(targets, all_, project)
    outcomes = rendered.run(entries, os.environ, out=out, check=check, prune=all_)
    bad = 0
    for item in outcomes:
        shown = _display(item.path)
        if item.status == "error":
            bad += 1
            print(f"{item.target}: does not render", file=sys.stderr)
            print("\n".join(f"  {line}" for line in item.detail), file=sys.stderr)
        elif item.status == "stale":
            bad += 1
            print(f"stale: {shown} ({item.target})")
            print("\n".join(f"  {line}" for line in item.detail))
        elif item.status == "written":
            print(f"wrote {shown}")
        elif item.status == "removed":
            print(f"removed {shown} (no target renders it)")
    total = len(outcomes)
    if check:
        print(f"{bad} of {total} renders stale" if bad else f"{total} renders fresh")
    else:
        written = sum(o.status == "written" for o in outcomes)
        print(f"{len(entries)} targets rendered, {written} files written")
    return 1 if bad else 0


def _diff(
    targets: tuple[str, ...],
    all_: bool,
    against: str | None,
    live: bool,
    output: str,
    where: Where,
) -> int:
    """`tau run --diff`: what a change does to the objects a target renders: exit 0
    unchanged, 1 changed.

    Semantic: objects by kind and name, named lists (containers, env, volumes, tolerations,
    worker groups) by key, quantities by value, shipped scripts as a unified diff; a Secret's
    data is never shown.
    """
    import os

    from tau.errors import UsageError
    from tau.review import report

    fmt = check_output(output, ("text", "markdown", "json"))
    if live and against is not None:
        raise UsageError("--against and --live compare with different things; pass one")
    if live:
        from tau.review import live as live_review

        entries = _review_targets(targets, all_, where.project)
        result = live_review.review(entries, lambda entry: _for_submit(entry, where))
    else:
        from tau.review import against as revision

        _check_selection(targets, all_)
        names = [] if all_ else list(targets)
        result = revision.review(names, Path.cwd(), against or "HEAD", os.environ, where.project)
        if all_ and where.project:
            prefix = f"{where.project}/"
            result.targets[:] = [t for t in result.targets if t.target.startswith(prefix)]
    text = {"text": report.text, "markdown": report.markdown, "json": report.as_json}[fmt]
    sys.stdout.write(text(result))
    return 1 if result.changed else 0


def _for_submit(entry: Any, where: Where) -> tuple[Any, list[dict[str, Any]]]:
    """(API client, the objects a submit of `entry` would send now): `tau run TARGET`'s
    render, namespace, queue and ServiceAccount from the workspace.
    """
    import os

    from tau import pipeline
    from tau.review.targets import load, shown_path

    valid = load(shown_path(entry.path, Path.cwd()))
    session = where.session(
        namespace=valid.config.policy.namespace,
        workspace=valid.config.policy.workspace,
        queue=valid.config.policy.queue,
        project=entry.project,
    )
    target = session.target
    assert target is not None  # the session looked the workspace up
    rendered = pipeline.cluster_render(
        valid,
        os.environ,
        namespace=target.namespace,
        queue=target.queue,
        service_account=target.service_account,
        workspace=target,
    )
    return session.api, rendered.documents
