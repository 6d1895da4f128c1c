"""Damaged stores: a corrupt or truncated index.sqlite is one located line with the fix on every
command (never a traceback), `rebuild-index` makes a new one from the store's files, and the
server still starts and answers 503 pages; a corrupt or missing Parquet file degrades only its
run ("metrics unreadable for r1"), never a 500 and never a server path in the page."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau.portal.stellar.source import StoreSource
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.portal_helpers import portal, write_history
from tests.portal_web_support import serve_app


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for i, group in enumerate(("arm-a", "arm-b")):
        history = write_history(tmp_path / f"h{i}.jsonl", 20, scale=1 + i)
        args = ["experiment", "import", "jsonl", "--store", root, "--run", f"r{i}"]
        assert portal(capsys, *args, "--group", group, "--history", history).code == 0
    return root


def corrupt(root: Path, how: str) -> None:
    index = root / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        (root / f"index.sqlite{suffix}").unlink(missing_ok=True)
    if how == "truncated":
        data = index.read_bytes()
        index.write_bytes(data[:3000])
    elif how == "garbage":
        index.write_bytes(b"not a database " * 400)
    else:
        raise AssertionError(how)


COMMANDS = [
    ["search"],
    ["list"],
    ["status", "demo"],
    ["compare", "demo"],
    ["stellar", "demo", "-o", "json"],
    ["plot", "demo", "--out", "PLOT"],
    ["sql", "select 1"],
    ["export", "--out", "EXPORT"],
    ["track", "r9", "--metric", "a=1"],
    ["observe", "--scope", "run:r0", "--text", "x"],
    ["experiments", "search"],
]


@pytest.mark.parametrize("how", ["truncated", "garbage"])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: a[0])
def test_every_command_says_one_located_line_with_the_fix(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, args: list[str]
) -> None:
    corrupt(store, how)
    args = [
        str(tmp_path / "p.svg") if a == "PLOT" else str(tmp_path / "x") if a == "EXPORT" else a
        for a in args
    ]
    result = portal(capsys, "experiment", *args, "--store", store)
    assert result.code == 1, result.out
    lines = result.err.splitlines()
    assert lines[0].startswith(f"error: experiment store index {store / 'index.sqlite'} is damaged")
    assert "rebuild-index --store" in result.err and "restore index.sqlite" in result.err
    assert "Traceback" not in result.err and len(lines) == 2


def test_rebuild_index_restores_every_record(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = portal(capsys, "experiment", "compare", "demo", "--store", store, "--json").json()
    corrupt(store, "truncated")
    result = portal(capsys, "experiment", "rebuild-index", "--store", store, "--json")
    assert result.code == 0, result.err
    body = result.json()
    assert isinstance(body, dict)
    assert body["rows"]["runs"] == 2 and body["metric_summaries"] == 4
    assert Path(body["kept"]).name.startswith("index.sqlite.damaged-")
    after = portal(capsys, "experiment", "compare", "demo", "--store", store, "--json").json()
    assert isinstance(after, dict) and isinstance(before, dict)
    assert after["groups"] == before["groups"]
    table = portal(capsys, "experiment", "rebuild-index", "--store", store)
    assert table.code == 0 and table.out.startswith(f"rebuilt {store / 'index.sqlite'}")


def test_rebuild_index_of_a_missing_index(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (store / "index.sqlite").unlink()
    result = portal(capsys, "experiment", "rebuild-index", "--store", store, "--json")
    assert result.code == 0 and result.json()["kept"] is None  # type: ignore[index]
    runs = portal(capsys, "experiment", "search", "--store", store, "--json").json()
    assert sorted(r["run_id"] for r in runs["runs"]) == ["r0", "r1"]  # type: ignore[index]


def test_rebuild_index_skips_a_cut_short_log_line(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(store / "append-log" / "runs.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"run_id": "half')
    corrupt(store, "garbage")
    body = portal(capsys, "experiment", "rebuild-index", "--store", store, "--json").json()
    assert body["skipped_lines"] == 1  # type: ignore[index]
    assert "skipped 1 unreadable append-log lines" in body["warnings"][0]  # type: ignore[index]


def test_rebuild_index_without_a_store_is_a_located_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = portal(capsys, "experiment", "rebuild-index", "--store", tmp_path / "none")
    assert result.code == 1 and "has no manifest.json" in result.err
    assert "Traceback" not in result.err


def test_the_server_starts_and_answers_503(store: Path) -> None:
    corrupt(store, "truncated")
    stellar = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=stellar)) as served:
        html = {"Accept": "text/html"}
        for path in ("/stellar", "/stellar?target=demo"):
            status, headers, body = served.get(path, headers=html)
            text = body.decode()
            assert status == 503, path
            assert headers["content-type"].startswith("text/html")
            assert "index is damaged" in text and "rebuild-index" in text
            assert str(store) not in text  # no server path
        status, api = served.json("/api/v2/stellar/snapshot?target=demo")
        assert status == 503 and api["code"] == "SOURCE_UNAVAILABLE"
        assert "rebuild-index" in api["detail"] and str(store) not in api["detail"]
        status, health = served.json("/healthz")
        assert status == 503 and health["code"] == "SOURCE_UNAVAILABLE"


def test_serve_with_a_damaged_index_warns_instead_of_dying(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tau.portal.cli import web

    corrupt(store, "garbage")
    served: list[object] = []
    monkeypatch.setattr(web, "_serve", lambda factory, *a: served.append(factory) or 0)
    result = portal(capsys, "experiment", "serve", "--store", store)
    assert result.code == 0 and served
    assert "is damaged" in result.err and "serving 503 pages until it is fixed" in result.err
    assert "Traceback" not in result.err


# -- Parquet ---------------------------------------------------------------------------------


def metric_file(store: Path, run: str) -> Path:
    files = [p for p in (store / "metrics").rglob("*.parquet") if run in str(p)]
    assert len(files) == 1, files
    return files[0]


@pytest.mark.parametrize("how", ["corrupt", "missing", "truncated"])
def test_a_bad_parquet_file_degrades_only_its_run(
    store: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    path = metric_file(store, "r0")
    if how == "missing":
        path.unlink()
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:100])
    else:
        path.write_bytes(b"PAR1" + b"\0" * 64 + b"PAR1")
    result = portal(
        capsys, "experiment", "stellar", "demo", "--store", store, "-o", "json", "--metric", "loss"
    )
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert any(w.startswith("metrics unreadable for r0") for w in doc["warnings"])
    assert [s["run_id"] for s in doc["chart"]["series"]] == ["r1"]
    assert doc["chart"]["unreadable_runs"] == ["r0"]
    assert doc["best_group_id"]  # the summaries still answer
    assert not any(str(store) in w for w in doc["warnings"])
    html = portal(capsys, "experiment", "stellar", "demo", "--store", store, "--metric", "loss")
    assert html.code == 0 and "metrics unreadable for r0" in html.out
    for verb in (["compare", "demo"], ["search"], ["status", "r0"]):
        assert portal(capsys, "experiment", *verb, "--store", store).code == 0


def test_a_bad_parquet_file_is_never_a_500(store: Path) -> None:
    metric_file(store, "r1").unlink()
    stellar = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=stellar)) as served:
        status, _, body = served.get("/stellar?target=demo&metric=loss")
        text = body.decode()
        assert status == 200 and "metrics unreadable for r1" in text
        assert "FileNotFoundError" not in text and str(store / "metrics") not in text
        status, series = served.json("/api/v2/stellar/series?target=demo&metric=loss")
        assert status == 200 and [s["run_id"] for s in series["series"]] == ["r0"]
        # The columns a page's later charts fetch name the run they could not read.
        status, columns = served.json(
            "/api/v2/stellar/series?target=demo&metric=loss&format=columns"
        )
        assert status == 200 and [s["run_id"] for s in columns["series"]] == ["r0"]
        assert columns["unreadable_runs"] == ["r1"]


def test_a_store_copied_elsewhere_keeps_working(store: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(store, copy)
    corrupt(copy, "truncated")
    assert portal(capsys, "experiment", "search", "--store", store).code == 0
    assert portal(capsys, "experiment", "search", "--store", copy).code == 1
