"""`experiment observe`: append a structured observation (write-once). Performs I/O."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from tau.portal.errors import UsageError, WriteConflict
from tau.portal.store.core import Store
from tau.portal.store.write import idempotent_reuse, record_idempotency, request_hash

SCOPES = ("experiment", "run_group", "run", "artifact", "event", "metric")
TYPES = ("observation", "decision", "blocker", "next-experiment", "exclusion")


@dataclass(frozen=True)
class Observed:
    observation: dict[str, Any]
    reused: bool


def observe(
    store: Store,
    *,
    scope: str,
    type_: str,
    text: str,
    author: str,
    source: str,
    evidence: str | None,
    observation_id: str | None,
    idempotency_key: str | None,
) -> Observed:
    scope_type, sep, scope_id = scope.partition(":")
    if not sep or not scope_type or not scope_id:
        raise UsageError("--scope: expected type:id", hint="e.g. --scope run_group:baseline")
    if scope_type not in SCOPES:
        raise UsageError(f"--scope type must be one of: {', '.join(SCOPES)}; got {scope_type!r}")
    if type_ not in TYPES:
        raise UsageError(f"--type must be one of: {', '.join(TYPES)}; got {type_!r}")
    if not text.strip():
        raise UsageError("--text is required")
    evidence_text = None
    if evidence:
        try:
            evidence_text = json.dumps(json.loads(evidence), sort_keys=True)
        except ValueError:
            evidence_text = json.dumps(evidence)  # plain text, stored as a JSON string
    request = {
        "command": "observe",
        "scope": scope,
        "type": type_,
        "text": text,
        "author": author,
        "source": source,
        "evidence": evidence_text,
        "id": observation_id,
    }
    digest = request_hash(request)
    found = idempotent_reuse(store, idempotency_key, digest)
    if found is not None:
        rows = store.query(
            "SELECT * FROM observations WHERE observation_id = ?", (found["target_id"],)
        )
        return Observed(rows[0], True)
    with store.writer() as w:
        found = idempotent_reuse(w, idempotency_key, digest)
        if found is not None:
            return Observed(
                w.get("observations", {"observation_id": found["target_id"]}) or {}, True
            )
        oid = observation_id or "obs-" + secrets.token_hex(8)
        row = {
            "observation_id": oid,
            "idempotency_key": idempotency_key,
            "author": author,
            "source": source,
            "type": type_,
            "scope_type": scope_type,
            "scope_id": scope_id,
            "text": text,
            "evidence": evidence_text,
            "created_at": w.stamp,
        }
        existing = w.get("observations", {"observation_id": oid})
        if existing is not None:
            same = all(existing[k] == row[k] for k in row if k != "created_at")
            if not same:
                raise WriteConflict(f'observation "{oid}" already exists with different content')
            return Observed(existing, True)
        w.put("observations", row)
        record_idempotency(w, idempotency_key, "observe", "observation", oid, digest)
    return Observed(row, False)
