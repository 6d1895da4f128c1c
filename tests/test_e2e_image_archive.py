"""The OCI archive writer of the e2e node's images, checked on a small folder: what
`ctr images import` relies on (digests, sizes, media types, diff_ids, the name annotations) and
the layer's determinism. The real images are built by `python -m tests.e2e.controlplane.image`."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.controlplane import image, oci, rootfs

NAME = "tau-e2e.local/runtime:0123456789ab"
RUNTIME = oci.Runtime(env=("PATH=/usr/bin:/bin", "LANG=C.UTF-8"), cmd=("bash",))


def _tree(root: Path) -> None:
    (root / "usr/bin").mkdir(parents=True)
    (root / "tmp").mkdir()
    (root / "tmp").chmod(0o1777)
    (root / "usr/bin/tool").write_bytes(b"#!/bin/sh\necho hi\n")
    (root / "usr/bin/tool").chmod(0o755)
    os.link(root / "usr/bin/tool", root / "usr/bin/tool-again")
    (root / "bin").symlink_to("usr/bin")
    deep = root / ("d" * 90) / ("e" * 90)
    deep.mkdir(parents=True)
    (deep / "big.bin").write_bytes(bytes(range(256)) * 7)  # not a multiple of 512
    os.mkfifo(root / "tmp/fifo")
    if os.geteuid() == 0:
        os.chown(root / "usr/bin/tool", 1234, 5678)


def _members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        out = {}
        for member in tar.getmembers():
            f = tar.extractfile(member)
            assert f is not None, member.name
            out[member.name] = f.read()
        return out


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, oci.Descriptor]:
    root = tmp_path / "root"
    _tree(root)
    archive = tmp_path / "image.tar"
    return root, archive, oci.write_archive(root, NAME, RUNTIME, archive)


def test_every_blob_is_named_by_its_digest_and_the_index_names_the_image(
    built: tuple[Path, Path, oci.Descriptor],
) -> None:
    _, archive, manifest_desc = built
    members = _members(archive)
    assert json.loads(members["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    blobs = {k: v for k, v in members.items() if k.startswith("blobs/")}
    for path, data in blobs.items():
        assert path == "blobs/sha256/" + hashlib.sha256(data).hexdigest()

    index = json.loads(members["index.json"])
    assert index["schemaVersion"] == 2
    assert index["mediaType"] == oci.INDEX_MEDIA_TYPE
    [entry] = index["manifests"]
    assert entry["mediaType"] == oci.MANIFEST_MEDIA_TYPE
    assert entry["annotations"] == {oci.REF_NAME: NAME, oci.CONTAINERD_NAME: NAME}
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}
    assert entry["digest"] == manifest_desc.digest

    manifest_data = blobs["blobs/sha256/" + entry["digest"].split(":")[1]]
    assert entry["size"] == len(manifest_data)
    manifest = json.loads(manifest_data)
    assert manifest["mediaType"] == oci.MANIFEST_MEDIA_TYPE
    config_data = blobs["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]]
    assert manifest["config"]["mediaType"] == oci.CONFIG_MEDIA_TYPE
    assert manifest["config"]["size"] == len(config_data)
    [layer_desc] = manifest["layers"]
    layer = blobs["blobs/sha256/" + layer_desc["digest"].split(":")[1]]
    assert layer_desc["mediaType"] == oci.LAYER_MEDIA_TYPE
    assert layer_desc["size"] == len(layer)
    assert set(blobs) == {
        "blobs/sha256/" + d.split(":")[1]
        for d in (entry["digest"], manifest["config"]["digest"], layer_desc["digest"])
    }

    config = json.loads(config_data)
    assert (config["architecture"], config["os"]) == ("amd64", "linux")
    # Uncompressed layer: its diff_id is the digest of the very tar.
    assert config["rootfs"] == {"type": "layers", "diff_ids": [_digest(layer)]}
    assert config["config"]["Env"] == ["PATH=/usr/bin:/bin", "LANG=C.UTF-8"]
    assert config["config"]["Cmd"] == ["bash"]
    assert "Entrypoint" not in config["config"]


def test_the_layer_keeps_links_modes_and_owners_and_drops_special_files(
    built: tuple[Path, Path, oci.Descriptor],
) -> None:
    root, archive, _ = built
    members = _members(archive)
    manifest = json.loads(members["blobs/sha256/" + built[2].digest.split(":")[1]])
    layer = members["blobs/sha256/" + manifest["layers"][0]["digest"].split(":")[1]]
    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        entries = tar.getmembers()
        by_name = {e.name: e for e in entries}
        big_name = f"{'d' * 90}/{'e' * 90}/big.bin"
        big = tar.extractfile(by_name[big_name])
        assert big is not None and big.read() == (root / big_name).read_bytes()

    names = [e.name for e in entries]
    # Parents first, names sorted within a folder: the same folder gives the same layer.
    assert names == [
        "bin",
        "d" * 90,
        f"{'d' * 90}/{'e' * 90}",
        big_name,
        "tmp",
        "usr",
        "usr/bin",
        "usr/bin/tool",
        "usr/bin/tool-again",
    ]
    assert all(e.mtime == oci.EPOCH for e in entries)
    assert by_name["bin"].issym() and by_name["bin"].linkname == "usr/bin"
    assert by_name["usr/bin/tool-again"].islnk()
    assert by_name["usr/bin/tool-again"].linkname == "usr/bin/tool"
    assert by_name["tmp"].isdir() and by_name["tmp"].mode == 0o1777
    assert by_name["usr/bin/tool"].mode == 0o755
    tool = os.lstat(root / "usr/bin/tool")
    assert (by_name["usr/bin/tool"].uid, by_name["usr/bin/tool"].gid) == (tool.st_uid, tool.st_gid)
    assert stat.S_ISFIFO(os.lstat(root / "tmp/fifo").st_mode) and "tmp/fifo" not in by_name


def test_the_same_folder_gives_the_same_archive_byte_for_byte(
    built: tuple[Path, Path, oci.Descriptor], tmp_path: Path
) -> None:
    root, archive, _ = built
    again = tmp_path / "again.tar"
    oci.write_archive(root, NAME, RUNTIME, again)
    assert archive.read_bytes() == again.read_bytes()


def test_a_layered_archive_stacks_cached_layer_files_bottom_first(
    built: tuple[Path, Path, oci.Descriptor], tmp_path: Path
) -> None:
    """The offload image: a cached base layer file copied as it is, the wheel's layer on top;
    the same layers give the same manifest (hence the same digest the workspace names)."""
    root, single_archive, single = built
    top = tmp_path / "top"
    (top / "usr/local/bin").mkdir(parents=True)
    (top / "usr/local/bin/taugrid-portal").write_text("#!/usr/bin/python3\n")
    base_desc = oci.layer_file(root, tmp_path / "base.tar")
    top_desc = oci.layer_file(top, tmp_path / "top.tar")
    layers = [(base_desc, tmp_path / "base.tar"), (top_desc, tmp_path / "top.tar")]
    name = "tau-e2e.local/offload:0123456789ab"
    manifest_desc = oci.write_layered_archive(name, RUNTIME, layers, tmp_path / "offload.tar")
    members = _members(tmp_path / "offload.tar")
    for path, data in members.items():
        if path.startswith("blobs/"):
            assert path == "blobs/sha256/" + hashlib.sha256(data).hexdigest()
    manifest = json.loads(members["blobs/sha256/" + manifest_desc.digest.split(":")[1]])
    assert [layer["digest"] for layer in manifest["layers"]] == [base_desc.digest, top_desc.digest]
    config = json.loads(members["blobs/sha256/" + manifest["config"]["digest"].split(":")[1]])
    assert config["rootfs"]["diff_ids"] == [base_desc.digest, top_desc.digest]
    # One pass of layer_file writes what write_archive embeds for the same folder.
    single_members = _members(single_archive)
    single_manifest = json.loads(single_members["blobs/sha256/" + single.digest.split(":")[1]])
    assert single_manifest["layers"] == [base_desc.to_json()]
    again = oci.write_layered_archive(name, RUNTIME, layers, tmp_path / "again.tar")
    assert again == manifest_desc
    pinned = image.ImageArchive(name, tmp_path / "offload.tar", manifest_desc.digest).pinned
    assert pinned == f"tau-e2e.local/offload@{manifest_desc.digest}"
    assert image.ImageArchive(NAME, tmp_path / "x.tar").pinned == NAME


def test_the_recipe_pins_every_requirement_in_its_lock() -> None:
    recipe = rootfs.Recipe.load(image.RECIPE_FILE)
    assert recipe.suite == "bookworm"
    for requirement in recipe.requirements:
        name, _, version = requirement.partition("==")
        assert version, f"{requirement}: image.toml requirements pin exact versions"
        assert recipe.pinned(name.split("[")[0]) == version
    assert {"ray", "torch"} <= {line.partition("==")[0] for line in recipe.lock}


# Stands in for a pod's PID 1: pause is made a child subreaper (kept across exec), and before
# exec'ing it the helper leaves it a zombie child (A) and an orphaned grandchild (B) that exits
# once `go` appears. Both must be reaped by pause.
_ORPHANS = """
import ctypes, os, sys, time
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
if os.fork() == 0:
    if os.fork() == 0:
        while not os.path.exists(sys.argv[2]):
            time.sleep(0.02)
        os._exit(0)
    os._exit(0)
os.execv(sys.argv[1], [sys.argv[1]])
"""


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, state) of every process whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append((int(entry.name), fields[0]))
    return found


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout:.0f}s")


@pytest.mark.skipif(shutil.which("go") is None, reason="Go is not installed")
def test_pause_reaps_orphans_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    binary = tmp_path / "pause"
    env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
    subprocess.run(
        ["go", "-C", str(image.PAUSE_SOURCE), "build", "-trimpath", "-o", str(binary), "."],
        check=True,
        env=env,
    )
    go = tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", _ORPHANS, str(binary), str(go)])
    try:
        _wait_for(lambda: os.path.realpath(f"/proc/{proc.pid}/exe") == str(binary), "pause runs")
        _wait_for(
            lambda: any(state != "Z" for _, state in _children(proc.pid)),
            "pause adopts the orphan",
        )
        go.touch()
        _wait_for(lambda: not _children(proc.pid), "pause reaps its exited children")
        assert proc.poll() is None, "SIGCHLD must not stop pause"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
