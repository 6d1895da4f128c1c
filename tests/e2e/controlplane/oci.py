"""Write an OCI image archive (the tar `ctr images import` reads) from a root filesystem folder.

One uncompressed layer holds the whole folder. The layer is deterministic: entries sorted by
name, every mtime the same fixed instant, owners kept as numeric ids, hard links and symlinks
kept, device nodes, sockets and fifos left out (the runtime makes /dev). The layer is produced
twice from the same folder, once to learn its digest and size and once straight into the
archive, so a multi-gigabyte root filesystem never needs a second copy on disk.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"
CONTAINERD_NAME = "io.containerd.image.name"
#: Every entry's mtime (2026-01-01T00:00:00Z). The root filesystem's files are set to it too
#: before Python compiles its bytecode, so the .pyc headers agree with the extracted sources.
EPOCH = 1767225600
CREATED = "2026-01-01T00:00:00Z"
BLOCK = 512
CHUNK = 1 << 20


class _Sink(Protocol):
    def write(self, data: bytes, /) -> object: ...


@dataclass(frozen=True)
class Runtime:
    """The image config's `config` part: how a container of the image starts."""

    env: tuple[str, ...]
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    working_dir: str = "/"
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Descriptor:
    media_type: str
    digest: str
    size: int

    def to_json(self) -> dict[str, object]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


class _Digester:
    """A write-only stream that only hashes and counts (optionally forwarding the bytes)."""

    def __init__(self, forward: _Sink | None = None) -> None:
        self.hash = hashlib.sha256()
        self.size = 0
        self.forward = forward

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        if self.forward is not None:
            self.forward.write(data)
        return len(data)

    def descriptor(self, media_type: str) -> Descriptor:
        return Descriptor(media_type, "sha256:" + self.hash.hexdigest(), self.size)


def _walk(root: Path, rel: str = "") -> Iterator[tuple[str, os.stat_result]]:
    """(path relative to root, lstat) of every entry under root: depth first, names sorted, each
    folder before its contents (as `find` lists them)."""
    for name in sorted(os.listdir(root / rel if rel else root)):
        child = f"{rel}/{name}" if rel else name
        st = os.lstat(root / child)
        yield child, st
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(root, child)


def _entries(root: Path) -> Iterator[tuple[tarfile.TarInfo, Path | None]]:
    """The layer's tar headers (with the file to copy for regular files), in layer order."""
    first_link: dict[tuple[int, int], str] = {}
    for rel, st in _walk(root):
        info = tarfile.TarInfo(rel)
        info.mode = stat.S_IMODE(st.st_mode)
        info.uid, info.gid = st.st_uid, st.st_gid
        info.uname = info.gname = ""
        info.mtime = EPOCH
        source: Path | None = None
        if stat.S_ISDIR(st.st_mode):
            info.type = tarfile.DIRTYPE
        elif stat.S_ISLNK(st.st_mode):
            info.type = tarfile.SYMTYPE
            info.linkname = os.readlink(root / rel)
        elif stat.S_ISREG(st.st_mode):
            inode = (st.st_dev, st.st_ino)
            if st.st_nlink > 1 and inode in first_link:
                info.type = tarfile.LNKTYPE
                info.linkname = first_link[inode]
            else:
                if st.st_nlink > 1:
                    first_link[inode] = rel
                info.type = tarfile.REGTYPE
                info.size = st.st_size
                source = root / rel
        else:
            continue  # device nodes, fifos, sockets: the container runtime provides /dev
        yield info, source


