"""The files a run ships inside its workload, decoded so a review reads them as text.

Pure. A run's scripts (and a managed workflow's manifest copy) travel in an init container's
`TAU_PAYLOAD_B64` env var: base64 of a gzipped JSON envelope `{"version", "files": [{"name",
"data"}]}` with each file's bytes in base64 again, unpacked into `TAU_PAYLOAD_TARGET_DIR`
(tau.render.payload writes it; this module only reads the format, since review sits above the
renderer and reaches it through the pipeline). A `run.working_dir` project rides in the payload
as a zip; its members are listed as `<zip>/<member>`. A diff shows these files, never the base64:
`extract` takes the payload out of the object and puts a stable marker in its place.
"""

from __future__ import annotations

import base64
import binascii
import copy
import gzip
import io
import json
import zipfile
from typing import Any

PAYLOAD_ENV = "TAU_PAYLOAD_B64"
DIGEST_ENV = "TAU_PAYLOAD_DIGEST"
TARGET_ENV = "TAU_PAYLOAD_TARGET_DIR"
#: What stands in for the payload in the object once its files are taken out.
MARKER = "<payload: files shown below>"
DERIVED = "<derived from the payload>"


def decode(encoded: str) -> dict[str, bytes] | None:
    """The files of a payload (name → bytes), or None when the value is not a tau payload."""
    try:
        envelope = json.loads(gzip.decompress(base64.b64decode(encoded, validate=True)))
        files = {str(f["name"]): base64.b64decode(f["data"]) for f in envelope["files"]}
    except (binascii.Error, OSError, EOFError, ValueError, KeyError, TypeError):
        return None
    return files


def _expand(path: str, data: bytes) -> dict[str, bytes]:
    """A zip (the working_dir project) as its members; any other file as itself."""
    if not path.endswith(".zip"):
        return {path: data}
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return {f"{path}/{m}": archive.read(m) for m in sorted(archive.namelist())}
    except (zipfile.BadZipFile, OSError, ValueError):
        return {path: data}


def _env_value(env: list[Any], name: str) -> Any:
    return next(
        (e.get("value") for e in env if isinstance(e, dict) and e.get("name") == name), None
    )


def _take(node: Any, files: dict[str, bytes]) -> None:
    """Replace every payload env value under `node` (in place) and collect its files."""
    if isinstance(node, dict):
        env = node.get("env")
        if isinstance(env, list) and isinstance(_env_value(env, PAYLOAD_ENV), str):
            decoded = decode(_env_value(env, PAYLOAD_ENV))
            if decoded is not None:
                target = str(_env_value(env, TARGET_ENV) or "")
                for name, data in decoded.items():
                    files.update(_expand(f"{target}/{name}", data))
                for entry in env:
                    if entry.get("name") == PAYLOAD_ENV:
                        entry["value"] = MARKER
                    elif entry.get("name") == DIGEST_ENV:
                        entry["value"] = DERIVED
        for value in node.values():
            _take(value, files)
    elif isinstance(node, list):
        for value in node:
            _take(value, files)


def extract(document: dict[str, Any]) -> tuple[dict[str, Any], dict[str, bytes]]:
    """(a copy of `document` with each payload replaced by a marker, its files by path).

    The same payload in several pods (a RayJob's head and workers) gives its files once.
    """
    out = copy.deepcopy(document)
    files: dict[str, bytes] = {}
    _take(out, files)
    return out, dict(sorted(files.items()))
