"""Right answers: every metric has a direction (override, else recorded tag, else the name rule),
and every consumer uses it: Stellar's group statistics, best group and run, ranking, cards,
outliers, summary and suggested commands, `compare`, the CLI flags and the served page. Failed
runs are marked and left out of group statistics unless asked for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau.portal.errors import UsageError
from tau.portal.stellar import html, snapshot
from tau.portal.stellar.evidence import Evidence, Series
from tau.portal.store import direction
from tests.portal_helpers import portal
from tests.portal_web_support import serve_app

NOW = snapshot.datetime(2026, 1, 2, tzinfo=snapshot.UTC)


# -- the rule -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("train/loss", "min"),
        ("eval/val_loss", "min"),
        ("eval/error_rate", "min"),
        ("wm/perplexity", "min"),
        ("eval/top1_err", "min"),
        ("asr/wer", "min"),
        ("model/cross_entropy", "min"),
        ("train/step_time", "min"),
        ("eval/score", "max"),
        ("eval/accuracy", "max"),
        ("train/return", "max"),
        ("system/power", "max"),  # "wer" inside a word is not the word error rate
        ("eval/answer_rate", "max"),
    ],
)
def test_name_rule(name: str, want: str) -> None:
    assert direction.by_name(name) == want


def test_the_rule_widens_the_registrys() -> None:
    from tau.registry.records import metric_direction

    for name in ("loss", "eval.loss", "accuracy", "score"):
        registry = "min" if metric_direction(name) == "lower" else "max"
        assert direction.by_name(name) == registry


def test_override_beats_record_beats_name() -> None:
    assert direction.direction_of("train/loss").as_dict() == {
        "direction": "min",
        "goal": "lower",
        "direction_source": "name rule",
    }
    assert direction.direction_of("train/loss", record="higher") == direction.Direction(
        "max", "recorded"
    )
    assert direction.direction_of("train/loss", override="max", record="min") == (
        direction.Direction("max", "--direction")
    )
    assert direction.direction_of("x", record="sideways").source == "name rule"


@pytest.mark.parametrize(("text", "want"), [("max", "max"), ("LOWER", "min"), (" higher ", "max")])
def test_parse_accepts_both_vocabularies(text: str, want: str) -> None:
    assert direction.parse(text) == want


def test_parse_rejects_with_a_located_line() -> None:
    with pytest.raises(UsageError) as err:
        direction.parse("sideways")
    assert 'direction "sideways" is invalid' in str(err.value)
    assert "max or min" in (err.value.hint or "")


def test_parse_overrides() -> None:
    assert direction.parse_overrides(["min", "eval/a=b=max"]) == {"": "min", "eval/a=b": "max"}
    with pytest.raises(UsageError):
        direction.parse_overrides(["=min"])
    with pytest.raises(UsageError):
        direction.parse_overrides(["train/loss=up"])


# -- Stellar's snapshot ----------------------------------------------------------------------

#: latest train/loss per run: low is good. g-low holds the best runs; r-bad failed with the
#: lowest loss of all (a diverged run that stopped early must not win).
LOSS = {"a1": 0.2, "a2": 0.3, "a3": 0.25, "b1": 0.9, "b2": 1.1, "b3": 1.0, "r-bad": 0.01}
GROUP = {"a1": "g-low", "a2": "g-low", "a3": "g-low", "r-bad": "g-high"}


def evidence(
    loss: dict[str, float] | None = None,
    failed: tuple[str, ...] = ("r-bad",),
    groups: dict[str, str] | None = None,
    **extra: Any,
) -> Evidence:
    loss = loss or LOSS
    groups = GROUP if groups is None else groups
    runs = [
        {
            "run_id": rid,
            "run_group_id": groups.get(rid, "g-high"),
            "state": "failed" if rid in failed else "succeeded",
            "tags": {},
            "context": {},
        }
        for rid in loss
    ]
    summaries = [
        {
            "run_id": rid,
            "metric_name": name,
            "latest_step": 10,
            "latest_value": value if name == "train/loss" else 1 - value,
            "max_step": 10,
            "latest_wall_time": "2026-01-01T00:00:00Z",
        }
        for rid, value in loss.items()
        for name in ("train/loss", "eval/accuracy")
    ]

    def load(metric: str, ids: Any) -> list[Series]:
        return [Series(r, metric, (0, 10), (1.0, loss[r])) for r in ids]

    return Evidence(
        store_path="/s",
        target="exp",
        target_type="experiment",
        manifest={},
        status={},
        experiment=None,
        run_groups=[],
        runs=runs,
        total_runs=len(runs),
        summaries=summaries,
        load_series=load,
        **extra,
    )


def build(ev: Evidence | None = None, **kw: Any) -> dict[str, Any]:
    return snapshot.build(ev or evidence(), now=NOW, metric=kw.pop("metric", "train/loss"), **kw)


def test_a_loss_is_won_by_the_lowest_group_and_run() -> None:
    doc = build()
    assert doc["direction"] == {
        "metric_name": "train/loss",
        "direction": "min",
        "goal": "lower",
        "direction_source": "name rule",
    }
    assert doc["best_group_id"] == "g-low"
    groups = {g["run_group_id"]: g for g in doc["compare"]["groups"]}
    assert groups["g-low"]["best"] == 0.2 and groups["g-low"]["best_run_id"] == "a1"
    assert groups["g-high"]["best"] == 0.9 and groups["g-high"]["best_run_id"] == "b1"
    assert doc["summary"]["current_answer"] == (
        "Current best evidence favors g-low on train/loss (lower is better)."
    )
    assert "best=0.2," in doc["summary"]["best_evidence"]
    assert "(lower is better)" in doc["compare"]["summary"]


def test_ranking_is_best_first_in_the_direction() -> None:
    sweep = build()["sweep"]
    assert sweep["direction"] == "min"
    assert [r["run_id"] for r in sweep["ranked_runs"]] == ["a1", "a3", "a2", "b1", "b3", "b2"]
    assert sweep["best_run"]["run_id"] == "a1"
    higher = build(metric="eval/accuracy")["sweep"]
    assert higher["best_run"]["run_id"] == "a1" and higher["direction"] == "max"


def test_every_card_metric_carries_its_own_direction() -> None:
    doc = build()
    metrics = {m["metric_name"]: m for c in doc["cards"] for m in c["metrics"]}
    assert metrics["train/loss"]["direction"] == "min"
    assert metrics["eval/accuracy"]["direction"] == "max"
    low = {g["run_group_id"]: g["best"] for g in metrics["train/loss"]["groups"]}
    high = {g["run_group_id"]: g["best"] for g in metrics["eval/accuracy"]["groups"]}
    assert low["g-low"] == 0.2 and high["g-low"] == pytest.approx(0.8)
    options = {o["name"]: o for o in doc["metric_options"]}
    assert options["train/loss"]["goal"] == "lower"
    assert options["eval/accuracy"]["direction_source"] == "name rule"


def test_an_override_flips_the_answer_and_is_carried_into_the_commands() -> None:
    doc = build(directions={"": "max"})
    assert doc["direction"]["direction_source"] == "--direction"
    assert doc["best_group_id"] == "g-high"
    actions = doc["actions"]
    assert "--direction max" in actions["open_cli"]
    assert "--metric 'train/loss' --direction max -o html" in actions["copy_cli"]
    assert (
        "compare 'exp' --metric 'train/loss' --direction max --format jsonl"
        in (actions["next_command"])
    )
    per_metric = build(directions={"eval/accuracy": "min"})
    options = {o["name"]: o for o in per_metric["metric_options"]}
    assert options["eval/accuracy"]["direction"] == "min"
    assert per_metric["direction"]["direction"] == "min"  # train/loss keeps its rule


def test_an_override_of_an_unknown_metric_is_a_warning() -> None:
    doc = build(directions={"nope": "min"})
    assert "--direction for nope ignored: the target has no metric nope" in doc["warnings"]


def test_a_recorded_direction_beats_the_name_rule() -> None:
    doc = build(evidence(metric_directions={"train/loss": "max"}))
    assert doc["direction"]["direction_source"] == "recorded"
    assert doc["best_group_id"] == "g-high"


def test_the_next_command_always_names_the_direction() -> None:
    doc = build()
    assert "--direction min" in doc["summary"]["next_command"]
    assert doc["summary"]["next_command"] == doc["actions"]["next_command"]
    assert "--direction" not in doc["actions"]["open_cli"]  # the page's own default


def test_failed_runs_are_marked_and_left_out_of_group_statistics() -> None:
    doc = build()
    runs = {r["run_id"]: r for r in doc["runs"]}
    assert runs["r-bad"]["failed"] is True and runs["r-bad"]["in_group_stats"] is False
    assert runs["a1"]["failed"] is False and runs["a1"]["in_group_stats"] is True
    assert doc["excluded_failed_runs"] == ["r-bad"] and doc["include_failed"] is False
    groups = {g["run_group_id"]: g for g in doc["compare"]["groups"]}
    assert groups["g-high"]["run_count"] == 3 and groups["g-high"]["min"] == 0.9
    assert "r-bad" not in [r["run_id"] for r in doc["sweep"]["ranked_runs"]]
    assert any("1 failed runs left out of group statistics: r-bad" in w for w in doc["warnings"])


def test_include_failed_counts_them_and_says_so_in_the_commands() -> None:
    doc = build(include_failed=True)
    assert doc["excluded_failed_runs"] == []
    assert doc["best_group_id"] == "g-high"  # the failed run's 0.01 now counts
    groups = {g["run_group_id"]: g for g in doc["compare"]["groups"]}
    assert groups["g-high"]["run_count"] == 4 and groups["g-high"]["best_run_id"] == "r-bad"
    assert doc["sweep"]["best_run"]["run_id"] == "r-bad"
    assert all("--include-failed" in doc["actions"][k] for k in ("open_cli", "next_command"))


def test_a_terminal_failure_marker_counts_as_failed() -> None:
    ev = evidence(failed=())
    marker = {
        "run_id": "r-bad",
        "metric_name": "tau/run_status",
        "latest_step": 10,
        "latest_value": -1.0,
    }
    ev = Evidence(**{**ev.__dict__, "summaries": [*ev.summaries, marker]})
    assert build(ev)["excluded_failed_runs"] == ["r-bad"]


def test_outliers_use_the_counted_runs_only() -> None:
    loss = {"a1": 1.0, "a2": 1.1, "a3": 1.05, "a4": 9.0, "a5": 1.02}
    ev = evidence(loss, failed=("a4",), groups={k: "g-low" for k in loss})
    assert build(ev)["compare"]["outliers"] == []
    flagged = build(ev, include_failed=True)["compare"]["outliers"]
    assert [o["run_id"] for o in flagged] == ["a4"]


def test_the_page_shows_direction_and_marks_failed_runs() -> None:
    page = html.stellar_page(build(), metric_form="/stellar")
    assert 'data-direction="min" data-direction-source="name rule"' in page
    assert "(lower train/loss is better; name rule)" in page
    assert 'class="failed" data-failed="1"' in page
    assert "failed · not in group statistics" in page
    assert '<select name="direction">' in page and 'name="include_failed"' in page
    assert "Ranked best first: min (lower is better); failed runs left out (r-bad)." in page
    assert "best is min (lower is better)" in page  # the card metric heading


def test_the_tui_says_the_direction_and_the_left_out_runs() -> None:
    from tau.portal.stellar.output import as_tui

    text = as_tui(build())
    assert "min (lower is better) for train/loss; from name rule" in text
    assert "left out of group statistics: r-bad" in text


# -- compare and the CLI ---------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Two groups on train/loss (arm-low is better) and one failed run with the lowest loss."""
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for rid, group, loss, state in [
        ("r0", "arm-low", 0.2, "succeeded"),
        ("r1", "arm-low", 0.3, "succeeded"),
        ("r2", "arm-high", 0.9, "succeeded"),
        ("r3", "arm-high", 0.01, "failed"),
    ]:
        args = ["experiment", "track", rid, "--store", root, "--group", group, "--state", state]
        args += ["--metric", f"train/loss={loss}", "--metric", f"eval/acc={1 - loss}"]
        assert portal(capsys, *args, "--step", "10").code == 0
    return root


