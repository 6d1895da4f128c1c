"""`experiment push` and `init` against a real PostgreSQL and versitygw: idempotence,
conflicts, schema versions, and secrets that never reach a message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.portal_helpers import portal
from tests.teamstore.conftest import Team
from tests.teamstore.seed import seed_store


def counts(team: Team) -> dict[str, int]:
    tables = (
        "runs",
        "metric_files",
        "metric_summaries",
        "artifacts",
        "events",
        "tags",
        "tau_pushes",
    )
    url = team.url.split("?", 1)[0]
    with psycopg.connect(url, password=team.postgres.password) as conn:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def folder_counts(folder: Path) -> dict[str, int]:
    import sqlite3

    conn = sqlite3.connect(folder / "index.sqlite")
    tables = ("runs", "metric_files", "metric_summaries", "artifacts", "events", "tags")
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}
    finally:
        conn.close()


@pytest.fixture
def folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    return seed_store(tmp_path / "store", tmp_path / "work", capsys)


def test_push_copies_everything_once_and_a_second_push_changes_nothing(
    team: Team, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    first = portal(
        capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url, "--json"
    )
    assert first.code == 0, first.err
    body = first.json()
    assert isinstance(body, dict)
    assert (body["pushed"], body["unchanged"]) == (4, 0)
    assert body["files"] >= 6  # the metric files and the imported histories' copies
    after_first = counts(team)
    local = folder_counts(folder)
    assert {k: after_first[k] for k in local} == local
    second = portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url)
    assert second.code == 0, second.err
    assert "pushed 0 runs" in second.out and "unchanged: 4 runs" in second.out
    assert counts(team) == after_first


def test_push_of_one_group_then_the_rest(
    team: Team, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    arm = portal(
        capsys, "experiment", "push", "arm-a", "--store", folder, "--to", team.url, "--json"
    )
    assert arm.code == 0, arm.err
    assert sorted(arm.json()["pushed_run_ids"]) == ["r0", "r1"]  # type: ignore[index]
    seen = portal(capsys, "experiment", "search", "--store", team.url, "-o", "json").json()
    assert sorted(r["run_id"] for r in seen["runs"]) == ["r0", "r1"]  # type: ignore[index]
    rest = portal(
        capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url, "--json"
    )
    assert rest.json()["pushed"] == 2 and rest.json()["unchanged"] == 2  # type: ignore[index]


def test_tau_exp_store_names_a_team_store_too(
    team: Team, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    assert (
        portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url).code == 0
    )
    flagged = portal(capsys, "experiment", "status", "demo", "--store", team.url, "-o", "json")
    monkeypatch.setenv("TAU_EXP_STORE", team.url)
    from_env = portal(capsys, "experiment", "status", "demo", "-o", "json")
    assert from_env.code == 0 and from_env.out == flagged.out


def test_a_different_run_with_the_same_id_is_refused_naming_both_sides(
    team: Team, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    assert (
        portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url).code == 0
    )
    other = tmp_path / "other"
    assert portal(capsys, "experiment", "init", "demo", "--store", other).code == 0
    made = portal(
        capsys, "experiment", "track", "r0", "--store", other, "--metric", "eval/score=0.1",
        "--created-at", "2026-03-01T00:00:00Z",
    )  # fmt: skip
    assert made.code == 0, made.err
    clash = portal(capsys, "experiment", "push", "r0", "--store", other, "--to", team.url)
    assert clash.code != 0
    assert 'run "r0" differs' in clash.err
    assert str(folder) in clash.err and str(other) in clash.err and team.url in clash.err
    assert "Traceback" not in clash.err
    shown = portal(capsys, "experiment", "status", "r0", "--store", team.url, "-o", "json").json()
    assert shown["run"]["created_at"] == "2026-01-01T00:00:00Z"  # type: ignore[index]


def test_reads_never_migrate_and_init_creates_then_attaches(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    before = portal(capsys, "experiment", "search", "--store", team.url)
    assert before.code != 0
    assert "is not initialized" in before.err and "experiment init --store" in before.err
    url = team.url.split("?", 1)[0]
    with psycopg.connect(url, password=team.postgres.password) as conn:
        assert conn.execute("SELECT to_regclass('runs')").fetchone()[0] is None
    made = portal(capsys, "experiment", "init", "--store", team.url, "-o", "json").json()
    assert made["action"] == "initialized" and made["from_schema_version"] == 0  # type: ignore[index]
    again = portal(capsys, "experiment", "init", "--store", team.url)
    assert again.code == 0 and again.out.startswith("attached team store")
    with psycopg.connect(url, password=team.postgres.password, autocommit=True) as conn:
        conn.execute("UPDATE tau_team_meta SET value = '99' WHERE key = 'schema_version'")
    newer = portal(capsys, "experiment", "status", "demo", "--store", team.url)
    assert newer.code != 0 and "newer than this taugrid-portal" in newer.err


def test_write_commands_refuse_a_team_store(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    result = portal(
        capsys, "experiment", "track", "r9", "--store", team.url, "--metric", "a=1"
    )  # fmt: skip
    assert result.code != 0
    assert "written only by `taugrid-portal experiment push`" in result.err


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).parent / "taugrid-portal"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_secrets_never_reach_output_help_or_errors(
    team: Team, folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    secrets = [team.postgres.password, team.objects.secret_key]
    env = dict(os.environ) | team.env
    outputs: list[str] = []
    for args in (("experiment", "push", "--help"), ("experiment", "init", "--help")):
        done = _cli(*args, env=env)
        outputs.append(done.stdout + done.stderr)
    # A wrong database password: libpq's message, never the password.
    bad_pg = _cli(
        "experiment", "search", "--store", team.url, env=env | {"PGPASSWORD": "wrong-pw-x1"}
    )
    assert bad_pg.returncode != 0 and "password authentication failed" in bad_pg.stderr
    outputs.append(bad_pg.stdout + bad_pg.stderr)
    assert "wrong-pw-x1" not in bad_pg.stderr
    # A password inside the URL is refused without being echoed.
    inline = team.url.replace("tau@", f"tau:{team.postgres.password}@")
    refused = _cli("experiment", "search", "--store", inline, env=env)
    assert refused.returncode != 0 and "must not hold a password" in refused.stderr
    outputs.append(refused.stdout + refused.stderr)
    # A wrong object store secret: the push fails on its upload, naming the object only.
    assert _cli("experiment", "init", "--store", team.url, env=env).returncode == 0
    bad_s3 = _cli(
        "experiment", "push", "--all", "--store", str(folder), "--to", team.url,
        env=env | {"AWS_SECRET_ACCESS_KEY": "wrong-secret-y2"},
    )  # fmt: skip
    assert bad_s3.returncode != 0 and "team store objects s3://" in bad_s3.stderr
    assert "wrong-secret-y2" not in bad_s3.stderr
    outputs.append(bad_s3.stdout + bad_s3.stderr)
    ok = _cli("experiment", "push", "--all", "--store", str(folder), "--to", team.url, env=env)
    assert ok.returncode == 0, ok.stderr
    outputs.append(ok.stdout + ok.stderr)
    for text in outputs:
        for secret in secrets:
            assert secret not in text
    assert "Traceback" not in "".join(outputs)
    assert json.dumps(team.url)  # the URL itself carries no secret and may be printed
