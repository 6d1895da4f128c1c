"""Where a run, group or experiment mention on a Stellar page points. Pure.

The served page links every mention to its own Stellar page (`/stellar?target=<id>`). The
offline report (`stellar -o html`, opened from disk) has no server to ask, so its mentions are
anchors within the page (a run's detail card, a group's row in the experiment panel) and, where
the page holds no such place, text that names the `taugrid-portal` command that shows it.

Ids are hostile (`<script>`, spaces, `&`, unicode): URLs quote every byte outside the unreserved
set, and in-page anchors use a digest of the id, never the id itself, so an id can neither break
out of an attribute nor collide with the page's own element ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlparse

STELLAR_PATH = "/stellar"
ARTIFACT_PATH = "/api/v2/stellar/artifact"


#: What a link's `kind=` asks the server to open; the snapshot's `target_type` for each.
KINDS = {"run": "run", "group": "run_group", "experiment": "experiment"}


def target_url(target: str, kind: str = "", **params: str) -> str:
    """The served Stellar page of `target` (run group, run or experiment id).

    `kind` (run, group or experiment) says which one: ids of different kinds may be equal (a
    run named like its group), and a bare `target=` resolves a group first.
    """
    extra = "".join(f"&{k}={quote(v, safe='')}" for k, v in params.items() if v)
    which = f"&kind={kind}" if kind else ""
    return f"{STELLAR_PATH}?target={quote(str(target), safe='')}{which}{extra}"


def anchor(value: str, kind: str = "run") -> str:
    """An in-page element id for a run or group: stable, unique per id, always a valid id."""
    return f"{kind}-{hashlib.sha256(str(value).encode()).hexdigest()[:12]}"


def artifact_url(target: str, artifact_id: str, target_type: str = "") -> str:
    """The served download of one artifact of `target` (the v2 API's artifact fetch); the
    snapshot's `target_type` names the kind, as page links do.
    """
    kind = next((k for k, t in KINDS.items() if t == target_type), "")
    return (
        f"{ARTIFACT_PATH}?target={quote(str(target), safe='')}"
        + (f"&kind={kind}" if kind else "")
        + f"&artifact={quote(str(artifact_id), safe='')}"
    )


def is_local_uri(uri: str) -> bool:
    """A store-relative path or file:// URI (the only artifacts this server can hand out)."""
    return bool(uri) and urlparse(uri).scheme in ("", "file")


def breadcrumbs(doc: Mapping[str, Any]) -> list[dict[str, str]]:
    """The breadcrumbs (experiment › group › run) of the snapshot's target, as deep as it goes.

    Each crumb is `{kind, id, label}`; the last one is the page itself. A group or run page
    names its experiment from the experiment row, else from its runs' `experiment_id`.
    """
    kind = str(doc.get("target_type") or "")
    target = str(doc.get("target") or "")
    runs: Sequence[Mapping[str, Any]] = doc.get("runs") or ()
    experiment = doc.get("experiment") or {}
    exp_id = str(experiment.get("experiment_id") or "") or next(
        (str(r.get("experiment_id")) for r in runs if r.get("experiment_id")), ""
    )
    crumbs: list[dict[str, str]] = []
    if exp_id:
        label = str(experiment.get("name") or exp_id)
        crumbs.append({"kind": "experiment", "id": exp_id, "label": label})
    if kind == "experiment":
        if not crumbs:
            crumbs.append({"kind": "experiment", "id": target, "label": target})
        return crumbs
    if kind == "run_group":
        crumbs.append({"kind": "group", "id": target, "label": target})
        return crumbs
    if kind == "run":
        run = next((r for r in runs if str(r.get("run_id")) == target), None)
        group = str((run or {}).get("run_group_id") or "")
        if group:
            crumbs.append({"kind": "group", "id": group, "label": group})
        crumbs.append({"kind": "run", "id": target, "label": target})
    return crumbs
