"""`taugrid-portal experiment import jsonl`: metric-row tags, re-import, errors, and the fast
parse agreeing with the line-by-line one it falls back to."""

from __future__ import annotations

import json
import sqlite3
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau.portal.capture import jsonl
from tau.portal.store.cards import card_of
from tests.portal_helpers import portal

IMPORT = ["experiment", "import", "jsonl"]
JSONL_TAGS = {
    "jsonl.raw_key",
    "jsonl.history_file",
    "jsonl.history_path",
    "jsonl.history_line",
    "jsonl.importer",
    "tau.metric.card",
    "tau.metric.standard",
}


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _rows(store: Path, metric_file: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(store / metric_file).to_pylist()


def _counts(store: Path) -> dict[str, int]:
    with sqlite3.connect(store / "index.sqlite") as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: conn.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}


def test_every_row_carries_the_import_tags(store: Path, tmp_path: Path, capsys) -> None:
    # `acc` is missing from line 2 and the file has a blank line 3, so the tags must name
    # the file's own line numbers, not row indexes.
    history = tmp_path / "h.jsonl"
    history.write_text(
        '{"_step": 0, "_timestamp": 1760000000, "loss": 1.5, "acc": 0.1}\n'
        '{"_step": 1, "_timestamp": 1760000001, "loss": 1.0}\n'
        "\n"
        '{"_step": 2, "_timestamp": 1760000002, "loss": 0.5, "acc": 0.3}\n',
        encoding="utf-8",
    )
    result = portal(
        capsys, *IMPORT, "--store", store, "--run", "r1", "--history", history,
        "--metric-prefix", "train/", "-o", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = result.json()
    assert body["rows"] == 5
    rows = _rows(store, body["metric_file"])
    seen = {}
    for row in rows:
        tags = json.loads(row["tags"])
        assert set(tags) == JSONL_TAGS
        assert tags["jsonl.importer"] == "tau.jsonl.import.v1"
        assert tags["jsonl.history_file"] == "h.jsonl"
        assert tags["jsonl.history_path"] == str(history)
        assert tags["tau.metric.card"] == card_of(row["metric_name"])
        seen[(row["metric_name"], row["step"])] = tags
    assert seen[("train/loss", 2)]["jsonl.history_line"] == "4"
    assert seen[("train/acc", 2)]["jsonl.history_line"] == "4"
    assert seen[("train/loss", 1)]["jsonl.history_line"] == "2"
    assert seen[("train/loss", 0)]["jsonl.raw_key"] == "loss"
    # train/loss is a standard research metric (and a loss: the Loss card); train/acc
    # is neither standard nor named by a card rule beyond the default.
    assert seen[("train/loss", 0)]["tau.metric.standard"] == "true"
    assert seen[("train/loss", 0)]["tau.metric.card"] == "Loss"
    assert seen[("train/acc", 0)]["tau.metric.standard"] == "false"


def test_fast_path_rows_carry_the_same_tags(store: Path, tmp_path: Path, capsys) -> None:
    history = _write(
        tmp_path / "h.jsonl",
        [{"_step": i, "gpu/util": 0.5, "eval/score": i / 10} for i in range(300)],
    )
    f = jsonl.expand([str(history)])[0]
    assert jsonl._parse_fast(f, jsonl.ImportRequest("r", [], "p", "")) is not None
    body = portal(
        capsys, *IMPORT, "--store", store, "--run", "r2", "--history", history, "-o", "json"
    ).json()
    rows = _rows(store, body["metric_file"])
    assert len(rows) == 600
    lines = sorted(int(json.loads(r["tags"])["jsonl.history_line"]) for r in rows)
    assert lines == sorted(list(range(1, 301)) * 2)
    cards = {r["metric_name"]: json.loads(r["tags"])["tau.metric.card"] for r in rows}
    assert cards == {"gpu/util": "Systems", "eval/score": "Outcome"}


def test_reimport_is_reused_before_parsing_and_writes_nothing(
    store: Path, tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    history = _write(tmp_path / "h.jsonl", [{"_step": i, "loss": 1 / (i + 1)} for i in range(50)])
    args = [*IMPORT, "--store", store, "--run", "r1", "--history", history, "-o", "json"]
    first = portal(capsys, *args).json()
    assert first["action"] == "imported"

    def snapshot() -> dict[Path, tuple[int, int]]:
        return {
            p: (p.stat().st_size, p.stat().st_mtime_ns)
            for p in store.rglob("*")
            if p.is_file() and p.name != ".tau-exp.lock"
        }

    files, counts = snapshot(), _counts(store)
    metric_rows = len(_rows(store, first["metric_file"]))

    def no_parse(*_: object) -> None:
        raise AssertionError("a re-import must not parse the history")

    monkeypatch.setattr(jsonl, "parse_history", no_parse)
    again = portal(capsys, *args).json()
    assert again["action"] == "reused"
    assert again["metric_file"] == first["metric_file"]
    assert again["rows"] == first["rows"] == 50
    assert again["idempotency_key"] == first["idempotency_key"]
    assert snapshot() == files
    assert _counts(store) == counts
    assert len(_rows(store, first["metric_file"])) == metric_rows


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"_step": 4999, "loss": \n', "malformed JSON"),
        ('{"_step": -1, "loss": 1}\n', "_step must be >= 0, got -1"),
        ('{"_step": 1.5, "loss": 1}\n', "_step must be an integer, got 1.5"),
        ('{"_step": 99999999999999999999, "loss": 1}\n', "_step must be below 2^63"),
        ('{"_step": 4999, "_timestamp": NaN, "loss": 1}\n', "_timestamp must be epoch seconds"),
        ('{"_step": 4999, "_timestamp": 1e300, "loss": 1}\n', "_timestamp must be epoch seconds"),
        ('{"_step": 4999, "loss": 1}{"_step": 5000, "loss": 1}\n', "malformed JSON: Extra data"),
        ("[1, 2]\n", "expected a JSON object, got list"),
    ],
)
def test_a_bad_line_deep_in_a_large_file_is_named(
    store: Path, tmp_path: Path, capsys, line: str, message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    good = "".join(
        f'{{"_step": {i}, "_timestamp": {1760000000 + i}, "loss": {1 / (i + 1)}}}\n'
        for i in range(4999)
    )
    bad.write_text(good + line + '{"_step": 5001, "loss": 0.1}\n', encoding="utf-8")
    result = portal(capsys, *IMPORT, "--store", store, "--run", "r9", "--history", bad)
    assert result.code == 1
    assert f"{bad}:5000: " in result.err and message in result.err, result.err
    assert "Traceback" not in result.err
    assert _counts(store).get("runs", 0) == 0


def strict_json(text: str) -> Any:
    """JSON as a browser's `JSON.parse` reads it: `NaN` and `Infinity` are not JSON."""

    def refuse(token: str) -> Any:
        raise AssertionError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("layout", ["plain", "blank-line", "form-feed"])
def test_a_diverged_history_imports_with_its_nan_and_infinities(
    store: Path, tmp_path: Path, capsys, layout: str
) -> None:
    """NaN, Infinity, -Infinity and an overflowing literal are stored as such, counted apart,
    and kept out of min/max, best and rank; every JSON the portal prints stays JSON. The three
    layouts take the fast parse, the trimmed fast parse and the line-by-line parse."""
    lines = [
        f'{{"_step": {i}, "_timestamp": {1760000000 + i}, "loss": {1 / (i + 1)}}}' for i in range(6)
    ]
    lines += [
        '{"_step": 6, "_timestamp": 1760000006, "loss": NaN}',
        '{"_step": 7, "_timestamp": 1760000007, "loss": Infinity}',
        '{"_step": 8, "_timestamp": 1760000008, "loss": -Infinity}',
        '{"_step": 9, "_timestamp": 1760000009, "loss": 1' + "0" * 400 + "}",
        '{"_step": 10, "_timestamp": 1760000010, "loss": NaN}',
    ]
    if layout == "blank-line":
        lines.insert(3, "")
    if layout == "form-feed":  # blank to the line-by-line parse, not to the fast one
        lines.insert(0, "\x0c")
    diverged = tmp_path / "diverged.jsonl"
    diverged.write_text("\n".join(lines) + "\n", encoding="utf-8")
    good = tmp_path / "good.jsonl"
    good.write_text(
        "".join(f'{{"_step": {i}, "loss": {0.5 + 1 / (i + 1)}}}\n' for i in range(11)),
        encoding="utf-8",
    )
    args = (*IMPORT, "--store", store, "--group", "sweep", "-o", "json")
    first = portal(capsys, *args, "--run", "diverged", "--history", diverged)
    assert first.code == 0, first.err
    assert portal(capsys, *args, "--run", "good", "--history", good).code == 0
    values = [r["value"] for r in _rows(store, first.json()["metric_file"])]
    assert len(values) == 11
    assert values[6] != values[6] and values[10] != values[10]  # NaN
    assert values[7:10] == [float("inf"), float("-inf"), float("inf")]

    with sqlite3.connect(store / "index.sqlite") as conn:
        count, finite, bad, lo, hi = conn.execute(
            "SELECT count, finite_count, non_finite_count, min_value, max_value "
            "FROM metric_summaries WHERE run_id = 'diverged' AND metric_name = 'loss'"
        ).fetchone()
    assert (count, finite, bad) == (11, 6, 5)
    assert (lo, hi) == (pytest.approx(1 / 6), 1.0)

    found = strict_json(portal(capsys, "experiment", "search", "--store", store, "--json").out)
    row = next(r for r in found["runs"] if r["run_id"] == "diverged")
    assert row["lifecycle_state"] == "incomplete"
    assert "loss has 5 non-finite values" in row["success_reasons"]
    jsonl_out = portal(capsys, "experiment", "search", "--store", store, "-o", "jsonl").out
    for text in jsonl_out.splitlines():
        strict_json(text)

    doc = strict_json(
        portal(capsys, "experiment", "stellar", "sweep", "--store", store, "-o", "json").out
    )
    assert [r["run_id"] for r in doc["sweep"]["ranked_runs"]] == ["good"]
    assert doc["sweep"]["best_run"]["run_id"] == "good"
    table_row = next(r for r in doc["table"]["rows"] if r["run_id"] == "diverged")
    latest = doc["table"]["stat_fields"].index("latest")
    assert table_row["metrics"]["loss"][latest] is None  # NaN is null in JSON


def test_invalid_utf8_names_the_line(store: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"_step": 0, "loss": 1}\n{"_step": 1, "note": "\xff", "loss": 2}\n')
    result = portal(capsys, *IMPORT, "--store", store, "--run", "r9", "--history", bad)
    assert result.code == 1 and f"{bad}:2: not valid UTF-8" in result.err, result.err


def test_booleans_strings_nested_and_metadata_are_not_metrics(tmp_path: Path) -> None:
    rows = [
        {"_step": i, "_note": 1.0, "flag": True, "name": "x", "nested": {"a": 1}, "loss": 0.5}
        for i in range(3)
    ]
    f = jsonl.expand([str(_write(tmp_path / "h.jsonl", rows))])[0]
    req = jsonl.ImportRequest("r", [], "p", "")
    fast = jsonl._parse_fast(f, req)
    assert fast is not None
    for table in (fast, jsonl._parse_slow(f, req)):
        assert sorted(c for c in table.column_names if not c.startswith("__")) == ["loss"]


# -- the fast path agrees with the line-by-line parse -----------------------------------

_finite = st.floats(allow_nan=False, allow_infinity=False)
_number = st.one_of(
    _finite,
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0.1, 1e-320, -0.0, 2**53 + 1, 1e308, 5e-324]),
)
_value = st.one_of(
    _number,
    st.booleans(),
    st.none(),
    st.text(max_size=4),
    st.just({"a": 1}),
    st.sampled_from([float("nan"), float("inf")]),
)
_kinds = {
    "_step": [st.integers(min_value=0, max_value=2**20), st.integers(min_value=-2, max_value=2**64),
              st.just(1.0), st.none()],
    "_timestamp": [_finite, st.integers(min_value=0, max_value=2**40), st.floats()],
    "_meta": [_value],
    "loss": [_finite, st.integers(min_value=-(2**62), max_value=2**62), _number],
    "acc": [_finite, st.booleans(), st.text(max_size=3), _value],
    "x\u2028y": [_number],
}  # fmt: skip


