"""An API server that goes away under `tau run status --watch` and `tau run logs -f`, and comes
back on the same port with the same objects (the emulator restarted): both carry on, no line
twice, none missing, one line saying how long the API was away (`tau.kube.outage`)."""

from __future__ import annotations

import re
import threading
import time

import pytest

from tau.errors import ClusterError
from tau.kube.errors import UNREACHABLE
from tau.kube.outage import Outage, is_away
from tau.runs import logs as run_logs
from tau.runs.log_follow import Cursor, stamp_key
from tau.status import fetch as status_fetch
from tau.status.watch import watch
from tests.test_status_fetch import NS, kubelet_runs, kueue_admits, submit_job
from tests.test_status_watch import NOW, pending_pod, recording_console, watching

AWAY = re.compile(r"^the Kubernetes API was away for \d+s \((.+)\); (.+) carried on$")


@pytest.fixture
def cluster(kube_api):
    kube_api.register_kueue_kuberay_tau_kinds()
    return kube_api


def away(message: str = "connection refused") -> ClusterError:
    return ClusterError(message, reason=UNREACHABLE)


# ---------------------------------------------------------------------- the outage itself


def test_an_outage_is_said_once_with_how_long_and_what_it_said_first() -> None:
    clock = iter([10.0, 11.0, 14.0, 37.0])
    said: list[str] = []
    outage = Outage("the watch", say=said.append, monotonic=lambda: next(clock))
    waits = [outage.failed(away("first words")), outage.failed(away("later")), 0.0]
    outage.failed(away())
    outage.back()
    outage.back()  # no outage any more: nothing more to say
    assert waits[:2] == [0.5, 1.0]
    assert said == ["the Kubernetes API was away for 27s (first words); the watch carried on"]
    assert outage.outages == [27.0]


@pytest.mark.parametrize(
    ("error", "is_outage"),
    [
        (ClusterError("refused", reason=UNREACHABLE), True),
        (ClusterError("etcdserver: request timed out", status=500), True),
        (ClusterError("not ready", status=503), True),
        (ClusterError("throttled", status=429), True),
        (ClusterError("forbidden", status=403), False),
        (ClusterError("gone", status=404, reason="NotFound"), False),
        (ClusterError("TLS verification failed"), False),
    ],
)
def test_only_an_api_that_is_not_there_is_an_outage(error: ClusterError, is_outage: bool) -> None:
    assert is_away(error) is is_outage


def test_a_refusal_is_raised_at_once_and_an_outage_after_its_budget() -> None:
    outage = Outage("the log", say=print, monotonic=lambda: 0.0)
    with pytest.raises(ClusterError, match="forbidden"):
        outage.failed(ClusterError("forbidden", status=403))
    clock = iter([0.0, 601.0])
    outage = Outage("the log", say=print, monotonic=lambda: next(clock))
    outage.failed(away())
    with pytest.raises(ClusterError, match="refused"):
        outage.failed(away("refused"))


def test_a_refused_connection_is_translated_as_unreachable(kube_api, kube_client) -> None:
    from tau.k8s.kinds import JOB
    from tau.kube import resources

    kube_api.stop()
    with pytest.raises(ClusterError) as raised:
        resources.find(kube_client, JOB, "train", namespace=NS)
    assert raised.value.reason == UNREACHABLE and is_away(raised.value)


def test_a_view_is_never_drawn_from_a_read_the_outage_cut_short(
    cluster, kube_client, monkeypatch
) -> None:
    """The run read, then the pods' list fails 503: the whole read fails rather than show a
    run without pods (a refusal, such as 403, still soft-fails into PartialObservation)."""
    submit_job(kube_client)
    real = status_fetch.resources.list_items

    def pods_unavailable(api, resource, **kwargs):
        if resource.plural == "pods":
            raise ClusterError("the API server failed to list pods (503)", status=503)
        return real(api, resource, **kwargs)

    monkeypatch.setattr(status_fetch.resources, "list_items", pods_unavailable)
    with pytest.raises(ClusterError, match="503"):
        status_fetch.fetch(kube_client, NS, "train")


