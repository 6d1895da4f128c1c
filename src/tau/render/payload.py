"""The RayJob script payload: files in a gzipped JSON envelope, decoded by an init container.

Pure. The gzip member is framed here rather than by `gzip.compress`, whose header changed
with the Python version (3.13 writes the OS byte as 255 where 3.11 and 3.12 write 3), so the
payload and its digest were a function of the interpreter. Here the header is fixed (no mtime,
no file name, XFL 2 for level 9, OS 3 as the earlier Pythons wrote it, so renders already
reviewed keep their bytes) and only zlib's raw deflate stream comes from the library: the same
files give the same bytes and the same digest on every supported Python
(tests/test_payload_bytes.py renders the examples under each).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import zlib
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


#: RFC 1952 member header: magic, CM=8 (deflate), FLG=0 (no name, comment or extra), MTIME=0,
#: XFL=2 (maximum compression), OS=3 (Unix).
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03"


def gzip_bytes(data: bytes) -> bytes:
    """One gzip member of `data` at level 9 whose bytes depend on `data` alone."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
    body = deflate.compress(data) + deflate.flush()
    trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)
    return GZIP_HEADER + body + trailer


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
    raw = gzip_bytes(json.dumps(envelope, separators=(",", ":")).encode())
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