def compare(capsys: Any, store: Path, *args: str) -> dict[str, Any]:
    result = portal(capsys, "experiment", "compare", "demo", "--store", store, "--json", *args)
    assert result.code == 0, result.err
    return result.json()  # type: ignore[return-value]


def winner(body: dict[str, Any]) -> str:
    return next(g["run_group_id"] for g in body["groups"] if g["winner"])


def test_compare_defaults_to_the_metrics_direction(store: Path, capsys: Any) -> None:
    body = compare(capsys, store, "--metric", "train/loss")
    assert body["direction"] == "min" and body["direction_source"] == "name rule"
    assert winner(body) == "arm-low"
    assert {g["direction"] for g in body["groups"]} == {"min"}
    assert {g["run_group_id"]: g["best_run_id"] for g in body["groups"]} == {
        "arm-low": "r0",
        "arm-high": "r2",
    }
    assert winner(compare(capsys, store, "--metric", "eval/acc")) == "arm-low"


def test_compare_override_and_aliases(store: Path, capsys: Any) -> None:
    assert winner(compare(capsys, store, "--metric", "train/loss", "--direction", "max")) == (
        "arm-high"
    )
    body = compare(capsys, store, "--metric", "train/loss", "--direction", "lower")
    assert body["direction"] == "min" and body["direction_source"] == "--direction"