# ---------------------------------------------------------------------- status --watch


def test_the_watch_carries_on_across_an_api_server_restart(cluster, kube_client) -> None:
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    pending_pod(cluster)
    said: list[str] = []

    def restart_then_run() -> None:
        deadline = time.monotonic() + 10
        while watching(cluster) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        cluster.stop()
        time.sleep(1.5)  # the outage
        cluster.restart()
        kubelet_runs(cluster, 1)

    controller = threading.Thread(target=restart_then_run, daemon=True)
    controller.start()
    result = watch(
        kube_client,
        NS,
        "train",
        console=recording_console(),
        interval=0.05,
        clock=lambda: NOW,
        say=said.append,
    )
    controller.join(10)
    assert (result.exit_code, result.reason) == (0, "completed")
    assert len(said) == 1, said
    found = AWAY.match(said[0])
    assert found and found.group(2) == "the watch", said


# ---------------------------------------------------------------------- logs -f


def running_pod(kube_api, state: dict) -> None:
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0-x", "namespace": NS, "labels": {"job-name": "train"}},
            "spec": {"nodeName": "node-0", "containers": [{"name": "main", "image": "img:1"}]},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {"name": "main", "image": "img:1", "restartCount": 0, "state": state}
                ],
            },
        }
    )


def test_a_followed_log_resumes_from_its_last_line_across_an_api_server_restart(
    cluster, kube_client
) -> None:
    """The emulator ends a followed log when it has sent what it holds, as the API server
    does when it goes away: the reader reads again from the last line's time, drops what it
    printed (every emulated line has one instant, the hardest case), prints what is new, and
    stops once the container has ended."""
    submit_job(kube_client)
    running_pod(cluster, {"running": {}})
    cluster.set_pod_log("train-0-x", "tick 0\ntick 1\n", NS, "main")
    said: list[str] = []
    out: list[str] = []
    options = run_logs.LogOptions(follow=True, tail=-1)

    failed: list[BaseException] = []

    def read() -> None:
        try:
            for chunk in run_logs.stream(kube_client, NS, "train", options, say=said.append):
                out.append(chunk)
        except BaseException as exc:  # the test says what it was
            failed.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while "tick 1" not in "".join(out) and time.monotonic() < deadline:
        time.sleep(0.01)
    cluster.stop()
    cluster.set_pod_log("train-0-x", "tick 0\ntick 1\ntick 2\n", NS, "main")
    time.sleep(1.5)  # the outage
    cluster.restart()
    deadline = time.monotonic() + 10
    while "tick 2" not in "".join(out) and time.monotonic() < deadline:
        time.sleep(0.01)
    cluster.set_pod_log("train-0-x", "tick 0\ntick 1\ntick 2\ndone\n", NS, "main")
    running_pod(cluster, {"terminated": {"exitCode": 0, "reason": "Completed"}})
    reader.join(15)
    assert not reader.is_alive() and not failed, failed
    assert "".join(out) == "tick 0\ntick 1\ntick 2\ndone\n"
    assert len(said) == 1 and AWAY.match(said[0]), said


def test_a_followed_log_keeps_its_timestamps_only_when_asked(cluster, kube_client) -> None:
    submit_job(kube_client)
    running_pod(cluster, {"terminated": {"exitCode": 0}})
    cluster.set_pod_log("train-0-x", "a\nb\n", NS, "main")
    plain = "".join(run_logs.stream(kube_client, NS, "train", run_logs.LogOptions(follow=True)))
    stamped = "".join(
        run_logs.stream(kube_client, NS, "train", run_logs.LogOptions(follow=True, timestamps=True))
    )
    assert plain == "a\nb\n"
    assert stamped.splitlines() == [
        "2026-01-02T03:04:05.000000006Z a",
        "2026-01-02T03:04:05.000000006Z b",
    ]


