"""No dead ends, over real HTTP: every run/group/experiment mention links to a page that exists,
`/` and errors are HTML for browsers and JSON for API clients, finished targets stop polling,
the run page shows config, tags, command and artifacts, and the portal's nav stays on HTML."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from tau.portal.stellar import links, snapshot
from tau.portal.stellar.evidence import Evidence
from tau.portal.stellar.output import as_html
from tau.portal.web.app import create_app
from tau.portal.web.errors import wants_html
from tau.portal.web.stellar_routes import Stellar
from tests.portal_web_support import XSS, FakeSource, Served, demo_source, serve_app

BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
API = {"Accept": "application/json"}
XSS_URL = "/stellar?target=%3Cscript%3Ealert%281%29%3C%2Fscript%3E"


class Links(HTMLParser):
    """Every <a href> of a page, with its text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: set[str] = set()
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "a" and a.get("href"):
            self._href, self._text = str(a["href"]), []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._text).strip()))
            self._href = None


def links_of(body: bytes | str) -> Links:
    parser = Links()
    parser.feed(body.decode() if isinstance(body, bytes) else body)
    return parser


def targets(page: Links) -> dict[str, str]:
    """Link text → the Stellar target it opens, for /stellar?target= links."""
    out = {}
    for href, text in page.links:
        url = urlparse(href)
        if url.path == "/stellar" and "target" in parse_qs(url.query):
            out[text] = parse_qs(url.query)["target"][0]
    return out


class NavSource(FakeSource):
    """The demo source with what the landing page and the run page read: counts, a command."""

    def search_experiments(self, filters: Any, limit: int) -> dict[str, Any]:
        latest = max(self.runs, key=lambda r: (r["created_at"], r["run_id"]))
        return {
            "schema_version": "tau.exp.experiment_search.v0",
            "truncated": False,
            "experiments": [
                {
                    "experiment_id": "exp",
                    "name": "exp",
                    "project": "demo",
                    "run_count": len(self.runs),
                    "run_group_count": len({r["run_group_id"] for r in self.runs}),
                    "latest_run_id": latest["run_id"],
                    "latest_run_at": latest["created_at"],
                }
            ],
        }

    def evidence(self, target: str, *, max_runs: int, kind: str = "") -> Evidence:
        if target == "boom":
            raise OSError(f"[Errno 5] I/O error: '{self.store_path}/metrics/x.parquet'")
        return super().evidence(target, max_runs=max_runs, kind=kind)


@pytest.fixture
def source(tmp_path: Path) -> NavSource:
    store = tmp_path / "store"
    store.mkdir()
    demo = demo_source(store)
    runs = demo.runs
    runs[0]["tau_command"] = "python train.py --lr 0.1"
    runs[0]["tags"] = {"owner": "ana", "note": XSS}
    return NavSource(
        store_path=demo.store_path,
        runs=runs,
        events=demo.events,
        artifacts=demo.artifacts,
        configs=demo.configs,
    )


@pytest.fixture
def served(source: NavSource) -> Iterator[Served]:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        yield s


def page(served: Served, path: str) -> tuple[int, str]:
    status, headers, body = served.get(path, headers=BROWSER)
    assert headers["content-type"].startswith("text/html"), path
    return status, body.decode()


# -- content negotiation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "path", "html"),
    [
        (BROWSER["Accept"], "/", True),
        ("text/html", "/nope", True),
        ("application/json", "/", False),
        ("application/json, text/html", "/", False),
        ("text/html;q=0.5, application/json", "/", False),
        ("text/html, application/json;q=0.9", "/", True),
        ("*/*", "/", False),
        ("", "/", False),
        (BROWSER["Accept"], "/api/v2/stellar/status", False),
    ],
)
def test_who_gets_html(accept: str, path: str, html: bool) -> None:
    assert wants_html(accept, path) is html


def test_root_is_the_landing_page_for_browsers_and_json_for_api_clients(served: Served) -> None:
    status, text = page(served, "/")
    assert status == 200 and 'data-panel="experiments"' in text
    status, body = served.json("/", headers=API)
    assert status == 200 and body["service"] == "tau.exp.stellar"


def test_landing_shows_real_counts_and_links_the_latest_run(served: Served) -> None:
    status, text = page(served, "/stellar")
    assert status == 200
    row = re.search(r'<tr data-experiment="exp">.*?</tr>', text, re.S)
    assert row is not None
    assert '<td class="num" data-count="runs">7</td>' in row.group(0)
    assert '<td class="num" data-count="groups">2</td>' in row.group(0)
    assert "not collected" not in row.group(0)
    found = targets(links_of(row.group(0)))
    assert found["exp"] == "exp"
    assert set(found.values()) == {"exp", "run-1-2"}  # the newest run, by created_at
    # The nav bar: the product, "Experiments", and no portal on a Stellar-only server.
    nav = links_of(text)
    assert ("/stellar", "Experiments") in nav.links
    assert "taugrid-portal" in text and "/portal" not in text