def test_compare_leaves_failed_runs_out_unless_asked(store: Path, capsys: Any) -> None:
    body = compare(capsys, store, "--metric", "train/loss")
    assert body["failed_runs"] == ["r3"]
    high = next(g for g in body["groups"] if g["run_group_id"] == "arm-high")
    assert high["run_count"] == 1
    assert "1 failed runs left out: r3 (--include-failed counts them)" in body["warnings"]
    counted = compare(capsys, store, "--metric", "train/loss", "--include-failed")
    assert winner(counted) == "arm-high" and counted["warnings"] == []
    table = portal(
        capsys, "experiment", "compare", "demo", "--store", store, "--metric", "train/loss"
    )
    assert "warning: 1 failed runs left out: r3" in table.err


def test_compare_reads_a_recorded_direction(tmp_path: Path, capsys: Any) -> None:
    root = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    for rid, group, value in [("r0", "a", 1.0), ("r1", "b", 5.0)]:
        args = ["experiment", "track", rid, "--store", root, "--group", group]
        args += ["--metric", f"custom/loss_margin={value}", "--tag", "tau.metric.direction=max"]
        assert portal(capsys, *args).code == 0
    body = compare(capsys, root, "--metric", "custom/loss_margin")
    assert body["direction"] == "max" and body["direction_source"] == "recorded"
    assert winner(body) == "b"


