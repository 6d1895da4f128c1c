"""The thread-safe object store: metadata stamping, optimistic concurrency and the watch history.

All state lives behind one re-entrant lock whose condition variable wakes watch streams when a
change is recorded. Stored objects are never mutated in place: every write stores a fresh deep
copy, so a snapshot handed to a watch event stays valid after later writes.

Semantics chosen to match kube-apiserver, and the deliberate simplifications:

* ``resourceVersion`` is one global counter shared by every kind, rendered as a string.
* ``generation`` starts at 1 and grows when anything outside ``metadata``/``status`` changes.
* For kinds with a ``status`` subresource, writes to the main resource keep the stored status and
  ``/status`` writes change only the status, as the real server does. HTTP creates drop status.
* PUT without ``metadata.resourceVersion`` is an unconditional update for built-in types and a
  422 for custom resources, as kube-apiserver does.
* Writing an identical object is a no-op that keeps the resourceVersion (no event is emitted).
* Deleting an object that still has finalizers only sets ``deletionTimestamp``; it disappears once
  an update clears the finalizers.
* Garbage collection is synchronous: with ``Background``/``Foreground`` propagation the dependents
  (objects whose ``ownerReferences`` name the deleted uid) are deleted in the same call, ``Orphan``
  strips the owner reference instead. ``batch/v1`` Jobs default to ``Orphan``, like the real API,
  every other kind to ``Background``. Deleting a namespace deletes everything in it.
* Creating an object in a missing namespace is allowed unless ``require_namespaces`` is set, in
  which case it is the real server's 404.
"""

from __future__ import annotations

import copy
import hashlib
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from . import errors
from .kinds import KindRegistry, ResourceKind
from .patching import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    json_patch,
    merge_patch,
)

Clock = Callable[[], datetime]
Predicate = Callable[[dict[str, Any]], bool]
StoreKey = tuple[str, str]  # (group, plural): versions of one resource share storage
ObjectKey = tuple[str, str]  # (namespace or "", name)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# kube-apiserver's generateName alphabet leaves out vowels and look-alike characters.
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public")


def utc_now() -> datetime:
    return datetime.now(UTC)


#: The key suffix of a container's previous instance log (`?previous=true`).
PREVIOUS = "\0previous"


@dataclass(frozen=True)
class WatchEvent:
    """One recorded change; ``previous`` lets filtered watches turn edits into ADDED/DELETED."""

    resource_version: int
    type: str
    store_key: StoreKey
    obj: dict[str, Any]
    previous: dict[str, Any] | None


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    # What generation tracks: everything but bookkeeping, metadata and status.
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _without_rv(obj: dict[str, Any]) -> dict[str, Any]:
    clone = dict(obj)
    clone["metadata"] = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k != "resourceVersion"
    }
    return clone


