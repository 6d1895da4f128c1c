"""`tau serve`: model services as a RayService or a Deployment (+ Service).

Performs I/O (terminal; the cluster through tau.serving.apply/observe). This module only parses
flags, calls the core and prints; the kubernetes client is imported by the core, lazily.
A service is not a run: there are no run lifecycle verbs here.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from cyclopts import App, Parameter

from tau.cli._common import ContextFlag, check_output

if TYPE_CHECKING:
    from tau.intent.presets import Catalog
    from tau.plan.service import DeployFlags

app = App(name="serve", help="Deploy and manage model services (RayService or Deployment).")

Kind = Annotated[str, Parameter(name="--kind")]
Namespace = Annotated[str | None, Parameter(name=["--namespace", "-n"])]
Output = Annotated[str, Parameter(name=["--output", "-o"])]
Repeated = Annotated[
    tuple[str, ...], Parameter(consume_multiple=False, negative=(), show_default=False)
]

NAMESPACE_WARNING = (
    "warning: no --namespace: the namespace is shown as a placeholder; serving "
    "does not read tau/workspace.connection.yaml, so pass -n NAMESPACE to deploy"
)


def _source_refused(
    from_finetune: str | None, from_model: str | None, checkpoint: str | None, dry_run: str | None
) -> None:
    """--from-finetune/--from-model read cluster metadata: not offline, not with --checkpoint."""
    from tau.errors import UsageError

    flag = "--from-finetune" if from_finetune else "--from-model" if from_model else None
    if flag is None:
        return
    if checkpoint is not None:
        raise UsageError(f"{flag} conflicts with --checkpoint", hint="pass one model source")
    if dry_run == "client":
        raise UsageError(
            f"{flag} reads cluster metadata (the checkpoint's artifacts.json or the "
            "model registry), so it cannot be used with --dry-run=client",
            hint="use --dry-run=server, or pass --checkpoint PATH for an offline render",
        )


def _connect(context: str | None) -> tuple[Any, str]:
    """(ApiClient, context name): serving uses --context/$TAU_CONTEXT or the current context
    directly, without activating tau/workspace.connection.yaml; its namespace is always -n.
    """
    from tau.session import connect

    session = connect(context, lookup=False, descriptor=False)
    return session.api, session.context


def _resolve_source(
    flags: DeployFlags, from_finetune: str | None, from_model: str | None, context: str | None
) -> DeployFlags:
    """Flags with --checkpoint set from the run's artifacts.json or the model registry."""
    import dataclasses

    from tau.plan.service import DEFAULT_CHECKPOINT_PVC
    from tau.registry.pvc import PvcBackend
    from tau.serving import kube, sources

    if not (from_finetune or from_model):
        return flags
    namespace = kube.require_namespace(flags.namespace, "deploy")
    api, _ctx = _connect(context)
    backend = PvcBackend(flags.checkpoint_pvc or DEFAULT_CHECKPOINT_PVC, api, namespace=namespace)
    path = (
        sources.from_finetune(backend, from_finetune)
        if from_finetune
        else sources.from_model(backend, str(from_model))
    )
    return dataclasses.replace(flags, checkpoint=path)


