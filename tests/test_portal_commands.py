"""The reader and helper commands: search filters, status, compare (--configs), sql, observe,
experiments, export and export adx, and the commands that are not built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.portal_helpers import portal, write_history


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for i, (group, lr, batch) in enumerate(
        [("arm-a", 0.1, 32), ("arm-a", 0.1, 64), ("arm-b", 0.01, 32)]
    ):
        config = tmp_path / f"c{i}.json"
        config.write_text(json.dumps({"optim": {"lr": lr}, "batch_size": batch, "seed": 7}))
        args = ["experiment", "track", f"r{i}", "--store", root, "--group", group]
        args += ["--config", config, "--metric", f"eval/score={0.5 + i / 10}", "--step", "100"]
        args += ["--created-at", f"2026-01-0{i + 1}T00:00:00Z"]
        assert portal(capsys, *args).code == 0, capsys.readouterr()
    return root


def test_search_filters_and_lifecycle(store: Path, capsys) -> None:
    base = ["experiment", "search", "--store", store, "-o", "json"]
    ids = lambda r: [x["run_id"] for x in r.json()["runs"]]  # noqa: E731
    assert ids(portal(capsys, *base)) == ["r2", "r1", "r0"]
    assert ids(portal(capsys, *base, "--group", "arm-a")) == ["r1", "r0"]
    assert ids(portal(capsys, *base, "--metric-filter", "eval/score>=0.6")) == ["r2", "r1"]
    assert ids(portal(capsys, *base, "-q", "ARM-B")) == ["r2"]
    assert ids(portal(capsys, *base, "--since", "2026-01-02T00:00:00Z")) == ["r2", "r1"]
    assert ids(portal(capsys, *base, "--target", "arm-b")) == ["r2"]
    gated = portal(capsys, *base, "--min-step", "200", "--lifecycle", "incomplete").json()
    assert next(r["success_reasons"] for r in gated["runs"]) == [
        "max step 100 is below required step 200"
    ]
    assert portal(capsys, *base, "--lifecycle", "succeeded").json()["total"] == 3
    csv = portal(capsys, "experiment", "runs", "--store", store, "-o", "csv").out.splitlines()
    assert csv[0] == (
        "run_id,lifecycle_state,successful,state,project,run_group_id,created_at,"
        "completed_at,metric_names,tags,success_reasons"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--metric-filter", "loss"],
            'metric filter "loss" must contain one of >=, <=, !=, >, <, =',
        ),
        (["--metric-filter", "loss@avg<1"], 'metric filter "loss@avg<1" field must be latest'),
        (["--metric-filter", "loss<inf"], 'metric filter "loss<inf" value must be finite'),
        (["--since", "yesterday"], "since must be RFC3339, Go duration, or Nd"),
        (["--min-step", "x"], "--min-step must be an integer"),
        (["--tag", "novalue"], '--tag: expected key=value, got "novalue"'),
        (["-o", "yaml"], "output must be one of: table, json, jsonl, csv"),
    ],
)
def test_search_bad_input_names_the_flag(store: Path, capsys, args, message) -> None:
    result = portal(capsys, "experiment", "search", "--store", store, *args)
    assert result.code == 1 and message in result.err and "Traceback" not in result.err


def test_status_table_and_json(store: Path, capsys) -> None:
    table = portal(capsys, "experiment", "status", "arm-a", "--store", store).out.splitlines()
    assert table[0].split() == [
        "TARGET", "TYPE", "RUNS", "GROUPS", "CONFIGS", "METRIC_FILES", "ARTIFACTS",
        "OBSERVATIONS", "LATEST_EVENT",
    ]  # fmt: skip
    assert table[1].split() == ["arm-a", "run_group", "2", "1", "2", "2", "0", "0", "-"]
    assert table[2] == "states:  succeeded=2"
    body = portal(capsys, "experiment", "status", "demo", "--store", store, "--json").json()
    assert body["target_type"] == "experiment" and body["runs"] == 3
    assert body["lifecycle_counts"] == {"succeeded": 3}
    missing = portal(capsys, "experiment", "status", "nope", "--store", store)
    assert missing.code == 1
    assert "error: experiment store record not found: nope" in missing.err


def test_compare_groups_and_winner(store: Path, capsys) -> None:
    body = portal(
        capsys, "experiment", "compare", "demo", "--store", store, "--metric", "eval/score",
        "--json",
    ).json()  # fmt: skip
    groups = {g["run_group_id"]: g for g in body["groups"]}
    assert groups["arm-a"]["run_count"] == 2 and groups["arm-a"]["median"] == pytest.approx(0.55)
    assert groups["arm-b"]["winner"] is True and groups["arm-a"]["winner"] is False
    low = portal(
        capsys, "experiment", "compare", "demo", "--store", store, "--metric", "eval/score",
        "--direction", "min", "--format", "jsonl",
    ).out.splitlines()  # fmt: skip
    winners = [json.loads(line)["run_group_id"] for line in low if json.loads(line)["winner"]]
    assert winners == ["arm-a"]


def test_compare_configs_shows_only_differing_fields(store: Path, capsys) -> None:
    body = portal(capsys, "experiment", "compare", "demo", "--store", store, "--configs",
                  "--json").json()  # fmt: skip
    assert "optim.lr" in body["fields"] and "batch_size" in body["fields"]
    assert "seed" not in body["fields"]
    lr = {r["run_id"]: r["value"] for r in body["rows"] if r["field"] == "optim.lr"}
    assert lr == {"r0": 0.1, "r1": 0.1, "r2": 0.01}
    table = portal(capsys, "experiment", "compare", "arm-a", "--store", store, "--configs").out
    assert "optim.lr" not in table and "batch_size" in table


def test_sql_is_read_only(store: Path, capsys) -> None:
    ok = portal(capsys, "experiment", "sql", "select run_id from runs order by run_id;",
                "--store", store, "--format", "csv")  # fmt: skip
    assert ok.out.splitlines() == ["run_id", "r0", "r1", "r2"]
    for query, message in [
        ("delete from runs", "only accepts read-only SELECT/WITH queries"),
        ("select 1; select 2", "accepts exactly one read-only statement"),
        ("with x as (select 1) insert into runs select * from x", 'unsafe token "insert"'),
        ("select * from pragma_table_info('runs')", None),
    ]:
        result = portal(capsys, "experiment", "sql", query, "--store", store)
        if message is None:
            assert result.code == 0
        else:
            assert result.code == 1 and message in result.err


def test_observe_and_experiments(store: Path, capsys) -> None:
    args = ["experiment", "observe", "--store", store, "--scope", "run_group:arm-b"]
    args += ["--type", "decision", "--text", "arm-b wins", "--idempotency-key", "o1"]
    first = portal(capsys, *args, "-o", "json").json()
    assert first["reused"] is False and first["type"] == "decision"
    assert portal(capsys, *args, "-o", "json").json()["reused"] is True
    bad = portal(capsys, "experiment", "observe", "--store", store, "--scope", "x", "--text", "t")
    assert "--scope: expected type:id" in bad.err
    tagged = portal(capsys, "experiment", "experiments", "tag-run", "r2", "--store", store,
                    "--experiment", "lr-sweep")  # fmt: skip
    assert tagged.json() == {"run_id": "r2", "experiment_id": "lr-sweep", "name": "lr-sweep"}
    found = portal(capsys, "experiment", "experiments", "search", "--store", store, "--json")
    rows = {e["experiment_id"]: e for e in found.json()["experiments"]}
    assert rows["lr-sweep"]["run_count"] == 1 and rows["lr-sweep"]["source"] == "explicit"
    assert rows["demo"]["run_count"] == 2
    need = portal(capsys, "experiment", "experiments", "tag-run", "r2", "--store", store)
    assert "--experiment is required" in need.err


def test_export_packet_and_adx(store: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "packet"
    result = portal(capsys, "experiment", "export", "--store", store, "--out", out)
    assert result.out.startswith("exported experiment packet\nsource:      ")
    readme = json.loads((out / "README.json").read_text())
    assert readme["kind"] == "tau.exp.export"
    again = portal(capsys, "experiment", "search", "--store", out, "--json").json()
    assert again["total"] == 3
    refused = portal(capsys, "experiment", "export", "--store", store, "--out", out)
    assert "is not empty; pass --force to overwrite packet files" in refused.err
    inside = portal(capsys, "experiment", "export", "--store", store, "--out", store / "x")
    assert "--out must not be inside --store" in inside.err

    adx = tmp_path / "adx"
    table = portal(capsys, "experiment", "export", "adx", "--store", store, "--out", adx).out
    assert "note:        downstream projection only; expstore remains authoritative" in table
    runs = [json.loads(line) for line in (adx / "TauExpRuns.jsonl").read_text().splitlines()]
    assert runs[0]["projection_version"] == "tau.exp.adx.v1" and len(runs) == 3
    metrics = (adx / "TauExpMetrics.jsonl").read_text().splitlines()
    assert len(metrics) == 3 and json.loads(metrics[0])["metric_name"] == "eval/score"
    kql = (adx / "schema.kql").read_text()
    assert ".create-merge table TauExpMetrics (exported_at:datetime" in kql
    assert "['project']:string" in kql
    manifest = json.loads((adx / "projection_manifest.json").read_text())
    assert manifest["projection_version"] == "tau.exp.adx.v1"
    dry = portal(capsys, "experiment", "export", "adx", "--store", store, "--dry-run", "-o",
                 "json").json()  # fmt: skip
    assert {t["file"] for t in dry["tables"]} == {"(dry-run)"}


@pytest.mark.parametrize(
    "argv",
    [
        ["experiment", "kusto", "metrics-query", "--project", "p"],
        ["experiment", "offload", "metrics-agent"],
        ["experiment", "offload", "artifacts"],
    ],
)
def test_commands_not_built_here_say_so_and_exit_2(argv: list[str], capsys) -> None:
    result = portal(capsys, *argv)
    assert result.code == 2 and "not built yet" in result.err


def test_version_and_the_hidden_alias(store: Path, capsys) -> None:
    assert portal(capsys, "version", "--short").out.strip()
    assert portal(capsys, "exp", "--store", store, "status", "demo").code == 0
    help_text = portal(capsys, "--help").out
    assert "experiment" in help_text and "exp " not in help_text


def test_import_errors_name_the_file_and_line(store: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"_step": 0, "loss": 1}\n{"_step": 1, "loss": \n')
    args = ["experiment", "import", "jsonl", "--store", store, "--run", "r9", "--history"]
    result = portal(capsys, *args, bad)
    assert result.code == 1 and f"{bad}:2: malformed JSON" in result.err
    bad.write_text('{"_step": 0, "note": "x"}\n')
    assert "JSONL history files contain no scalar metrics" in portal(capsys, *args, bad).err
    assert "no files match" in portal(capsys, *args, tmp_path / "*.none").err
    dry = portal(capsys, *args, write_history(tmp_path / "ok.jsonl", 3), "--dry-run")
    assert dry.out.splitlines()[1].split()[0] == "planned"
    assert (
        portal(capsys, "experiment", "search", "--store", store, "-q", "r9", "--json").json()[
            "total"
        ]
        == 0
    )
