"""Whether tau may delete the workload it finds under a run's name: only one tau created.

Pure. `tau run cancel`, `tau run resume` and the retry loop delete by name, and a name is not
an owner: a Job or RayJob of that name may be another tool's (a pipeline, a notebook) or
another user's. tau marks everything it submits with `tau.azure.com/managed-by: tau`; an
object without that label is refused, naming what its metadata says it is, so tau never
deletes work that is not its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tau.errors import ExitCode, TauError
from tau.k8s import meta

#: What each deleting verb is about to do, for the refusal's first words.
_ACTIONS = {
    "cancel": "cancel",
    "resume": "delete for resume",
    "retry": "delete for retry",
}
#: How many of a foreign object's labels the refusal quotes (sorted; the rest are counted).
_LABELS_SHOWN = 6


class ForeignWorkload(TauError):
    """The run's name belongs to a Job or RayJob tau did not create; nothing was deleted.

    Exit 1: the cluster answered; the name the user gave is not a tau run.
    """

    exit_code = ExitCode.INVALID

    def __init__(self, verb: str, kind: str, obj: Mapping[str, Any]) -> None:
        md = obj.get("metadata") or {}
        namespace, name = md.get("namespace", ""), md.get("name", "")
        super().__init__(
            f"refusing to {_ACTIONS.get(verb, verb)} {kind} {namespace}/{name}: tau did not "
            f"create it ({identity(obj)}); nothing was deleted",
            hint="tau deletes only the runs it submitted: give your run another name, or ask "
            "whoever created that object to remove it",
        )
        self.kind = kind
        self.namespace = namespace
        self.name = name


def is_tau_owned(obj: Mapping[str, Any]) -> bool:
    """Whether tau created it: it carries `tau.azure.com/managed-by: tau`."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels.get(meta.LABEL_MANAGED_BY) == meta.MANAGED_BY_VALUE


def identity(obj: Mapping[str, Any]) -> str:
    """What an object's metadata says about who made it: tau's label (or its absence), the
    managed-by markers other tools set, its owners and its labels.
    """
    md = obj.get("metadata") or {}
    labels: Mapping[str, str] = md.get("labels") or {}
    tau_mark = labels.get(meta.LABEL_MANAGED_BY)
    parts = [
        f"{meta.LABEL_MANAGED_BY}={tau_mark}"
        if tau_mark is not None
        else f"no {meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE} label"
    ]
    if meta.APP_MANAGED_BY in labels:
        parts.append(f"{meta.APP_MANAGED_BY}={labels[meta.APP_MANAGED_BY]}")
    managed_by = (obj.get("spec") or {}).get("managedBy")
    if managed_by:
        parts.append(f"spec.managedBy={managed_by}")
    owners = [f"{o.get('kind', '?')}/{o.get('name', '?')}" for o in md.get("ownerReferences") or []]
    if owners:
        parts.append("owned by " + ", ".join(owners))
    rest = sorted(k for k in labels if k not in (meta.LABEL_MANAGED_BY, meta.APP_MANAGED_BY))
    if rest:
        shown = ", ".join(f"{k}={labels[k]}" for k in rest[:_LABELS_SHOWN])
        more = f", +{len(rest) - _LABELS_SHOWN} more" if len(rest) > _LABELS_SHOWN else ""
        parts.append(f"labels: {shown}{more}")
    elif not labels:
        parts.append("no labels")
    return "; ".join(parts)


def choose(
    verb: str, found: Sequence[tuple[str, Mapping[str, Any] | None]]
) -> tuple[str, Mapping[str, Any]] | None:
    """The (kind, object) tau may delete among the objects found under the run's name, in
    the order given; None when nothing was found.

    An object tau did not create is skipped when tau's own run is beside it (KubeRay's
    submitter Job of a RayJob, say) and refused when it is all there is.

    Raises:
        ForeignWorkload: objects exist under the name, none of them tau's.
    """
    present = [(kind, obj) for kind, obj in found if obj is not None]
    for kind, obj in present:
        if is_tau_owned(obj):
            return kind, obj
    if present:
        kind, obj = present[0]
        raise ForeignWorkload(verb, kind, obj)
    return None
