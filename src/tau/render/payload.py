"""The RayJob script payload: files in a gzipped JSON envelope, decoded by an init container.

Pure. gzip runs with mtime 0 and no file name, so the same files give the same bytes and
the same digest on every machine.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from typing import Any

MAX_FILES_BYTES = 1024 * 1024
MAX_ENV_BYTES = 64 * 1024
TARGET_DIR = "/script"
#: Where a managed workflow's redacted manifest copy lands, and its init container.
MANIFEST_DIR = "/manifest"
SCRIPT_INIT = "tau-payload"
MANIFEST_INIT = "tau-manifest-payload"

# Runs in the tau-payload init container (python3 of the workload image): checks the digest,
# then writes each file into the shared /script emptyDir.
DECODER = """\
import base64, gzip, hashlib, json, os, sys
raw = base64.b64decode(os.environ["TAU_PAYLOAD_B64"])
if hashlib.sha256(raw).hexdigest() != os.environ["TAU_PAYLOAD_DIGEST"]:
    sys.exit("tau-payload: digest mismatch; the manifest was altered")
doc = json.loads(gzip.decompress(raw))
target = os.environ["TAU_PAYLOAD_TARGET_DIR"]
for entry in doc["files"]:
    path = os.path.join(target, entry["name"])
    with open(path, "wb") as handle:
        handle.write(base64.b64decode(entry["data"]))
    print("tau-payload: wrote", path)
"""


class PayloadTooLarge(ValueError):
    """The files do not fit the env-var payload."""


def encode(files: dict[str, bytes]) -> tuple[str, str]:
    """(base64 payload, sha256 hex of the gzipped bytes) for the given files."""
    total = sum(len(v) for v in files.values())
    if total > MAX_FILES_BYTES:
        raise PayloadTooLarge(f"payload files total {total} bytes; at most {MAX_FILES_BYTES}")
    envelope = {
        "version": 2,
        "files": [
            {"name": name, "data": base64.b64encode(files[name]).decode()} for name in sorted(files)
        ],
    }
    raw = gzip.compress(
        json.dumps(envelope, separators=(",", ":")).encode(), compresslevel=9, mtime=0
    )
    encoded = base64.b64encode(raw).decode()
    if len(encoded) > MAX_ENV_BYTES:
        raise PayloadTooLarge(
            f"compressed payload is {len(encoded)} bytes; at most {MAX_ENV_BYTES}"
        )
    return encoded, hashlib.sha256(raw).hexdigest()


def init_container(
    name: str, image: str, files: dict[str, bytes], *, volume: str, target: str
) -> tuple[dict[str, Any], str]:
    """(the init container that writes `files` into the `volume` mounted at `target`, digest).

    It runs python3 of the workload image, so the run needs no other image to unpack itself.
    """
    encoded, digest = encode(files)
    init = {
        "name": name,
        "image": image,
        "command": ["python3", "-c", DECODER],
        "env": [
            {"name": "TAU_PAYLOAD_B64", "value": encoded},
            {"name": "TAU_PAYLOAD_DIGEST", "value": digest},
            {"name": "TAU_PAYLOAD_TARGET_DIR", "value": target},
        ],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi"},
            "limits": {"cpu": "250m", "memory": "128Mi"},
        },
        "volumeMounts": [{"name": volume, "mountPath": target}],
    }
    return init, digest
