"""The Stellar app over real HTTP on 127.0.0.1:0: headers, Host guard, errors, bounds, traversal."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau.portal.web.app import create_app
from tau.portal.web.stellar_routes import Stellar
from tests.portal_web_support import XSS, FakeSource, Served, demo_source, serve_app


@pytest.fixture
def source(tmp_path: Path) -> FakeSource:
    store = tmp_path / "store"
    store.mkdir()
    return demo_source(store)


@pytest.fixture
def served(source: FakeSource) -> Iterator[Served]:
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        yield s


def assert_error(status: int, body: dict, want_status: int, code: str) -> None:
    assert status == want_status
    assert set(body) == {"error", "code", "detail", "status"}
    assert body["code"] == code and body["status"] == want_status and body["detail"]


def test_every_response_carries_the_security_headers(served: Served) -> None:
    for path in ("/", "/healthz", "/stellar?target=lr-0", "/api/v2/stellar/capabilities", "/nope"):
        _, headers, _ = served.get(path)
        assert headers["x-content-type-options"] == "nosniff", path
        assert headers["x-frame-options"] == "DENY", path
        csp = headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self'" in csp, path
        assert "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp, path


@pytest.mark.parametrize("host", ["evil.example", "evil.example:1234", "127.0.0.1:1", "[::2]"])
def test_foreign_host_headers_are_refused(served: Served, host: str) -> None:
    status, body = served.json("/healthz", headers={"Host": host})
    assert_error(status, body, 400, "INVALID_ARGUMENT")
    assert "Host header" in body["detail"]


BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_a_refused_host_is_an_html_page_for_a_browser_and_json_for_a_client(
    served: Served,
) -> None:
    status, headers, body = served.get(
        "/stellar?target=lr-0", headers={"Host": "evil.example", "Accept": BROWSER_ACCEPT}
    )
    assert status == 400 and headers["content-type"].startswith("text/html")
    text = body.decode()
    assert text.startswith("<!doctype html>") and "<h1>400 Bad Request</h1>" in text
    assert "Host header &quot;evil.example&quot; is not served here" in text
    # Hostile header text is escaped, never markup.
    _, _, body = served.get(
        "/stellar", headers={"Host": "<b>x</b>.example", "Accept": BROWSER_ACCEPT}
    )
    assert b"<b>x</b>" not in body and b"&lt;b&gt;x&lt;/b&gt;" in body
    # API paths and clients that ask for JSON keep the JSON body.
    for path, accept in (("/api/v2/stellar/capabilities", BROWSER_ACCEPT), ("/", "*/*")):
        status, headers, body = served.get(path, headers={"Host": "evil.example", "Accept": accept})
        assert status == 400 and headers["content-type"] == "application/json"
        assert "Host header" in json.loads(body)["detail"]


def test_pages_and_json_are_gzipped_when_the_client_accepts_it(served: Served) -> None:
    import gzip

    plain_status, plain_headers, plain = served.get("/stellar?target=lr-0")
    assert plain_status == 200 and "content-encoding" not in plain_headers
    status, headers, body = served.get(
        "/stellar?target=lr-0", headers={"Accept-Encoding": "gzip, deflate, br"}
    )
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in headers.get("vary", "")
    assert gzip.decompress(body) == plain and len(body) * 3 < len(plain)
    _, headers, body = served.get(
        "/api/v2/stellar/snapshot?target=lr-0", headers={"Accept-Encoding": "gzip"}
    )
    assert headers["content-encoding"] == "gzip"
    assert json.loads(gzip.decompress(body))["target"] == "lr-0"
    # The security headers ride on compressed answers too.
    assert headers["x-frame-options"] == "DENY"


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
def test_loopback_host_names_with_the_bound_port_are_served(served: Served, name: str) -> None:
    status, body = served.json("/healthz", headers={"Host": f"{name}:{served.port}"})
    assert status == 200 and body["ok"] is True


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_the_api_is_read_only(served: Served, method: str) -> None:
    status, headers, body = served.get("/api/v2/stellar/snapshot?target=lr-0", method=method)
    assert status == 405 and headers["allow"] == "GET, HEAD"
    assert b'"METHOD_NOT_ALLOWED"' in body


def test_root_describes_the_service_and_healthz_is_ok(served: Served, source: FakeSource) -> None:
    status, body = served.json("/")
    assert status == 200 and body["service"] == "tau.exp.stellar"
    assert body["store_path"] == source.store_path
    assert "/api/v2/stellar/snapshot" in body["endpoints"]
    assert served.json("/healthz")[1] == {
        "ok": True,
        "store_path": source.store_path,
        "source": "local",
    }


def test_capabilities(served: Served) -> None:
    status, body = served.json("/api/v2/stellar/capabilities")
    assert status == 200 and body["api_version"] == "v2"
    assert body["schema_version"] == "tau.exp.cockpit.v0"
    assert body["capabilities"]["experiment_mutation"] is False


def test_snapshot_is_the_cockpit_document_without_svg_points(served: Served) -> None:
    status, headers, raw = served.get("/api/v2/stellar/snapshot?target=lr-0&metric=train/loss")
    assert status == 200 and headers["etag"]
    import json

    body = json.loads(raw)
    assert body["schema_version"] == "tau.exp.cockpit.v0"
    assert body["target_type"] == "run_group" and body["chart"]["metric_name"] == "train/loss"
    assert len(body["chart"]["series"]) == 4
    assert all("points" not in s for s in body["chart"]["series"])
    again, headers2, _ = served.get(
        "/api/v2/stellar/snapshot?target=lr-0&metric=train/loss",
        headers={"If-None-Match": headers["etag"]},
    )
    assert again == 304 and headers2["etag"] == headers["etag"]
    assert headers["deprecation"] == "true"  # the contract marks the wide v2 reads deprecated


def test_snapshot_is_built_once_per_store_version(served: Served, source: FakeSource) -> None:
    for _ in range(5):
        assert served.get("/api/v2/stellar/snapshot?target=lr-1")[0] == 200
    assert source.calls == 1
    source.stamp = "v2"
    assert served.get("/api/v2/stellar/snapshot?target=lr-1")[0] == 200
    assert source.calls == 2


@pytest.mark.parametrize(
    ("path", "status", "code", "detail"),
    [
        ("/api/v2/stellar/snapshot", 400, "INVALID_ARGUMENT", "target query parameter is required"),
        (
            "/api/v2/stellar/snapshot?target=nope",
            404,
            "NOT_FOUND",
            "experiment store record not found: nope",
        ),
        (
            "/api/v2/stellar/snapshot?target=lr-0&mode=x",
            400,
            "INVALID_ARGUMENT",
            "mode must be one of",
        ),
        (
            "/api/v2/stellar/series?target=lr-0",
            400,
            "INVALID_ARGUMENT",
            "metric query parameter is required",
        ),
        (
            "/api/v2/stellar/series?target=lr-0&metric=m&max_points=12001",
            400,
            "INVALID_ARGUMENT",
            "max_points must be at most 12000",
        ),
        (
            "/api/v2/stellar/series?target=lr-0&metric=m&max_points=0",
            400,
            "INVALID_ARGUMENT",
            "max_points must be at least 1",
        ),
        (
            "/api/v2/stellar/series?target=lr-0&metric=m&start_step=9&end_step=2",
            400,
            "INVALID_ARGUMENT",
            "start_step must be <= end_step",
        ),
        ("/api/v2/stellar/runs?limit=201", 400, "INVALID_ARGUMENT", "limit must be at most 200"),
        ("/api/v2/stellar/runs?limit=x", 400, "INVALID_ARGUMENT", "limit must be an integer"),
        (
            "/api/v2/stellar/status?target=nope",
            404,
            "NOT_FOUND",
            "experiment store record not found",
        ),
        ("/no/such/route", 404, "NOT_FOUND", "no route /no/such/route"),
    ],
)
def test_errors_are_json_with_contract_codes(
    served: Served, path: str, status: int, code: str, detail: str
) -> None:
    got, body = served.json(path)
    assert_error(got, body, status, code)
    assert detail in body["detail"]


def test_series_is_bounded_and_windowed(served: Served) -> None:
    status, body = served.json(
        "/api/v2/stellar/series?target=lr-0&metric=train/loss&run_id=run-0-0"
        "&start_step=10&end_step=109&max_points=20"
    )
    assert status == 200 and len(body["series"]) == 1
    series = body["series"][0]
    assert series["source_points"] == 100 and series["returned_points"] <= 20
    assert series["decimated"] is True
    assert all(10 <= p["step"] <= 109 for p in series["points"])


def test_runs_and_experiments_are_bounded(served: Served) -> None:
    status, body = served.json("/api/v2/stellar/runs?limit=2")
    assert status == 200 and len(body["runs"]) == 2 and body["truncated"] is True
    status, body = served.json("/api/v2/stellar/experiments")
    assert status == 200 and body["experiments"][0]["experiment_id"] == "exp"


def test_legacy_bases_answer_with_deprecation_headers(served: Served) -> None:
    for base in ("/api/stellar", "/api/v1/stellar"):
        status, headers, _ = served.get(f"{base}/status?target=lr-0")
        assert status == 200
        assert headers["deprecation"] == "true"
        assert "successor-version" in headers["link"]


def test_artifacts_list_and_fetch_inside_the_store(served: Served) -> None:
    status, body = served.json("/api/v2/stellar/artifacts?target=lr-0&run=run-0-0")
    assert status == 200 and body["count"] == 3
    report = next(a for a in body["artifacts"] if a["artifact_id"] == "a-report")
    status, headers, content = served.get(report["fetch_url"])
    assert status == 200 and content == b"hello\n"
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("artifact", ["a-escape", "a-abs"])
def test_artifact_paths_never_escape_the_store(served: Served, artifact: str) -> None:
    status, body = served.json(f"/api/v2/stellar/artifact?target=lr-0&artifact={artifact}")
    assert_error(status, body, 400, "INVALID_ARGUMENT")
    assert body["detail"] == "artifact path escapes the Stellar store"


def test_artifact_symlink_escape_is_refused(served: Served, source: FakeSource) -> None:
    link = Path(source.store_path) / "artifacts" / "link.txt"
    link.symlink_to(Path(source.store_path).parent / "secret.txt")
    source.artifacts.append(
        {"artifact_id": "a-link", "run_id": "run-0-0", "type": "r", "uri": "artifacts/link.txt"}
    )
    source.stamp = "v-link"
    status, body = served.json("/api/v2/stellar/artifact?target=lr-0&artifact=a-link")
    assert status == 400 and body["detail"] == "artifact path escapes the Stellar store"


def test_unknown_and_remote_artifacts(served: Served) -> None:
    status, body = served.json("/api/v2/stellar/artifact?target=lr-0&artifact=zzz")
    assert_error(status, body, 404, "NOT_FOUND")
    assert body["detail"] == "artifact was not found for target"
    status, body = served.json("/api/v2/stellar/artifact?target=lr-0&artifact=a-ckpt")
    assert_error(status, body, 501, "UNSUPPORTED_CAPABILITY")


def test_served_page_links_assets_from_its_own_origin_and_escapes_names(served: Served) -> None:
    status, headers, body = served.get("/stellar?target=lr-0")
    text = body.decode()
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '<script src="/stellar/assets/app.js?v=' in text and "<style>" not in text
    assert 'data-live-url="/stellar?target=lr-0&amp;fragment=1"' in text
    etag = headers["etag"]
    assert served.get("/stellar?target=lr-0&fragment=1", headers={"If-None-Match": etag})[0] == 304


def test_fragment_changes_when_the_store_changes(served: Served, source: FakeSource) -> None:
    _, headers, _ = served.get("/stellar?target=lr-0&fragment=1")
    source.runs.append({**source.runs[0], "run_id": "run-0-9"})
    source.stamp = "v9"
    status, headers2, body = served.get(
        "/stellar?target=lr-0&fragment=1", headers={"If-None-Match": headers["etag"]}
    )
    assert status == 200 and headers2["etag"] != headers["etag"]
    assert b"run-0-9" in body and b"<html" not in body


def test_assets_are_immutable_only_with_their_digest(served: Served) -> None:
    from tau.portal.stellar.html import assets

    status, headers, _ = served.get(f"/stellar/assets/app.js?v={assets().digest}")
    assert status == 200 and "immutable" in headers["cache-control"]
    assert headers["content-type"].startswith("text/javascript")
    assert "immutable" not in served.get("/stellar/assets/app.css")[1]["cache-control"]
    assert served.json("/stellar/assets/../../etc/passwd")[0] == 404


def test_landing_page_lists_experiments(served: Served) -> None:
    status, _, body = served.get("/stellar")
    assert status == 200 and b'href="/stellar?target=exp&amp;kind=experiment"' in body


def test_default_target_redirects(source: FakeSource) -> None:
    with serve_app(
        lambda guard: create_app(guard=guard, stellar=Stellar(source, default_target=XSS))
    ) as s:
        status, headers, _ = s.get("/")
        assert status == 302
        assert headers["location"] == "/stellar?target=%3Cscript%3Ealert%281%29%3C/script%3E"


def test_series_in_columns_of_a_step_range_and_the_chart_image(served: Served) -> None:
    from itertools import accumulate

    status, body = served.json(
        "/api/v2/stellar/series?target=lr-0&metric=train/loss&format=columns"
        "&start_step=50&end_step=60&max_points=100"
    )
    assert status == 200 and body["format"] == "columns" and len(body["series"]) == 4
    for s in body["series"]:
        assert list(accumulate(s["x"])) == list(range(50, 61))  # the range's own points
        assert len(s["y"]) == 11 and s["sampling"] == "all"
    status, body = served.json("/api/v2/stellar/series?target=lr-0&metric=train/loss&format=x")
    assert status == 400 and "format must be points or columns" in body["detail"]
    status, headers, svg = served.get("/stellar/chart.svg?target=lr-0&metric=train/loss")
    assert status == 200 and headers["content-type"].startswith("image/svg+xml")
    assert svg.count(b'<polyline class="series"') == 4


def test_a_served_page_carries_the_first_charts_series_only(served: Served) -> None:
    import re

    _, _, raw = served.get("/stellar?target=lr-0&metric=train/loss")
    page = raw.decode()
    data = re.search(r'id="stellar-charts-data">(.*?)</script>', page, re.S)
    assert data is not None
    payload = json.loads(data.group(1))
    assert [m["name"] for m in payload["metrics"]] == ["train/loss", "eval/score"]
    assert [len(m["series"]) for m in payload["metrics"]] == [4, 0]
    assert payload["metrics"][1]["deferred"] is True
    assert payload["served"]["series_url"] == "/api/v2/stellar/series?target=lr-0"
    # The no-JavaScript chart is an image, not 4 inline polylines.
    assert "<polyline" not in page
    assert '<noscript><img class="chart-image" src="/stellar/chart.svg?target=lr-0' in page