def write_layer(root: Path, out: _Sink) -> None:
    """The layer tar of `root`, streamed to `out` (PAX headers, so long names and big files fit)."""
    for info, source in _entries(root):
        out.write(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        if source is None:
            continue
        remaining = info.size
        with source.open("rb") as f:
            while remaining:
                data = f.read(min(CHUNK, remaining))
                if not data:
                    raise RuntimeError(f"{source}: shrank while its layer was written")
                out.write(data)
                remaining -= len(data)
        if info.size % BLOCK:
            out.write(b"\0" * (BLOCK - info.size % BLOCK))
    # End of archive: two zero blocks.
    out.write(b"\0" * (2 * BLOCK))


def _json_blob(document: dict[str, object], media_type: str) -> tuple[bytes, Descriptor]:
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    return data, Descriptor(media_type, "sha256:" + hashlib.sha256(data).hexdigest(), len(data))


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = EPOCH
    info.mode = 0o644
    archive.addfile(info, io.BytesIO(data))


def write_archive(root: Path, name: str, runtime: Runtime, out_path: Path) -> Descriptor:
    """Write the OCI archive of the image `name` (a full reference) to `out_path`; returns the
    manifest's descriptor."""
    probe = _Digester()
    write_layer(root, probe)
    layer = probe.descriptor(LAYER_MEDIA_TYPE)
    blobs, manifest = _documents(name, runtime, [layer])
    with (
        out_path.open("wb") as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for blob_name, data in blobs:
            _add_bytes(archive, blob_name, data)
        _add_layer(archive, raw, root, layer)
    return manifest


def layer_file(root: Path, out_path: Path) -> Descriptor:
    """Write the layer tar of `root` to `out_path` (one pass); returns its descriptor."""
    with out_path.open("wb") as raw:
        sink = _Digester(forward=raw)
        write_layer(root, sink)
    return sink.descriptor(LAYER_MEDIA_TYPE)


def write_layered_archive(
    name: str, runtime: Runtime, layers: list[tuple[Descriptor, Path]], out_path: Path
) -> Descriptor:
    """Write the OCI archive of the image `name` whose layers (bottom first) are already written
    as tar files (`layer_file`); returns the manifest's descriptor. A cached lower layer is
    copied as it is, never re-made from its folder."""
    blobs, manifest = _documents(name, runtime, [d for d, _ in layers])
    with (
        out_path.open("wb") as raw,
        tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        for blob_name, data in blobs:
            _add_bytes(archive, blob_name, data)
        for descriptor, path in layers:
            if path.stat().st_size != descriptor.size:
                raise RuntimeError(
                    f"{path}: {path.stat().st_size} bytes, its descriptor says {descriptor.size}"
                )
            info = tarfile.TarInfo(_blob_path(descriptor.digest))
            info.size = descriptor.size
            info.mtime = EPOCH
            info.mode = 0o644
            with path.open("rb") as f:
                archive.addfile(info, f)
    return manifest


def _documents(
    name: str, runtime: Runtime, layers: list[Descriptor]
) -> tuple[list[tuple[str, bytes]], Descriptor]:
    """The archive's small members (layout, index, config, manifest) and the manifest's
    descriptor, for an image of these layers (bottom first, stored uncompressed)."""
    config_doc: dict[str, object] = {
        "architecture": "amd64",
        "os": "linux",
        "created": CREATED,
        "config": {
            "Env": list(runtime.env),
            **({"Entrypoint": list(runtime.entrypoint)} if runtime.entrypoint else {}),
            **({"Cmd": list(runtime.cmd)} if runtime.cmd else {}),
            "WorkingDir": runtime.working_dir,
            **({"Labels": dict(runtime.labels)} if runtime.labels else {}),
        },
        # The layers are stored uncompressed, so each diff_id is its own digest.
        "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
        "history": [
            {"created": CREATED, "created_by": f"tau e2e image {name} layer {i}"}
            for i in range(len(layers))
        ]
        if len(layers) > 1
        else [{"created": CREATED, "created_by": f"tau e2e image {name}"}],
    }
    config_data, config = _json_blob(config_doc, CONFIG_MEDIA_TYPE)
    manifest_data, manifest = _json_blob(
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_MEDIA_TYPE,
            "config": config.to_json(),
            "layers": [layer.to_json() for layer in layers],
        },
        MANIFEST_MEDIA_TYPE,
    )
    index_data, _ = _json_blob(
        {
            "schemaVersion": 2,
            "mediaType": INDEX_MEDIA_TYPE,
            "manifests": [
                {
                    **manifest.to_json(),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {REF_NAME: name, CONTAINERD_NAME: name},
                }
            ],
        },
        INDEX_MEDIA_TYPE,
    )
    blobs = [
        ("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
        ("index.json", index_data),
        (_blob_path(config.digest), config_data),
        (_blob_path(manifest.digest), manifest_data),
    ]
    return blobs, manifest


def _blob_path(digest: str) -> str:
    algorithm, hexdigest = digest.split(":", 1)
    return f"blobs/{algorithm}/{hexdigest}"


def _add_layer(archive: tarfile.TarFile, raw: BinaryIO, root: Path, layer: Descriptor) -> None:
    """Stream the layer into the archive as a member whose size the first pass measured, and
    check the second pass produced the very same bytes."""
    info = tarfile.TarInfo(_blob_path(layer.digest))
    info.size = layer.size
    info.mtime = EPOCH
    info.mode = 0o644
    # TarFile.addfile wants a file object to copy from; write header and data ourselves instead,
    # keeping TarFile's offset right so its closing blocks land after the member.
    header = info.tobuf(archive.format, archive.encoding, archive.errors)
    raw.write(header)
    again = _Digester(forward=raw)
    write_layer(root, again)
    if again.descriptor(LAYER_MEDIA_TYPE) != layer:
        raise RuntimeError(f"{root}: changed while its layer was written (digest differs)")
    padding = (BLOCK - layer.size % BLOCK) % BLOCK
    raw.write(b"\0" * padding)
    archive.offset += len(header) + layer.size + padding
