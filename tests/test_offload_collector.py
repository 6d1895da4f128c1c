"""`experiment offload metrics` end to end against a folder store: the command as a subprocess
(as the sidecar runs it), kill -9 and restarts, the completion sentinel, SIGTERM, a store that
refuses writes; and the delivery's idempotence in process. Every wait is on a condition.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tau.portal.offload.delivery import Identity, deliver, file_id
from tau.portal.store.core import Store
from tests.portal_helpers import portal
from tests.teamstore.servers import wait_until

RUN = "collect-1"
TIMEOUT = 60.0


def collector(tmp: Path, store: Path | str, *extra: str, env: dict[str, str] | None = None,
              name: str = "c") -> subprocess.Popen[bytes]:  # fmt: skip
    """The command as the sidecar runs it (--watch, a short interval), logs under tmp."""
    args = [
        sys.executable, "-m", "tau.portal.cli", "experiment", "offload", "metrics", "--watch",
        "--store", str(store), "--out", str(tmp / "out"), "--run", RUN, "--project", "proj",
        "--experiment", "exp", "--group", "grp", "--interval", "200ms",
        "--history", str(tmp / "append.jsonl"), "--history", str(tmp / "chunks" / "*.jsonl"),
        "--completion-file", str(tmp / "run" / "completion.json"),
        "--ready-file", str(tmp / "run" / "ready"), "--done-file", str(tmp / "run" / "done"),
        *extra,
    ]  # fmt: skip
    return subprocess.Popen(
        args,
        env={**os.environ, **(env or {})},
        stdout=open(tmp / f"{name}.out", "ab"),
        stderr=open(tmp / f"{name}.err", "ab"),
    )


class Writer:
    """The training script's side: `loss` appended line by line (each line in two writes),
    `acc` in chunk files written as a dotfile and renamed."""

    def __init__(self, tmp: Path) -> None:
        self.append = tmp / "append.jsonl"
        self.chunks = tmp / "chunks"
        self.chunks.mkdir(exist_ok=True)
        self.part = 0

    def steps(self, start: int, stop: int, chunk: int = 10) -> None:
        for base in range(start, stop, chunk):
            end = min(base + chunk, stop)
            with open(self.append, "ab") as fh:
                for i in range(base, end):
                    line = json.dumps({"_step": i, "_timestamp": 1.76e9 + i, "loss": 1 / (i + 1)})
                    half = len(line) // 2
                    fh.write(line[:half].encode())
                    fh.flush()
                    fh.write((line[half:] + "\n").encode())
                    fh.flush()
            rows = "".join(
                json.dumps({"_step": i, "acc": i / 300}) + "\n" for i in range(base, end)
            )
            tmp = self.chunks / f".part-{self.part:04d}.jsonl"
            tmp.write_text(rows)
            os.rename(tmp, self.chunks / f"part-{self.part:04d}.jsonl")
            self.part += 1


def stored(root: Path, run: str = RUN) -> dict[str, list[int | None]]:
    """Every stored step per metric of the run, from the metric files the index lists."""
    store = Store.open(root)
    try:
        paths = [r["path"] for r in store.query("SELECT path FROM metric_files WHERE run_id = ?",
                                                 (run,))]  # fmt: skip
    finally:
        store.close()
    out: dict[str, list[int | None]] = {}
    for rel in paths:
        table = pq.read_table(root / rel, columns=["metric_name", "step"])
        for name, step in zip(table["metric_name"].to_pylist(), table["step"].to_pylist(),
                              strict=True):  # fmt: skip
            out.setdefault(name, []).append(step)
    return out


def count(root: Path, metric: str) -> int:
    with contextlib.suppress(Exception):
        return len(stored(root).get(metric, []))
    return 0


def run_row(root: Path) -> dict[str, object]:
    store = Store.open(root)
    try:
        [row] = store.query("SELECT * FROM runs WHERE run_id = ?", (RUN,))
        tags = {
            r["key"]: r["value"]
            for r in store.query(
                "SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ?", (RUN,)
            )
        }
        return row | {"tags": tags}  # fmt: skip
    finally:
        store.close()


def sentinel(tmp: Path, state: str, reason: str = "workload-entrypoint-exit",
             later: float = 0.0) -> None:  # fmt: skip
    """The wrapper's sentinel, stamped now (or `later` seconds from now)."""
    folder = tmp / "run"
    folder.mkdir(exist_ok=True)
    stamp = (datetime.now(UTC) + timedelta(seconds=later)).strftime("%Y-%m-%dT%H:%M:%SZ")
    body = {"state": state, "reason": reason, "message": "entrypoint exited", "completed_at": stamp}
    (folder / ".completion.json").write_text(json.dumps(body))
    os.rename(folder / ".completion.json", folder / "completion.json")


