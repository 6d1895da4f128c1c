"""A write that fails for lack of space leaves nothing behind and says which path and what to do.

The full disk is simulated by failing the write or flush call itself (ENOSPC, as the kernel
reports it) after part of the bytes went out, so a partial file really exists on disk until
the writer removes it: no mounts needed.
"""

from __future__ import annotations

import builtins
import errno
import os
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tau.cli import main as tau_main
from tau.portal.store import core
from tau.registry.backend import FileBackend
from tau.registry.errors import RegistryError
from tests.portal_helpers import portal, write_history

FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
STORE_HINT = "or choose another store with --store DIR (or TAU_EXP_STORE)"


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file (with its bytes) and every folder under `root` (the lock file aside)."""
    return {
        str(p.relative_to(root)): p.read_bytes() if p.is_file() else None
        for p in sorted(root.rglob("*"))
        if p.name not in (".tau-exp.lock", ".tmp")
    }


def leftovers(root: Path) -> list[str]:
    """Scratch and temporary files anywhere under `root`."""
    return sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and (".tmp" in p.parts or p.name.endswith(".tmp"))
    )


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store holding one earlier import, so mirrors and folders already exist."""
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    first = write_history(tmp_path / "first.jsonl", 3)
    done = portal(
        capsys, "experiment", "import", "jsonl", "--store", root, "--run", "r0", "--history", first
    )
    assert done.code == 0, done.err
    return root


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return write_history(tmp_path / "metrics.jsonl", 2_000)


def import_r1(capsys: pytest.CaptureFixture[str], store: Path, history: Path):
    return portal(
        capsys,
        "experiment",
        "import",
        "jsonl",
        "--store",
        store,
        "--run",
        "r1",
        "--history",
        history,
    )


def assert_store_full_error(err: str, path: Path, store: Path) -> None:
    assert err == (
        f"error: cannot write {path}: no space left on device\n"
        f"  hint: free space on the filesystem holding {store}, {STORE_HINT}; nothing of this "
        "write was kept\n"
    ), err


