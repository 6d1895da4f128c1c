"""`experiment offload metrics` into the team store, against the real PostgreSQL and versitygw:
every step once through a PostgreSQL outage, an object server outage and a kill -9, the marker,
and a store version that moves with every delivery (what live pages follow)."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tau.portal.store.location import parse_team_url
from tau.portal.store.team import TeamStore
from tests.portal_helpers import portal
from tests.teamstore.conftest import Team
from tests.teamstore.servers import wait_until
from tests.test_offload_collector import RUN, Writer, collector, exact, sentinel

TIMEOUT = 90.0


def stored(team: Team) -> dict[str, list[int | None]]:
    store = TeamStore.open(parse_team_url(team.url))
    try:
        out: dict[str, list[int | None]] = {}
        for row in store.query("SELECT path FROM metric_files WHERE run_id = ?", (RUN,)):
            table = pq.read_table(pa.BufferReader(store.file_bytes(row["path"])))
            for name, step in zip(table["metric_name"].to_pylist(), table["step"].to_pylist(),
                                  strict=True):  # fmt: skip
                out.setdefault(name, []).append(step)
        return out
    finally:
        store.close()


def count(team: Team, metric: str) -> int:
    with contextlib.suppress(Exception):
        return len(stored(team).get(metric, []))
    return 0


def version(team: Team) -> str:
    store = TeamStore.open(parse_team_url(team.url))
    try:
        return store.version()
    finally:
        store.close()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_offload_through_a_postgres_outage_and_a_kill_stores_every_step_once(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    procs: list[subprocess.Popen[bytes]],
) -> None:  # fmt: skip
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    writer = Writer(tmp_path)
    procs.append(collector(tmp_path, team.url))
    wait_until(lambda: (tmp_path / "run" / "ready").exists(), "the ready file", TIMEOUT)
    writer.steps(0, 100)
    wait_until(lambda: count(team, "loss") >= 100, "the first rows in the team store", TIMEOUT)
    before = version(team)
    team.postgres.stop()
    try:
        writer.steps(100, 200)
        err = tmp_path / "c.err"
        wait_until(lambda: "store not written" in err.read_text(), "the outage's note", TIMEOUT)
        assert "team store index" in err.read_text()
    finally:
        team.postgres.start()
    wait_until(lambda: count(team, "loss") >= 200, "the rows spooled during the outage", TIMEOUT)
    assert version(team) != before
    err = tmp_path / "c.err"
    notes = err.read_text().count("store not written")
    team.objects.stop()  # the object server gone: the transaction is not committed either
    try:
        writer.steps(200, 250)
        wait_until(lambda: err.read_text().count("store not written") > notes,
                   "the object server's note", TIMEOUT)  # fmt: skip
        assert "team store objects s3://" in err.read_text()
    finally:
        team.objects.start()
    wait_until(lambda: count(team, "loss") >= 250, "the rows of the object outage", TIMEOUT)
    procs[-1].send_signal(signal.SIGKILL)
    procs[-1].wait()
    writer.steps(250, 300)
    procs.append(collector(tmp_path, team.url))
    sentinel(tmp_path, "succeeded")
    assert procs[-1].wait(timeout=TIMEOUT) == 0, (tmp_path / "c.err").read_text()
    steps = stored(team)
    assert exact(steps["loss"], 300) and exact(steps["acc"], 300)
    assert steps["tau/run_status"] == [None]
    store = TeamStore.open(parse_team_url(team.url))
    try:
        [run] = store.query(
            "SELECT state, project, run_group_id FROM runs WHERE run_id = ?", (RUN,)
        )
        rows = store.query(
            "SELECT key, value FROM tags WHERE scope_type = 'run' AND scope_id = ?", (RUN,)
        )
        tags = {r["key"]: r["value"] for r in rows}
        summary = store.query(
            "SELECT count FROM metric_summaries WHERE run_id = ? AND metric_name = 'acc'", (RUN,)
        )
    finally:
        store.close()
    assert run == {"state": "succeeded", "project": "proj", "run_group_id": "grp"}
    assert tags["tau.status.state"] == "succeeded" and tags["source"] == "stellar-online"
    assert summary == [{"count": 300}]
    status = json.loads(next((tmp_path / "out" / "metrics-status").glob("*.jsonl")).read_text())
    assert status["metric_name"] == "tau/run_status" and status["value"] == 1.0
