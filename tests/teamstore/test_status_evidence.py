"""`tau run status`'s store read (layer 7) against a real team store: PostgreSQL's index and
versitygw's objects, the rows delivered as the collector delivers them (then pushed, as the
team store is written), the reader's credentials from its own environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.cli import evidence_read as store_read
from tau.status.offload import Offload
from tests import offload_store_support as seed
from tests.portal_helpers import portal
from tests.teamstore.conftest import Team


def test_status_reads_what_landed_in_the_team_store(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = seed.init(tmp_path / "store")
    seed.deliver(folder, "train-r1", [{"_step": s, "loss": 1.0, "acc": 0.1} for s in range(300)])
    seed.mark(folder, "train-r1", "cancelled", reason="sidecar-shutdown")
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    pushed = portal(capsys, "experiment", "push", "--all", "--store", str(folder), "--to", team.url)
    assert pushed.code == 0, pushed.err
    ev = store_read.read(Offload("sess-1", "train-r1", team.url, sidecar=True), team.env)
    assert ev.error == ""
    assert dict(ev.metrics) == {"acc": 300, "loss": 300}
    assert (ev.marker, ev.reason) == ("cancelled", "sidecar-shutdown")


def test_a_team_store_refusing_the_credentials_is_one_line(
    team: Team, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    monkeypatch.setenv("PGPASSWORD", "not-the-password")
    ev = store_read.read(Offload("sess-1", "train-r1", team.url, sidecar=True))
    assert "password authentication failed" in ev.error, ev.error
    assert "\n" not in ev.error and "not-the-password" not in ev.error


def test_attempt_starts_are_read_from_the_team_store_s_objects(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tau.portal.store.attempts import attempt_starts
    from tau.portal.store.location import parse_team_url
    from tau.portal.store.team import TeamStore

    folder = seed.init(tmp_path / "store")
    seed.deliver(folder, "r1", [{"_step": s, "loss": 1.0} for s in range(20)])
    seed.deliver(folder, "r1", [{"_step": s, "loss": 0.5} for s in range(15, 40)], attempt=1)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    pushed = portal(capsys, "experiment", "push", "--all", "--store", str(folder), "--to", team.url)
    assert pushed.code == 0, pushed.err
    store = TeamStore.open(parse_team_url(team.url))
    try:
        starts = attempt_starts(store, ["r1"])
    finally:
        store.close()
    assert [(a, step) for a, step, _ in starts["r1"]] == [(0, 0), (1, 15)]
