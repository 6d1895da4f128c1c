"""Pull a run's `metrics.history` JSONL files from its result PVC into the store. Performs I/O.

The run records where its results live (annotations `tau.azure.com/result-path` and
`result-pvc`, as `tau run get` reads them); the files are read there through short-lived helper
pods that mount the PVC (`tau.registry.pvc`), copied to a temporary directory, and imported by
`experiment import jsonl`'s own code (`tau.portal.capture.jsonl.import_jsonl`), so a captured
history is the same record an import of the same files would write. The history files are the
`*.jsonl` files directly in the result directory: the Job does not record the configured
`metrics.history` globs, and dotfiles are chunks still being written (contract §4.5).
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau.errors import ClusterError, TauError
from tau.k8s import meta, paths
from tau.portal.capture.cluster import Scope
from tau.portal.store.core import Store


@dataclass(frozen=True)
class History:
    """What the history import did.

    Attributes:
        action: `imported`, `reused` (the same files were imported before) or `none`.
        files: the history files found, as the workload sees them (`/data/...`).
        rows: metric rows of those files.
        metric_file: the Parquet file in the store ("" when nothing was imported).
        warnings: why nothing was imported, when it was not.
    """

    action: str = "none"
    files: list[str] = field(default_factory=list)
    rows: int = 0
    metric_file: str = ""
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "files": self.files,
            "rows": self.rows,
            "metric_file": self.metric_file or None,
        }


def _on_pvc(path: str) -> str | None:
    """The result path relative to the PVC root (tau mounts it at /data), or None outside it."""
    full = posixpath.normpath(path)
    if full != paths.DATA_ROOT and not full.startswith(paths.DATA_ROOT + "/"):
        return None
    return full.removeprefix(paths.DATA_ROOT).lstrip("/")


def _backend(api: Any, pvc: str, namespace: str, run: Mapping[str, Any]) -> Any:
    from tau.registry.pvc import PvcBackend

    return PvcBackend.for_run(pvc, api, namespace=namespace, run=run)


def pull_history(
    store: Store,
    api: Any,
    run: Mapping[str, Any],
    run_id: str,
    scope: Scope,
    *,
    backend: Any = None,
) -> History:
    """Import the run's history files; a run without results or histories is a warning.

    Args:
        run: the Job or RayJob object (its annotations say where the results are).
        run_id: the store's run id (the profile's).
        backend: replaces the PVC helper-pod reader (tests).

    Raises:
        ClusterError: the helper pods could not read the PVC.
        UsageError: a history file is malformed (as `experiment import jsonl` reports it).
    """
    from tau.portal.capture.jsonl import ImportRequest, import_jsonl

    md = run.get("metadata") or {}
    notes = md.get("annotations") or {}
    ns, name = str(md.get("namespace") or ""), str(md.get("name") or "")
    path, pvc = notes.get(meta.ANNOTATION_RESULT_PATH), notes.get(meta.ANNOTATION_RESULT_PVC)
    if not path or not pvc:
        return History(
            warnings=[
                f"{ns}/{name} records no result location ({meta.ANNOTATION_RESULT_PATH} and "
                f"{meta.ANNOTATION_RESULT_PVC}); no metrics history imported (set "
                "storage.data_pvc and storage.output so results land on a PVC)"
            ]
        )
    relative = _on_pvc(str(path))
    if relative is None:
        raise ClusterError(
            f"result path {path} of {ns}/{name} is not under {paths.DATA_ROOT}, where tau "
            "mounts the PVC",
            hint="capture with --no-history to record the profile only",
        )
    reader = backend or _backend(api, str(pvc), ns, run)
    names = [n for n in reader.list(relative) if n.endswith(".jsonl") and not n.startswith(".")]
    shown = [posixpath.join(str(path), n) for n in names]
    if not names:
        return History(
            warnings=[f"no metrics history (*.jsonl) in {path} on pvc {pvc}; nothing imported"]
        )
    with tempfile.TemporaryDirectory(prefix="tau-history-") as tmp:
        local, empty = [], []
        for n in names:
            data = reader.read(posixpath.join(relative, n) if relative else n)
            if not data:
                empty.append(n)  # created, nothing written yet: not a malformed history
                continue
            target = Path(tmp) / n
            target.write_bytes(data)
            local.append(str(target))
        warnings = [f"{posixpath.join(str(path), n)} is empty; skipped" for n in empty]
        if not local:
            return History(files=shown, warnings=warnings)
        request = ImportRequest(
            run=run_id,
            history=local,
            project=scope.project,
            experiment=scope.experiment,
            group=scope.group,
            owner=scope.owner,
        )
        try:
            result = import_jsonl(store, request)
        except TauError as exc:
            # Name the file where the user can find it, not the copy that is about to vanish.
            exc.message = exc.message.replace(tmp, str(path).rstrip("/"))
            exc.hint = exc.hint.replace(tmp, str(path).rstrip("/")) if exc.hint else exc.hint
            raise
        warnings += [w.replace(tmp, str(path).rstrip("/")) for w in result.warnings]
    return History(result.action, shown, result.rows, result.metric_file, warnings)
