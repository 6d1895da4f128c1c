"""The same read commands give the same answers on a folder store and on the team store it was
pushed to (real PostgreSQL, real S3-compatible server)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.portal_helpers import portal
from tests.teamstore.conftest import Team
from tests.teamstore.seed import seed_store

NOW = datetime(2026, 2, 1, 0, 0, 0, tzinfo=UTC)

CASES = [
    ("search",),
    ("search", "-o", "json"),
    ("search", "-o", "csv"),
    ("search", "--metric-filter", "eval/score>=0.6"),
    ("search", "--metric-filter", "loss@max<1.5", "-o", "jsonl"),
    ("search", "-q", "ARM-B"),
    ("search", "--tag", "lr=0.1", "--lifecycle", "succeeded"),
    ("search", "--since", "2026-01-02T00:00:00Z", "--group", "arm-b"),
    ("search", "--target", "arm-a", "--min-step", "45", "-o", "json"),
    ("search", "--metric-name", "loss", "--limit", "2"),
    ("experiments", "search", "-o", "json"),
    ("experiments", "search", "-q", "loss"),
    ("list", "--kind", "runs"),
    ("list", "--kind", "groups", "-o", "json"),
    ("list", "--kind", "experiments"),
    ("status", "demo"),
    ("status", "demo", "-o", "json"),
    ("status", "arm-a", "-o", "json"),
    ("status", "r2"),
    ("status", "nope"),
    ("compare", "demo"),
    ("compare", "demo", "--metric", "loss", "--direction", "min", "-o", "json"),
    ("compare", "demo", "--configs"),
    ("compare", "arm-b", "--include-failed", "-o", "csv"),
    ("sql", "select run_id, state, created_at from runs order by run_id"),
    (
        "sql",
        "select metric_name, count(*) as n from metric_summaries group by metric_name "
        "order by metric_name",
        "--format",
        "json",
    ),
    ("sql", "delete from runs"),
    ("stellar", "demo", "-o", "json"),
    ("stellar", "arm-a", "-o", "tui"),
    ("stellar", "demo", "--metric", "loss"),
    ("stellar", "r1", "-o", "json"),
]


def normalize(text: str, location: str) -> str:
    """The output with the store's own name and the clock taken out."""
    if not text.lstrip().startswith(("{", "[")):
        # Tables and the terminal view wrap at the terminal's width, the store's name among
        # the rest (the two stores' names differ in length): compare the characters.
        return "".join(text.split()).replace(location, "<store>")
    text = text.replace(json.dumps(location)[1:-1], "<store>").replace(location, "<store>")
    text = re.sub(r'"generated_at": "[^"]*"', '"generated_at": "<now>"', text)
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if isinstance(doc, dict):
        # The manifest describes the store itself (a folder's manifest.json, or the team
        # store's schema): the one part of a snapshot that is about the store, not the runs.
        doc.pop("manifest", None)
        return json.dumps(doc, indent=2, sort_keys=True)
    return text


@pytest.fixture
def pushed(team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    folder = seed_store(tmp_path / "store", tmp_path / "work", capsys)
    init = portal(capsys, "experiment", "init", "--store", team.url)
    assert init.code == 0, init.err
    push = portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url)
    assert push.code == 0, push.err
    return folder


@pytest.mark.parametrize("case", CASES, ids=[" ".join(c) for c in CASES])
def test_same_output_on_both_stores(
    case: tuple[str, ...],
    pushed: Path,
    team: Team,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tau.portal.cli.web.clock", lambda: NOW)
    local = portal(capsys, "experiment", *case, "--store", pushed)
    remote = portal(capsys, "experiment", *case, "--store", team.url)
    assert remote.code == local.code, remote.err
    assert normalize(remote.out, team.url) == normalize(local.out, str(pushed))
    assert normalize(remote.err, team.url) == normalize(local.err, str(pushed))
    if local.code == 0:
        assert local.out.strip(), "a case that prints nothing compares nothing"