def test_bad_direction_is_one_located_line(store: Path, capsys: Any) -> None:
    for verb in (["compare", "demo"], ["stellar", "demo", "-o", "json"]):
        result = portal(capsys, "experiment", *verb, "--store", store, "--direction", "up")
        assert result.code == 1
        assert result.err.startswith('error: --direction "up" is invalid')
        assert "Traceback" not in result.err


def test_stellar_cli_flags(store: Path, capsys: Any) -> None:
    base = ["experiment", "stellar", "demo", "--store", store, "-o", "json", "--metric"]
    doc = json.loads(portal(capsys, *base, "train/loss").out)
    assert doc["best_group_id"] == "arm-low" and doc["excluded_failed_runs"] == ["r3"]
    assert "--direction min" in doc["summary"]["next_command"]
    flipped = json.loads(portal(capsys, *base, "train/loss", "--direction", "max").out)
    assert flipped["best_group_id"] == "arm-high"
    assert flipped["direction"]["direction_source"] == "--direction"
    counted = json.loads(portal(capsys, *base, "train/loss", "--include-failed").out)
    assert counted["excluded_failed_runs"] == [] and counted["best_group_id"] == "arm-high"
    per_metric = json.loads(portal(capsys, *base, "train/loss", "--direction", "eval/acc=min").out)
    options = {o["name"]: o["direction"] for o in per_metric["metric_options"]}
    assert options == {"eval/acc": "min", "train/loss": "min"}


# -- the served page -------------------------------------------------------------------------


def test_the_served_page_and_api_take_direction_and_include_failed(store: Path) -> None:
    from tau.portal.stellar.source import StoreSource
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar

    stellar = Stellar(StoreSource(store))
    with serve_app(lambda guard: create_app(guard=guard, stellar=stellar)) as served:
        base = "/api/v2/stellar/snapshot?target=demo&metric=train/loss"
        status, body = served.json(base)
        assert status == 200 and body["best_group_id"] == "arm-low"
        status, body = served.json(base + "&direction=max&include_failed=1")
        assert status == 200 and body["best_group_id"] == "arm-high"
        assert body["include_failed"] is True
        assert body["direction"]["direction_source"] == "--direction"
        status, body = served.json(base + "&direction=auto")
        assert status == 200 and body["direction"]["direction_source"] == "name rule"
        status, body = served.json(base + "&direction=up")
        assert status == 400 and "direction must be max or min" in body["detail"]
        status, _, page = served.get("/stellar?target=demo&metric=train/loss&direction=max")
        text = page.decode()
        assert status == 200 and 'data-direction-source="--direction"' in text
        assert "direction=max" in text  # the live refresh keeps the override
