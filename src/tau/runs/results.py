"""`tau run get`: the durable results a run recorded (result-path/result-pvc annotations).

Performs I/O. Files are read through a short-lived helper pod that mounts the result PVC
(the registry's PVC backend), so no one needs a shell in the workload.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from tau.errors import ClusterError, UsageError
from tau.k8s import meta, paths
from tau.runs.workload import find

MOUNT = paths.DATA_ROOT


@dataclass(frozen=True)
class Results:
    name: str
    namespace: str
    kind: str
    path: str
    pvc: str
    files: tuple[str, ...]

    def table(self) -> str:
        lines = [
            f"run:     {self.namespace}/{self.name} ({self.kind})",
            f"results: {self.path} on pvc {self.pvc}",
        ]
        lines += [f"  {f}" for f in self.files] or ["  (empty: nothing was written yet)"]
        return "\n".join(lines) + "\n"

    def as_json(self) -> str:
        return (
            json.dumps(
                {
                    "name": self.name,
                    "namespace": self.namespace,
                    "kind": self.kind,
                    "resultPath": self.path,
                    "resultPvc": self.pvc,
                    "files": list(self.files),
                },
                indent=2,
            )
            + "\n"
        )


def _relative(path: str, artifact: str | None = None) -> str:
    full = posixpath.normpath(posixpath.join(path, artifact)) if artifact else path
    inside = (full + "/").startswith(path.rstrip("/") + "/")
    if artifact and (artifact.startswith("/") or not inside):
        raise UsageError(f'--artifact "{artifact}" must be a relative path inside the results')
    if not (full == MOUNT or full.startswith(MOUNT + "/")):
        raise ClusterError(f"result path {full} is not under {MOUNT}, where tau mounts the PVC")
    return full.removeprefix(MOUNT).lstrip("/")


def _backend(api_client: Any, pvc: str, namespace: str, run: dict[str, Any]) -> Any:
    from tau.registry.pvc import PvcBackend

    return PvcBackend.for_run(pvc, api_client, namespace=namespace, run=run)


def get(
    api_client: Any, namespace: str, name: str, *, artifact: str | None = None, backend: Any = None
) -> Results | bytes:
    """The run's result listing, or the bytes of one artifact.

    Raises:
        UsageError: the run recorded no result (its config declared no storage: exit 1).
        ClusterError: the files cannot be read.
    """
    kind, obj = find(api_client, namespace, name)
    notes = obj.get("metadata", {}).get("annotations") or {}
    path, pvc = notes.get(meta.ANNOTATION_RESULT_PATH), notes.get(meta.ANNOTATION_RESULT_PVC)
    if not path or not pvc:
        # The cluster answered; the run simply has nothing durable to read (a config matter).
        raise UsageError(
            f"{kind} {namespace}/{name} recorded no durable result",
            hint="set storage.data_pvc (and storage.output) so results land on a "
            "PVC that `tau run get` can read",
        )
    store = backend or _backend(api_client, pvc, namespace, obj)
    if artifact:
        data = store.read(_relative(path, artifact))
        if data is None:
            raise ClusterError(f'artifact "{artifact}" not found under {path} on pvc {pvc}')
        return bytes(data)
    return Results(name, namespace, kind, path, pvc, tuple(store.list(_relative(path))))
