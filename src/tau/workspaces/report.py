"""Text and JSON renderings of TauWorkspaces for `tau workspace list|status|check`. Pure."""

from __future__ import annotations

import json
from typing import Any

from tau.workspaces.readiness import WorkspaceView, view


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = [
        "   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)


def _dash(value: str) -> str:
    return value or "-"


def list_text(objs: list[dict[str, Any]]) -> str:
    """`NAME PHASE NAMESPACE QUEUE`, or `no workspaces found`."""
    if not objs:
        return "no workspaces found"
    rows = [
        [w.name, _dash(w.phase), _dash(w.namespace), _dash(w.queue)]
        for w in (view(o) for o in objs)
    ]
    return _table(["NAME", "PHASE", "NAMESPACE", "QUEUE"], rows)


def status_text(obj: dict[str, Any]) -> str:
    """The `Workspace: <name>` block with fields, conditions and optional quota."""
    w = view(obj)
    lines = [
        f"Workspace: {w.name}",
        f"  phase:          {_dash(w.phase)}",
        f"  namespace:      {_dash(w.namespace)}",
        f"  queue:          {_dash(w.queue)}",
        f"  serviceAccount: {_dash(w.service_account)}",
    ]
    if w.cluster_queue:
        lines.append(f"  clusterQ:       {w.cluster_queue}")
    if w.output_root:
        lines.append(f"  outputRoot:     {w.output_root}")
    if w.experiments_store or w.experiments_secret or w.offload_image:
        # Where metrics offload delivers (spec.experiments); a password is never printed.
        lines.append(f"  experiments:    store {_dash(_store_shown(w.experiments_store))}")
        lines.append(f"                  credentialsSecret {_dash(w.experiments_secret)}")
        lines.append(f"                  offloadImage {_dash(w.offload_image)}")
    lines.append(f"  generation:     {w.generation} (observed {w.observed_generation})")
    lines.append("Conditions:")
    rows = [[c.type, c.status, _dash(c.reason), _dash(c.message)] for c in w.conditions]
    cond = _table(["TYPE", "STATUS", "REASON", "MESSAGE"], rows) if rows else "(none reported)"
    lines += ["  " + line for line in cond.splitlines()]
    quota = (obj.get("status") or {}).get("quota") or []
    if quota:
        qrows = [
            [
                str(q.get(k, "") or "-")
                for k in ("resource", "flavor", "nominal", "admitted", "pending")
            ]
            for q in quota
        ]
        lines.append("Quota:")
        table = _table(["RESOURCE", "FLAVOR", "NOMINAL", "ADMITTED", "PENDING"], qrows)
        lines += ["  " + line for line in table.splitlines()]
    return "\n".join(lines)


def _store_shown(store: str) -> str:
    """The store as it can be printed: a URL's password (which runs refuse) masked."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(store) if "://" in store else None
        password = parts.password if parts else None
    except ValueError:
        return "(unparsable URL)"
    if parts is None or password is None:
        return store
    return store.replace(f":{password}@", ":***@", 1)


def resolved(w: WorkspaceView) -> dict[str, str]:
    return {"namespace": w.namespace, "localQueue": w.queue, "serviceAccount": w.service_account}


def status_json(obj: dict[str, Any]) -> str:
    """The whole object plus `resolved:{namespace,localQueue,serviceAccount}`."""
    return json.dumps({**obj, "resolved": resolved(view(obj))}, indent=2, sort_keys=True)


def list_json(objs: list[dict[str, Any]]) -> str:
    return json.dumps(
        {"items": [{**o, "resolved": resolved(view(o))} for o in objs]}, indent=2, sort_keys=True
    )
