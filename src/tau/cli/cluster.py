"""`tau cluster`: the platform operator's root (install, uninstall, validate, explain-values).

Performs I/O (terminal). Operator commands need cluster-admin-level access and are not for
researchers. This module parses flags, resolves the cluster, prints, and returns an exit code;
the flows live in `tau.cluster`. Helm is looked up before anything else happens.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

from cyclopts import App, Parameter

from tau.cli._common import ContextFlag, check_output
from tau.cluster.options import (
    DEFAULT_CHART,
    DEFAULT_NAMESPACE,
    DEFAULT_RELEASE,
    DEFAULT_TIMEOUT,
    DEFAULT_VERSION,
)
from tau.errors import ExitCode, UsageError

_ADMIN = "Needs cluster-admin-level access; operator-only, not for researchers."

app = App(
    name="cluster",
    help=f"Platform operator commands: install, validate and uninstall TauGrid. {_ADMIN}",
    version_flags=[],
)
validate = App(name="validate", help=f"Read-only cluster checks. {_ADMIN}", version_flags=[])
app.command(validate)


def _say(text: str) -> None:
    print(text, flush=True)


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


def _connect(context: str | None) -> tuple[Any, Any, str]:
    """(helm Access, ApiClient, context name) for an explicit or descriptor context."""
    from tau.cluster.helm import Access
    from tau.session import connect

    session = connect(context, lookup=False)
    access = Access(session.connection.kubeconfig, session.context)
    return access, session.api, session.context


@app.command
def install(
    *,
    context: ContextFlag = None,
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
    chart: str = DEFAULT_CHART,
    version: str = DEFAULT_VERSION,
    timeout: str = DEFAULT_TIMEOUT,
    values: Annotated[tuple[str, ...], Parameter(name=["--values", "-f"], negative=())] = (),
    set: Annotated[tuple[str, ...], Parameter(name="--set", negative=())] = (),
    set_string: Annotated[tuple[str, ...], Parameter(name="--set-string", negative=())] = (),
    create_namespace: bool = True,
    wait: bool = False,
    atomic: bool = False,
    dependency_update: bool = True,
    dry_run: bool = False,
) -> int:
    """Install or upgrade TauGrid with Helm (needs cluster-admin-level access).

    Prints the installation plan first; runs a bootstrap pass when the release does not exist,
    then `helm upgrade --install --reset-values`, then the readiness report.

    Args:
        release: Helm release name.
        namespace: Namespace of the release.
        chart: Chart reference.
        version: Chart version.
        timeout: Time limit of each helm step and of the readiness wait (Go duration).
        values: Values file (repeatable).
        set: KEY=VALUE chart value (repeatable).
        set_string: KEY=VALUE chart value forced to a string (repeatable).
        create_namespace: Create the release namespace when missing.
        wait: Let helm wait for the resources of the main pass.
        atomic: Roll back a failed upgrade (--rollback-on-failure on Helm 4).
        dependency_update: Update chart dependencies before installing.
        dry_run: Render offline with `helm template --include-crds`; nothing is applied.
    """
    from tau.cluster import install as flow
    from tau.cluster import plan, readiness
    from tau.cluster.helm import find_helm
    from tau.cluster.options import BASELINE_QUEUE_VALUE, InstallOptions, Target, check_install
    from tau.cluster.values import enabled_components, load_values_files

    helm = find_helm()
    options = InstallOptions(
        target=Target(release, namespace, chart, timeout),
        version=version,
        values=values,
        set_values=set,
        set_strings=set_string,
        create_namespace=create_namespace,
        wait=wait,
        atomic=atomic,
        dependency_update=dependency_update,
        dry_run=dry_run,
    )
    check_install(options)
    toggles = enabled_components(load_values_files(values), (*set, *set_string))
    if dry_run:
        _say(
            plan.install_plan(
                options, helm_version=helm.version_text, context=None, toggles=toggles
            )
        )
        return flow.dry_run(options, helm, _say)
    access, api, ctx = _connect(context)
    _say(plan.install_plan(options, helm_version=helm.version_text, context=ctx, toggles=toggles))
    baseline = toggles[BASELINE_QUEUE_VALUE]

    def ready(seconds: float) -> list[Any]:
        def once() -> list[Any]:
            facts = readiness.gather(api, namespace, release, context=ctx)
            facts.baseline_expected = baseline
            facts.quota_guard_expected = toggles.get("quotaGuard.enabled", True)
            return readiness.evaluate(facts, release)

        return readiness.wait_ready(once, seconds)

    return flow.install(options, helm, access, _say, ready)


@app.command
def uninstall(
    *,
    context: ContextFlag = None,
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
    chart: str = DEFAULT_CHART,
    timeout: str = DEFAULT_TIMEOUT,
    wait: bool = True,
    dry_run: bool = False,
    keep_history: bool = False,
    # A flag that already says "no" has no negative (cyclopts would offer --no-no-hooks).
    no_hooks: Annotated[bool, Parameter(negative=())] = False,
    yes: Annotated[bool, Parameter(negative=())] = False,
    drain_queue: bool = True,
) -> int:
    """Uninstall the Helm-owned TauGrid resources (needs cluster-admin-level access).

    Phase 1 drains the queue policy while Kueue still runs; phase 2 runs `helm uninstall`.
    PVCs, StorageClasses, Secrets and user namespaces are never deleted.

    Args:
        release: Helm release name.
        namespace: Namespace of the release.
        chart: Chart reference (the drain runs only when the deployed chart has the same name).
        timeout: Time limit of each helm step (Go duration).
        wait: Wait until the release's resources are deleted.
        dry_run: Print what would run; change nothing.
        keep_history: Keep the release history (helm uninstall --keep-history).
        no_hooks: Skip the chart's uninstall hooks.
        yes: Confirm the uninstall (required unless --dry-run).
        drain_queue: Remove the baseline queue objects while Kueue still runs, before uninstalling.
    """
    from tau.cluster import plan
    from tau.cluster import uninstall as flow
    from tau.cluster.helm import find_helm
    from tau.cluster.options import Target, UninstallOptions, check_target

    helm = find_helm()
    options = UninstallOptions(
        target=Target(release, namespace, chart, timeout),
        wait=wait,
        dry_run=dry_run,
        keep_history=keep_history,
        no_hooks=no_hooks,
        yes=yes,
        drain_queue=drain_queue,
    )
    check_target(options.target)
    if not yes and not dry_run:
        raise UsageError(
            f'refusing to uninstall release "{release}" from "{namespace}" without --yes',
            hint="review the plan with --dry-run, then rerun with --yes",
        )
    access, _, ctx = _connect(context)
    _say(plan.uninstall_plan(options, helm_version=helm.version_text, context=ctx))
    return flow.uninstall(options, helm, access, _say)


@app.command(name="explain-values")
def explain_values(*, output: Annotated[str, Parameter(name=["--output", "-o"])] = "table") -> int:
    """Explain the chart values tau reads or sets: meaning and defaults (offline).

    Args:
        output: table or json.
    """
    from tau.cluster.values import explain_json, explain_table

    check_output(output, ("table", "json"))
    sys.stdout.write(explain_json() if output == "json" else explain_table())
    return int(ExitCode.OK)


@validate.command
def installation(
    *,
    context: ContextFlag = None,
    release: str = DEFAULT_RELEASE,
    namespace: str = DEFAULT_NAMESPACE,
) -> int:
    """Re-run the install readiness report, read-only (needs cluster-admin-level access).

    Args:
        release: Helm release name.
        namespace: Namespace of the release.
    """
    from tau.cluster import readiness
    from tau.cluster.checks import has_errors, summary

    _, api, ctx = _connect(context)
    _say(f"cluster: {ctx}\nrelease: {release} in {namespace}")
    checks = readiness.evaluate(readiness.gather(api, namespace, release, context=ctx), release)
    for check in checks:
        _say(check.line())
    _say(summary(checks))
    return int(ExitCode.INVALID) if has_errors(checks) else int(ExitCode.OK)


@validate.command
def nodes(
    *,
    context: ContextFlag = None,
    gpu_class: str = "any",
    selector: str | None = None,
    min_healthy: int = 0,
    timeout: str = "2m",
) -> int:
    """Probe GPU node health with one privileged pod per node (needs cluster-admin-level access).

    Args:
        gpu_class: any, a100-80gb, h100-95gb or h200-141gb (matched against the gpu-class node
            label).
        selector: Label selector narrowing the nodes.
        min_healthy: Exit 1 when fewer nodes are healthy (default 0: exit 1 on any unhealthy or
            unknown).
        timeout: Time limit per probe pod (Go duration).
    """
    from tau.cluster import nodes as n
    from tau.cluster.options import parse_timeout
    from tau.kube import operator as k

    n.check_gpu_class(gpu_class)
    seconds = parse_timeout(timeout)
    if min_healthy < 0:
        raise UsageError(f"--min-healthy must be 0 or more (got {min_healthy})")
    _, api, ctx = _connect(context)
    where = f"gpu-class {gpu_class}" + (f", selector {selector}" if selector else "")
    _say(f"Listing GPU nodes ({where}) on {ctx}")
    found = n.discover(
        k.list_nodes(api, label_selector=selector, context=ctx),
        k.list_resource_slices(api, context=ctx),
        gpu_class,
    )
    if not found:
        raise UsageError(f"no GPU nodes found ({where})", hint="check --gpu-class and --selector")
    probed = [g for g in found if not g.stranded]
    _say(
        f"Probing {len(probed)} nodes with privileged pods (hostPID, hostNetwork) in namespace "
        f"{n.PROBE_NAMESPACE}, {n.DEFAULT_PARALLEL} at a time, {timeout} each; "
        "every probe pod is deleted afterwards"
    )
    outcomes = n.probe_nodes(api, probed, timeout=seconds, context=ctx, warn=_warn)
    rows = n.assess_nodes(found, outcomes)
    sys.stdout.write(n.table(rows))
    return n.exit_code(rows, min_healthy)


@validate.command
def topology(
    *,
    context: ContextFlag = None,
    preset: str | None = None,
    cluster_queue: str | None = None,
) -> int:
    """Check a ClusterQueue's flavors against the nodes, or a preset's objects (cluster-admin).

    Args:
        preset: Check the queue, topology and priority objects of this preset, and its flavors.
        cluster_queue: The ClusterQueue to check (default taugrid-cq; with --preset, the preset's).
    """
    import os

    from tau.cluster import topology as t
    from tau.intent.presets import load_catalog

    chosen = None
    header: list[str] = []
    if preset:
        catalog = load_catalog(None, os.environ.get("TAU_TOPOLOGY_POLICY"))
        chosen = catalog.find(preset)
        if chosen is None:
            raise UsageError(
                f'--preset "{preset}" is not in the catalog {catalog.source}',
                hint="list the presets with `tau run explain-config --presets`",
            )
    queue = cluster_queue or (chosen.cluster_queue if chosen else t.DEFAULT_CLUSTER_QUEUE)
    _, api, ctx = _connect(context)
    if chosen is not None:
        header = [f"preset: {chosen.name}", f"source: {catalog.source}", f"clusterqueue: {queue}"]
    else:
        header = [f"cluster: {ctx}", f"clusterqueue: {queue}"]
    facts = t.gather(api, queue, with_preset=chosen is not None, context=ctx)
    text, checks = t.report(header, t.evaluate(facts, queue, chosen))
    sys.stdout.write(text)
    return int(ExitCode.INVALID) if any(c.level == "error" for c in checks) else int(ExitCode.OK)
