"""NaN and ±Infinity from `experiment track --metric`: stored as such, kept out of best and
rank, and every JSON the CLI prints and the server answers stays JSON (non-finite is null)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tau.portal import jsonsafe
from tau.portal.stellar.source import StoreSource
from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.portal_helpers import portal
from tests.portal_web_support import serve_app


def strict_json(text: str | bytes) -> Any:
    """JSON as a browser's `JSON.parse` reads it: `NaN` and `Infinity` are not JSON."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    track = ("experiment", "track", "--store", root, "--group", "sweep")
    for step, loss in enumerate((2.0, 1.0, 0.2)):
        args = (*track, "diverged", "--metric", f"loss={loss}", "--step", step)
        assert portal(capsys, *args).code == 0
    assert portal(capsys, *track, "diverged", "--metric", "loss=nan", "--step", 3).code == 0
    assert portal(capsys, *track, "diverged", "--metric", "gnorm=inf", "--step", 3).code == 0
    for step, loss in enumerate((2.0, 0.9)):
        assert portal(capsys, *track, "good", "--metric", f"loss={loss}", "--step", step).code == 0
    return root


def test_tracked_nan_and_inf_are_stored_and_left_out_of_best_and_rank(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    values = [
        v
        for path in sorted((store / "metrics").rglob("*.parquet"))
        for v in pq.read_table(path, partitioning=None).column("value").to_pylist()
    ]
    assert any(math.isnan(v) for v in values) and math.inf in values
    found = strict_json(portal(capsys, "experiment", "search", "--store", store, "--json").out)
    run = next(r for r in found["runs"] if r["run_id"] == "diverged")
    by_name = {m["metric_name"]: m for m in run["metrics"]}
    assert by_name["gnorm"]["latest_value"] is None  # +inf, written as null
    assert by_name["gnorm"]["non_finite_count"] == 1
    assert by_name["loss"]["non_finite_count"] == 1
    assert by_name["loss"]["min_value"] == 0.2  # the finite ones only
    doc = strict_json(
        portal(
            capsys,
            "experiment",
            "stellar",
            "sweep",
            "--store",
            store,
            "--metric",
            "loss",
            "-o",
            "json",
        ).out
    )
    # loss is lower-is-better: the diverged run's 0.2 before NaN must not win.
    assert [r["run_id"] for r in doc["sweep"]["ranked_runs"]] == ["good"]
    assert doc["compare"]["groups"][0]["best_run_id"] == "good"


def test_the_adx_projection_writes_non_finite_values_as_null(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "adx"
    assert portal(capsys, "experiment", "export", "adx", "--store", store, "--out", out).code == 0
    rows = [strict_json(line) for line in (out / "TauExpMetrics.jsonl").read_text().splitlines()]
    values = [r["value"] for r in rows if r["run_id"] == "diverged"]
    assert values.count(None) == 2 and 0.2 in values


def test_the_served_api_answers_json_for_non_finite_values(store: Path) -> None:
    build = lambda guard: create_app(guard=guard, stellar=Stellar(StoreSource(store)))  # noqa: E731
    with serve_app(build) as served:
        for path in (
            "/api/v2/stellar/snapshot?target=sweep",
            "/api/v2/stellar/runs?target=sweep",
            "/api/v2/stellar/series?target=sweep&metric=loss",
            "/api/v2/stellar/series?target=sweep&metric=gnorm",
        ):
            status, _, body = served.get(path)
            assert status == 200, (path, body[:300])
            strict_json(body)
        status, _, body = served.get("/api/v2/stellar/series?target=sweep&metric=loss")
        diverged = next(s for s in strict_json(body)["series"] if s["run_id"] == "diverged")
        assert diverged["non_finite_points"] == 1
        assert [p["value"] for p in diverged["points"]] == [2.0, 1.0, 0.2]


def test_jsonsafe_writes_null_only_when_needed() -> None:
    assert jsonsafe.dumps({"a": [1.5, math.nan, -math.inf]}) == '{"a": [1.5, null, null]}'
    assert jsonsafe.dumps({"a": (1, 2.0)}) == '{"a": [1, 2.0]}'
