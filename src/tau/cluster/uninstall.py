"""`tau cluster uninstall`: drain the queue policy while Kueue still runs, then `helm uninstall`.

Performs I/O (runs helm). tau itself deletes nothing: phase 1 is a helm upgrade that turns the
baseline queue off, phase 2 is `helm uninstall`, which removes only what the release owns.
PVCs, StorageClasses, Secrets and user namespaces are never touched by tau.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tau.cluster.helm import Access, Helm, HelmFailed
from tau.cluster.install import display
from tau.cluster.options import BASELINE_QUEUE_OBJECTS, BASELINE_QUEUE_VALUE, UninstallOptions

Say = Callable[[str], None]
_NO_FINALIZERS = '{"metadata":{"finalizers":null}}'


def deployed_chart(status: dict[str, Any] | None) -> tuple[str, str] | None:
    """(chart name, version) of a `helm status -o json` document, or None."""
    if not status:
        return None
    meta = ((status.get("chart") or {}).get("metadata")) or {}
    name, version = meta.get("name"), meta.get("version")
    return (str(name), str(version)) if name and version else None


def drain_args(options: UninstallOptions, version: str) -> list[str]:
    t = options.target
    return [
        "upgrade",
        t.release,
        t.chart,
        "--namespace",
        t.namespace,
        "--version",
        version,
        "--reuse-values",
        "--set",
        f"{BASELINE_QUEUE_VALUE}=false",
        "--wait",
        "--timeout",
        t.timeout,
    ]


def uninstall_args(options: UninstallOptions) -> list[str]:
    t = options.target
    args = [
        "uninstall",
        t.release,
        "--namespace",
        t.namespace,
        "--ignore-not-found",
        "--timeout",
        t.timeout,
    ]
    if options.wait:
        args.append("--wait")
    if options.keep_history:
        args.append("--keep-history")
    if options.no_hooks:
        args.append("--no-hooks")
    return args


def recovery_steps(options: UninstallOptions) -> str:
    """What to do when the drain failed: the queue objects still hold workloads or finalizers."""
    t = options.target
    patches = "\n".join(
        f"       kubectl patch {kind} {name} --type=merge -p '{_NO_FINALIZERS}'"
        for kind, name in BASELINE_QUEUE_OBJECTS
    )
    return (
        "Recovery: the queue policy was not drained; nothing was uninstalled.\n"
        "  1. delete the jobs and Kueue workloads still using the queues:\n"
        "       kubectl get workloads.kueue.x-k8s.io --all-namespaces\n"
        "       kubectl delete jobs,rayjobs.ray.io -n <namespace> <name>\n"
        "       kubectl delete workloads.kueue.x-k8s.io -n <namespace> <name>\n"
        "  2. if a queue object stays Terminating, remove its finalizers\n"
        "     (only once no workload uses it):\n"
        f"{patches}\n"
        f"  3. rerun: tau cluster uninstall --release {t.release} --namespace {t.namespace} --yes\n"
        "     (or add --drain-queue=false to skip the drain)"
    )


def uninstall(options: UninstallOptions, helm: Helm, access: Access, say: Say) -> int:
    """Run the uninstall flow after the plan block was printed; returns the exit code."""
    t = options.target
    timeout = helm.kill_after(t.timeout_seconds)
    say(f'Checking release "{t.release}" in {t.namespace} (helm status)')
    deployed = deployed_chart(helm.status(t.release, t.namespace, access))
    if deployed is None:
        say(f'  release "{t.release}" not found in {t.namespace}: nothing to drain')
    else:
        say(f"  deployed chart {deployed[0]} {deployed[1]}")
    if not options.drain_queue:
        say("Phase 1 (drain queue policy): skipped (--drain-queue=false)")
    elif deployed is None:
        say("Phase 1 (drain queue policy): skipped (no deployed release)")
    elif deployed[0] != t.chart_name:
        say(
            f'Phase 1 (drain queue policy): skipped: the deployed chart is "{deployed[0]}", '
            f'not "{t.chart_name}" (--chart {t.chart})'
        )
    else:
        args = drain_args(options, deployed[1])
        say(
            "Phase 1 (drain queue policy): removing the baseline queue objects while Kueue still "
            f"runs, pinned to the deployed chart version {deployed[1]}:\n  $ {display(helm, args)}"
        )
        if options.dry_run:
            say("  (dry run: not run)")
        else:
            try:
                helm.run(
                    args,
                    access=access,
                    timeout=timeout,
                    what="draining the queue policy (helm upgrade)",
                )
            except HelmFailed as exc:
                say(recovery_steps(options))
                raise exc
    args = uninstall_args(options)
    say(
        "Phase 2 (uninstall): removing the Helm-owned resources of the release:\n"
        f"  $ {display(helm, args)}"
    )
    if options.dry_run:
        say("  (dry run: not run; nothing was changed)")
        return 0
    helm.run(args, access=access, timeout=timeout, what="helm uninstall")
    say(
        f'Release "{t.release}" uninstalled from {t.namespace}. Not touched: PVCs, StorageClasses, '
        "Secrets, user namespaces (TauGrid never owns them)."
    )
    return 0
