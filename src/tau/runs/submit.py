"""Create a rendered run on the cluster: create semantics, idempotent recovery, server dry-run.

Performs I/O (the Kubernetes API, through the official client passed in). The objects sent
are the ones `--dry-run=client` prints, with the namespace and queue resolved and the
submission id stamped; nothing is re-rendered here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from tau.errors import ClusterError
from tau.k8s import meta
from tau.k8s.kinds import BY_KIND


@dataclass(frozen=True)
class SubmitResult:
    """What the cluster holds after a submit (or would hold, for a server dry-run)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    recovered: bool = False


def _stamp(doc: dict[str, Any], submission_id: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    out["metadata"].setdefault("annotations", {})[meta.ANNOTATION_SUBMISSION_ID] = submission_id
    return out


WORKLOAD_KINDS = ("Job", "RayJob")


def _workload_first(documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Job or RayJob goes first so the objects beside it (its headless Service, a managed
    workflow's Secret and SecretProviderClass) can be owned by it and go when it goes.
    """
    return sorted(documents, key=lambda d: d["kind"] not in WORKLOAD_KINDS)


def _owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "blockOwnerDeletion": True,
    }


def submit(
    api_client: Any,
    documents: list[dict[str, Any]],
    *,
    submission_id: str,
    server_dry_run: bool = False,
) -> SubmitResult:
    """Create the run's objects.

    Args:
        api_client: a `kubernetes.client.ApiClient` for the target cluster.
        documents: the rendered objects with namespace and queue resolved.
        submission_id: stamped as an annotation; a retry of the same submission recovers.
        server_dry_run: send `dryRun=All` and return the server's answer, persisting nothing.

    Raises:
        ClusterError: the run exists from another submission, or the API refused.
    """
    from tau.kube import resources

    created: list[dict[str, Any]] = []
    # Objects this call made (not recovered ones): a failed submit removes them again.
    made: list[dict[str, Any]] = []
    owner: dict[str, Any] | None = None
    recovered = False
    for doc in _workload_first(documents):
        body = _stamp(doc, submission_id)
        kind, name, ns = doc["kind"], doc["metadata"]["name"], doc["metadata"]["namespace"]
        if kind not in WORKLOAD_KINDS and owner is not None and owner["metadata"].get("uid"):
            # Owned by the workload, so deleting it (or its TTL) removes these too.
            body["metadata"]["ownerReferences"] = [_owner_reference(owner)]
        try:
            obj = resources.create(
                api_client, BY_KIND[kind], body, namespace=ns, dry_run=server_dry_run
            )
            if not server_dry_run:
                made.append(obj)
        except ClusterError as exc:
            if exc.status != 409:
                _roll_back(api_client, made)
                raise
            try:
                obj = _recover(api_client, kind, ns, name, submission_id)
            except ClusterError:
                _roll_back(api_client, made)
                raise
            recovered = True
        created.append(obj)
        if kind in WORKLOAD_KINDS:
            owner = obj
    return SubmitResult(created, recovered)


def _roll_back(api_client: Any, made: list[dict[str, Any]]) -> None:
    """Delete what a failed submit created, newest first, so no Secret outlives its run.

    Best effort: the error that stopped the submit is the one the user must see.
    """
    from tau.kube import resources

    for obj in reversed(made):
        meta_ = obj.get("metadata", {})
        try:
            resources.delete(
                api_client,
                BY_KIND[obj["kind"]],
                meta_.get("name", ""),
                namespace=meta_.get("namespace"),
                propagation="Background",
            )
        except ClusterError:
            continue


def _recover(
    api_client: Any, kind: str, namespace: str, name: str, submission_id: str
) -> dict[str, Any]:
    """On AlreadyExists: the same submission is a no-op; another one is a conflict."""
    from tau.kube import resources

    existing = resources.get(api_client, BY_KIND[kind], name, namespace=namespace)
    theirs = (existing.get("metadata", {}).get("annotations") or {}).get(
        meta.ANNOTATION_SUBMISSION_ID
    )
    if theirs == submission_id:
        return existing
    if not theirs:
        # Not a tau submission at all: cancel or resume would act on someone else's object.
        raise ClusterError(
            f"{kind} {namespace}/{name} already exists and tau did not submit it "
            f"(no {meta.ANNOTATION_SUBMISSION_ID} annotation)",
            status=409,
            hint=f"give the run another name (`name:` in its config): that {kind} is not a "
            "tau run, so it is not tau's to replace, cancel or resume",
        )
    raise ClusterError(
        f"run {namespace}/{name} already exists from another submission "
        f"({kind} {name}, submission-id {theirs})",
        status=409,
        hint=f"choose a distinct run name, or `tau run cancel {name} -n {namespace}` first, or "
        f"`tau run resume {name} --config PATH` to continue it",
    )
