"""`tau run --diff --live`: what a submit would create, against the run's objects on the cluster.

Performs I/O (the Kubernetes API) in `sides` only; the normalization is pure and tested with
recorded objects. The submit side is the server's answer to a dry-run create (`dryRun=All`),
so the API server's defaults and the admission webhooks' mutations are on both sides alike.
A dry-run create of a name that exists is refused (409), so each object goes under a scratch
name of the same length and the answer is renamed back.

Left out of the comparison, as the server's and not the config's:
  - status, and the metadata the server keeps (uid, resourceVersion, generation,
    creationTimestamp, managedFields, ownerReferences, deletion fields);
  - every field the live object's managedFields give to another manager than the one that
    created it (Kueue unsuspending the workload and injecting its flavor's node selector, a
    controller's labels), unless that creating manager still owns it too;
  - `spec.suspend` of a Kueue-queued workload: tau submits it suspended and Kueue's admission
    resumes it. KubeRay's RayJob drops a false suspend altogether, so no manager owns the
    field any more and managedFields cannot tell it is Kueue's;
  - the object's uid wherever it is copied (a Job's controller-uid labels and selector);
  - the annotations that record one submission (tau.review.differ.IGNORED_ANNOTATIONS).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from tau.errors import ClusterError, ConfigError
from tau.k8s.meta import KUEUE_QUEUE_NAME
from tau.review.model import Review, Side, target_diff
from tau.review.targets import Entry

LIVE = "live"
SUBMIT = "submit"
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "ownerReferences",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
UID = "<uid>"


def scratch_name(name: str) -> str:
    """A name of the same length (at least 12) that no run uses: `t` and hex."""
    token = "t" + hashlib.sha256(f"tau-review/{name}".encode()).hexdigest()
    return token[: max(len(name), 12)]


def _replace_strings(node: Any, old: str, new: str) -> Any:
    if isinstance(node, str):
        return node.replace(old, new)
    if isinstance(node, dict):
        return {k: _replace_strings(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_strings(v, old, new) for v in node]
    return node


def _replace_exact(node: Any, values: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return values.get(node, node)
    if isinstance(node, dict):
        return {k: _replace_exact(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_exact(v, values) for v in node]
    return node


def _matches(key: str, item: Any) -> bool:
    """Whether a list item is the one a managedFields `k:{...}` or `v:...` key names."""
    wanted = json.loads(key[2:])
    if key.startswith("v:"):
        return bool(item == wanted)
    return isinstance(item, dict) and all(item.get(k) == v for k, v in wanted.items())


def _strip(node: Any, theirs: Mapping[str, Any], ours: Mapping[str, Any]) -> None:
    """Remove from `node` (in place) the fields of the fieldsV1 set `theirs` that `ours` does
    not own too. A field they own whole (a leaf, or a node they created: ".") goes entirely.
    """
    for key, sub in theirs.items():
        if key == ".":
            continue
        mine = ours.get(key)
        whole = mine is None and (not sub or "." in sub)
        if key.startswith("f:") and isinstance(node, dict) and key[2:] in node:
            if whole:
                del node[key[2:]]
            elif sub:
                _strip(node[key[2:]], sub, mine or {})
        elif key[:2] in ("k:", "v:", "i:") and isinstance(node, list):
            if key.startswith("i:"):
                index = int(key[2:])
                hits = [index] if 0 <= index < len(node) else []
            else:
                hits = [i for i, item in enumerate(node) if _matches(key, item)][:1]
            for i in hits:
                if whole:
                    del node[i]
                elif sub:
                    _strip(node[i], sub, mine or {})


def _merged(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """The union of several fieldsV1 sets."""
    out: dict[str, Any] = {}

    def merge(into: dict[str, Any], more: Mapping[str, Any]) -> None:
        for key, sub in more.items():
            merge(into.setdefault(key, {}), sub or {})

    for entry in entries:
        merge(out, entry.get("fieldsV1") or {})
    return out


def _bare(obj: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in obj.items() if k != "status"}
    md = {k: v for k, v in (out.get("metadata") or {}).items() if k not in SERVER_METADATA}
    out["metadata"] = md
    return out


def normalize(
    live: dict[str, Any] | None, dry: dict[str, Any], scratch: str, name: str
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(live, dry-run answer) made comparable, as the module docstring lists. Pure.

    `dry` is the answer to the create of the object renamed to `scratch`; every string of it
    reads `name` again.
    """
    dry = _replace_strings(copy.deepcopy(dry), scratch, name)
    dry["metadata"]["name"] = name
    if live is None:
        return None, _bare(_replace_exact(dry, {dry["metadata"].get("uid", UID): UID}))
    live = copy.deepcopy(live)
    creators = {
        e.get("manager") for e in dry["metadata"].get("managedFields") or [] if e.get("manager")
    }
    fields = live["metadata"].get("managedFields") or []
    main = [e for e in fields if not e.get("subresource")]
    theirs = _merged([e for e in main if e.get("manager") not in creators])
    ours = _merged([e for e in main if e.get("manager") in creators])
    uids = {live["metadata"].get("uid", UID): UID, dry["metadata"].get("uid", UID): UID}
    out = []
    for obj in (live, dry):
        _strip(obj, theirs, ours)
        _drop_admission_switch(obj)
        out.append(_bare(_replace_exact(obj, uids)))
    return out[0], out[1]


