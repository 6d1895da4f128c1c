"""`tau run status --watch` against the emulator: redraws on watch events, stops on outcome."""

from __future__ import annotations

import io
import threading
import time
from datetime import UTC, datetime

import pytest
from kubernetes import client
from rich.console import Console

from tau.k8s.kinds import JOB
from tau.status.watch import ChangeFeed, watch
from tests.test_status_fetch import NS, kubelet_runs, kueue_admits, submit_job

NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)


def recording_console(terminal: bool = False) -> Console:
    return Console(
        width=100, record=True, color_system=None, file=io.StringIO(), force_terminal=terminal
    )


@pytest.fixture
def cluster(kube_api):
    kube_api.register_kueue_kuberay_tau_kinds()
    return kube_api


def watching(kube_api) -> int:
    return sum(1 for r in kube_api.requests if r.query.get("watch") in ("true", "True", "1"))


def when_watching(kube_api, action, streams: int = 3) -> threading.Thread:
    """Run `action` once the watch streams are open (the controllers act after the first draw)."""

    def run() -> None:
        deadline = time.monotonic() + 10
        while watching(kube_api) < streams and time.monotonic() < deadline:
            time.sleep(0.01)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def pending_pod(kube_api) -> None:
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0-x", "namespace": NS, "labels": {"job-name": "train"}},
            "spec": {"nodeName": "node-0", "containers": [{"name": "trainer", "image": "img:1"}]},
            "status": {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": "trainer",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"waiting": {"reason": "ContainerCreating"}},
                    }
                ],
            },
        }
    )


def test_watch_redraws_on_changes_and_exits_0_when_startup_completes(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    pending_pod(cluster)
    console = recording_console()
    controller = when_watching(cluster, lambda: kubelet_runs(cluster, 1))
    result = watch(
        kube_client,
        NS,
        "train",
        console=console,
        interval=0.05,
        max_iterations=20,
        clock=lambda: NOW,
    )
    controller.join(5)
    assert (result.exit_code, result.reason) == (0, "completed")
    assert result.iterations >= 2
    assert watching(cluster) >= 3  # Job, RayJob, pods (and the Workload) are watched, not polled
    output = console.export_text()
    assert output.count("watching default/train every 0.05s") == result.iterations


def test_watch_exits_1_on_a_startup_failure(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    pending_pod(cluster)

    def image_fails() -> None:
        cluster.set_status(
            "v1",
            "Pod",
            "train-0-x",
            {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": "trainer",
                        "ready": False,
                        "restartCount": 0,
                        "state": {"waiting": {"reason": "ImagePullBackOff"}},
                    }
                ],
            },
            namespace=NS,
        )

    controller = when_watching(cluster, image_fails)
    result = watch(
        kube_client,
        NS,
        "train",
        console=recording_console(),
        interval=0.05,
        max_iterations=20,
        clock=lambda: NOW,
    )
    controller.join(5)
    assert (result.exit_code, result.reason) == (1, "failed")
    assert result.message == "startup phase failed for default/train"


def test_watch_stops_after_max_iterations(cluster, kube_client):
    submit_job(kube_client)
    result = watch(
        kube_client,
        NS,
        "train",
        console=recording_console(),
        interval=0.01,
        max_iterations=1,
        clock=lambda: NOW,
    )
    assert (result.exit_code, result.reason, result.iterations) == (0, "max-iterations", 1)


def test_watch_redraws_in_place_on_a_terminal(cluster, kube_client):
    submit_job(kube_client)
    console = recording_console(terminal=True)
    watch(
        kube_client,
        NS,
        "train",
        console=console,
        interval=0.01,
        max_iterations=1,
        clock=lambda: NOW,
    )
    assert "\x1b[2J" in console.file.getvalue()


class FakeFeed(ChangeFeed):
    """A feed whose changes the test pushes; no threads."""

    def __init__(self) -> None:
        super().__init__(None, NS, "train")
        self.followed = 0

    def follow(self, snapshot) -> None:
        self.followed += 1
        self.changes.put("tick")


def test_watch_uses_the_injected_clock_and_does_not_poll_without_changes(cluster, kube_client):
    submit_job(kube_client)
    times = iter(range(100))
    seen = []

    def interpreter(snapshot, now):
        from tau.status.interpret import interpret

        seen.append(now)
        return interpret(snapshot, now)

    feed = FakeFeed()
    result = watch(
        kube_client,
        NS,
        "train",
        console=recording_console(),
        interval=0.01,
        max_iterations=3,
        clock=lambda: NOW,
        interpreter=interpreter,
        feed=feed,
        monotonic=lambda: float(next(times)),
    )
    assert result.iterations == 3 and feed.followed == 2
    assert seen == [NOW, NOW, NOW]
    assert feed.stopped.is_set()


@pytest.mark.parametrize(("interval", "iterations"), [(0, 0), (-1, 0), (1, -1)])
def test_watch_rejects_bad_flags(interval, iterations):
    with pytest.raises(ValueError, match="--interval"):
        watch(
            None,
            NS,
            "train",
            console=recording_console(),
            interval=interval,
            max_iterations=iterations,
        )


def test_rayjob_watch_without_kuberay_does_not_crash(kube_api, kube_client):
    kube_api.register_kind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
    client.BatchV1Api(kube_client).create_namespaced_job(
        NS,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "train"},
            "spec": {
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}
                }
            },
        },
    )
    result = watch(
        kube_client,
        NS,
        "train",
        console=recording_console(),
        interval=0.01,
        max_iterations=2,
        clock=lambda: NOW,
    )
    assert result.iterations == 2


def test_a_bookmark_moves_the_resume_version_but_is_not_a_change(monkeypatch) -> None:
    """The API server bookmarks every watch shortly before its timeout; redrawing for each
    would refetch the whole run every few seconds while nothing changed."""
    feed = ChangeFeed(None, NS, "train")
    versions: list[str] = []

    class Stream:
        def __init__(self, resource_version: str) -> None:
            versions.append(resource_version)
            self.resource_version = resource_version

        def __iter__(self):
            if len(versions) > 1:
                feed.stopped.set()
                return
            self.resource_version = "7"
            yield "BOOKMARK", {"metadata": {"resourceVersion": "7"}}

        def stop(self) -> None:
            pass

    monkeypatch.setattr(
        "tau.kube.streams.watch_kind",
        lambda *a, resource_version="", **k: Stream(resource_version),
    )
    feed._run(JOB, "", "metadata.name=train")
    assert versions == ["", "7"] and feed.changes.empty()
