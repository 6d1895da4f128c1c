"""The run-table payload (snapshot key `table`): last/best by direction, failed runs, key config
fields (varying first), tags, hostile values kept as data, and the page's server-rendered rows."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from tau.portal.stellar import svg, table
from tau.portal.stellar.html import stellar_page
from tau.portal.store.direction import Direction
from tests.portal_web_support import XSS
from tests.stellar_compare_support import RUNS, compare_doc


def by_name(name: str) -> Direction:
    return Direction("min" if "loss" in name else "max", "name rule")


def summary(rid: str, name: str, latest: float, low: float, high: float) -> dict[str, Any]:
    return {
        "run_id": rid,
        "metric_name": name,
        "latest_value": latest,
        "min_value": low,
        "max_value": high,
        "count": 10,
        "finite_count": 9,
        "non_finite_count": 1,
        "latest_step": 9,
        "min_step": 0,
        "max_step": 9,
    }


def run(rid: str, config: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    configs = [{"normalized_json": json.dumps(config)}] if config is not None else []
    base = {"run_id": rid, "run_group_id": "g", "lifecycle_state": "succeeded", "tags": {}}
    return {**base, "configs": configs, **kw}


def test_last_and_best_follow_each_metrics_direction() -> None:
    by_run = {
        "r1": {
            "train/loss": summary("r1", "train/loss", 0.7, 0.4, 2.0),
            "eval/score": summary("r1", "eval/score", 0.6, 0.1, 0.8),
        }
    }
    doc = table.build([run("r1")], by_run, by_name, decision="train/loss")
    row = doc["rows"][0]
    assert table.cell(row, "train/loss", "latest") == 0.7
    assert table.cell(row, "train/loss", "best") == 0.4  # lower is better
    assert table.cell(row, "eval/score", "latest") == 0.6
    assert table.cell(row, "eval/score", "best") == 0.8  # higher is better
    # Every field of the CLI's --metric-filter is there, so the page's query box can use them.
    assert doc["stat_fields"][:-1] == [
        "latest",
        "min",
        "max",
        "count",
        "finite_count",
        "non_finite_count",
        "latest_step",
        "min_step",
        "max_step",
    ]
    assert table.cell(row, "train/loss", "non_finite_count") == 1
    # The decision metric comes first and is the default column.
    assert [m["name"] for m in doc["metrics"]] == ["train/loss", "eval/score"]
    assert doc["metrics"][0]["direction"] == "min"
    assert doc["decision_metric"] == "train/loss"


def test_a_recorded_direction_overrides_the_name_rule(tmp_path: Path) -> None:
    doc = compare_doc(tmp_path, directions={"train/loss": "max"})
    row = next(r for r in doc["table"]["rows"] if r["run_id"] == "run-a")
    loss = {m["name"]: m for m in doc["table"]["metrics"]}["train/loss"]
    assert loss["direction"] == "max" and loss["direction_source"] == "--direction"
    assert table.cell(row, "train/loss", "best") == table.cell(row, "train/loss", "max")


def test_non_finite_numbers_become_null_so_the_json_parses() -> None:
    by_run = {"r1": {"m": summary("r1", "m", math.nan, -math.inf, math.inf)}}
    doc = table.build([run("r1", {"x": math.nan})], by_run, by_name)
    assert doc["rows"][0]["metrics"]["m"][:3] == [None, None, None]
    assert doc["side_by_side"]["r1"]["x"] == "nan"  # a config value stays visible as data
    json.loads(json.dumps(doc, allow_nan=False))


def test_failed_runs_are_marked_and_kept(tmp_path: Path) -> None:
    rows = {r["run_id"]: r for r in compare_doc(tmp_path)["table"]["rows"]}
    assert list(rows) == list(RUNS)  # every run, in page order
    assert rows["run-d"]["failed"] is True and rows["run-d"]["status"] == "failed"
    assert not any(r["failed"] for rid, r in rows.items() if rid != "run-d")
    # Each row carries its run's colour, keyed by the run id (the charts use the same).
    assert all(r["color"] == svg.run_color(rid) for rid, r in rows.items())


def test_key_config_fields_put_varying_ones_first(tmp_path: Path) -> None:
    t = compare_doc(tmp_path)["table"]
    # lr, batch_size and the nested optimizer.name vary; model is the same everywhere.
    assert t["config_keys"] == ["lr", "batch_size", "optimizer.name", "model"]
    assert t["varying_config_keys"] == ["lr", "batch_size", "optimizer.name"]
    assert t["default_config"] == ["lr", "batch_size", "optimizer.name"]
    row = t["rows"][0]
    assert row["config"] == {
        "lr": 0.001,
        "batch_size": 32,
        "optimizer.name": "adam",
        "model": "tiny",
    }


def test_config_columns_are_capped_and_the_rest_is_in_side_by_side() -> None:
    wide = {f"k{i:02d}": i for i in range(40)}
    runs = [run("r1", wide), run("r2", {**wide, "k39": -1})]
    doc = table.build(runs, {}, by_name)
    assert len(doc["config_keys"]) == table.MAX_CONFIG_COLUMNS
    assert doc["config_keys"][0] == "k39"  # the only varying key leads
    assert doc["config_keys_total"] == 40
    assert len(doc["side_by_side"]["r1"]) == 40
    assert "side_by_side" not in table.build(runs, {}, by_name, full=False)


def test_the_api_form_keeps_last_and_best_only() -> None:
    by_run = {"r1": {"train/loss": summary("r1", "train/loss", 0.7, 0.4, 2.0)}}
    doc = table.build([run("r1", {"lr": 1})], by_run, by_name, full=False)
    assert doc["stat_fields"] == ["latest", "best"]
    assert doc["rows"][0]["metrics"] == {"train/loss": [0.7, 0.4]}
    assert doc["rows"][0]["config"] == {"lr": 1}


def test_missing_config_counts_as_a_difference() -> None:
    keys, varying = table.key_config_fields({"a": {"x": 1, "y": 2}, "b": {"x": 1}, "c": {}})
    assert varying == ["y"] and keys == ["y", "x"]


def test_hostile_values_are_kept_as_data(tmp_path: Path) -> None:
    rows = {r["run_id"]: r for r in compare_doc(tmp_path)["table"]["rows"]}
    row = rows[XSS]
    assert row["tags"][XSS] == XSS
    assert row["config"]["optimizer.name"] == XSS


def test_the_page_renders_every_run_escaped(tmp_path: Path) -> None:
    doc = compare_doc(tmp_path)
    page = stellar_page(doc)
    assert page.count('data-run="run-') >= 4
    assert XSS not in page  # only the escaped form
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    # The JSON block is escaped by tojson and parses back to the payload.
    start = page.index('<script type="application/json" id="runs-table-data">')
    body = page[page.index(">", start) + 1 : page.index("</script>", start)]
    assert "<" not in body
    assert json.loads(body) == json.loads(json.dumps(doc["table"]))
    # Default columns are server-rendered: the table works without JavaScript.
    for label in ("eval/score last", "train/loss best", "batch_size"):
        assert f">{label}</th>" in page
