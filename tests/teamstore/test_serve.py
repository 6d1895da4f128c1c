"""Stellar served from the team store answers as it does from the folder store it was pushed
from: the same API documents and pages over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tau.portal.stellar.source import StoreSource
from tau.portal.store.location import parse_team_url
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.portal_helpers import portal
from tests.portal_web_support import Served, serve_app
from tests.teamstore.conftest import Team
from tests.teamstore.seed import seed_store
from tests.teamstore.test_parity import NOW, normalize

PATHS = [
    "/api/v2/stellar/snapshot?target=demo",
    "/api/v2/stellar/snapshot?target=arm-b&metric=loss",
    "/api/v2/stellar/series?target=demo&metric=loss",
    "/api/v2/stellar/series?target=demo&metric=acc&run_id=r1",
    "/api/v2/stellar/series?target=demo&metric=loss&format=columns&max_points=20",
    "/api/v2/stellar/runs?target=arm-a",
    "/api/v2/stellar/runs",
    "/api/v2/stellar/experiments",
    "/api/v2/stellar/status?target=demo",
    "/api/v2/stellar/artifacts?target=r0",
    "/api/v2/stellar/artifact?target=r0&artifact=nope",
    "/api/v2/stellar/snapshot?target=missing",
    "/stellar?target=demo",
    "/stellar?target=r2",
    "/stellar?target=arm-a&kind=group",
    "/",
]


@pytest.fixture
def both(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Iterator[tuple[tuple[Served, str], tuple[Served, str]]]:
    folder = seed_store(tmp_path / "store", tmp_path / "work", capsys)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    assert (
        portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url).code == 0
    )
    with ExitStack() as stack:
        served = []
        for where in (folder, parse_team_url(team.url)):
            source = StoreSource(where)
            app = stack.enter_context(
                serve_app(lambda guard, s=source: create_app(guard=guard, stellar=Stellar(s)))
            )
            served.append((app, str(where)))
        yield served[0], served[1]


def _clean(body: bytes, location: str) -> str:
    text = body.decode()
    text = text.replace(json.dumps(location)[1:-1], "<store>").replace(location, "<store>")
    text = text.replace(location.replace("&", "&amp;"), "<store>")
    return normalize(text, location)


def test_team_stellar_serves_what_the_folder_serves(
    both: tuple[tuple[Served, str], tuple[Served, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tau.portal.web.stellar_routes.now", lambda: NOW)
    (local, local_name), (remote, remote_name) = both
    for path in PATHS:
        status_l, _, body_l = local.get(path)
        status_r, _, body_r = remote.get(path)
        assert status_r == status_l, path
        clean_l = _clean(body_l, local_name)
        clean_r = _clean(body_r, remote_name)
        assert _strip_clock(clean_r) == _strip_clock(clean_l), path


def test_pushed_artifacts_download_from_the_object_store(
    both: tuple[tuple[Served, str], tuple[Served, str]],
) -> None:
    (local, _), (remote, _) = both
    status, listed = local.json("/api/v2/stellar/artifacts?target=r0")
    assert status == 200
    copied = [a for a in listed["artifacts"] if str(a["uri"]).startswith("artifacts/")]
    assert copied, "the seed's imported history is copied into the store"
    path = f"/api/v2/stellar/artifact?target=r0&artifact={copied[0]['artifact_id']}"
    status_l, _, body_l = local.get(path)
    status_r, headers, body_r = remote.get(path)
    assert (status_l, status_r) == (200, 200)
    assert body_r == body_l and body_r
    assert "attachment" in headers.get("content-disposition", "")


def test_healthz_and_version_follow_pushes(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = seed_store(tmp_path / "store", tmp_path / "work", capsys)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    source = StoreSource(parse_team_url(team.url))
    empty = source.version()
    assert portal(capsys, "experiment", "push", "r0", "--store", folder, "--to", team.url).code == 0
    assert source.version() != empty
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as served:
        status, body = served.json("/healthz")
        assert status == 200 and body["ok"] is True


def _strip_clock(text: str) -> str:
    import re

    text = re.sub(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<t>", text)
    # The page's ETag is the store's version: a folder's file times, the team store's push
    # sequence.
    return re.sub(r'etag="[^"]*"', 'etag=""', text)