class Store:
    """In-memory objects of every registered kind plus a bounded history of change events."""

    def __init__(
        self,
        kinds: KindRegistry,
        clock: Clock = utc_now,
        history_limit: int = 1000,
        require_namespaces: bool = False,
    ) -> None:
        self.kinds = kinds
        self.clock = clock
        self.require_namespaces = require_namespaces
        self._lock = threading.RLock()
        self.changed = threading.Condition(self._lock)
        self._objects: dict[StoreKey, dict[ObjectKey, dict[str, Any]]] = {}
        self._rv = 0
        self._history: deque[WatchEvent] = deque()
        self._history_limit = history_limit
        # Watches may resume from any rv >= this; older ones get 410 Expired.
        self._compacted_rv = 0
        self._serial = 0
        self._pod_logs: dict[tuple[str, str, str], str] = {}

    # ----------------------------------------------------------------- bookkeeping

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    @property
    def compacted_resource_version(self) -> int:
        with self._lock:
            return self._compacted_rv

    def compact(self) -> None:
        """Forget the whole event history, as etcd compaction does; older watches get 410."""
        with self._lock:
            self._history.clear()
            self._compacted_rv = self._rv

    def _next_serial(self) -> int:
        self._serial += 1
        return self._serial

    def _timestamp(self) -> str:
        return self.clock().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _new_uid(self) -> str:
        # Deterministic uids keep snapshots stable; the format is still a valid UUID.
        return f"00000000-0000-4000-8000-{self._next_serial():012x}"

    def _record(
        self,
        kind: ResourceKind,
        event_type: str,
        obj: dict[str, Any],
        previous: dict[str, Any] | None,
    ) -> None:
        event = WatchEvent(self._rv, event_type, (kind.group, kind.plural), obj, previous)
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted_rv = self._history.popleft().resource_version
        self.changed.notify_all()

    def _bucket(self, kind: ResourceKind) -> dict[ObjectKey, dict[str, Any]]:
        return self._objects.setdefault((kind.group, kind.plural), {})

    @staticmethod
    def _object_key(kind: ResourceKind, namespace: str | None, name: str) -> ObjectKey:
        return ((namespace or "") if kind.namespaced else "", name)

    def _present(self, kind: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
        # Objects are served in the version that was asked for; storage is version-agnostic.
        out = copy.deepcopy(obj)
        out["apiVersion"] = kind.api_version
        out["kind"] = kind.kind
        return out

    # ----------------------------------------------------------------- reads

    def find(self, kind: ResourceKind, namespace: str | None, name: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._bucket(kind).get(self._object_key(kind, namespace, name))
            return None if found is None else self._present(kind, found)

    def get(self, kind: ResourceKind, namespace: str | None, name: str) -> dict[str, Any]:
        found = self.find(kind, namespace, name)
        if found is None:
            raise errors.not_found(kind.plural, kind.group, name)
        return found

    def list(
        self, kind: ResourceKind, namespace: str | None, predicate: Predicate = lambda _o: True
    ) -> tuple[list[dict[str, Any]], int]:
        """Matching objects sorted by namespace then name (etcd key order), and the list's rv."""
        with self._lock:
            items = [
                self._present(kind, obj)
                for (ns, _name), obj in sorted(self._bucket(kind).items())
                if (namespace is None or ns == namespace) and predicate(obj)
            ]
            return items, self._rv

    # ----------------------------------------------------------------- create

    def _validate_name(self, kind: ResourceKind, name: str) -> None:
        pattern, limit = (_LABEL, 63) if kind.plural == "namespaces" else (_NAME, 253)
        if len(name) > limit or not pattern.match(name):
            raise errors.invalid(
                kind.kind,
                kind.group,
                name,
                [
                    f'metadata.name: Invalid value: "{name}": a lowercase RFC 1123 name '
                    "must consist of lower case alphanumeric characters, '-' or '.', and must "
                    "start and end with an alphanumeric character"
                ],
            )

    def _generated_name(self, kind: ResourceKind, namespace: str, prefix: str) -> str:
        bucket = self._bucket(kind)
        while True:
            digest = hashlib.sha256(f"{prefix}/{self._next_serial()}".encode()).digest()
            suffix = "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:5])
            if (namespace, prefix + suffix) not in bucket:
                return prefix + suffix

    def _check_type(self, kind: ResourceKind, body: dict[str, Any]) -> None:
        api_version, object_kind = body.get("apiVersion"), body.get("kind")
        if api_version and api_version != kind.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API "
                f"version ({kind.api_version})"
            )
        if object_kind and object_kind != kind.kind:
            raise errors.bad_request(
                f"the kind in the data ({object_kind}) does not match the expected kind "
                f"({kind.kind})"
            )

    def create(
        self,
        kind: ResourceKind,
        namespace: str | None,
        body: dict[str, Any],
        *,
        dry_run: bool = False,
        keep_status: bool = False,
    ) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        self._check_type(kind, body)
        obj = copy.deepcopy(body)
        meta = _meta(obj)
        with self._lock:
            if kind.namespaced:
                body_ns = meta.get("namespace")
                namespace = namespace or body_ns or "default"
                if body_ns and body_ns != namespace:
                    raise errors.bad_request(
                        "the namespace of the provided object does not match the namespace sent "
                        "on the request"
                    )
                meta["namespace"] = namespace
                if self.require_namespaces and not self._namespace_exists(namespace):
                    raise errors.not_found("namespaces", "", namespace)
            else:
                meta.pop("namespace", None)
            object_ns = meta.get("namespace", "")
            name = meta.get("name")
            if not name:
                prefix = meta.get("generateName")
                if not prefix:
                    raise errors.invalid(
                        kind.kind,
                        kind.group,
                        "",
                        ["metadata.name: Required value: name or generateName is required"],
                    )
                name = self._generated_name(kind, object_ns, prefix)
                meta["name"] = name
            self._validate_name(kind, name)
            bucket = self._bucket(kind)
            if (object_ns, name) in bucket:
                raise errors.already_exists(kind.plural, kind.group, name)
            if "status" in kind.subresources and not keep_status:
                obj.pop("status", None)
            for server_owned in ("resourceVersion", "deletionTimestamp", "selfLink"):
                meta.pop(server_owned, None)
            meta["uid"] = self._new_uid()
            meta["creationTimestamp"] = self._timestamp()
            meta["generation"] = 1
            obj["apiVersion"], obj["kind"] = kind.api_version, kind.kind
            if dry_run:
                return self._present(kind, obj)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            bucket[(object_ns, name)] = obj
            self._record(kind, "ADDED", obj, None)
            return self._present(kind, obj)

    def _namespace_exists(self, name: str) -> bool:
        namespaces = self.kinds.by_path("", "v1", "namespaces")
        return namespaces is not None and ("", name) in self._bucket(namespaces)

    # ----------------------------------------------------------------- update / patch

    @staticmethod
    def _check_rv(kind: ResourceKind, current: dict[str, Any], incoming: dict[str, Any]) -> None:
        wanted = (incoming.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != current["metadata"]["resourceVersion"]:
            raise errors.conflict(
                kind.plural, kind.group, current["metadata"]["name"], errors.STALE_OBJECT
            )

    def update(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        body: dict[str, Any],
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        as_controller: bool = False,
    ) -> dict[str, Any]:
        """PUT semantics. ``as_controller`` writes spec and status together and skips rv checks."""
        if not isinstance(body, dict):
            raise errors.bad_request("the request body must be a JSON object")
        self._check_type(kind, body)
        body_name = (body.get("metadata") or {}).get("name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        with self._lock:
            key = self._object_key(kind, namespace, name)
            current = self._bucket(kind).get(key)
            if current is None:
                raise errors.not_found(kind.plural, kind.group, name)
            if not as_controller:
                if not kind.builtin and not (body.get("metadata") or {}).get("resourceVersion"):
                    # Custom resources refuse unconditional updates, unlike most built-in types.
                    raise errors.invalid(
                        kind.kind,
                        kind.group,
                        name,
                        [
                            "metadata.resourceVersion: Invalid value: 0x0: "
                            "must be specified for an update"
                        ],
                    )
                self._check_rv(kind, current, body)
            if subresource == "status":
                new = copy.deepcopy(current)
                if "status" in body:
                    new["status"] = copy.deepcopy(body["status"])
                else:
                    new.pop("status", None)
            else:
                new = copy.deepcopy(body)
                if "status" in kind.subresources and not as_controller:
                    new.pop("status", None)
                    if "status" in current:
                        new["status"] = copy.deepcopy(current["status"])
            return self._commit_update(kind, key, current, new, dry_run)

    def _commit_update(
        self,
        kind: ResourceKind,
        key: ObjectKey,
        current: dict[str, Any],
        new: dict[str, Any],
        dry_run: bool,
    ) -> dict[str, Any]:
        meta = _meta(new)
        old_meta = current["metadata"]
        # Identity and server-owned fields cannot be changed by a client write.
        for field in ("name", "uid", "creationTimestamp", "deletionTimestamp", "resourceVersion"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        if kind.namespaced:
            meta["namespace"] = old_meta["namespace"]
        else:
            meta.pop("namespace", None)
        new["apiVersion"], new["kind"] = kind.api_version, kind.kind
        generation = int(old_meta.get("generation", 1))
        if _spec_part(new) != _spec_part(current):
            generation += 1
        meta["generation"] = generation
        if _without_rv(new) == _without_rv(current):
            return self._present(kind, current)
        if dry_run:
            return self._present(kind, new)
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            # The last finalizer is gone: the pending deletion completes now.
            del self._bucket(kind)[key]
            self._record(kind, "DELETED", new, current)
            self._collect_dependents(new, "Background")
            return self._present(kind, new)
        self._bucket(kind)[key] = new
        self._record(kind, "MODIFIED", new, current)
        return self._present(kind, new)

    def patch(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        content_type: str,
        patch: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        media = content_type.split(";")[0].strip().lower()
        accepted = [JSON_PATCH, MERGE_PATCH] + ([STRATEGIC_MERGE_PATCH] if kind.builtin else [])
        if media not in accepted:
            # Server-side apply is not emulated; strategic merge only exists for built-in types.
            raise errors.unsupported_media_type(media, [*accepted, APPLY_PATCH])
        with self._lock:
            key = self._object_key(kind, namespace, name)
            current = self._bucket(kind).get(key)
            if current is None:
                raise errors.not_found(kind.plural, kind.group, name)
            if media == JSON_PATCH:
                patched = json_patch(current, patch)
            else:
                if not isinstance(patch, dict):
                    raise errors.bad_request("a merge patch body must be a JSON object")
                patched = merge_patch(current, patch)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch must produce a JSON object")
            self._check_rv(kind, current, patched)
            if subresource == "status":
                new = copy.deepcopy(current)
                if "status" in patched:
                    new["status"] = patched["status"]
                else:
                    new.pop("status", None)
            else:
                new = patched
                if "status" in kind.subresources:
                    new.pop("status", None)
                    if "status" in current:
                        new["status"] = copy.deepcopy(current["status"])
            return self._commit_update(kind, key, current, new, dry_run)

    # ----------------------------------------------------------------- delete

    def delete(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        if propagation not in (None, "Orphan", "Background", "Foreground"):
            raise errors.bad_request(f"unsupported propagationPolicy: {propagation}")
        with self._lock:
            key = self._object_key(kind, namespace, name)
            current = self._bucket(kind).get(key)
            if current is None:
                raise errors.not_found(kind.plural, kind.group, name)
            meta = current["metadata"]
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                wanted = (preconditions or {}).get(field)
                if wanted and wanted != meta.get(field):
                    raise errors.conflict(
                        kind.plural,
                        kind.group,
                        name,
                        f"Precondition failed: {label} in precondition: {wanted}, "
                        f"{label} in object meta: {meta.get(field)}",
                    )
            if dry_run:
                return self._present(kind, current)
            if propagation is None:
                # batch/v1 keeps its historical orphaning default; everything else cascades.
                propagation = (
                    "Orphan" if (kind.group, kind.plural) == ("batch", "jobs") else ("Background")
                )
            return self._present(kind, self._remove(kind, key, current, propagation))

    def _remove(
        self, kind: ResourceKind, key: ObjectKey, current: dict[str, Any], propagation: str
    ) -> dict[str, Any]:
        if current["metadata"].get("finalizers") and current["metadata"].get("deletionTimestamp"):
            return current  # already terminating: a repeated delete changes nothing
        gone = copy.deepcopy(current)
        meta = gone["metadata"]
        self._rv += 1
        meta["resourceVersion"] = str(self._rv)
        if meta.get("finalizers"):
            # Finalizers block removal: mark the object terminating and let controllers finish.
            meta["deletionTimestamp"] = self._timestamp()
            meta["deletionGracePeriodSeconds"] = 0
            self._bucket(kind)[key] = gone
            self._record(kind, "MODIFIED", gone, current)
            return gone
        del self._bucket(kind)[key]
        self._record(kind, "DELETED", gone, current)
        if kind.plural == "namespaces" and not kind.group:
            self._empty_namespace(meta["name"])
        self._collect_dependents(gone, propagation)
        return gone

    def _all_objects(self) -> Iterator[tuple[ResourceKind, ObjectKey, dict[str, Any]]]:
        for kind in self.kinds.all():
            for key, obj in list(self._objects.get((kind.group, kind.plural), {}).items()):
                yield kind, key, obj

    def _empty_namespace(self, namespace: str) -> None:
        for kind, key, obj in list(self._all_objects()):
            # Earlier cascades in this loop may already have removed the object.
            if kind.namespaced and key[0] == namespace and key in self._bucket(kind):
                self._remove(kind, key, obj, "Background")

    def _collect_dependents(self, owner: dict[str, Any], propagation: str) -> None:
        uid = owner["metadata"].get("uid")
        for kind, key, obj in list(self._all_objects()):
            refs = obj["metadata"].get("ownerReferences") or []
            if key not in self._bucket(kind) or not any(r.get("uid") == uid for r in refs):
                continue
            if propagation == "Orphan":
                orphan = copy.deepcopy(obj)
                orphan["metadata"]["ownerReferences"] = [r for r in refs if r.get("uid") != uid]
                if not orphan["metadata"]["ownerReferences"]:
                    del orphan["metadata"]["ownerReferences"]
                self._rv += 1
                orphan["metadata"]["resourceVersion"] = str(self._rv)
                self._bucket(kind)[key] = orphan
                self._record(kind, "MODIFIED", orphan, obj)
            else:
                self._remove(kind, key, self._bucket(kind)[key], "Background")

    # ----------------------------------------------------------------- controller helpers

    def put(self, kind: ResourceKind, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or overwrite as a controller would: status included, no rv check."""
        meta = obj.get("metadata") or {}
        with self._lock:
            namespace = (meta.get("namespace") or "default") if kind.namespaced else None
            if meta.get("name") and self.find(kind, namespace, meta["name"]) is not None:
                return self.update(kind, namespace, meta["name"], obj, as_controller=True)
            return self.create(kind, namespace, obj, keep_status=True)

    def set_status(
        self,
        kind: ResourceKind,
        namespace: str | None,
        name: str,
        status: dict[str, Any],
        *,
        merge: bool = False,
    ) -> dict[str, Any]:
        with self._lock:
            current = self.get(kind, namespace, name)
            new_status = merge_patch(current.get("status") or {}, status) if merge else status
            return self.update(
                kind, namespace, name, {**current, "status": new_status}, as_controller=True
            )

    # ----------------------------------------------------------------- pod logs

    def set_pod_log(
        self, namespace: str, name: str, text: str, container: str = "", previous: bool = False
    ) -> None:
        with self._lock:
            self._pod_logs[(namespace, name, container + (PREVIOUS if previous else ""))] = text

    def pod_log(
        self, namespace: str, name: str, container: str | None, previous: bool = False
    ) -> str:
        pods = self.kinds.resolve("v1", "pods")
        with self._lock:
            pod = self.get(pods, namespace, name)
            spec = pod.get("spec") or {}
            names = [c.get("name") for c in spec.get("containers") or []]
            init = [c.get("name") for c in spec.get("initContainers") or []]
            if container is None:
                if len(names) > 1:
                    raise errors.bad_request(
                        f"a container name must be specified for pod {name}, choose one of: "
                        f"[{' '.join(names)}]"
                    )
                container = names[0] if names else ""
            elif names and container not in names + init:
                raise errors.bad_request(f"container {container} is not valid for pod {name}")
            if previous:
                # The API server's answer when the container has not restarted.
                key = (namespace, name, container + PREVIOUS)
                if key not in self._pod_logs:
                    raise errors.bad_request(
                        f'previous terminated container "{container}" in pod "{name}" not found'
                    )
                return self._pod_logs[key]
            for candidate in (container, ""):
                if (namespace, name, candidate) in self._pod_logs:
                    return self._pod_logs[(namespace, name, candidate)]
            return ""

    # ----------------------------------------------------------------- watch support

    def events_after(self, resource_version: int, timeout: float) -> list[WatchEvent]:
        """Events newer than ``resource_version``, waiting up to ``timeout`` for the first one.

        Raises the 410 Expired error when events after that version were already compacted.
        """
        with self.changed:
            if resource_version < self._compacted_rv:
                raise errors.expired(str(resource_version), self._compacted_rv)
            if self._rv <= resource_version:
                self.changed.wait(timeout)
            if resource_version < self._compacted_rv:
                raise errors.expired(str(resource_version), self._compacted_rv)
            return [e for e in self._history if e.resource_version > resource_version]

    def wake_watchers(self) -> None:
        with self.changed:
            self.changed.notify_all()
