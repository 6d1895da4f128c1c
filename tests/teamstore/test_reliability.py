"""The team store under stress, against the real servers: 16 concurrent pushers of overlapping
runs, pushers killed with SIGKILL at random points, PostgreSQL restarted and the object server
stopped in the middle of a push, and a reader that must never see a half-pushed run."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pyarrow.fs as pafs
import pytest

from tests.portal_helpers import portal
from tests.teamstore.conftest import BUCKET, Team
from tests.teamstore.servers import wait_until

GROUPS = 8
CLI = str(Path(sys.executable).parent / "taugrid-portal")


def make_folder(root: Path, runs: int, capsys: pytest.CaptureFixture[str]) -> Path:
    """`runs` runs over GROUPS groups, each with a metric file and tags."""
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for i in range(runs):
        made = portal(
            capsys, "experiment", "track", f"run-{i:04d}", "--store", root,
            "--group", f"g{i % GROUPS}", "--metric", f"loss={1 / (i + 1)}",
            "--metric", f"acc={i / runs}", "--step", str(i), "--tag", f"seed={i % 3}",
            "--created-at", f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
        )  # fmt: skip
        assert made.code == 0, made.err
    return root


def conn(team: Team, db: str | None = None) -> psycopg.Connection:
    url = team.postgres.url(db or team.database)
    return psycopg.connect(url, password=team.postgres.password, autocommit=True)


def folder_files(root: Path) -> dict[str, set[str]]:
    """Metric file paths of every run, from the folder's own index."""
    index = sqlite3.connect(root / "index.sqlite")
    try:
        out: dict[str, set[str]] = {}
        for run_id, path in index.execute("SELECT run_id, path FROM metric_files"):
            out.setdefault(run_id, set()).add(path)
        return out
    finally:
        index.close()


class Reader:
    """Reads the team store as a reader would while pushes run; records any half run seen.

    A run is whole when its index row, every metric file row of the folder's copy, its
    summaries and every file's object are all there.
    """

    def __init__(self, team: Team, db: str, expected: dict[str, set[str]]) -> None:
        self.team, self.db, self.expected = team, db, expected
        self.problems: list[str] = []
        self.reads = 0
        self._stop = threading.Event()
        self.fs = pafs.S3FileSystem(
            access_key=team.objects.access_key,
            secret_key=team.objects.secret_key,
            endpoint_override=f"127.0.0.1:{team.objects.port}",
            scheme="http",
            region="us-east-1",
        )
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def check_once(self, prefix: str) -> None:
        # One snapshot: every read below sees the same committed state.
        with conn(self.team, self.db) as c, c.transaction():
            c.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            runs = [r[0] for r in c.execute("SELECT run_id FROM runs")]
            files: dict[str, set[str]] = {}
            for run_id, path in c.execute("SELECT run_id, path FROM metric_files"):
                files.setdefault(run_id, set()).add(path)
            summarized = {r[0] for r in c.execute("SELECT DISTINCT run_id FROM metric_summaries")}
            pushed = {r[0] for r in c.execute("SELECT run_id FROM tau_pushes")}
        for run_id in runs:
            if files.get(run_id, set()) != self.expected[run_id]:
                self.problems.append(f"{run_id}: metric files {files.get(run_id)}")
            if run_id not in summarized or run_id not in pushed:
                self.problems.append(f"{run_id}: visible without its summaries or push record")
        paths = [f"{BUCKET}/{prefix}/{p}" for r in runs for p in files.get(r, ())]
        for info in self.fs.get_file_info(paths):
            if info.type != pafs.FileType.File:
                self.problems.append(f"{info.path}: listed in the index but not stored")
        self.reads += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check_once(self.prefix)
            except psycopg.OperationalError:
                time.sleep(0.05)  # the database is restarting in that test; read again

    def start(self, prefix: str) -> None:
        self.prefix = prefix
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)


def env(team: Team) -> dict[str, str]:
    return dict(os.environ) | team.env