def test_a_parquet_write_that_fills_the_disk_leaves_no_partial_file(
    store: Path, history: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pq.ParquetWriter.write_table
    partial: list[Path] = []

    def write_table(self: Any, table: Any, *args: Any, **kwargs: Any) -> None:
        real(self, table, *args, **kwargs)  # the row group reaches the scratch file...
        partial.extend((store / ".tmp").glob("*.parquet"))
        # ... and the next write fails as pyarrow reports it.
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    before = snapshot(store)
    result = import_r1(capsys, store, history)
    assert result.code == 1
    assert partial and not any(p.exists() for p in partial)  # it was there, and is gone
    final = store / "metrics/project=demo/experiment=demo/group=default/run=r1"
    (name,) = [line for line in result.err.split() if line.endswith(".parquet:")]
    assert name.startswith(str(final) + "/jsonl-r1-")
    assert_store_full_error(result.err, Path(name.rstrip(":")), store)
    assert snapshot(store) == before and leftovers(store) == []


def failing_open(match: str) -> Any:
    """`open` whose writes to a file named like `match` send half the bytes, then ENOSPC."""
    real = builtins.open

    def fake(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real(file, mode, *args, **kwargs)
        if match in str(file) and any(m in mode for m in "wa"):
            write = handle.write

            def short_write(data: Any) -> int:
                write(data[: len(data) // 2])
                handle.flush()
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            handle.write = short_write
        return handle

    return fake


@pytest.mark.parametrize(
    ("match", "named"),
    [
        ("runs.jsonl", "append-log/runs.jsonl"),  # a mirror, after the files were moved in
        (".tau-exp.journal.json", ".tau-exp.journal.json"),  # the commit journal itself
    ],
)
def test_a_commit_that_fills_the_disk_is_undone_before_the_error(
    store: Path,
    history: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    match: str,
    named: str,
) -> None:
    monkeypatch.setattr(core, "open", failing_open(match), raising=False)
    before = snapshot(store)
    result = import_r1(capsys, store, history)
    assert result.code == 1
    assert_store_full_error(result.err, store / named, store)
    assert snapshot(store) == before and leftovers(store) == []


def test_a_history_copy_that_fills_the_disk_is_removed(
    store: Path, history: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path.write_bytes

    def write_bytes(self: Path, data: Any) -> int:
        if ".tmp" in self.parts:
            real(self, bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", write_bytes)
    before = snapshot(store)
    result = import_r1(capsys, store, history)
    assert result.code == 1
    assert "artifacts/r1/jsonl/" in result.err and "metrics.jsonl: no space left" in result.err
    assert snapshot(store) == before and leftovers(store) == []


class FullAtCommit:
    """A SQLite connection whose COMMIT fails as SQLite does on a full disk."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, *args: Any) -> Any:
        if sql == "COMMIT":
            raise sqlite3.OperationalError("database or disk is full")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_an_index_commit_that_fills_the_disk_undoes_files_and_mirrors(
    store: Path, history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tau.portal.capture.jsonl import ImportRequest, import_jsonl
    from tau.portal.errors import StoreError

    before = snapshot(store)
    opened = core.Store.open(store)
    opened._conn = FullAtCommit(opened.conn)  # type: ignore[assignment]
    with pytest.raises(StoreError) as caught:
        import_jsonl(opened, ImportRequest("r1", [str(history)], "demo", ""))
    opened.close()
    assert caught.value.message == f"cannot write {store / 'index.sqlite'}: no space left on device"
    assert snapshot(store) == before and leftovers(store) == []


def test_a_track_metric_file_that_fills_the_disk_is_removed(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pq.write_table

    def write_table(table: Any, where: Any, *args: Any, **kwargs: Any) -> None:
        real(table, where, *args, **kwargs)
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space")

    monkeypatch.setattr(pq, "write_table", write_table)
    before = snapshot(store)
    result = portal(
        capsys,
        "experiment",
        "track",
        "r2",
        "--store",
        store,
        "--metric",
        "loss=0.5",
    )
    assert result.code == 1
    assert result.err.startswith(f"error: cannot write {store}/metrics/"), result.err
    assert ".parquet: no space left on device" in result.err
    assert snapshot(store) == before and leftovers(store) == []


# -- the dataset and model registry ------------------------------------------------------


def failing_os_write(monkeypatch: pytest.MonkeyPatch, under: Path, *, call: str = "write") -> None:
    """os.write (or os.fsync) of files under `under` fails with ENOSPC, after half the bytes."""
    real_write, real_fsync = os.write, os.fsync

    def inside(fd: int) -> bool:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(str(under))

    def write(fd: int, data: Any) -> int:
        if call == "write" and inside(fd):
            real_write(fd, bytes(data)[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        if call == "fsync" and inside(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)


@pytest.mark.parametrize("call", ["write", "fsync"])
def test_a_dataset_register_that_fills_the_disk_leaves_no_temp_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    registry = tmp_path / "reg"
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.txt").write_text("hello\n")
    failing_os_write(monkeypatch, registry, call=call)
    argv = ["data", "dataset", "register", "demo@v1", "--from", str(src), "--purpose", "eval"]
    argv += ["--task", "t", "--split", "test", "--metric", "acc"]
    code = tau_main([*argv, "--registry", f"file://{registry}"])
    err = capsys.readouterr().err
    target = registry / "dataset-registry/datasets/demo/v1/dataset.json"
    assert code == 1
    assert err == (
        f"error: cannot write {target}: no space left on device\n"
        f"  hint: free space on the filesystem holding {target.parent}, or choose another "
        "registry with --registry file://DIR\n"
    )
    assert [p for p in registry.rglob("*") if p.is_file()] == []


def test_a_compare_and_swap_that_fills_the_disk_leaves_the_old_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FileBackend(tmp_path / "reg")
    assert backend.cas("a/alias.json", None, b"old\n")
    failing_os_write(monkeypatch, tmp_path / "reg")
    with pytest.raises(RegistryError, match=r"cannot write .*/a/alias\.json: no space left"):
        backend.cas("a/alias.json", b"old\n", b"new\n")
    assert backend.read("a/alias.json") == b"old\n"
    assert sorted(p.name for p in (tmp_path / "reg" / "a").iterdir()) == [
        ".alias.json.lock",  # the lock file is kept by design; no temp file is
        "alias.json",
    ]


def test_a_permission_problem_names_the_path_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    backend = FileBackend(tmp_path / "reg")

    def refuse(*args: Any, **kwargs: Any) -> int:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(RegistryError) as caught:
        backend.write("d/x.json", b"{}", overwrite=False)
    assert caught.value.message == f"cannot write {tmp_path / 'reg/d/x.json'}: permission denied"
    assert caught.value.hint and "writable by this user" in caught.value.hint
