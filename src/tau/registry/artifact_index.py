"""Read a run's artifact index (`checkpoints/finetunes/<run>/artifacts.json`, schema 1).

Performs I/O through a registry `Backend`. The index is written by the workload's own
artifact-index step (render/artifact_index.py) or by other tools, so the reader is strict about
shape and lenient about omissions: a file that is not JSON, not an object, of another schema
version, or whose `artifacts` are not objects is corrupt and refused with its path and the fix;
a file that merely lacks optional fields (a partial index from an interrupted or older writer)
is read, and an artifact without `status: ready` and a `durable_path` is simply not servable.
"""

from __future__ import annotations

import json
from typing import Any

from tau.registry import layout
from tau.registry.backend import Backend
from tau.registry.errors import RegistryError

SCHEMA_VERSION = 1
FILENAME = "artifacts.json"
_STRINGS = ("run", "namespace", "resource_name", "created_at", "hot_root", "durable_root")


class CorruptIndex(RegistryError):
    """An artifacts.json that cannot be read as an artifact index."""


def index_path(run: str) -> str:
    """Where the index of `run` lives, relative to the registry root."""
    return layout.finetune_file(run, FILENAME)


def parse(raw: bytes, where: str, run: str) -> dict[str, Any]:
    """The index in `raw`, with `run` and `artifacts` always present.

    Args:
        raw: the file's bytes.
        where: the file as the user sees it (for messages).
        run: the run directory's name; fills a missing `run`.

    Raises:
        CorruptIndex: not JSON, not an object, another schema version, or a bad field type.
    """
    hint = (
        "rerun the run, or fix or delete the file; "
        "`tau data model index rebuild` reads it again afterwards"
    )
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptIndex(f"{where} is not valid JSON: {exc}", hint=hint) from exc
    if not isinstance(doc, dict):
        raise CorruptIndex(f"{where} is not a JSON object", hint=hint)
    version = doc.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise CorruptIndex(
            f"{where}: schema_version {json.dumps(version)} is not supported "
            f"(this tau reads {SCHEMA_VERSION})",
            hint="upgrade tau, or rewrite the index with this version's schema",
        )
    for key in _STRINGS:
        if key in doc and not isinstance(doc[key], str):
            raise CorruptIndex(f"{where}: {key} must be a string", hint=hint)
    artifacts = doc.get("artifacts", [])
    if not isinstance(artifacts, list) or not all(isinstance(a, dict) for a in artifacts):
        raise CorruptIndex(f"{where}: artifacts must be a list of objects", hint=hint)
    if doc.get("run", run) != run:
        raise CorruptIndex(
            f'{where} names run "{doc["run"]}" but lives in the directory of run "{run}"',
            hint=hint,
        )
    return {**doc, "schema_version": SCHEMA_VERSION, "run": run, "artifacts": artifacts}


def read(backend: Backend, run: str) -> dict[str, Any] | None:
    """The index of `run`, or None when the run has none.

    Raises:
        CorruptIndex: the file exists but is not a readable index.
    """
    path = index_path(run)
    raw = backend.read(path)
    return None if raw is None else parse(raw, backend.display(path), run)


def ready(index: dict[str, Any]) -> list[dict[str, Any]]:
    """The servable artifacts: marked ready, with a durable path."""
    return [a for a in index["artifacts"] if a.get("status") == "ready" and a.get("durable_path")]
