"""Many writers at once and a writer killed mid-import: the store stays whole."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tau.portal.errors import WriteConflict
from tau.portal.store.core import Store
from tau.portal.store.lock import WriterLock
from tests.portal_helpers import write_history

IMPORT = """
import sys
from tau.portal.cli import main
sys.exit(main(["experiment", "import", "jsonl", "--store", sys.argv[1], "--run", sys.argv[2],
               "--history", sys.argv[3]]))
"""


def _init(root: Path) -> Store:
    store, _ = Store.init(root, project="demo", experiment_id="demo")
    return store


def test_eight_processes_importing_at_once_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _init(root)
    procs = []
    for i in range(8):
        history = write_history(tmp_path / f"h{i}.jsonl", 200, scale=i + 1)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", IMPORT, str(root), f"run-{i}", str(history)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    conn = sqlite3.connect(root / "index.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    runs = [r[0] for r in conn.execute("select run_id from runs order by run_id")]
    assert runs == [f"run-{i}" for i in range(8)]
    assert conn.execute("select count(*) from metric_summaries").fetchone()[0] == 16
    for table in ("runs", "metric_files", "idempotency_keys"):
        lines = (root / "append-log" / f"{table}.jsonl").read_text().splitlines()
        assert len(lines) == 8
        assert all(json.loads(line) for line in lines)  # no torn lines
    import pyarrow.parquet as pq

    for (path,) in conn.execute("select path from metric_files"):
        assert pq.read_table(root / path).num_rows == 400


SLOW_IMPORT = """
import os, sys, time
from tau.portal.store import core
original = core.Writer.commit

def commit(self):
    # Stop between the mirror appends and the SQLite commit: the worst moment to die.
    for table, lines in self.mirror.items():
        with open(self.store.root / "append-log" / f"{table}.jsonl", "a") as fh:
            fh.write("\\n".join(lines) + "\\n")
    self.mirror = {}
    for tmp, final in self.files:
        final.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, final)
    print("ready", flush=True)
    time.sleep(60)

def journaled(self):
    from tau.portal.store.core import _write_json_atomic
    from tau.portal.store import schema
    log = self.store.root / "append-log"
    sizes = {t: (log / f"{t}.jsonl").stat().st_size if (log / f"{t}.jsonl").exists() else 0
             for t in self.mirror}
    _write_json_atomic(self.store.root / schema.JOURNAL, {
        "txn": self.txn, "mirrors": sizes,
        "files": [str(f.relative_to(self.store.root)) for _, f in self.files]})
    commit(self)

core.Writer.commit = journaled
from tau.portal.cli import main
sys.exit(main(["experiment", "import", "jsonl", "--store", sys.argv[1], "--run", "victim",
               "--history", sys.argv[2]]))
"""


def test_kill_9_mid_import_leaves_no_partial_record(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _init(root)
    history = write_history(tmp_path / "h.jsonl", 100)
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_IMPORT, str(root), str(history)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read() if proc.stderr else ""
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)

    store = Store.open(root)
    # Readers see nothing of the killed import, even before any writer recovers.
    assert store.query("select * from runs where run_id = 'victim'") == []
    assert store.query("select * from metric_files") == []
    # The next writer rolls the mirrors and files back, then imports cleanly.
    history2 = write_history(tmp_path / "h2.jsonl", 10)
    code = subprocess.run(
        [sys.executable, "-c", IMPORT, str(root), "other", str(history2)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert code.returncode == 0, code.stderr
    runs = (root / "append-log" / "runs.jsonl").read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in runs] == ["other"]
    parquet = sorted(p.name for p in (root / "metrics").rglob("*.parquet"))
    assert len(parquet) == 1 and "other" in parquet[0]
    assert not (root / ".tau-exp.journal.json").exists()


def test_a_busy_lock_times_out_naming_its_holder(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = _init(root)
    holder = WriterLock(store.lock_path)
    holder.acquire()
    try:
        started = time.monotonic()
        with pytest.raises(WriteConflict) as caught:
            WriterLock(store.lock_path, timeout=0.6).acquire()
        assert time.monotonic() - started >= 0.5
    finally:
        holder.release()
    message = caught.value.message
    assert message.startswith(
        "experiment store write conflict: timed out waiting for experiment store writer lock "
        f"{store.lock_path}"
    )
    assert f"held by pid {os.getpid()}" in message