@st.composite
def _histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Rows whose keys each keep one kind of value (as real histories do) or mix kinds."""
    kinds = {
        key: draw(st.sampled_from(options))
        for key, options in _kinds.items()
        if draw(st.booleans())
    }
    rows = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        present = [k for k in kinds if draw(st.integers(0, 4))]  # mostly present
        rows.append({k: draw(kinds[k]) for k in present})
    return rows


_layout = st.sampled_from(
    ["plain", "compact", "crlf", "blank", "indent", "form-feed", "two-on-a-line", "split-object"]
)


def _render(rows: list[dict[str, Any]], layout: str) -> bytes:
    compact = layout != "plain"
    lines = [
        json.dumps(r, separators=(",", ":") if compact else None, ensure_ascii=False) for r in rows
    ]
    if layout == "crlf":
        return "".join(line + "\r\n" for line in lines).encode()
    if layout == "blank" and lines:
        lines.insert(len(lines) // 2, "")
        lines.append(" \t")
    if layout == "indent":
        lines = ["\t " + line + " " for line in lines]
    if layout == "form-feed":  # blank to str.strip(), not JSON whitespace
        lines.insert(0, "\x0c")
    if layout == "two-on-a-line" and len(lines) > 1:
        lines[0:2] = [lines[0] + lines[1]]
    if layout == "split-object" and lines and lines[0].startswith('{"'):
        lines[0] = lines[0].replace(":", ":\n", 1)
    return "".join(line + "\n" for line in lines).encode()


def _cells(table: Any) -> dict[str, list[Any]]:
    """Columns by name, floats as their bytes so that -0.0 and 0.0 (and NaN) differ."""

    def cell(v: Any) -> Any:
        return struct.pack("<d", v) if isinstance(v, float) else v

    return {name: [cell(v) for v in table[name].to_pylist()] for name in table.column_names}


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rows=_histories(), layout=_layout)
def test_the_fast_parse_agrees_with_the_line_by_line_parse(
    rows: list[dict[str, Any]], layout: str
) -> None:
    from tau.portal.errors import UsageError

    data = _render(rows, layout)
    f = jsonl._History(Path("h.jsonl"), "h.jsonl", data, "")
    req = jsonl.ImportRequest("r", [], "p", "")
    fast = jsonl._parse_fast(f, req)
    try:
        slow = jsonl._parse_slow(f, req)
    except UsageError:
        assert fast is None, "the fast path took a file the line-by-line parse rejects"
        return
    if fast is not None:
        assert _cells(fast) == _cells(slow)


def test_the_fast_parse_takes_the_plain_shape() -> None:
    """The property above is not vacuous: every writer's plain shape takes the fast path."""
    rows = [{"_step": i, "_timestamp": 1760000000.5 + i, "loss": 1 / (i + 1)} for i in range(9)]
    for layout in ("plain", "compact"):
        f = jsonl._History(Path("h.jsonl"), "h.jsonl", _render(rows, layout), "")
        assert jsonl._parse_fast(f, jsonl.ImportRequest("r", [], "p", "")) is not None


