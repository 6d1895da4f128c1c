"""The text operators read before anything happens: the install plan block, the uninstall plan,
and the dry-run render summary. Pure.

`--set` values are never printed (they may carry credentials); only their keys are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import yaml

from tau.cluster.options import BASELINE_QUEUE_OBJECTS, InstallOptions, UninstallOptions
from tau.cluster.values import components

READINESS = (
    "Kubernetes >= 1.30, controller Deployments available, TauCluster Ready, "
    "baseline ClusterQueue, quota guard"
)


def _yes_no(value: bool) -> str:
    return "yes" if value else "no"


def _rows(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows) + 1
    return "".join(f"  {(k + ':').ljust(width)} {v}\n" for k, v in rows)


def _set_keys(options: InstallOptions) -> str:
    keys = [
        part.split("=", 1)[0]
        for item in (*options.set_values, *options.set_strings)
        for part in item.split(",")
        if "=" in part
    ]
    return ", ".join(keys)


def install_plan(
    options: InstallOptions,
    *,
    helm_version: str,
    context: str | None,
    toggles: Mapping[str, bool],
) -> str:
    """The installation plan block, printed before any helm call."""
    t = options.target
    on_by_default = [v.key.split(".")[0] for v in components() if v.default == "true"]
    opted_in = [
        v.key.split(".")[0] for v in components() if v.default != "true" and toggles.get(v.key)
    ]
    turned_off = [
        v.key.split(".")[0] for v in components() if v.default == "true" and not toggles.get(v.key)
    ]
    defaults = ", ".join(c for c in on_by_default if c not in turned_off) or "none"
    if turned_off:
        defaults += f" (turned off: {', '.join(turned_off)})"
    rows = [
        ("Release", t.release),
        ("Namespace", t.namespace + (" (created if missing)" if options.create_namespace else "")),
        ("Chart", t.chart),
        ("Version", options.version),
        ("Context", "none: offline render" if options.dry_run else (context or "?")),
        ("Helm", f"{helm_version} (timeout {t.timeout} per step)"),
        ("Helm wait", _yes_no(options.wait or options.atomic)),
        (
            "Rollback",
            "on failure" if options.atomic else "no (pass --atomic to roll back a failed upgrade)",
        ),
        ("Defaults", defaults),
        ("Opt-in", ", ".join(opted_in) or "none"),
    ]
    if options.values:
        rows.append(("Values files", ", ".join(options.values)))
    if options.set_values or options.set_strings:
        rows.append(("Overrides", _set_keys(options) + " (values not shown)"))
    if options.dry_run:
        rows.append(("Validation", "skipped: --dry-run renders offline and applies nothing"))
    else:
        rows.append(("Validation", f"{READINESS} (within {t.timeout})"))
    return "TauGrid installation plan\n" + _rows(rows)


def uninstall_plan(options: UninstallOptions, *, helm_version: str, context: str) -> str:
    """The uninstall plan block, printed before anything happens."""
    t = options.target
    queue = ", ".join(f"{kind}/{name}" for kind, name in BASELINE_QUEUE_OBJECTS)
    drain = (
        f"yes: remove {queue} while Kueue still runs"
        if options.drain_queue
        else "no (--drain-queue=false)"
    )
    rows = [
        ("Release", t.release),
        ("Namespace", t.namespace),
        ("Context", context),
        ("Helm", f"{helm_version} (timeout {t.timeout} per step)"),
        ("Drain queue", drain),
        ("Helm wait", _yes_no(options.wait)),
        ("Keep history", _yes_no(options.keep_history)),
        ("Hooks", "skipped (--no-hooks)" if options.no_hooks else "run"),
        ("Mode", "dry run: nothing is changed" if options.dry_run else "apply"),
        (
            "Scope",
            "Helm-owned resources of this release only; PVCs, StorageClasses, Secrets and "
            "user namespaces are never deleted",
        ),
    ]
    return "TauGrid uninstall plan\n" + _rows(rows)


def count_kinds(rendered: str) -> Counter[str]:
    """Objects per kind in a `helm template` stream (comments and empty documents skipped).

    Raises:
        ValueError: the stream is not YAML.
    """
    counts: Counter[str] = Counter()
    for doc in yaml.safe_load_all(rendered):
        if isinstance(doc, dict) and doc.get("kind"):
            if doc["kind"] == "List" and isinstance(doc.get("items"), list):
                counts.update(str(i.get("kind")) for i in doc["items"] if isinstance(i, dict))
            else:
                counts[str(doc["kind"])] += 1
    return counts


def render_summary(counts: Counter[str], options: InstallOptions) -> str:
    """The "TauGrid render summary (nothing was applied)", per-kind counts and a Total line."""
    t = options.target
    lines = [
        "TauGrid render summary (nothing was applied)",
        f"  chart {t.chart} version {options.version}, release {t.release} in {t.namespace}",
    ]
    width = max([len(k) for k in counts] + [len("Total")]) + 1
    for kind in sorted(counts, key=lambda k: (-counts[k], k)):
        lines.append(f"  {(kind + ':').ljust(width)} {counts[kind]}")
    lines.append(f"  {'Total:'.ljust(width)} {sum(counts.values())}")
    return "\n".join(lines) + "\n"
