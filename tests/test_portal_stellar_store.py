"""Stellar over a real store written by `taugrid-portal experiment import jsonl`: the CLI
commands `stellar -o json|html|tui`, `plot`, and the snapshot the server builds from it."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

# Runs once the store and the `taugrid-portal` root (issue 11) are on the branch.
pytest.importorskip("tau.portal.store.read", reason="the experiment store has not landed")
from tau.portal.cli import main

GROUPS = {"lr-small": 0.001, "lr-large": 0.01}


def history(path: Path, seed: int, lr: float, steps: int = 300) -> Path:
    with path.open("w") as f:
        for s in range(steps):
            loss = 2.0 / (1 + s * lr * 10) + 0.01 * seed + 0.005 * math.sin(s)
            score = 1 - loss / 2
            f.write(
                json.dumps(
                    {
                        "_step": s,
                        "_timestamp": 1760000000 + s,
                        "train/loss": loss,
                        "eval/score": score,
                    }
                )
                + "\n"
            )
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("expstore") / "store"
    assert main(["experiment", "init", "sweep", "--store", str(root)]) == 0
    data = root.parent / "histories"
    data.mkdir()
    for group, lr in GROUPS.items():
        for seed in range(3):
            run = f"{group}-s{seed}"
            file = history(data / f"{run}.jsonl", seed, lr)
            code = main(
                [
                    "experiment",
                    "import",
                    "jsonl",
                    "--store",
                    str(root),
                    "--run",
                    run,
                    "--group",
                    group,
                    "--experiment",
                    "sweep",
                    "--history",
                    str(file),
                ]
            )
            assert code == 0
    return root


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str]) -> Run:
    def invoke(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


def test_stellar_json_of_an_experiment(store: Path, run: Run) -> None:
    code, out, err = run("experiment", "stellar", "sweep", "--store", str(store), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["schema_version"] == "tau.exp.cockpit.v0" and doc["target_type"] == "experiment"
    assert doc["chart"]["metric_name"] == "eval/score"  # the outcome metric comes first
    assert len(doc["chart"]["series"]) == 6
    assert doc["best_group_id"] == "lr-large"
    assert {g["run_group_id"] for g in doc["compare"]["groups"]} == set(GROUPS)
    assert doc["summary"]["confidence"] == "high - at least 3 seeds per compared group"
    assert doc["status"]["runs"] == 6


def test_name_resolves_group_then_run(store: Path, run: Run) -> None:
    code, out, _ = run("experiment", "dashboard", "lr-small", "--store", str(store), "-o", "json")
    assert code == 0 and json.loads(out)["target_type"] == "run_group"
    code, out, _ = run(
        "experiment",
        "stellar",
        "lr-small-s1",
        "--store",
        str(store),
        "-o",
        "json",
        "--metric",
        "train/loss",
    )
    doc = json.loads(out)
    assert doc["target_type"] == "run" and doc["chart"]["metric_name"] == "train/loss"
    assert doc["chart"]["smoothing"] is None  # 300 points is not a dense series


def test_stellar_html_to_a_file(store: Path, run: Run, tmp_path: Path) -> None:
    out_file = tmp_path / "sweep.html"
    code, out, err = run(
        "experiment", "stellar", "sweep", "--store", str(store), "--out", str(out_file)
    )
    assert code == 0 and out == "" and "wrote" in err
    text = out_file.read_text()
    assert text.count('class="series"') == 6 and "http://" not in text.replace(
        "http://www.w3.org/2000/svg", ""
    )
    assert oct(out_file.stat().st_mode & 0o777) == "0o644"


def test_stellar_tui(store: Path, run: Run) -> None:
    code, out, _ = run("experiment", "stellar", "sweep", "--store", str(store), "-o", "tui")
    assert code == 0
    for section in ("SUMMARY", "STATUS", "METRICS", "CHART", "RUNS", "ACTIONS"):
        assert f"\n{section}\n" in out
    assert "CHART eval/score (step 0..299" in out


def test_plot_is_byte_identical(store: Path, run: Run, tmp_path: Path) -> None:
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    code, out, _ = run(
        "experiment", "plot", "sweep", "--store", str(store), "--out", str(a), "--json"
    )
    assert code == 0
    result = json.loads(out)
    assert result["series"] == 6 and result["metric_name"] == "eval/score"
    assert result["bytes"] == a.stat().st_size
    assert run("experiment", "plot", "sweep", "--store", str(store), "--out", str(b))[0] == 0
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["stellar", "nope"], 1, "experiment store record not found: nope"),
        (["stellar", "sweep", "-o", "xml"], 1, "output must be one of: html, json, tui"),
        (["plot", "sweep"], 1, "--out is required"),
    ],
)
def test_bad_input(store: Path, run: Run, args: list[str], code: int, message: str) -> None:
    got, out, err = run("experiment", *args, "--store", str(store))
    assert got == code and out == "" and message in err and "Traceback" not in err


def test_the_store_source_feeds_the_served_api(store: Path) -> None:
    from tau.portal.stellar.source import StoreSource
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar
    from tests.portal_web_support import serve_app

    source = StoreSource(store)
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        status, doc = s.json("/api/v2/stellar/snapshot?target=lr-large")
        assert status == 200 and len(doc["chart"]["series"]) == 3
        status, series = s.json(
            "/api/v2/stellar/series?target=lr-large&metric=train/loss&run_id=lr-large-s0&max_points=50"
        )
        assert status == 200 and series["series"][0]["source_points"] == 300
        assert series["series"][0]["returned_points"] <= 50
        status, found = s.json("/api/v2/stellar/runs?target=lr-large")
        assert status == 200 and len(found["runs"]) == 3
        assert s.json("/api/v2/stellar/status?target=sweep")[1]["runs"] == 6
        status, page = s.json("/api/v2/stellar/experiments")
        assert status == 200 and any(e["experiment_id"] == "sweep" for e in page["experiments"])


def test_a_served_page_reads_only_the_series_it_draws_first(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page embeds its first chart (the decision metric); the other charts' series, point
    counts and unreadable runs come from the series API when the browser asks for them.
    """
    from tau.portal.stellar.source import StoreSource
    from tau.portal.store import series
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar
    from tests.portal_web_support import serve_app

    read: list[str] = []
    columns = series.metric_columns

    def counted(opened: object, run_ids: list[str], metric: str) -> object:
        read.append(metric)
        return columns(opened, run_ids, metric)  # type: ignore[arg-type]

    monkeypatch.setattr(series, "metric_columns", counted)
    source = StoreSource(store)
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as s:
        status, _, raw = s.get("/stellar?target=lr-large&metric=train/loss")
        assert status == 200
        found = re.search(r'id="stellar-charts-data">(.*?)</script>', raw.decode(), re.S)
        assert found is not None
        charts = json.loads(found.group(1))
        assert [m["name"] for m in charts["metrics"]] == ["train/loss", "eval/score"]
        later = charts["metrics"][1]
        assert later == {"name": "eval/score", "series": [], "deferred": True, "decimated": False}
        assert read == ["train/loss"]
        status, doc = s.json(
            f"{charts['served']['series_url']}&format=columns&metric=eval/score&max_points=1500"
        )
        assert status == 200 and read == ["train/loss", "eval/score"]
        assert [x["source_points"] for x in doc["series"]] == [300, 300, 300]
        assert doc["unreadable_runs"] == []