def _drop_admission_switch(obj: dict[str, Any]) -> None:
    """Kueue's admission flips spec.suspend of a queued workload: not the config's to compare."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    spec = obj.get("spec")
    if KUEUE_QUEUE_NAME in labels and isinstance(spec, dict):
        spec.pop("suspend", None)


def _scratch(document: dict[str, Any], scratch: str) -> dict[str, Any]:
    body = copy.deepcopy(document)
    body["metadata"]["name"] = scratch
    return body


def _owned_by(obj: Mapping[str, Any], workloads: set[tuple[str, str]]) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return any((r.get("kind"), r.get("name")) in workloads for r in refs)


def leftovers(api: Any, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's live objects that tau created and the render no longer has: an older
    config's headless Service, Secret or SecretProviderClass, or the other workload kind.

    The run's objects are those of the kinds tau creates with tau's labels and this run's id
    (`tau.azure.com/run-id`), or owned by its workload (a Secret and a SecretProviderClass
    carry no run id). A kind the cluster does not serve, or that the caller may not list (a
    researcher may create Secrets but not list them), has nothing to show.
    """
    from tau.k8s import meta
    from tau.k8s.kinds import BY_KIND
    from tau.kube import resources

    workloads = [d for d in documents if d["kind"] in ("Job", "RayJob")]
    if not workloads:
        return []
    ns = workloads[0]["metadata"].get("namespace")
    owners = {(d["kind"], d["metadata"]["name"]) for d in workloads}
    run_ids = {
        (d["metadata"].get("labels") or {}).get(meta.LABEL_RUN_ID) or d["metadata"]["name"]
        for d in workloads
    }
    rendered = {(d["kind"], d["metadata"]["name"]) for d in documents}
    tau = f"{meta.LABEL_MANAGED_BY}={meta.MANAGED_BY_VALUE}"
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for kind, resource in BY_KIND.items():
        selectors = [f"{tau},{meta.LABEL_RUN_ID}={run_id}" for run_id in sorted(run_ids)]
        if kind in ("Secret", "SecretProviderClass"):
            selectors = [tau]
        for selector in selectors:
            try:
                items = resources.list_items(
                    api, resource, namespace=ns, selector=selector, missing_ok=True
                )
            except ClusterError as exc:
                if exc.status == 403:
                    break
                raise
            for obj in items:
                key = (kind, str((obj.get("metadata") or {}).get("name", "")))
                if key in rendered or key in found:
                    continue
                if selector == tau and not _owned_by(obj, owners):
                    continue
                version = f"{resource.group}/{resource.version}" if resource.group else "v1"
                found[key] = {"apiVersion": version, "kind": kind, **obj}
    return [_bare(found[key]) for key in sorted(found)]


def sides(api: Any, documents: list[dict[str, Any]]) -> tuple[Side, Side]:
    """(live side, submit side) of one run's rendered `documents` (namespace resolved).

    The live side is absent when none of the run's objects exists; it also holds the run's
    objects an older config created that the render no longer has (they show as removed).
    A dry-run the server refuses (a webhook, a schema) is the submit side's error.

    Raises:
        ClusterError: the live objects cannot be read.
    """
    from tau.k8s.kinds import BY_KIND
    from tau.kube import resources

    lives: list[dict[str, Any]] = []
    dries: list[dict[str, Any]] = []
    for doc in documents:
        kind, name = doc["kind"], doc["metadata"]["name"]
        ns = doc["metadata"].get("namespace")
        live = resources.find(api, BY_KIND[kind], name, namespace=ns)
        scratch = scratch_name(name)
        try:
            dry = resources.create(
                api, BY_KIND[kind], _scratch(doc, scratch), namespace=ns, dry_run=True
            )
        except ClusterError as exc:
            return Side(lives or None), Side(error=f"{kind}/{name}: {exc.format()}")
        live_doc, dry_doc = normalize(live, dry, scratch, name)
        if live_doc is not None:
            lives.append(live_doc)
        dries.append(dry_doc)
    lives.extend(leftovers(api, documents))
    return Side(lives or None), Side(dries)


#: (entry) → the run's rendered documents for a real submit, and the API client to send them
#: with; raises TauError when the config does not render (the CLI builds it from its flags).
Render = Callable[[Entry], tuple[Any, list[dict[str, Any]]]]


def review(entries: list[Entry], render: Render) -> Review:
    """Each target's live objects against what a submit would create now."""
    result = Review(LIVE, SUBMIT)
    for entry in entries:
        try:
            api, documents = render(entry)
        except ConfigError as exc:
            failed = Side(error=exc.format())
            result.targets.append(target_diff(entry.label, Side(), failed, (LIVE, SUBMIT)))
            continue
        live, submit = sides(api, documents)
        result.targets.append(target_diff(entry.label, live, submit, (LIVE, SUBMIT)))
    return result