@Parameter(name="*")
@dataclass(frozen=True)
class DeployArgs:
    """Every `tau serve deploy` flag as typed (numbers stay text until spec.parse_numbers, so
    a bad number is reported with the flag's other problems).
    """

    kind: Kind = "rayservice"
    """rayservice (KubeRay RayService) or deployment (Deployment + Service)."""
    profile: str | None = None
    """A preset of the catalog (GPU count, GPU class, priority) or a workload profile name."""
    image: str | None = None
    """Pinned image: a tag other than latest, or a digest."""
    namespace: Namespace = None
    """Target namespace (required to deploy; never read from the workspace connection)."""
    context: ContextFlag = None
    import_path: str | None = None
    """Ray Serve import path MODULE:ATTR (rayservice; default serve:app)."""
    replicas: str | None = None
    """Fixed size: Ray worker pods or Deployment pods (default 1)."""
    min_replicas: str | None = None
    """Autoscaling lower bound (rayservice; default 1)."""
    max_replicas: str | None = None
    """Autoscaling upper bound; >0 enables autoscaling, excludes --replicas (rayservice)."""
    env: Repeated = ()
    """KEY=VAL, repeatable."""
    env_secret: Repeated = ()
    """KEY=SECRET:KEY, repeatable; an env var read from a Secret key."""
    checkpoint: str | None = None
    """Checkpoint path: relative under /data/checkpoints, projects/... under /data, or absolute."""
    checkpoint_pvc: str | None = None
    """PVC mounted at /data for --checkpoint (default blob-training)."""
    from_finetune: str | None = None
    """Serve a finetune run's checkpoint (reads cluster metadata)."""
    from_model: Annotated[str | None, Parameter(name=["--from-model", "--model-ref"])] = None
    """Serve MODEL:alias, MODEL@run or MODEL from the model registry (reads cluster metadata)."""
    readiness_path: str | None = None
    """HTTP readiness probe path on the serving port."""
    startup_path: str | None = None
    """HTTP startup probe path on the serving port."""
    liveness_path: str | None = None
    """HTTP liveness probe path on the serving port."""
    startup_failure_threshold: str | None = None
    """Startup probe failures allowed, 10s apart (default 60; needs --startup-path)."""
    port: str | None = None
    """Serving port in the container (default 8000)."""
    service_port: str | None = None
    """Service port of a deployment (default: --port; 0 means no Service)."""
    service_target_port: str | None = None
    """Service target port (default: --port)."""
    gpus: str | None = None
    """GPUs per replica pod (default: the preset's shape, else 0)."""
    runtime_pip: Repeated = ()
    """pip requirement for the Serve app's runtime_env, repeatable (rayservice)."""
    ray_version: str | None = None
    """KubeRay rayVersion (rayservice; default 2.40.0)."""
    init: Repeated = ()
    """Init container NAME=IMAGE, repeatable (deployment); runs its image's entrypoint."""
    sidecar: Repeated = ()
    """Sidecar container NAME=IMAGE, repeatable (deployment); runs its image's entrypoint."""
    volume: Repeated = ()
    """Pod volume NAME=KIND[:SOURCE], KIND pvc|emptyDir|configMap|secret; repeatable."""
    mount: Repeated = ()
    """Mount NAME:PATH[:ro|rw] of a --volume on the serving container(s); repeatable."""
    args: str | None = None
    """Legacy container args, split on whitespace without shell quoting (deployment)."""
    command: Repeated = ()
    """One literal element of the container command, repeatable (deployment)."""
    arg: Repeated = ()
    """One literal container argument, repeatable (deployment); conflicts with --args."""
    dry_run: str | None = None
    """client (print the manifests, offline) or server (API-server dry run, persists nothing)."""
    output: Output = "yaml"
    """Manifest format of --dry-run=client: yaml or json."""

    def deploy_flags(self, name: str) -> DeployFlags:
        """The core's DeployFlags: numbers parsed, every bad number reported at once."""
        from tau.plan import service as spec

        n = spec.parse_numbers(
            {
                "--replicas": self.replicas,
                "--min-replicas": self.min_replicas,
                "--max-replicas": self.max_replicas,
                "--startup-failure-threshold": self.startup_failure_threshold,
                "--port": self.port,
                "--service-port": self.service_port,
                "--service-target-port": self.service_target_port,
                "--gpus": self.gpus,
            }
        )
        return spec.DeployFlags(
            name=name,
            kind=self.kind,
            profile=self.profile,
            image=self.image,
            namespace=self.namespace,
            import_path=self.import_path,
            replicas=n["--replicas"],
            min_replicas=n["--min-replicas"],
            max_replicas=n["--max-replicas"] or 0,
            env=tuple(self.env),
            env_secret=tuple(self.env_secret),
            checkpoint=self.checkpoint,
            checkpoint_pvc=self.checkpoint_pvc,
            readiness_path=self.readiness_path,
            startup_path=self.startup_path,
            liveness_path=self.liveness_path,
            startup_failure_threshold=n["--startup-failure-threshold"],
            port=n["--port"],
            service_port=n["--service-port"],
            service_target_port=n["--service-target-port"],
            gpus=n["--gpus"],
            runtime_pip=tuple(self.runtime_pip),
            ray_version=self.ray_version,
            init=tuple(self.init),
            sidecar=tuple(self.sidecar),
            volume=tuple(self.volume),
            mount=tuple(self.mount),
            args=self.args,
            command=tuple(self.command),
            arg=tuple(self.arg),
        )


@app.command
def deploy(name: str, *, opts: DeployArgs = DeployArgs()) -> int:
    """Render a service and apply it, or print it with --dry-run=client.

    Args:
        name: Service name (a DNS-1035 label).
    """
    import os

    from tau import pipeline
    from tau.errors import UsageError
    from tau.intent import presets
    from tau.plan import service as spec

    fmt = check_output(opts.output, ("yaml", "json"))
    if opts.dry_run not in (None, "client", "server"):
        raise UsageError(f'--dry-run "{opts.dry_run}" must be one of: client, server')
    _source_refused(opts.from_finetune, opts.from_model, opts.checkpoint, opts.dry_run)
    flags = opts.deploy_flags(name)
    catalog = presets.load_catalog(None, os.environ.get("TAU_TOPOLOGY_POLICY"))
    if opts.dry_run == "client":
        serve_spec = spec.build_spec(flags, catalog)
        if opts.namespace is None:
            print(NAMESPACE_WARNING, file=sys.stderr)
        docs = pipeline.service_documents(serve_spec, redact=True)
        sys.stdout.write(pipeline.dump(docs, fmt))
        return 0
    flags = _resolve_source(flags, opts.from_finetune, opts.from_model, opts.context)
    return _apply(flags, catalog, opts.context, server_dry_run=opts.dry_run == "server")


