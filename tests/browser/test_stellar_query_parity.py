"""The page's query box speaks the CLI's language: compare.js's metric-filter parser, run in
Chromium, against `tau.portal.store.lifecycle.parse_metric_filter` (and the CLI's `--tag`
parsing) on the same strings: the same acceptance, metric, field, op and value, and the same
error message word for word."""

from __future__ import annotations

from typing import Any

import pytest

from tau.portal.cli.experiment import _tags
from tau.portal.errors import UsageError
from tau.portal.stellar.html import assets
from tau.portal.store.lifecycle import parse_metric_filter

METRIC_FILTERS = [
    # accepted
    "loss<0.5",
    "loss@min<0.5",
    "train/loss@max>=1",
    "eval/score:latest>0.8",
    "eval/score>=0.8",
    "m@count=120",
    "m@non_finite_count!=0",
    "m@latest_step<=100",
    "m@min_step>0",
    "m@max_step=99",
    "m@finite_count>1",
    "a:b@min<1",  # "@" wins over ":"
    "ns:metric:max<1",  # the last ":" splits
    " loss <0.5",
    "loss< 0.5 ",
    "loss<\t-1.5e-3",
    "loss<+.5",
    "loss<5.",
    "loss<1_000",
    "loss<1E3",
    "loss=0",
    "loss!=-0",
    # rejected, each with the CLI's message
    "loss",
    "",
    "loss@median<1",
    "loss@ min<1",
    "loss@<1",
    "@min<1",
    "<1",
    "  <1",
    "loss<",
    "loss<abc",
    "loss<1__0",
    "loss<_1",
    "loss<1_",
    "loss<0x10",
    "loss<1e",
    "loss<inf",
    "loss<-Infinity",
    "loss<nan",
    "loss<1e400",
    "loss=<1",
    "loss<<1",
    "loss<1 2",
]
TAGS = ["team=nlp", "k=", "k=a=b", "=v", "team", "", " k = v "]


def python_filter(text: str) -> dict[str, Any]:
    try:
        f = parse_metric_filter(text)
    except UsageError as exc:
        return {"error": exc.message}
    return {"metric": f.metric, "field": f.field, "op": f.op, "value": f.value}


def python_tag(text: str) -> dict[str, Any]:
    try:
        ((key, value),) = _tags([text])
    except UsageError as exc:
        return {"error": exc.message}
    return {"key": key, "value": value}


@pytest.fixture(scope="module")
def page(browser: Any) -> Any:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # The module alone on a blank page: it must load without the Stellar page around it.
    page.set_content("<!doctype html><body></body>")
    page.add_script_tag(content=assets().js)
    assert errors == []
    yield page
    context.close()


JS_FILTER = """texts => texts.map(t => {
  const f = window.StellarQuery.parseMetricFilter(t);
  return f.error ? {error: f.error} : {metric: f.metric, field: f.field, op: f.op, value: f.value};
})"""
JS_TAG = """texts => texts.map(t => {
  const f = window.StellarQuery.parseTag(t);
  return f.error ? {error: f.error} : {key: f.key, value: f.value};
})"""


def test_message_text_of_usage_errors() -> None:
    # The comparison below uses .message; make sure it is the one-line text without the hint.
    with pytest.raises(UsageError) as caught:
        parse_metric_filter("loss")
    assert caught.value.message == 'metric filter "loss" must contain one of >=, <=, !=, >, <, ='


def test_metric_filters_parse_like_the_cli(page: Any) -> None:
    got = page.evaluate(JS_FILTER, METRIC_FILTERS)
    want = [python_filter(t) for t in METRIC_FILTERS]
    for text, js, py in zip(METRIC_FILTERS, got, want, strict=True):
        assert js == py, text
    assert sum("error" in w for w in want) >= 20 and sum("error" not in w for w in want) >= 20


def test_tags_parse_like_the_cli(page: Any) -> None:
    got = page.evaluate(JS_TAG, TAGS)
    for text, js in zip(TAGS, got, strict=True):
        assert js == python_tag(text), text


def test_query_terms_combine_and_name_the_bad_one(page: Any) -> None:
    parsed = page.evaluate(
        "q => window.StellarQuery.parseQuery(q)",
        'train/loss@min<0.5 tag team=nlp "tag:note=a b" --metric-filter eval/score>=0.8 lr-big',
    )
    assert parsed["errors"] == []
    kinds = [
        (t["kind"], t.get("metric") or t.get("key") or t.get("needle")) for t in parsed["terms"]
    ]
    assert kinds == [
        ("metric", "train/loss"),
        ("tag", "team"),
        ("tag", "note"),
        ("metric", "eval/score"),
        ("text", "lr-big"),
    ]
    bad = page.evaluate("q => window.StellarQuery.parseQuery(q)", "ok loss@avg<1 tag x")
    assert bad["errors"] == [
        python_filter("loss@avg<1")["error"],
        python_tag("x")["error"],
    ]
    unclosed = page.evaluate("q => window.StellarQuery.parseQuery(q)", 'tag "a=b')
    assert unclosed["errors"] == ['unclosed quote in "tag "a=b"']
