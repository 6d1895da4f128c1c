"""Reads of the team store's index through libpq itself (store/libpq.py): a read command loads
neither psycopg nor pyarrow, values come back typed as psycopg types them, and a connection
the server dropped is replaced once. And the index search walks: `init` migrates to it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from tau.portal.store import libpq, teamschema
from tau.portal.store.location import parse_team_url
from tau.portal.store.team import TeamStore, to_postgres
from tests.portal_helpers import portal
from tests.teamstore.conftest import Team
from tests.teamstore.seed import seed_store
from tests.test_lazy_imports import PORTAL_PROBE, imported


@pytest.fixture
def opened(team: Team, capsys: pytest.CaptureFixture[str]) -> TeamStore:
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    return TeamStore.open(parse_team_url(team.url))


def test_a_search_with_a_metric_filter_loads_neither_psycopg_nor_pyarrow(
    team: Team, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = seed_store(tmp_path / "store", tmp_path / "work", capsys)
    assert portal(capsys, "experiment", "init", "--store", team.url).code == 0
    pushed = portal(capsys, "experiment", "push", "--all", "--store", folder, "--to", team.url)
    assert pushed.code == 0, pushed.err
    argv = ["experiment", "search", "--metric-filter", "eval/score>=0.6", "--store", team.url]
    proc = subprocess.run(
        [sys.executable, "-c", PORTAL_PROBE, *argv],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("r1 ") for line in lines), proc.stdout  # it did search
    modules = set(json.loads(lines[-1])["modules"])
    assert "tau.portal.store.libpq" in modules
    for package in ("psycopg", "pyarrow"):
        assert not imported(modules, package), package


VALUES: list[Any] = [
    "plain",
    "it's",
    "back\\slash and 'quote'",
    "ünïcode ✓",
    "",
    "?",
    None,
    0,
    -3,
    2**40,
    0.1,
    -2.5,
    1e-300,
    float("inf"),
    float("-inf"),
    float("nan"),
    True,
    False,
]
TYPED = [
    "SELECT count(*) AS n, sum(x) AS total, max(x * 0.5) AS half FROM "
    "(SELECT generate_series(1, 4)::bigint AS x) AS s",
    "SELECT 1::int4 AS i, 2::int2 AS j, 1.5::float4 AS f, 2.25::numeric AS d, 'x'::varchar AS v, "
    "'y'::char(3) AS c, NULL::text AS missing, ''::text AS empty, true AS yes",
    "SELECT to_regclass('tau_team_meta')::text AS meta, '?' AS question",
]


def test_values_come_back_as_psycopg_gives_them(team: Team, opened: TeamStore) -> None:
    # The oracle binds server-side too (psycopg's default cursor), as the reads now do.
    with psycopg.connect(
        parse_team_url(team.url).conninfo, autocommit=True, row_factory=dict_row
    ) as conn:
        for value in VALUES:
            sql = "SELECT ? AS v, ? = ? AS same"
            mine = opened.query(sql, (value, value, value))
            theirs = list(conn.execute(to_postgres(sql), (value, value, value)))
            assert _same(mine, theirs), value
        for sql in TYPED:
            mine = opened.query(sql)
            theirs = list(conn.execute(to_postgres(sql)))
            assert _same(mine, theirs), sql
    assert opened.query(TYPED[0]) == [{"n": 4, "total": Decimal(10), "half": Decimal("2.0")}]


def test_a_failed_query_names_the_problem_and_the_connection_stays_usable(
    opened: TeamStore,
) -> None:
    from tau.portal.errors import StoreError

    with pytest.raises(StoreError, match='team store query failed: relation "nope" does not'):
        opened.query("SELECT * FROM nope")
    assert opened.scalar("SELECT ? || ?", ("a", "b")) == "ab"
    with pytest.raises(TypeError):
        opened.query("SELECT ?", {"named": 1})
    with pytest.raises(StoreError, match="NUL"):  # never a query cut short at it
        opened.query("SELECT ? AS v", ("a\x00' OR true --",))


def test_a_restarted_database_is_reconnected_once(team: Team, opened: TeamStore) -> None:
    assert opened.version() == "team:0"
    team.postgres.restart()
    assert opened.version() == "team:0"  # the dropped connection was replaced
    assert opened._reader is not None and not opened._reader.closed


def test_without_libpq_reads_go_through_psycopg(
    team: Team, opened: TeamStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(libpq, "load", lambda: None)
    store = TeamStore.open(parse_team_url(team.url))
    try:
        assert store.version() == "team:0"
        assert store.query("SELECT ? AS v", ("it's",)) == [{"v": "it's"}]
        assert type(store._reader).__name__ == "_PsycopgReader"
    finally:
        store.close()


def test_init_migrates_a_v1_store_to_the_index_of_the_runs_listing_order(
    team: Team, capsys: pytest.CaptureFixture[str]
) -> None:
    conninfo = parse_team_url(team.url).conninfo
    with psycopg.connect(conninfo, autocommit=True) as conn:  # what v1's init made
        conn.execute(teamschema.meta_table())
        for statement in teamschema.MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute(f"INSERT INTO {teamschema.META} VALUES ('schema_version', '1')")
    old = portal(capsys, "experiment", "search", "--store", team.url)
    assert old.code != 0 and "has schema v1" in old.err and "migrate it with" in old.err
    assert _index(conninfo) is None  # a read never migrates
    made = portal(capsys, "experiment", "init", "--store", team.url, "-o", "json").json()
    assert made["action"] == "migrated" and made["from_schema_version"] == 1  # type: ignore[index]
    assert made["schema_version"] == "tau.team.v2"  # type: ignore[index]
    assert "ON public.runs USING btree (created_at DESC, run_id)" in str(_index(conninfo))
    assert portal(capsys, "experiment", "search", "--store", team.url).code == 0
    again = portal(capsys, "experiment", "init", "--store", team.url)
    assert again.code == 0 and again.out.startswith("attached team store")


def _index(conninfo: str) -> str | None:
    with psycopg.connect(conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (teamschema.RUNS_BY_CREATION,)
        ).fetchone()
    return None if row is None else str(row[0])


def _same(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> bool:
    def key(rows: list[dict[str, Any]]) -> list[list[tuple[str, str, str]]]:
        return [
            [
                (k, type(v).__name__, "nan" if isinstance(v, float) and math.isnan(v) else repr(v))
                for k, v in row.items()
            ]
            for row in rows
        ]

    return key(mine) == key(theirs)
