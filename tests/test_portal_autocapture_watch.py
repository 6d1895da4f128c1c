"""`experiment autocapture --watch` against the local API emulator: watch streams, 410, Ctrl-C.

No test waits on a clock: each step happens in the pass report of the step before, and the
watch reacts to it; `max_passes` only bounds a broken watch, it never decides an outcome.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tau.portal.capture.cluster import Scope
from tau.portal.capture.follow import Feed, Pass, follow
from tau.portal.cli import watch_output
from tau.portal.store.core import Store
from tau.session import connect
from tests.portal_capture_seed import CTX, NS, complete, job, new_store, prepare
from tests.portal_helpers import portal
from tests.sigint_launch import python_ignoring_sigint

#: Passes a broken watch may make before the test gives up (each waits at most INTERVAL).
BOUND = 40
INTERVAL = 1.0


@pytest.fixture
def emulator(kube_api, kubeconfig_file, monkeypatch, tmp_path):
    return prepare(kube_api, kubeconfig_file, monkeypatch, tmp_path)


@pytest.fixture
def store(tmp_path, capsys):
    return new_store(tmp_path, capsys)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, as the report callback of the last step raises it."""


def scope() -> Scope:
    return Scope(project="demo", experiment="demo", group="default", owner="o", cluster="c")


def run(store_root: Path, steps: list[Any], feed: Feed | None = None) -> list[Pass]:
    """Follow NS; after the i-th reported pass, run steps[i]; then Ctrl-C."""
    reported: list[Pass] = []

    def report(done: Pass) -> None:
        reported.append(done)
        if len(reported) > len(steps):
            raise Interrupted
        steps[len(reported) - 1]()

    api = connect("emulator", lookup=False).api
    with pytest.raises(Interrupted):
        follow(Store.open(store_root), api, NS, scope(), interval=INTERVAL, report=report,
               max_passes=BOUND, feed=feed)  # fmt: skip
    return reported


def test_watch_picks_up_a_new_job_and_its_state_change(emulator, store):
    emulator.put(job("train-1"))
    passes = run(
        store,
        [
            lambda: emulator.put(job("train-2")),
            lambda: complete(emulator, "train-2"),
        ],
    )
    first, added, finished = (p.counts for p in passes)
    assert (first.runs, first.created_runs) == (1, 1)
    assert (added.runs, added.created_runs, added.updated_runs) == (2, 1, 0)
    assert finished.updated_runs == 1 and finished.events >= 1
    opened = Store.open(store)
    states = dict(opened.conn.execute("select run_id, state from runs").fetchall())
    assert states == {"train-1": "pending", "train-2": "succeeded"}
    message = opened.conn.execute(
        "select message from events where run_id = 'train-2' and type = 'succeeded'"
    ).fetchone()
    assert tuple(message) == (f"Job {NS}/train-2 succeeded",)


def test_a_410_mid_stream_relists_and_the_watch_continues(emulator, store, capsys):
    emulator.put(job("train-1"))
    feed = Feed(connect("emulator", lookup=False).api, NS, timeout_seconds=int(INTERVAL))
    jobs = next(m for m in feed.mirrors if m.kind.field == "jobs")

    def expire() -> None:
        emulator.reset_requests()
        emulator.expire_watch("jobs", "batch")
        emulator.put(job("train-2"))

    passes = run(store, [expire, lambda: complete(emulator, "train-2")], feed)
    assert [p.counts.created_runs for p in passes[:2]] == [1, 1]
    assert passes[2].counts.updated_runs == 1  # seen on the watch opened after the relist
    assert jobs.lists == 2  # the first list, and one relist after the 410
    path = f"/apis/batch/v1/namespaces/{NS}/jobs"
    seen = [r for r in emulator.requests if r.path == path]
    relists = [i for i, r in enumerate(seen) if "watch" not in r.query]
    assert len(relists) == 1
    resumed = [r for r in seen[relists[0] :] if r.query.get("watch")]
    assert resumed and all(r.query.get("resourceVersion") for r in resumed)


def test_an_expired_watch_is_a_typed_error_not_an_api_exception(emulator):
    from tau.k8s.kinds import JOB
    from tau.kube.lists import list_kind
    from tau.kube.streams import Expired, watch_kind

    api = connect("emulator", lookup=False).api
    listed = list_kind(api, JOB, NS)
    emulator.expire_watch("jobs", "batch")
    stream = watch_kind(api, JOB, NS, resource_version=listed.resource_version, timeout_seconds=5)
    with pytest.raises(Expired) as caught:
        list(stream)
    assert caught.value.status == 410 and caught.value.exit_code == 3
    assert "expired (410 Gone)" in caught.value.message