def test_the_landing_page_is_reachable_with_a_default_target(source: NavSource) -> None:
    app = Stellar(source, default_target="lr-0")
    with serve_app(lambda guard: create_app(guard=guard, stellar=app)) as s:
        assert s.get("/", headers=BROWSER)[1]["location"] == "/stellar?target=lr-0"
        status, text = page(s, "/stellar")
        assert status == 200 and 'data-panel="experiments"' in text


# -- errors ------------------------------------------------------------------------------------


def test_unknown_route_is_an_html_404_with_a_way_home(served: Served) -> None:
    status, text = page(served, "/no/such/page")
    assert status == 404
    assert 'data-status="404"' in text and "there is no page at /no/such/page" in text
    assert ("/stellar", "Back to all experiments") in links_of(text).links
    # API clients and every /api/ path keep the JSON shape.
    got, body = served.json("/no/such/page")
    assert got == 404 and body["code"] == "NOT_FOUND"
    got, headers, raw = served.get("/api/v2/stellar/status?target=nope", headers=BROWSER)
    assert got == 404 and headers["content-type"] == "application/json"
    assert b'"NOT_FOUND"' in raw


def test_unknown_target_is_an_html_404(served: Served, source: NavSource) -> None:
    status, text = page(served, "/stellar?target=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    assert status == 404 and "<img" not in text
    assert "experiment store record not found: &lt;img src=x onerror=alert(1)&gt;" in text
    status, text = page(served, "/stellar?target=missing-run")
    assert status == 404 and "experiment store record not found: missing-run" in text
    assert source.store_path not in text
    status, text = page(served, "/stellar?target=lr-0&direction=sideways")
    assert status == 400 and "direction must be max or min" in text


def test_a_server_error_page_names_no_path(served: Served, source: NavSource) -> None:
    status, text = page(served, "/stellar?target=boom")
    assert status == 500 and "internal error (OSError)" in text
    assert source.store_path not in text and "Traceback" not in text and "parquet" not in text
    assert ("/stellar", "Back to all experiments") in links_of(text).links


# -- links -------------------------------------------------------------------------------------


def test_experiment_page_links_its_groups_and_runs(served: Served, source: NavSource) -> None:
    status, text = page(served, "/stellar?target=exp")
    assert status == 200
    found = targets(links_of(text))
    assert {"lr-0", "lr-1"} <= set(found.values())
    assert {r["run_id"] for r in source.runs} <= set(found.values())
    assert f'href="{XSS_URL}&amp;kind=run"' in text  # quoted; the hostile id stays text
    assert XSS not in text
    # Best group and best run tiles, seed envelope rows and ranked chips are links too.
    for tile in ("best-group", "best-run"):
        block = re.search(rf'data-tile="{tile}">.*?</div>', text, re.S)
        assert block is not None and targets(links_of(block.group(0))), tile
    sweep = re.search(r'data-panel="sweep">.*?</section>', text, re.S)
    assert sweep is not None and len(targets(links_of(sweep.group(0)))) >= 6
    timeline = re.search(r'data-panel="timeline">.*?</section>', text, re.S)
    assert timeline is not None and set(targets(links_of(timeline.group(0))).values()) == {
        "run-0-0",
        "run-0-1",
    }


def test_a_run_named_like_its_group_opens_the_run_not_the_group(
    served: Served, source: NavSource
) -> None:
    """Run links say `kind=run` and group links `kind=group`: a run whose id equals a group id
    opens the run's page (a bare `target=` resolves the group first, as the CLI does)."""
    source.runs.append({**source.runs[0], "run_id": "lr-1", "run_group_id": "lr-0"})
    _, text = page(served, "/stellar?target=lr-0&kind=group")
    hrefs = {(h, t) for h, t in links_of(text).links}
    assert ("/stellar?target=lr-1&kind=run", "lr-1") in hrefs
    status, run_page = page(served, "/stellar?target=lr-1&kind=run")
    assert status == 200 and 'data-run-page="lr-1"' in run_page
    _, group_page = page(served, "/stellar?target=lr-1&kind=group")
    assert "data-run-page=" not in group_page and "(run_group)" in group_page
    _, bare = page(served, "/stellar?target=lr-1")
    assert "(run_group)" in bare  # the store's own order: group, then run
    status, text = page(served, "/stellar?target=lr-1&kind=nonsense")
    assert status == 400 and "kind must be run, group or experiment" in text
    status, _ = page(served, "/stellar?target=lr-0&kind=run")
    assert status == 404


def test_every_stellar_link_on_a_page_opens_a_page(served: Served) -> None:
    for start in ("/stellar", "/stellar?target=exp", "/stellar?target=lr-0"):
        _, text = page(served, start)
        hrefs = {h for h, _ in links_of(text).links if h.startswith("/")}
        assert hrefs, start
        for href in hrefs:
            status, _, _ = served.get(href, headers=BROWSER)
            assert status == 200, (start, href)


def test_breadcrumbs_name_experiment_group_and_run(served: Served) -> None:
    _, text = page(served, "/stellar?target=run-0-1")
    crumbs = re.search(r'<ol class="crumbs".*?</ol>', text, re.S)
    assert crumbs is not None
    assert targets(links_of(crumbs.group(0))) == {"exp": "exp", "lr-0": "lr-0"}
    assert '<span aria-current="page">run-0-1</span>' in crumbs.group(0)


# -- live refresh ------------------------------------------------------------------------------


def test_a_finished_target_does_not_poll(served: Served) -> None:
    _, text = page(served, "/stellar?target=lr-1")  # three succeeded runs
    assert "data-live-url" not in text
    assert "live refresh off: all runs finished" in text
    assert re.search(r'id="summary-status">finished', text)
    _, text = page(served, "/stellar?target=lr-0")  # one run still running
    assert 'data-live-url="/stellar?target=lr-0&amp;fragment=1"' in text
    assert "live refresh off" not in text and re.search(r'id="summary-status">active', text)


def test_live_state_needs_every_run_terminal() -> None:
    assert snapshot.live_state([])["finished"] is False
    done = [{"run_id": "a", "terminal": True}, {"run_id": "b", "terminal": True}]
    assert snapshot.live_state(done) == {
        "finished": True,
        "terminal_runs": 2,
        "open_runs": 0,
        "reason": "all runs finished",
    }
    state = snapshot.live_state([*done, {"run_id": "c", "terminal": False}])
    assert state["finished"] is False and state["reason"] == "1 of 3 runs not finished"


# -- the run page ------------------------------------------------------------------------------


def test_the_run_page_shows_config_tags_command_and_artifacts(served: Served) -> None:
    status, text = page(served, "/stellar?target=run-0-0")
    assert status == 200
    run = re.search(r'data-panel="run".*?</section>', text, re.S)
    assert run is not None
    body = run.group(0)
    config = re.search(r'data-part="config">.*?</table>', body, re.S)
    assert config is not None
    assert "<th>lr</th><td>0.1</td>" in config.group(0)
    assert "<th>seed</th><td>0</td>" in config.group(0)
    assert "<th>owner</th><td>ana</td>" in body
    assert "<th>note</th><td>&lt;script&gt;alert(1)&lt;/script&gt;</td>" in body
    assert '<code class="command">python train.py --lr 0.1</code>' in body
    # Only the artifact the server can hand out gets a link, and the link works.
    downloads = [h for h, t in links_of(body).links if t == "download"]
    assert downloads == [links.artifact_url("run-0-0", "a-report", "run")]
    assert "&kind=run&" in downloads[0]
    status, _, content = served.get(downloads[0])
    assert status == 200 and content == b"hello\n"
    for uri in ("../secret.txt", "file:///etc/passwd"):
        assert uri in body  # listed, not linked


def test_config_diffs_are_fields_not_hashes(served: Served) -> None:
    _, text = page(served, "/stellar?target=exp")
    diffs = re.search(r'data-part="config-diffs">.*?</div>\s*</section>', text, re.S)
    assert diffs is not None
    rows = re.findall(r'<tr data-field="([^"]+)">', diffs.group(0))
    assert rows == ["lr", "seed"]
    assert "config hash" not in text.split('data-panel="compare"', 1)[1].split("</section>")[0]


# -- the offline report ------------------------------------------------------------------------


def test_offline_report_links_stay_within_the_page(source: NavSource) -> None:
    doc = snapshot.build(source.evidence("exp", max_runs=200), now=datetime(2026, 1, 2, tzinfo=UTC))
    text = as_html(doc)
    page = links_of(text)
    hrefs = [h for h, _ in page.links]
    assert hrefs and all(h.startswith("#") for h in hrefs)  # no server to ask
    assert {h[1:] for h in hrefs} <= page.ids  # every anchor has its place on the page
    assert f"#{links.anchor(XSS, 'run')}" in hrefs and f"#{links.anchor('lr-0', 'group')}" in hrefs


def test_links_keep_the_view_chosen_on_the_page(served: Served) -> None:
    _, text = page(served, "/stellar?target=lr-0&metric=train/loss&direction=max&include_failed=1")
    crumbs = re.search(r'<ol class="crumbs".*?</ol>', text, re.S)
    assert crumbs is not None
    hrefs = [h for h, _ in links_of(crumbs.group(0)).links]
    assert hrefs == [
        "/stellar?target=exp&kind=experiment&metric=train%2Floss&direction=max&include_failed=1"
    ]
    _, plain = page(served, "/stellar?target=lr-0")
    assert "direction=" not in "".join(h for h, _ in links_of(plain).links)