def pusher(
    team: Team, url: str, folder: Path, *targets: str, batch: int = 5
) -> subprocess.Popen[str]:
    args = [CLI, "experiment", "push", *(targets or ("--all",)), "--store", str(folder)]
    return subprocess.Popen(
        [*args, "--to", url, "--batch", str(batch), "--json"],
        env=env(team),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def fresh_store(team: Team, name: str) -> str:
    """Another database and prefix on the same servers, initialized; its URL."""
    team.postgres.create_db(name)
    url = f"{team.postgres.url(name)}?objects=s3://{BUCKET}/stores/{name}"
    done = subprocess.run(
        [CLI, "experiment", "init", "--store", url], env=env(team), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return url


def assert_exactly_one_copy(team: Team, db: str, expected: dict[str, set[str]]) -> None:
    with conn(team, db) as c:
        runs = [r[0] for r in c.execute("SELECT run_id FROM runs ORDER BY run_id")]
        pushes = c.execute("SELECT count(*) FROM tau_pushes").fetchone()
        files = c.execute("SELECT count(*) FROM metric_files").fetchone()
    assert runs == sorted(expected)
    assert pushes is not None and pushes[0] == len(expected)
    assert files is not None and files[0] == sum(len(v) for v in expected.values())


def test_sixteen_concurrent_pushers_of_overlapping_runs(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_folder(tmp_path / "store", 96, capsys)
    expected = folder_files(folder)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    reader = Reader(team, team.database, expected)
    reader.start(team.prefix)
    procs = [
        pusher(team, team.url, folder, *(f"g{(i + k) % GROUPS}" for k in (0, 1, 3)), batch=4)
        for i in range(16)
    ]
    results = [p.communicate(timeout=600) for p in procs]
    reader.stop()
    import json

    for p, (_, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
    pushed = sum(json.loads(out)["pushed"] for out, _ in results)
    assert pushed == len(expected)  # each run copied by exactly one pusher: 0 lost, 0 twice
    assert_exactly_one_copy(team, team.database, expected)
    reader.check_once(team.prefix)
    assert reader.problems == []
    assert reader.reads > 1


def test_pushers_killed_at_random_points_leave_readers_whole_and_reruns_complete(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_folder(tmp_path / "store", 48, capsys)
    expected = folder_files(folder)
    rng = random.Random(20261206)
    kills = 0
    midway = 0  # kills of a pusher that had copied some runs but not all: a push cut in two
    for round_ in range(8):  # 8 fresh stores × 5 kills = 40 kills at random points
        name = f"{team.database}k{round_}"
        url = fresh_store(team, name)
        reader = Reader(team, name, expected)
        for k in range(5):
            before = pushed_count(team, name)
            proc = pusher(team, url, folder, batch=2)
            if k % 2:
                # Anywhere: starting up, reading the folder, uploading, committing.
                time.sleep(rng.uniform(0.2, 2.5))  # the random point of the kill, not a wait
            else:
                # Inside the copy: once this pusher has committed a batch, a little later.
                wait_until(
                    lambda b=before, p=proc, n=name: (
                        pushed_count(team, n) > b or p.poll() is not None
                    ),
                    "the pusher's first commit",
                )
                # The random point of the kill, not a wait; a round's first kill comes at once
                # (a push of many batches is still under way at its first commit).
                time.sleep(rng.uniform(0.0, 0.3) if k else 0.0)
            proc.send_signal(signal.SIGKILL)
            proc.communicate(timeout=60)
            kills += 1
            reader.check_once(f"stores/{name}")
            midway += before < pushed_count(team, name) < len(expected)
        rerun = pusher(team, url, folder, batch=2)
        _, err = rerun.communicate(timeout=600)
        assert rerun.returncode == 0, err
        assert_exactly_one_copy(team, name, expected)
        reader.check_once(f"stores/{name}")
        assert reader.problems == [], f"round {round_}"
    assert kills == 40
    # Each round's first kill cuts a fresh store's first push at its first commit, so at least
    # one kill a round lands mid-push however busy (or quick) the machine is; most land there.
    assert midway >= 8, f"only {midway} of the kills landed in the middle of a push"


def pushed_count(team: Team, db: str) -> int:
    with conn(team, db) as c:
        row = c.execute("SELECT count(*) FROM tau_pushes").fetchone()
    return int(row[0]) if row is not None else 0


def _started_pushing(team: Team, db: str) -> bool:
    with conn(team, db) as c:
        row = c.execute("SELECT count(*) FROM tau_pushes").fetchone()
    return row is not None and row[0] >= 3


def _one_clear_error(err: str, words: str) -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[0].startswith("error: ") and words in lines[0], err
    assert len(lines) <= 2 and "Traceback" not in err, err  # the error and its hint


def test_postgres_restarted_mid_push_fails_clearly_and_a_rerun_completes(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_folder(tmp_path / "store", 160, capsys)
    expected = folder_files(folder)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    proc = pusher(team, team.url, folder, batch=1)
    wait_until(lambda: _started_pushing(team, team.database), "the first pushed runs")
    team.postgres.restart()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode != 0, "the push ended before the restart: make the folder larger"
    _one_clear_error(err, "team store index")
    rerun = pusher(team, team.url, folder, batch=20)
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    assert_exactly_one_copy(team, team.database, expected)


def test_object_server_stopped_mid_push_fails_clearly_and_a_rerun_completes(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_folder(tmp_path / "store", 160, capsys)
    expected = folder_files(folder)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    proc = pusher(team, team.url, folder, batch=1)
    wait_until(lambda: _started_pushing(team, team.database), "the first pushed runs")
    team.objects.stop()
    try:
        _, err = proc.communicate(timeout=300)
    finally:
        team.objects.start()
    assert proc.returncode != 0, "the push ended before the stop: make the folder larger"
    _one_clear_error(err, "team store objects s3://")
    reader = Reader(team, team.database, expected)
    reader.check_once(team.prefix)
    assert reader.problems == []
    rerun = pusher(team, team.url, folder, batch=20)
    _, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    assert_exactly_one_copy(team, team.database, expected)