def _apply(
    flags: DeployFlags, catalog: Catalog, context: str | None, *, server_dry_run: bool
) -> int:
    """Build, render unredacted and apply; print the deployed line and how to track it."""
    from tau import pipeline
    from tau.plan import service as spec
    from tau.serving import apply, kube

    kube.require_namespace(flags.namespace, "deploy")
    serve_spec = spec.build_spec(flags, catalog)
    docs = pipeline.service_documents(serve_spec, redact=False)
    api, ctx = _connect(context)
    apply.apply_service(api, docs, server_dry_run=server_dry_run, context=ctx)
    s = serve_spec
    line = (
        f"deployed service {s.name} (kind={s.kind}, profile={s.profile}, image={s.image}, "
        f"ns={s.namespace})"
    )
    if server_dry_run:
        print(f"{line} [server dry run: validated, nothing persisted]")
    else:
        print(line)
        print(f"track: tau serve status {s.name} -n {s.namespace} --kind {s.kind}")
    return 0


def _kind(kind: str) -> str:
    from tau.errors import UsageError
    from tau.plan.service import KINDS

    if kind not in KINDS:
        raise UsageError(f'--kind "{kind}" must be one of: {", ".join(KINDS)}')
    return kind


@app.command
def status(
    name: str,
    *,
    kind: Kind = "rayservice",
    namespace: Namespace = None,
    context: ContextFlag = None,
    output: Output = "table",
) -> int:
    """Show a service: RayService serve status and endpoints, or Deployment replicas.

    Args:
        name: Service name.
        kind: rayservice or deployment.
        namespace: Namespace of the service (required).
        output: table or json.
    """
    import datetime as dt

    from tau.serving import kube, observe

    fmt = check_output(output, ("table", "json"))
    kind = _kind(kind)
    ns = kube.require_namespace(namespace, "status")
    api, ctx = _connect(context)
    obj = observe.fetch(api, kind, ns, name, context=ctx)
    now = dt.datetime.now(dt.UTC)
    problems = restarts = None
    if kind == "deployment":
        # Replica counts say how many; the pods say why not: a crash loop, a failing probe,
        # or a server Ready only between the restarts of one.
        pods, events = observe.fetch_pods(api, obj, ns, context=ctx)
        problems, restarts = observe.not_ready(pods, events), observe.restarting(pods, now)
    sys.stdout.write(
        observe.table([observe.row(obj, kind, now)], kind)
        + observe.problem_lines(problems or [])
        + observe.restart_lines(restarts or [])
        if fmt == "table"
        else observe.as_json(obj, kind, now, problems, restarts)
    )
    return 0


@app.command
def scale(
    name: str,
    *,
    replicas: str,
    kind: Kind = "rayservice",
    namespace: Namespace = None,
    context: ContextFlag = None,
) -> int:
    """Set the replica count of a Deployment service (a RayService is redeployed instead).

    Args:
        name: Service name.
        replicas: New replica count.
        kind: deployment (rayservice is refused: redeploy, or autoscale with --max-replicas).
        namespace: Namespace of the service (required).
    """
    from tau.plan.service import parse_numbers
    from tau.serving import apply, kube

    count = parse_numbers({"--replicas": replicas})["--replicas"] or 0
    apply.check_scalable(_kind(kind), count)  # before any I/O: a RayService is refused
    ns = kube.require_namespace(namespace, "scale")
    api, ctx = _connect(context)
    apply.scale_service(api, kind, ns, name, count, context=ctx)
    print(f"scaled deployment {name} to {count} replicas (ns={ns})")
    return 0


@app.command
def delete(
    name: str,
    *,
    kind: Kind = "rayservice",
    namespace: Namespace = None,
    context: ContextFlag = None,
) -> int:
    """Delete a service; deleting one that is not there succeeds.

    Args:
        name: Service name.
        kind: rayservice or deployment (a deployment's Service is deleted with it).
        namespace: Namespace of the service (required).
    """
    from tau.serving import apply, kube

    kind = _kind(kind)
    ns = kube.require_namespace(namespace, "delete")
    api, ctx = _connect(context)
    deleted = apply.delete_service(api, kind, ns, name, context=ctx)
    if deleted:
        print(f"deleted service {name} ({', '.join(deleted)}, ns={ns})")
    else:
        print(f"service {name} (kind={kind}) not found in ns={ns}: nothing to delete")
    return 0