def test_ctrl_c_ends_the_watch_with_130_and_no_traceback(emulator, store, tmp_path):
    emulator.put(job("train-1"))
    args = ["experiment", "autocapture", "--watch", "-n", NS, *CTX, "--store", str(store)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Started as a script's background job starts it (SIGINT ignored): the portal takes it back.
    code = "import sys; from tau.portal.cli import main; sys.exit(main())"
    proc = subprocess.Popen(
        python_ignoring_sigint("-c", code, *args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        # The state Ctrl-C signals into: the watch loop, entered once its first pass printed
        # (the handler is installed before the command runs).
        header = proc.stdout.readline()
        row = proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        # A bound for a hung watch only: on a busy machine ending the process (Ctrl-C, then
        # the interpreter's teardown) takes many times its quiet duration.
        rest, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and rest == ""
    assert err.strip().endswith("error: interrupted")
    assert header.split() == [c.upper() for c in watch_output.COLUMNS]
    assert row.split() == ["1", "1", "0", "1", "0", "1", "1", "0"]


def test_watch_json_is_one_object_per_line(emulator, store, capsys, monkeypatch):
    emulator.put(job("train-1"))
    printed = watch_output.WatchPrinter.__call__

    def then_interrupt(self: Any, done: Pass) -> None:
        printed(self, done)
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_output.WatchPrinter, "__call__", then_interrupt)
    args = ["experiment", "autocapture", "--watch", "-n", NS, *CTX, "--store", store]
    result = portal(capsys, *args, "-o", "json")
    out, err = result.out, result.err
    assert result.code == 130
    assert "Traceback" not in err and err.strip().endswith("error: interrupted")
    (line,) = out.splitlines()
    first = json.loads(line)
    assert first == {
        "runs": 1, "created_runs": 1, "updated_runs": 0, "created_contexts": 1,
        "updated_contexts": 0, "events": 1, "tags": 1, "reused": 0,
        "pass": 1, "namespace": NS, "warnings": [],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", '--interval: invalid duration "soon"'),
        ("30", '--interval: missing unit in duration "30"'),
        ("0s", '--interval "0s" must be more than 0'),
    ],
)
def test_a_bad_interval_is_a_usage_error_naming_the_flag(emulator, store, capsys, value, message):
    args = ["experiment", "autocapture", "--watch", "-n", NS, *CTX, "--store", store]
    result = portal(capsys, *args, "--interval", value)
    assert result.code == 1 and message in result.err
    assert emulator.count_requests() == 0  # rejected before reaching the cluster


def test_watch_table_rows_line_up_under_the_header_minutes_apart():
    class Out:
        def __init__(self) -> None:
            self.text = ""

        def write(self, text: str) -> None:
            self.text += text

        def flush(self) -> None:
            pass

    from tau.portal.capture.record import Counts

    out, err = Out(), Out()
    printer = watch_output.WatchPrinter("table", NS, out, err)  # type: ignore[arg-type]
    printer(Pass(1, Counts(runs=3, reused=3)))
    printer(Pass(2, Counts(runs=3, reused=3)))  # nothing changed: no row
    printer(Pass(3, Counts(runs=4, created_runs=1, events=12), ["pods: forbidden"]))
    header, first, later = out.text.splitlines()
    assert [header.index(c.upper()) for c in ("runs", "events", "reused")] == [
        first.index("3"),
        later.index("12"),
        len(later) - 1,
    ]
    assert err.text == "warning: pods: forbidden\n"


def test_a_kind_the_watch_cannot_list_is_reported_once_and_runs_are_still_recorded(emulator, store):
    emulator.put(job("train-1"))
    emulator.deny(403, f"/api/v1/namespaces/{NS}/pods")
    (first,) = run(store, [])
    assert first.counts.created_runs == 1
    (warning,) = first.warnings
    assert warning.startswith("forbidden to list pods") and "recorded without it" in warning


def test_watch_stops_at_a_required_kind_it_cannot_list(emulator, store, capsys):
    emulator.deny(403, f"/apis/batch/v1/namespaces/{NS}/jobs")
    args = ["experiment", "autocapture", "--watch", "-n", NS, *CTX, "--store", store]
    result = portal(capsys, *args)
    assert result.code == 3 and "forbidden to list jobs.batch" in result.err
    assert "Traceback" not in result.err and result.out == ""