PORTAL = [sys.executable, "-c", "import sys; from tau.portal.cli import main; sys.exit(main())"]


@contextmanager
def running(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[list[str], str]]:
    """Start a server command; yield (stderr lines up to the serving line, its URL)."""
    proc = subprocess.Popen(
        [*PORTAL, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=tempfile.gettempdir(),
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        while True:
            line = proc.stderr.readline()
            assert line, f"server exited: {lines}"
            lines.append(line.rstrip("\n"))
            if line.startswith("serving "):
                break
        url = re.search(r"http://\S+", lines[-1])
        assert url is not None
        yield lines, url.group(0).rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def fetch(url: str, host: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_experiment_serve_binds_loopback_and_guards_the_host(store: Path) -> None:
    with running("experiment", "serve", "--store", str(store), "--addr", "127.0.0.1:0") as (
        lines,
        url,
    ):
        assert lines[-1] == f"serving taugrid-portal experiment stellar at {url} (store={store})"
        assert not any(line.startswith("warning") for line in lines)
        assert fetch(url + "/healthz")[0] == 200
        assert fetch(url + "/healthz", host="attacker.example")[0] == 400
        status, body = fetch(url + "/stellar?target=lr-large")
        assert (
            status == 200 and b'<script type="application/json" id="stellar-charts-data">' in body
        )
        # The page links its no-JavaScript chart: one line per run of the group.
        status, svg = fetch(url + "/stellar/chart.svg?target=lr-large")
        assert status == 200 and svg.count(b'class="series"') == 3


def test_non_loopback_bind_warns(store: Path) -> None:
    with running("experiment", "serve", "--store", str(store), "--addr", "0.0.0.0:0") as (lines, _):
        assert any("not loopback" in line and "no authentication" in line for line in lines)


def test_open_without_browser_prints_the_url(store: Path) -> None:
    proc = subprocess.Popen(
        [
            *PORTAL,
            "experiment",
            "open",
            "lr-small",
            "--store",
            str(store),
            "--addr",
            "127.0.0.1:0",
            "--no-browser",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert re.fullmatch(
            r"http://127\.0\.0\.1:\d+/stellar\?target=lr-small&metric=eval%2Fscore", url
        )
        assert fetch(url)[0] == 200
    finally:
        proc.terminate()
        proc.wait(timeout=15)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_drains_and_exits_zero(store: Path, stop: signal.Signals) -> None:
    # Contract §10: SIGINT/SIGTERM drain the server; only a drain that times out is a failure.
    proc = subprocess.Popen(
        [*PORTAL, "portal", "serve", "--store", str(store), "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TAU_CONFIG_DIR": str(store.parent / "cfg")},
        cwd=tempfile.gettempdir(),
    )
    assert proc.stderr is not None
    try:
        while not (line := proc.stderr.readline()).startswith("serving "):
            assert line, "server exited before serving"
        url = re.search(r"http://\S+", line)
        assert url is not None and fetch(url.group(0))[0] == 200
        proc.send_signal(stop)
        assert proc.wait(timeout=15) == 0
        assert "interrupted" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)


def test_bad_addr_is_bad_input(run: Run, store: Path) -> None:
    code, _, err = run("experiment", "serve", "--store", str(store), "--addr", "nonsense")
    assert code == 1 and 'parse --addr "nonsense"' in err


def test_portal_serve_without_a_cluster_degrades_per_board(store: Path, tmp_path: Path) -> None:
    env = {"TAU_CONFIG_DIR": str(tmp_path / "cfg")}
    with running(
        "portal",
        "serve",
        "--store",
        str(store),
        "--addr",
        "127.0.0.1:0",
        "--context",
        "nowhere",
        env=env,
    ) as (lines, url):
        assert lines[-1] == f"serving taugrid-portal portal at {url}"
        assert any(
            line.startswith("warning: Jobs, Ray, Nodes, and Runs boards disabled") for line in lines
        )
        assert (
            "warning: Cluster Health, Cost, and Node Utilization boards disabled (they need a "
            "Kusto source, which this build does not read yet)"
        ) in lines
        assert not any("--kusto" in line for line in lines)  # no flag that does not exist
        base = url.removesuffix("/portal")
        status, body = fetch(base + "/api/portal/runs")
        assert status == 503 and json.loads(body)["code"] == "SOURCE_UNAVAILABLE"
        assert fetch(base + "/portal")[0] == 200
        assert fetch(base + "/api/v2/stellar/snapshot?target=sweep")[0] == 200