# -- Stellar reads the card tag first --------------------------------------------------


def test_stellar_takes_the_card_from_the_metric_tag_then_the_name(
    store: Path, tmp_path: Path, capsys
) -> None:
    """Contract §7.1: "The card comes from the metric tag tau.metric.card, else from the name".

    The imported file is rewritten as another writer might have tagged it (`custom/q` in the
    Behavior card, a name whose rules say Other metrics; `loss` with no card tag at all).
    """
    from datetime import UTC, datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    from tau.portal.stellar import snapshot
    from tau.portal.stellar.source import StoreSource

    history = _write(
        tmp_path / "h.jsonl", [{"_step": i, "custom/q": i / 10, "loss": 1.0} for i in range(20)]
    )
    body = portal(
        capsys, *IMPORT, "--store", store, "--run", "r1", "--history", history, "-o", "json"
    ).json()
    path = store / body["metric_file"]
    table = pq.read_table(path)

    def retag(row: dict[str, Any]) -> str:
        tags = json.loads(row["tags"])
        if row["metric_name"] == "custom/q":
            tags["tau.metric.card"] = "Behavior"
        else:
            del tags["tau.metric.card"]
        return json.dumps(tags)

    tags = pa.array([retag(r) for r in table.select(["metric_name", "tags"]).to_pylist()])
    pq.write_table(table.set_column(table.schema.get_field_index("tags"), "tags", tags), path)

    ev = StoreSource(store).evidence("r1", max_runs=10)
    assert ev.metric_cards == {"custom/q": "Behavior"}
    doc = snapshot.build(ev, now=datetime(2026, 1, 1, tzinfo=UTC))
    cards = {m["metric_name"]: c["card"] for c in doc["cards"] for m in c["metrics"]}
    assert cards == {"custom/q": "Behavior", "loss": "Loss"}
    options = {o["name"]: o["card"] for o in doc["metric_options"]}
    assert options == {"custom/q": "Behavior", "loss": "Loss"}


