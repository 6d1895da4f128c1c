"""The experiment store: resolution, layout, write-once records, idempotency, the read API."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tau.portal.errors import UsageError, WriteConflict
from tau.portal.store import read
from tau.portal.store.core import Store
from tau.portal.store.resolve import MISSING, resolve_root
from tests.portal_helpers import portal, write_history


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


# -- resolution -----------------------------------------------------------------------------


def test_store_flag_wins_over_the_environment(tmp_path: Path) -> None:
    env = {"TAU_EXP_STORE": str(tmp_path / "env")}
    assert resolve_root(str(tmp_path / "flag/../flag"), env) == tmp_path / "flag"
    assert resolve_root(None, env) == tmp_path / "env"


def test_store_root_joins_context_team_and_project(tmp_path: Path) -> None:
    env = {
        "TAU_EXP_STORE_ROOT": str(tmp_path),
        "TAU_CONTEXT": "aks-a",
        "TAU_TEAM": "vision",
        "TAU_PROJECT": "detr",
    }
    assert resolve_root(None, env) == tmp_path / "aks-a" / "vision" / "detr"


@pytest.mark.parametrize("bad", ["..", ".", "a/b", "a\\b", " a"])
def test_store_root_components_must_be_single_path_components(tmp_path: Path, bad: str) -> None:
    env = {"TAU_EXP_STORE_ROOT": str(tmp_path), "TAU_CONTEXT": bad, "TAU_TEAM": "t"}
    env["TAU_PROJECT"] = "p"
    with pytest.raises(UsageError, match=r"TAU_CONTEXT=.* must be a single path component"):
        resolve_root(None, env)


def test_no_store_is_the_contract_error(capsys: pytest.CaptureFixture[str], monkeypatch) -> None:
    for name in ("TAU_EXP_STORE", "TAU_EXP_STORE_ROOT"):
        monkeypatch.delenv(name, raising=False)
    assert MISSING.startswith("--store is required (or set TAU_EXP_STORE")
    result = portal(capsys, "experiment", "search")
    assert result.code == 1
    assert result.err.strip() == f"error: {MISSING}"


def test_a_directory_without_manifest_is_not_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = portal(capsys, "experiment", "status", "x", "--store", tmp_path)
    assert result.code == 1
    assert f"experiment store {tmp_path} has no manifest.json" in result.err
    assert "Traceback" not in result.err


# -- layout ---------------------------------------------------------------------------------


def test_init_writes_the_documented_layout(store: Path, capsys) -> None:
    manifest = json.loads((store / "manifest.json").read_text())
    assert manifest["kind"] == "tau.exp.store"
    assert manifest["schema_version"] == "expstore.v5"
    assert manifest["experiment_id"] == "demo" and manifest["project"] == "demo"
    for key, name in [
        ("index", "index.sqlite"),
        ("append_log_dir", "append-log"),
        ("metrics_dir", "metrics"),
        ("artifacts_dir", "artifacts"),
    ]:
        assert manifest[key] == name
        assert (store / name).exists()
    conn = sqlite3.connect(store / "index.sqlite")
    tables = {r[0] for r in conn.execute("select name from sqlite_master where type='table'")}
    assert {"runs", "run_groups", "experiments", "metric_summaries", "events", "tags"} <= tables
    meta = dict(conn.execute("select key, value from schema_meta"))
    assert meta["metric_schema_version"] == "tau.metrics.scalar.v2"
    assert meta["metric_schema_columns"] == (
        "project,run_group_id,run_id,metric_name,step,wall_time,value,unit,source,split,tags"
    )
    again = portal(capsys, "experiment", "init", "demo", "--store", store)
    assert again.out.startswith(f"attached experiment store {store}\n")


def test_import_writes_parquet_with_metric_row_columns(store: Path, tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    history = write_history(tmp_path / "h.jsonl", 10)
    result = portal(
        capsys, "experiment", "import", "jsonl", "--store", store, "--run", "r1",
        "--history", history, "-o", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = result.json()
    assert body["action"] == "imported" and body["rows"] == 20
    path = store / body["metric_file"]
    assert path.parent.name == "run=r1" and path.parent.parent.name == "group=default"
    table = pq.read_table(path, partitioning=None)
    assert table.column_names == [
        "project", "run_group_id", "run_id", "metric_name", "step", "wall_time", "value",
        "unit", "source", "split", "tags",
    ]  # fmt: skip
    row = table.to_pylist()[0]
    assert row["metric_name"] == "acc" and row["step"] == 0
    assert row["wall_time"] == 1760000000 * 1_000_000
    tags = json.loads(row["tags"])
    assert tags["jsonl.importer"] == "tau.jsonl.import.v1"
    assert tags["jsonl.history_line"] == "1" and tags["jsonl.raw_key"] == "acc"
    copies = list((store / "artifacts" / "r1" / "jsonl").iterdir())
    assert len(copies) == 1 and copies[0].read_bytes() == history.read_bytes()
    mirrors = {p.name for p in (store / "append-log").iterdir()}
    assert {"runs.jsonl", "metric_files.jsonl", "tags.jsonl", "idempotency_keys.jsonl"} <= mirrors


def test_reimport_is_reused_and_writes_nothing(store: Path, tmp_path: Path, capsys) -> None:
    history = write_history(tmp_path / "h.jsonl", 10)
    args = ["experiment", "import", "jsonl", "--store", store, "--run", "r1", "--history", history]
    assert portal(capsys, *args).code == 0
    before = {p: p.stat().st_size for p in store.rglob("*") if p.is_file()}
    again = portal(capsys, *args)
    assert again.code == 0
    assert again.out.splitlines()[1].split()[0] == "reused"
    after = {p: p.stat().st_size for p in store.rglob("*") if p.is_file()}
    assert {p: s for p, s in after.items() if p.name != ".tau-exp.lock"} == {
        p: s for p, s in before.items() if p.name != ".tau-exp.lock"
    }


# -- write-once and idempotency -------------------------------------------------------------


def test_identical_record_is_a_no_op_and_a_different_one_conflicts(store: Path) -> None:
    opened = Store.open(store)
    row = {"run_group_id": "g", "project": "demo", "name": "g", "created_at": "t"}
    with opened.writer() as w:
        assert w.put("run_groups", row) is True
    with opened.writer() as w:
        assert w.put("run_groups", row) is False
    with (
        pytest.raises(WriteConflict, match="experiment store write conflict: run_groups"),
        opened.writer() as w,
    ):
        w.put("run_groups", row | {"name": "other"})
    assert read.get_group(opened, "g").name == "g"


def test_run_with_different_metadata_conflicts(store: Path, capsys) -> None:
    assert portal(capsys, "experiment", "track", "r1", "--store", store, "--owner", "a").code == 0
    result = portal(capsys, "experiment", "track", "r1", "--store", store, "--owner", "b")
    assert result.code == 1
    assert result.err.startswith(
        'error: experiment store write conflict: run "r1" already exists with different metadata'
    )


def test_tag_with_different_value_conflicts(store: Path, capsys) -> None:
    assert portal(capsys, "experiment", "track", "r1", "--store", store, "--tag", "k=1").code == 0
    result = portal(capsys, "experiment", "track", "r1", "--store", store, "--tag", "k=2")
    assert 'tag run/r1 "k" already exists with different value' in result.err


def test_idempotency_key_is_checked_against_the_request(store: Path, capsys) -> None:
    args = ["experiment", "track", "r1", "--store", store, "--idempotency-key", "k1"]
    first = portal(capsys, *args, "--metric", "loss=1", "-o", "json")
    assert first.json()["reused"] is False
    again = portal(capsys, *args, "--metric", "loss=1", "-o", "json")
    assert again.json()["reused"] is True
    other = portal(capsys, *args, "--metric", "loss=2")
    assert other.code == 1
    assert 'idempotency key "k1" was used for a different request' in other.err


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("Run", 'run "Run" is invalid (use lowercase alphanumerics'),
        ("run.", 'run "run." is invalid (must start and end with an alphanumeric)'),
    ],
)
def test_ids_follow_the_shared_rule(store: Path, capsys, value: str, message: str) -> None:
    result = portal(capsys, "experiment", "track", value, "--store", store)
    assert result.code == 1 and message in result.err


# -- a packet built by hand from the documented layout --------------------------------------


def test_reads_a_packet_built_by_hand_from_the_documented_layout(tmp_path: Path, capsys) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path / "packet"
    (root / "metrics/project=p/group=g/run=r9").mkdir(parents=True)
    (root / "manifest.json").write_text(
        json.dumps(
            {
                "schema_version": "expstore.v5",
                "kind": "tau.exp.store",
                "project": "p",
                "experiment_id": "e",
                "index": "index.sqlite",
            }
        )
    )
    conn = sqlite3.connect(root / "index.sqlite")
    conn.executescript(
        """
        create table runs (run_id text primary key, project text, experiment_id text not null
          default '', run_group_id text, parent_run_id text, state text, owner text,
          created_at text, started_at text, completed_at text, config_hash text, code_sha text,
          image_digest text, tau_command text, result_uri text, index_version text);
        create table run_groups (run_group_id text primary key, project text, name text,
          created_at text, updated_at text);
        create table metric_files (file_id text primary key, path text, format text,
          schema_version text, schema_hash text, project text, run_group_id text, run_id text,
          row_count integer, digest text, min_step integer, max_step integer, created_at text);
        insert into runs (run_id, project, experiment_id, run_group_id, state, created_at)
          values ('r9', 'p', 'e', 'g', 'succeeded', '2026-01-01T00:00:00Z');
        insert into run_groups values ('g', 'p', 'g', '2026-01-01T00:00:00Z', null);
        insert into metric_files (file_id, path, format, project, run_group_id, run_id, row_count)
          values ('f1', 'metrics/project=p/group=g/run=r9/f1.parquet', 'parquet', 'p', 'g',
                  'r9', 3);
        """
    )
    conn.commit()
    conn.close()
    rows = {
        "project": ["p"] * 3,
        "run_group_id": ["g"] * 3,
        "run_id": ["r9"] * 3,
        "metric_name": ["loss"] * 3,
        "step": [0, 1, 2],
        "wall_time": [0, 1_000_000, 2_000_000],
        "value": [3.0, 2.0, 0.25],
        "unit": [None] * 3,
        "source": ["ref"] * 3,
        "split": [None] * 3,
        "tags": ["{}"] * 3,
    }
    pq.write_table(pa.table(rows), root / "metrics/project=p/group=g/run=r9/f1.parquet")

    result = portal(
        capsys, "experiment", "search", "--store", root, "--metric-filter", "loss@min<0.5",
        "-o", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = result.json()
    assert [r["run_id"] for r in body["runs"]] == ["r9"]
    assert body["runs"][0]["metrics"][0]["latest_value"] == 0.25
    points = read.metric_series(Store.open(root), "r9", "loss")
    assert [(p.step, p.value) for p in points] == [(0, 3.0), (1, 2.0), (2, 0.25)]
    status = portal(capsys, "experiment", "status", "g", "--store", root, "--json").json()
    assert status["target_type"] == "run_group" and status["runs"] == 1


# -- read API ---------------------------------------------------------------------------------


def test_read_api_returns_typed_records(store: Path, tmp_path: Path, capsys) -> None:
    history = write_history(tmp_path / "h.jsonl", 5)
    args = ["experiment", "import", "jsonl", "--store", store, "--history", history]
    assert portal(capsys, *args, "--run", "r1", "--group", "arm-a").code == 0
    opened = Store.open(store)
    runs = read.list_runs(opened, group="arm-a")
    assert [r.run_id for r in runs.items] == ["r1"] and runs.truncated is False
    assert runs.items[0].experiment_id == "demo"
    assert [g.run_group_id for g in read.list_groups(opened).items] == ["arm-a", "default"]
    assert read.list_experiments(opened).items[0].experiment_id == "demo"
    summaries = read.metric_summaries(opened, group="arm-a", metric_name="loss")
    assert summaries[0].latest_step == 4 and summaries[0].min_value == pytest.approx(0.2)
    series = read.metric_series(opened, "r1", "loss", start_step=2)
    assert [p.step for p in series] == [2, 3, 4]
    assert read.resolve_target(opened, "arm-a").type == "run_group"
    assert read.resolve_target(opened, "r1").type == "run"
    assert read.resolve_target(opened, "demo").type == "experiment"


def test_lists_are_bounded(store: Path, capsys) -> None:
    for i in range(3):
        assert portal(capsys, "experiment", "track", f"r{i}", "--store", store).code == 0
    body = portal(capsys, "experiment", "search", "--store", store, "--limit", "2", "--json")
    data = body.json()
    assert data["truncated"] is True and len(data["runs"]) == 2 and data["warnings"] == []
    listed = portal(capsys, "experiment", "list", "--store", store, "--limit", "2", "--json")
    assert listed.json()["truncated"] is True
