"""Where a service's model comes from: a finetune run's artifacts.json, or the model registry.

Performs I/O through a registry Backend (the checkpoint PVC via helper pods, or a local
directory in tests). Only an artifact marked ready with a durable path is served: a run
that never finished uploading must not be served half-written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau.errors import TauError
from tau.registry import artifact_index
from tau.registry.backend import Backend


def ready_artifact(index: Mapping[str, Any], where: str, artifact: str | None = None) -> str:
    """The durable path of the (named, or first) ready artifact of an index or run record.

    Raises:
        TauError: no such artifact is ready.
    """
    for entry in index.get("artifacts") or []:
        if artifact is not None and entry.get("name") != artifact:
            continue
        if entry.get("status") == "ready" and entry.get("durable_path"):
            return str(entry["durable_path"])
    which = f'artifact "{artifact}"' if artifact else "artifact"
    raise TauError(
        f"{where} has no ready {which} with a durable_path",
        hint="wait until the run's upload finished, or pass --checkpoint PATH",
    )


def from_finetune(backend: Backend, ref: str) -> str:
    """The checkpoint of `RUN[:ARTIFACT]` from `checkpoints/finetunes/<run>/artifacts.json`."""
    run, _, artifact = ref.partition(":")
    path = artifact_index.index_path(run)
    index = artifact_index.read(backend, run)
    if index is None:
        raise TauError(
            f"finetune run {run} has no artifacts.json",
            hint=f"expected {backend.display(path)}; `tau run get {run}` shows what "
            "the run recorded",
        )
    return ready_artifact(index, f"finetune run {run}", artifact or None)


def from_model(backend: Backend, ref: str) -> str:
    """The checkpoint of a model reference (`MODEL:ALIAS`, `MODEL@RUN`, `MODEL`)."""
    from tau.registry.models import ModelRegistry

    record = ModelRegistry(backend).resolve(ref)
    return ready_artifact(record, f"model {ref} (run {record.get('run')})")