def exact(steps: list[int | None], n: int) -> bool:
    return sorted(s for s in steps if s is not None) == list(range(n)) and None not in steps


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_kill_9_mid_run_and_restarts_store_every_step_once(
    tmp_path: Path, store: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    writer = Writer(tmp_path)
    procs.append(collector(tmp_path, store))
    wait_until(lambda: (tmp_path / "run" / "ready").exists(), "the ready file", TIMEOUT)
    writer.steps(0, 100)
    wait_until(lambda: count(store, "loss") >= 10, "the first rows in the store", TIMEOUT)
    procs[-1].send_signal(signal.SIGKILL)  # mid-run: the writer's last rows are being read
    procs[-1].wait()
    writer.steps(100, 200)  # written while no collector runs
    procs.append(collector(tmp_path, store))
    writer.steps(200, 250)
    procs[-1].send_signal(signal.SIGKILL)  # while it catches up (reading, spooling, delivering)
    procs[-1].wait()
    procs.append(collector(tmp_path, store))
    wait_until(lambda: count(store, "acc") >= 250, "the rows written so far", TIMEOUT)
    writer.steps(250, 300)
    sentinel(tmp_path, "succeeded")
    wait_until(lambda: procs[-1].poll() is not None, "the collector's exit", TIMEOUT)
    assert procs[-1].returncode == 0, (tmp_path / "c.err").read_text()
    assert (tmp_path / "run" / "done").exists()
    steps = stored(store)
    assert exact(steps["loss"], 300) and exact(steps["acc"], 300)
    assert steps["tau/run_status"] == [None]
    # The spool holds each row once too, and the checkpoint's counts agree with it.
    point = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    spooled = (tmp_path / "out" / "TauExpMetrics.jsonl").read_bytes().count(b"\n")
    assert point["spool_rows"] == point["delivered_rows"] == spooled
    assert spooled == sum(len(v) for v in steps.values())
    row = run_row(store)
    assert row["state"] == "succeeded" and row["project"] == "proj"
    assert row["experiment_id"] == "exp" and row["run_group_id"] == "grp"
    tags = row["tags"]
    assert isinstance(tags, dict)
    assert tags["tau.status.state"] == "succeeded" and tags["tau.attempt"] == "0"
    assert tags["tau.status.reason"] == "workload-entrypoint-exit"
    [status] = (tmp_path / "out" / "metrics-status").glob(f"run-status-{RUN}-*.jsonl")
    assert json.loads(status.read_text())["value"] == 1.0
    # The summaries count each row once, whatever the restarts.
    summary = Store.open(store).query(
        "SELECT count, max_step FROM metric_summaries WHERE run_id = ? AND metric_name = 'loss'",
        (RUN,),
    )
    assert summary == [{"count": 300, "max_step": 299}]


def test_sigterm_before_the_sentinel_records_cancelled(
    tmp_path: Path, store: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    writer = Writer(tmp_path)
    # In a pod (KUBERNETES_SERVICE_HOST) the processes in /proc are summed; a GPU node's
    # nvidia-smi answers the query in its documented CSV form.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho '0, 42, 2048, 81920'\n")
    (bin_dir / "nvidia-smi").chmod(0o755)
    env = {
        "TAU_RETRY_ATTEMPT": "1",
        "KUBERNETES_SERVICE_HOST": "10.0.0.1",
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
    }
    procs.append(collector(tmp_path, store, env=env))
    wait_until(lambda: (tmp_path / "run" / "ready").exists(), "the ready file", TIMEOUT)
    writer.steps(0, 50)
    wait_until(lambda: count(store, "loss") >= 1, "the first rows in the store", TIMEOUT)
    wait_until(lambda: count(store, "system/cpu_cores") >= 1, "a CPU rate (two samples)", TIMEOUT)
    procs[-1].send_signal(signal.SIGTERM)
    assert procs[-1].wait(timeout=TIMEOUT) == 0
    assert (tmp_path / "run" / "done").exists()
    steps = stored(store)
    assert exact(steps["loss"], 50) and exact(steps["acc"], 50)
    row = run_row(store)
    tags = row["tags"]
    assert isinstance(tags, dict)
    assert row["state"] == "cancelled" and tags["tau.status.state"] == "cancelled"
    assert tags["tau.status.reason"] == "sidecar-shutdown" and tags["tau.attempt"] == "1"
    for name in ("system/memory_bytes", "system/gpu0/utilization_percent",
                 "system/gpu0/memory_used_bytes"):  # fmt: skip
        assert steps[name] and set(steps[name]) == {None}  # placed by time, not by step
    opened = Store.open(store)
    values = opened.query(
        "SELECT metric_name, latest_value, min_value FROM metric_summaries "
        "WHERE metric_name LIKE 'system/%' ORDER BY metric_name"
    )
    by_name = {v["metric_name"]: v for v in values}
    assert by_name["system/gpu0/utilization_percent"]["latest_value"] == 42.0
    assert by_name["system/gpu0/memory_used_bytes"]["latest_value"] == 2048 * 1024 * 1024
    assert by_name["system/memory_bytes"]["min_value"] > 0
    assert by_name["system/cpu_cores"]["min_value"] >= 0
    units = {
        r["metric_name"]: r["unit"]
        for path in opened.query("SELECT path FROM metric_files")
        for r in pq.read_table(store / path["path"], columns=["metric_name", "unit"]).to_pylist()
        if r["metric_name"].startswith("system/")
    }
    assert units == {
        "system/cpu_cores": "cores",
        "system/memory_bytes": "bytes",
        "system/gpu0/utilization_percent": "percent",
        "system/gpu0/memory_used_bytes": "bytes",
    }


def _immutable(path: Path, on: bool) -> None:
    """A folder no process may write into: chattr +i as root (whom permission bits never stop),
    else mode 0555. Where the filesystem has no immutable flag (an overlay), a file takes the
    place of the store's scratch folder, so no commit can start.
    """
    if os.geteuid() != 0:
        path.chmod(0o555 if on else 0o755)
        return
    done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True,
                          check=False)  # fmt: skip
    if done.returncode == 0:
        return
    blocker = path / ".tmp"
    if on:
        shutil.rmtree(blocker, ignore_errors=True)
        blocker.write_text("")
    else:
        blocker.unlink(missing_ok=True)


def test_a_store_that_refuses_writes_keeps_rows_spooled_until_it_is_back(
    tmp_path: Path, store: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    writer = Writer(tmp_path)
    procs.append(collector(tmp_path, store))
    wait_until(lambda: (tmp_path / "run" / "ready").exists(), "the ready file", TIMEOUT)
    writer.steps(0, 20)
    wait_until(lambda: count(store, "loss") >= 20, "the first rows in the store", TIMEOUT)
    _immutable(store, True)
    try:
        writer.steps(20, 60)
        err = tmp_path / "c.err"
        wait_until(lambda: err.read_text().count("store not written") >= 2,
                   "two notes of the refused store", TIMEOUT)  # fmt: skip
        point = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
        assert point["spool_size"] > point["delivered"]
        assert count(store, "loss") == 20
        note = next(n for n in err.read_text().splitlines() if "store not written" in n)
        assert note.startswith("offload metrics: store not written (") and "retrying in" in note
    finally:
        _immutable(store, False)
    wait_until(lambda: count(store, "loss") >= 60, "the spooled rows after the store is back",
               TIMEOUT)  # fmt: skip
    sentinel(tmp_path, "failed")
    assert procs[-1].wait(timeout=TIMEOUT) == 0
    steps = stored(store)
    assert exact(steps["loss"], 60) and exact(steps["acc"], 60)
    assert run_row(store)["state"] == "failed"


KILL_AFTER_COMMIT = textwrap.dedent(
    """
    import os, signal, sys
    from tau.portal.offload import collector
    real = collector.deliver
    committed = []
    def deliver(*args, **kwargs):
        result = real(*args, **kwargs)
        committed.append(result)
        return result
    real_save = collector.checkpoints.save
    def save(out, point):
        if committed and int(os.environ["KILL_AT"]) == len(committed):
            os.kill(os.getpid(), signal.SIGKILL)  # the store committed, the checkpoint not
        real_save(out, point)
    collector.deliver = deliver
    collector.checkpoints.save = save
    from tau.portal.cli import main
    raise SystemExit(main(sys.argv[1:]))
    """
)


def test_a_kill_between_the_store_commit_and_the_checkpoint_stores_nothing_twice(
    tmp_path: Path, store: Path
) -> None:
    writer = Writer(tmp_path)
    writer.steps(0, 40)
    args = [
        "experiment", "offload", "metrics", "--store", str(store), "--out", str(tmp_path / "out"),
        "--run", RUN, "--project", "proj", "--history", str(tmp_path / "append.jsonl"),
        "--history", str(tmp_path / "chunks" / "*.jsonl"),
    ]  # fmt: skip
    killed = subprocess.run([sys.executable, "-c", KILL_AFTER_COMMIT, *args],
                            env={**os.environ, "KILL_AT": "1"}, capture_output=True,
                            check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL
    point = json.loads((tmp_path / "out" / "checkpoint.json").read_text())
    assert point["pending"] is not None and point["delivered"] == 0  # not recorded as delivered
    assert count(store, "loss") == 40  # but in the store
    writer.steps(40, 70)  # more rows before the restart
    again = subprocess.run([sys.executable, "-m", "tau.portal.cli", *args, "-o", "json"],
                           capture_output=True, text=True, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["delivered_rows"] == 60 and report["pending_rows"] == 0
    steps = stored(store)
    assert exact(steps["loss"], 70) and exact(steps["acc"], 70)


def test_delivering_a_sequence_again_changes_nothing(tmp_path: Path, store: Path) -> None:
    opened = Store.open(store)
    who = Identity(RUN, "proj", "exp", "grp", "stellar-online", "sess", {"source": "x"})
    rows = [
        {"project": "proj", "run_group_id": "grp", "run_id": RUN, "metric_name": "loss",
         "step": i, "wall_time": 1_000_000 * i, "value": 1.0 / (i + 1), "unit": None,
         "source": "stellar-online", "split": None, "tags": "{}"}
        for i in range(5)
    ]  # fmt: skip
    assert deliver(opened, who, rows, seq=0, attempt="0", scratch=tmp_path)
    assert not deliver(opened, who, rows, seq=0, attempt="0", scratch=tmp_path)
    assert deliver(opened, who, rows[:1], seq=0, attempt="1", scratch=tmp_path)  # another attempt
    files = opened.query("SELECT file_id, row_count FROM metric_files ORDER BY row_count")
    assert files == [
        {"file_id": file_id(RUN, "sess", "1", 0), "row_count": 1},
        {"file_id": file_id(RUN, "sess", "0", 0), "row_count": 5},
    ]
    assert opened.scalar("SELECT count FROM metric_summaries WHERE metric_name = 'loss'") == 6


def test_an_existing_run_keeps_its_identity(tmp_path: Path, store: Path, capsys) -> None:
    made = portal(capsys, "experiment", "track", RUN, "--store", store, "--group", "captured",
                  "--metric", "x=1")  # fmt: skip
    assert made.code == 0, made.err
    opened = Store.open(store)
    who = Identity(RUN, "proj", "exp", "grp", "stellar-online", "sess", {})
    row = {"project": "proj", "run_group_id": "grp", "run_id": RUN, "metric_name": "loss",
           "step": 0, "wall_time": 1, "value": 1.0, "unit": None, "source": "stellar-online",
           "split": None, "tags": "{}"}  # fmt: skip
    assert deliver(opened, who, [row], seq=0, attempt="0", scratch=tmp_path)
    [run] = opened.query("SELECT run_group_id, state FROM runs")
    assert run == {"run_group_id": "captured", "state": "succeeded"}


def test_at_the_end_it_waits_for_the_store_before_the_done_file(
    tmp_path: Path, store: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    writer = Writer(tmp_path)
    writer.steps(0, 30)
    procs.append(collector(tmp_path, store))
    wait_until(lambda: count(store, "loss") >= 30, "the first rows in the store", TIMEOUT)
    _immutable(store, True)
    try:
        writer.steps(30, 40)
        sentinel(tmp_path, "succeeded")
        err = tmp_path / "c.err"
        wait_until(lambda: err.read_text().count("store not written") >= 2,
                   "two notes of the refused store after the sentinel", TIMEOUT)  # fmt: skip
        assert not (tmp_path / "run" / "done").exists() and procs[-1].poll() is None
        assert (tmp_path / "out" / "metrics-status").is_dir()  # the status file is written
    finally:
        _immutable(store, False)
    assert procs[-1].wait(timeout=TIMEOUT) == 0
    assert (tmp_path / "run" / "done").exists()
    steps = stored(store)
    assert exact(steps["loss"], 40) and steps["tau/run_status"] == [None]


def test_a_collector_stopped_alone_then_restarted_ends_with_the_workloads_state(
    tmp_path: Path, store: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    writer = Writer(tmp_path)
    writer.steps(0, 20)
    procs.append(collector(tmp_path, store))
    wait_until(lambda: count(store, "loss") >= 20, "the first rows in the store", TIMEOUT)
    procs[-1].send_signal(signal.SIGTERM)  # the runtime stops the collector, not the pod
    assert procs[-1].wait(timeout=TIMEOUT) == 0
    assert run_row(store)["state"] == "cancelled"
    (tmp_path / "run" / "done").unlink()
    procs.append(collector(tmp_path, store))  # the kubelet restarts the sidecar
    writer.steps(20, 40)
    # The workload ends after the collector's stop (markers are ordered by their time, to the
    # second as the wrapper writes it): its completion is stamped two seconds on.
    sentinel(tmp_path, "succeeded", later=2.0)
    assert procs[-1].wait(timeout=TIMEOUT) == 0
    steps = stored(store)
    assert exact(steps["loss"], 40) and steps["tau/run_status"] == [None, None]
    row = run_row(store)
    tags = row["tags"]
    assert isinstance(tags, dict)
    assert row["state"] == "succeeded" and tags["tau.status.reason"] == "workload-entrypoint-exit"
    latest = Store.open(store).scalar(
        "SELECT latest_value FROM metric_summaries WHERE metric_name = 'tau/run_status'"
    )
    assert latest == 1.0