def test_the_cursor_reads_instants_in_order_and_counts_lines_of_one_instant() -> None:
    key = stamp_key("2026-12-07T03:30:01.5Z x")
    assert key == ((1796614201, 500000000), "x")
    assert stamp_key("2026-12-07T03:30:01+01:00 y") == ((1796610601, 0), "y")
    assert stamp_key("no stamp") is None
    cursor = Cursor()
    a, b, c = (1, 0), (1, 0), (2, 5)
    assert [cursor.admit(k) for k in (a, b, c)] == [True, True, True]
    assert cursor.since() == "1970-01-01T00:00:02Z"
    cursor.resume()  # read again from the last instant: its one line comes again
    assert [cursor.admit(k) for k in ((1, 0), (2, 5), (2, 5), (3, 0))] == [False, False, True, True]


# ---------------------------------------------------------------------- cancel


def test_a_cancel_waits_for_the_api_and_finishes(monkeypatch) -> None:
    from tau.runs import cancel as run_cancel

    left = iter([away(), run_cancel.Remaining(1), away("reset"), run_cancel.Remaining(0)])

    def remaining(*_args):
        step = next(left)
        if isinstance(step, ClusterError):
            raise step
        return step

    monkeypatch.setattr(run_cancel, "owned_workload", lambda *_a: ("Job", {"metadata": {}}))
    monkeypatch.setattr(run_cancel, "_delete", lambda *_a: None)
    monkeypatch.setattr(run_cancel, "_remaining", remaining)
    said: list[str] = []
    clock = iter(float(t) for t in range(100))
    result = run_cancel.cancel(
        None,
        NS,
        "train",
        sleep=lambda _s: None,
        clock=lambda: next(clock),
        say=said.append,
        keep=False,
    )
    assert result.complete
    assert len([s for s in said if AWAY.match(s)]) == 2, said


def test_a_cancel_whose_api_stays_away_says_what_was_done_and_what_is_left(monkeypatch) -> None:
    from tau.runs import cancel as run_cancel

    def gone(*_args):
        raise away("connection refused")

    monkeypatch.setattr(run_cancel, "owned_workload", lambda *_a: ("Job", {"metadata": {}}))
    monkeypatch.setattr(run_cancel, "_delete", lambda *_a: None)
    monkeypatch.setattr(run_cancel, "_remaining", gone)
    clock = iter(float(t) for t in range(0, 1000, 50))
    with pytest.raises(ClusterError) as raised:
        run_cancel.cancel(
            None,
            NS,
            "train",
            timeout=120,
            sleep=lambda _s: None,
            clock=lambda: next(clock),
            keep=False,
        )
    assert raised.value.message == (
        "connection refused; Job default/train was deleted; whether its pods and Kueue "
        "Workload are gone was not seen (check: tau run status train -n default)"
    )


def test_a_just_restarted_server_may_refuse_for_a_moment_and_is_waited_on() -> None:
    """kube-apiserver answers before its authorizer holds the RBAC objects: a 403 during an
    outage, or within SETTLE seconds after it, is waited on (one line still); later it is
    a real refusal."""
    now = [0.0]
    said: list[str] = []
    outage = Outage("the log", say=said.append, monotonic=lambda: now[0])
    with pytest.raises(ClusterError):
        outage.failed(ClusterError("forbidden", status=403))  # no outage: a refusal
    outage.failed(away())
    now[0] = 20.0
    outage.failed(ClusterError("forbidden", status=403))  # still the outage
    now[0] = 25.0
    outage.back()
    now[0] = 30.0
    outage.failed(ClusterError("not served", status=404, reason="NotServed"))  # settling
    outage.back()
    assert len(said) == 1 and "away for 25s" in said[0], said
    now[0] = 25.0 + 61
    with pytest.raises(ClusterError):
        outage.failed(ClusterError("forbidden", status=403))