def test_an_unknown_card_tag_falls_back_to_the_name() -> None:
    from tau.portal.store.cards import card_from_tags

    assert card_from_tags({"tau.metric.card": "Throughput"}, "loss") == "Throughput"
    assert card_from_tags({"tau.metric.card": "Not a card"}, "loss") == "Loss"
    assert card_from_tags(None, "gpu/util") == "Systems"


def test_card_tags_from_mixed_and_untagged_metric_files(tmp_path: Path) -> None:
    """A file without statistics and with several metrics per row group (another writer's),
    and one without card tags (a `track` file): tags are read where present, else absent."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tau.portal.store.metrics import tag_cards

    def rows(names: list[str], card: str | None) -> pa.Table:
        tags = [json.dumps({"tau.metric.card": card} if card else {}) for _ in names]
        return pa.table({"metric_name": names, "value": [1.0] * len(names), "tags": tags})

    mixed = tmp_path / "mixed.parquet"
    pq.write_table(rows(["a", "b", "a", "c"], "Behavior"), mixed, write_statistics=False)
    untagged = tmp_path / "untagged.parquet"
    pq.write_table(rows(["d", "d"], None), untagged)
    assert tag_cards([untagged, mixed], ["a", "b", "d", "e"]) == {"a": "Behavior", "b": "Behavior"}
    assert tag_cards([tmp_path / "missing.parquet", mixed], ["c"]) == {"c": "Behavior"}
