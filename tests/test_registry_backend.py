"""The file backend: atomic writes, create-if-absent, compare-and-swap, races between processes."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from tau.registry import layout
from tau.registry.backend import FileBackend, open_backend
from tau.registry.datasets import DatasetRegistry, Registration
from tau.registry.errors import BackendNotBuilt, ConflictError, RegistryError

FORK = multiprocessing.get_context("fork")


def test_write_read_list(tmp_path):
    be = FileBackend(tmp_path)
    assert be.read("a/b.json") is None and be.list("a") == []
    assert be.write("a/b.json", b"1", overwrite=False)
    assert be.read("a/b.json") == b"1" and be.list("a") == ["b.json"]


def test_write_without_overwrite_keeps_the_existing_document(tmp_path):
    be = FileBackend(tmp_path)
    be.write("x.json", b"old", overwrite=False)
    assert not be.write("x.json", b"new", overwrite=False)
    assert be.read("x.json") == b"old"
    assert be.write("x.json", b"new", overwrite=True) and be.read("x.json") == b"new"


def test_writes_leave_no_temp_files(tmp_path):
    be = FileBackend(tmp_path)
    be.write("d/x.json", b"1", overwrite=False)
    be.write("d/x.json", b"2", overwrite=False)
    be.cas("d/x.json", b"1", b"3")
    assert sorted(p.name for p in (tmp_path / "d").iterdir() if p.name.endswith(".tmp")) == []


def test_cas_swaps_only_on_the_expected_content(tmp_path):
    be = FileBackend(tmp_path)
    assert be.cas("p.json", None, b"a")
    assert not be.cas("p.json", None, b"b")
    assert not be.cas("p.json", b"zzz", b"b")
    assert be.cas("p.json", b"a", b"b") and be.read("p.json") == b"b"


def test_registry_flag_forms(tmp_path):
    assert isinstance(open_backend(f"file://{tmp_path}"), FileBackend)
    with pytest.raises(BackendNotBuilt) as err:
        open_backend("az://acct/container")
    assert err.value.exit_code == 2 and "file://DIR" in (err.value.hint or "")
    with pytest.raises(RegistryError, match="invalid --registry"):
        open_backend("s3://x")
    with pytest.raises(RegistryError):
        open_backend("file://")


# --- races between processes -----------------------------------------------------------------

VERSIONS = 41  # v0 .. v40: two writers make 20 moves each


def _seed(root: Path) -> DatasetRegistry:
    src = root / "src"
    src.mkdir()
    (src / "f").write_bytes(b"x")
    reg = DatasetRegistry(FileBackend(root / "reg"))
    for i in range(VERSIONS):
        reg.register(f"web@v{i}", src, Registration("eval", {}, {}, {}, {}))
    reg.set_alias("web", "latest", "v0")
    return reg


def _increment(root: str, moves: int, barrier) -> None:
    """Move `latest` forward one version `moves` times, each a CAS on the version read."""
    reg = DatasetRegistry(FileBackend(Path(root)))
    barrier.wait()
    done = 0
    while done < moves:
        current = reg.alias("web", "latest")["version"]
        nxt = f"v{int(current[1:]) + 1}"
        try:
            reg.set_alias("web", "latest", nxt, expect=current)
        except ConflictError:
            continue  # the other writer moved it first; re-read and try again
        done += 1


def test_racing_compare_and_swap_writers_lose_no_update(tmp_path):
    _seed(tmp_path)
    barrier = FORK.Barrier(2)
    procs = [
        FORK.Process(target=_increment, args=(str(tmp_path / "reg"), 20, barrier)) for _ in range(2)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    # 40 successful swaps from v0 can only end at v40 if no two writers swapped from the
    # same snapshot (a lost update would leave it lower while both count a success).
    doc = json.loads((tmp_path / "reg" / layout.dataset_alias("web", "latest")).read_bytes())
    assert doc["version"] == "v40"


def _hammer(root: str, version: str, n: int, barrier) -> None:
    reg = DatasetRegistry(FileBackend(Path(root)))
    barrier.wait()
    for _ in range(n):
        reg.set_alias("web", "latest", version)


def test_unconditional_writers_never_expose_a_torn_alias(tmp_path):
    _seed(tmp_path)
    root = tmp_path / "reg"
    barrier = FORK.Barrier(3)
    procs = [FORK.Process(target=_hammer, args=(str(root), v, 100, barrier)) for v in ("v1", "v2")]
    for p in procs:
        p.start()
    barrier.wait()
    path = root / layout.dataset_alias("web", "latest")
    seen = set()
    while any(p.is_alive() for p in procs):
        seen.add(json.loads(path.read_bytes())["version"])  # must always parse
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert seen <= {"v0", "v1", "v2"}
    assert json.loads(path.read_bytes())["version"] in {"v1", "v2"}


def _register_once(root: str, src: str, barrier, results) -> None:
    reg = DatasetRegistry(FileBackend(Path(root)))
    barrier.wait()
    try:
        reg.register(
            "race@v1", Path(src), Registration("eval", {}, {"who": str(os.getpid())}, {}, {})
        )
        results.put("ok")
    except ConflictError:
        results.put("refused")


def test_racing_registers_of_one_version_create_it_once(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"x" * 1000)
    barrier, results = FORK.Barrier(4), FORK.Queue()
    procs = [
        FORK.Process(
            target=_register_once, args=(str(tmp_path / "reg"), str(src), barrier, results)
        )
        for _ in range(4)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    assert outcomes == ["ok", "refused", "refused", "refused"]
