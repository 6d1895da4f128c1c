"""`tau cluster install`: plan, bootstrap pass, main upgrade, readiness, next steps.

Performs I/O (runs helm; the readiness report reads the cluster). Each step says what it will
do before it runs. Output goes through `say`, so the CLI stays the only layer that prints.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tau.cluster.checks import Check, has_errors, summary
from tau.cluster.helm import Access, Helm, HelmFailed
from tau.cluster.options import BASELINE_QUEUE_VALUE, InstallOptions
from tau.cluster.plan import count_kinds, render_summary
from tau.errors import UsageError

Say = Callable[[str], None]

NEXT_STEPS = """Next:
  tau cluster validate nodes --gpu-class <class> --min-healthy <n>   # privileged probe pods
  tau cluster validate topology        # the baseline ClusterQueue taugrid-cq; or --preset <preset>
  create TauWorkspaces through reviewed Helm/GitOps/IaC, then: tau workspace check <name>
"""


def display(helm: Helm, args: list[str]) -> str:
    """The helm command line to print: `--set` values hidden (they may carry credentials)."""
    shown: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next:
            shown.append(",".join(p.split("=", 1)[0] + "=<hidden>" for p in arg.split(",")))
            hide_next = False
            continue
        shown.append(arg)
        hide_next = arg in ("--set", "--set-string")
    return helm.command(shown)


def upgrade_args(options: InstallOptions, helm: Helm, *, bootstrap: bool) -> list[str]:
    """`helm upgrade --install` for the bootstrap pass or the main pass (no access flags)."""
    t = options.target
    args = ["upgrade", "--install", t.release, t.chart, "--namespace", t.namespace]
    args += ["--version", options.version, "--timeout", t.timeout]
    if options.create_namespace:
        args.append("--create-namespace")
    if options.dependency_update:
        args.append("--dependency-update")
    if bootstrap or options.wait:
        args.append("--wait")
    if options.atomic:
        args.append(helm.rollback_flag())
    if not bootstrap:
        # Values come from the chart defaults plus this command's flags only, never from
        # whatever an earlier `helm upgrade --set` left behind.
        args.append("--reset-values")
        args += helm.apply_flags()
    args += options.value_args()
    if bootstrap:
        # Last, so it wins over the operator's values: the queue objects need Kueue's webhooks,
        # which are only serving once this pass has waited for the controllers.
        args += ["--set", f"{BASELINE_QUEUE_VALUE}=false"]
    return args


def template_args(options: InstallOptions) -> list[str]:
    """`helm template --include-crds`: the offline render of --dry-run."""
    t = options.target
    args = [
        "template",
        t.release,
        t.chart,
        "--namespace",
        t.namespace,
        "--version",
        options.version,
    ]
    args.append("--include-crds")
    if options.dependency_update:
        args.append("--dependency-update")
    return args + options.value_args()


def dry_run(options: InstallOptions, helm: Helm, say: Say) -> int:
    """Render offline and print the summary; nothing reaches a cluster."""
    args = template_args(options)
    say(f"Render: {display(helm, args)} (offline: no kubeconfig, no cluster)")
    rendered = helm.run(
        args,
        access=None,
        timeout=helm.kill_after(options.target.timeout_seconds),
        what="helm template",
    ).stdout
    try:
        counts = count_kinds(rendered)
    except ValueError as exc:
        raise HelmFailed(f"helm template printed output that is not YAML: {exc}") from None
    say(render_summary(counts, options).rstrip("\n"))
    return 0


def refuse_other_namespace(releases: list[dict[str, Any]], options: InstallOptions) -> bool:
    """Whether the release already exists in `--namespace`; refuses one found elsewhere.

    Raises:
        UsageError: the release exists in a different namespace.
    """
    t = options.target
    elsewhere = sorted(
        {str(r.get("namespace")) for r in releases if r.get("namespace") != t.namespace}
    )
    if elsewhere:
        raise UsageError(
            f'release "{t.release}" already exists in namespace "{elsewhere[0]}", '
            f'not in --namespace "{t.namespace}"; tau will not install a second copy',
            hint=f"pass --namespace {elsewhere[0]} to upgrade that release, or uninstall it first "
            f"(tau cluster uninstall --release {t.release} --namespace {elsewhere[0]} --yes)",
        )
    return bool(releases)


def install(
    options: InstallOptions,
    helm: Helm,
    access: Access,
    say: Say,
    readiness: Callable[[float], list[Check]],
) -> int:
    """Run the install flow after the plan block was printed; returns the exit code.

    Args:
        readiness: runs the readiness report, waiting up to the given seconds.
    """
    t = options.target
    timeout = helm.kill_after(t.timeout_seconds)
    say(f'Checking for release "{t.release}" in any namespace (helm list --all-namespaces)')
    exists = refuse_other_namespace(helm.release(t.release, access), options)
    if exists:
        say(f'  release "{t.release}" exists in {t.namespace}: upgrading it (no bootstrap pass)')
    else:
        args = upgrade_args(options, helm, bootstrap=True)
        say(
            f'Bootstrap: release "{t.release}" is not installed yet; installing CRDs and '
            "controllers first, without the baseline queue, and waiting for them:\n"
            f"  $ {display(helm, args)}"
        )
        helm.run(
            args, access=access, timeout=timeout, what="the bootstrap pass (helm upgrade --install)"
        )
    args = upgrade_args(options, helm, bootstrap=False)
    say(
        "Install: applying the chart with this command's values only (--reset-values):\n"
        f"  $ {display(helm, args)}"
    )
    helm.run(args, access=access, timeout=timeout, what="the main pass (helm upgrade --install)")
    say(f"Readiness: checking the installation (waiting up to {t.timeout})")
    checks = readiness(t.timeout_seconds)
    for check in checks:
        say(check.line())
    say(summary(checks))
    if has_errors(checks):
        say(
            "The release is installed but not ready; fix the errors above, then run "
            f"`tau cluster validate installation --release {t.release} --namespace {t.namespace}`"
        )
        return 1
    say(NEXT_STEPS.rstrip("\n"))
    return 0
