"""The served run page lists the logs tau kept of each attempt, and serves each one escaped and
capped, from a real folder store (the layout `tau.runs.kept_logs` writes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
from tau.portal.cli import main
from tau.portal.stellar import kept_logs
from tau.portal.stellar.source import StoreSource
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.portal_web_support import Served, serve_app


@pytest.fixture
def store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    assert main(["experiment", "init", "sweep", "--store", str(root)]) == 0
    history = tmp_path / "h.jsonl"
    history.write_text(
        "".join(
            json.dumps({"_step": s, "_timestamp": 1760000000 + s, "loss": 1 / (s + 1)}) + "\n"
            for s in range(5)
        )
    )
    imported = [
        *("experiment", "import", "jsonl", "--store", str(root), "--run", "oom-retry"),
        *("--group", "g", "--experiment", "sweep", "--history", str(history)),
    ]
    assert main(imported) == 0
    kept = root / "runs" / "oom-retry" / "logs"
    for rel, text in (
        ("attempt-0/oom-retry-abc/main.log", "attempt 0\n<script>alert(1)</script>\n"),
        ("attempt-0/oom-retry-abc/main.previous.log", "the first try\n"),
        ("attempt-0/oom-retry-abc/fetch.log", "fetched\n"),
        ("attempt-0/pods.json", "{}\n"),
        ("attempt-1/oom-retry-def/main.log", "x" * 100 + "\n" + "y" * (kept_logs.MAX_SHOWN)),
    ):
        (kept / rel).parent.mkdir(parents=True, exist_ok=True)
        (kept / rel).write_text(text)
    return root


@pytest.fixture
def served(store: Path) -> Iterator[Served]:
    stellar = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=stellar)) as s:
        yield s


def test_the_run_page_lists_each_attempts_kept_logs(served: Served) -> None:
    status, _, body = served.get("/stellar?target=oom-retry&kind=run")
    page = body.decode()
    assert status == 200
    assert 'data-part="kept-logs"' in page
    assert 'data-attempt="0"' in page and 'data-attempt="1"' in page
    assert "oom-retry-abc/fetch" in page and "oom-retry-abc/main</a>" in page
    assert "oom-retry-abc/main (previous)" in page
    assert "pods.json" not in page  # only logs are listed
    assert "/stellar/kept-log?run=oom-retry&amp;path=attempt-0%2Foom-retry-abc%2Fmain.log" in page


def test_a_kept_log_is_served_escaped(served: Served) -> None:
    status, headers, body = served.get(
        "/stellar/kept-log?run=oom-retry&path=attempt-0/oom-retry-abc/main.log"
    )
    page = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert 'data-note="cut"' not in page


def test_a_long_kept_log_shows_its_end_and_says_so(served: Served) -> None:
    status, _, body = served.get(
        "/stellar/kept-log?run=oom-retry&path=attempt-1/oom-retry-def/main.log"
    )
    page = body.decode()
    assert status == 200
    assert 'data-note="cut"' in page
    assert f"of {101 + kept_logs.MAX_SHOWN} bytes" in page
    assert "x" * 100 not in page


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("attempt-0/pods.json", 400),
        ("../../manifest.json", 400),
        ("attempt-0/oom-retry-abc/../../../x.log", 400),
        ("attempt-9/oom-retry-abc/main.log", 404),
    ],
)
def test_only_kept_logs_are_served(served: Served, path: str, status: int) -> None:
    got, _ = served.json(f"/stellar/kept-log?run=oom-retry&path={path}")
    assert got == status


def test_a_run_without_kept_logs_says_how_they_get_there(served: Served, store: Path) -> None:
    import shutil

    shutil.rmtree(store / "runs" / "oom-retry" / "logs")
    _, _, body = served.get("/stellar?target=oom-retry&kind=run")
    assert "No logs kept: tau keeps an attempt" in body.decode()
