"""`tau.sdk.chain`: waiting on and deleting a chain's RayJob against the local API emulator.

The emulator plays KubeRay: each test moves the RayJob's status from inside `say`, i.e. exactly
when the wait has printed what it saw, so the order of events is fixed without sleeping.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, watch

from tau.errors import ClusterError
from tau.sdk.chain import delete_rayjob, format_duration, parse_duration, wait_rayjob
from tau.sdk.errors import SdkError
from tests.kubeapi import KubeApiServer

NS = "team"
NAME = "tau-demo-ft"
RAY = "ray.io/v1"
WAITING = f"tau python submit: waiting for rayjob/{NAME} in {NS} (timeout=1h, poll=1s)..."


def status_line(status: str) -> str:
    return f"tau python submit:   rayjob/{NAME} status={status}"


@pytest.fixture
def cluster(kube_api: KubeApiServer) -> KubeApiServer:
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    return kube_api


def put_rayjob(cluster: KubeApiServer, status: str = "", **metadata: Any) -> None:
    cluster.put(
        {
            "apiVersion": RAY,
            "kind": "RayJob",
            "metadata": {"name": NAME, "namespace": NS, **metadata},
            "spec": {"entrypoint": "python3 /script/train.py"},
            "status": {"jobStatus": status} if status else {},
        }
    )


def set_job_status(cluster: KubeApiServer, status: str, **extra: Any) -> None:
    cluster.set_status(RAY, "RayJob", NAME, {"jobStatus": status, **extra}, namespace=NS)


class Script:
    """A `say` that records lines and runs the controller step tied to a line."""

    def __init__(self, steps: dict[str, Callable[[], None]] | None = None) -> None:
        self.lines: list[str] = []
        self.steps = steps or {}

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        step = self.steps.pop(line, None)
        if step is not None:
            step()


def wait(kube_client: client.ApiClient, say: Script, **options: Any) -> None:
    defaults: dict[str, Any] = {"timeout": 3600.0, "poll_interval": 1.0}
    wait_rayjob(kube_client, NS, NAME, say=say, **{**defaults, **options})


def test_succeeded_returns_and_prints_each_status_once(cluster, kube_client) -> None:
    put_rayjob(cluster, "PENDING")
    say = Script(
        {
            status_line("PENDING"): lambda: set_job_status(cluster, "RUNNING"),
            # A change that is not a new jobStatus prints nothing.
            status_line("RUNNING"): lambda: (
                set_job_status(cluster, "RUNNING", message="still going"),
                set_job_status(cluster, "SUCCEEDED"),
            ),
        }
    )
    wait(kube_client, say)
    assert say.lines == [
        WAITING,
        status_line("PENDING"),
        status_line("RUNNING"),
        status_line("SUCCEEDED"),
    ]
    # One get: the watch carried every change.
    assert cluster.count_requests("GET", f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{NAME}") == 1


def test_failed_raises_the_reference_message(cluster, kube_client) -> None:
    put_rayjob(cluster)
    say = Script({status_line("<unknown>"): lambda: set_job_status(cluster, "FAILED")})
    with pytest.raises(SdkError) as raised:
        wait(kube_client, say)
    assert raised.value.message == (
        f"tau python submit: rayjob/{NAME} reports FAILED; check `tau run logs {NAME} -n {NS}`."
    )
    assert raised.value.exit_code == 1
    assert say.lines == [WAITING, status_line("<unknown>"), status_line("FAILED")]


def test_a_stopped_rayjob_ends_the_wait_too(cluster, kube_client) -> None:
    put_rayjob(cluster, "STOPPED")
    with pytest.raises(SdkError, match="reports STOPPED"):
        wait(kube_client, Script())


def test_timeout_names_the_last_status(cluster, kube_client) -> None:
    put_rayjob(cluster, "RUNNING")
    say = Script()
    began = time.monotonic()
    with pytest.raises(SdkError) as raised:
        wait(kube_client, say, timeout=0.5, poll_interval=0.2)
    assert raised.value.message == (
        f"tau python submit: timed out after 0.5s waiting for rayjob/{NAME} to reach "
        "SUCCEEDED (last status: RUNNING)"
    )
    assert "tau run status" in (raised.value.hint or "")
    assert time.monotonic() - began < 5
    assert say.lines[1:] == [status_line("RUNNING")]


def test_timeout_before_the_rayjob_exists_says_none(cluster, kube_client) -> None:
    with pytest.raises(SdkError, match=r"\(last status: <none>\)$"):
        wait(kube_client, Script(), timeout=0.3, poll_interval=0.3)


def test_a_rayjob_that_appears_late_is_followed(cluster, kube_client) -> None:
    say = Script({WAITING: lambda: None})
    # The RayJob lands after the first get found nothing; the watch reports it.
    gets = f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{NAME}"

    def land_after_first_get() -> None:
        for _ in range(500):
            if cluster.count_requests("GET", gets):
                put_rayjob(cluster, "SUCCEEDED")
                return
            time.sleep(0.01)

    lander = threading.Thread(target=land_after_first_get)
    lander.start()
    try:
        wait(kube_client, say)
    finally:
        lander.join()
    assert say.lines == [WAITING, status_line("SUCCEEDED")]


def test_a_rayjob_deleted_while_waited_for_is_an_error(cluster, kube_client) -> None:
    put_rayjob(cluster, "RUNNING")
    say = Script(
        {status_line("RUNNING"): lambda: cluster.delete_object(RAY, "RayJob", NAME, namespace=NS)}
    )
    with pytest.raises(SdkError, match="was deleted from team before it reached SUCCEEDED"):
        wait(kube_client, say)


def test_an_expired_watch_is_followed_by_a_new_get(cluster, kube_client) -> None:
    put_rayjob(cluster, "RUNNING")

    def expire_then_succeed() -> None:
        cluster.expire_watch("rayjobs", "ray.io")
        set_job_status(cluster, "SUCCEEDED")

    say = Script({status_line("RUNNING"): expire_then_succeed})
    wait(kube_client, say)
    assert say.lines == [WAITING, status_line("RUNNING"), status_line("SUCCEEDED")]
    assert cluster.count_requests("GET", f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{NAME}") == 2


def test_without_watch_permission_it_polls_with_gets(cluster, kube_client) -> None:
    cluster.deny(403, path_prefix="/apis/ray.io/", verbs=["watch"])
    put_rayjob(cluster, "RUNNING")
    say = Script({status_line("RUNNING"): lambda: set_job_status(cluster, "SUCCEEDED")})
    wait(kube_client, say, poll_interval=0.05)
    assert say.lines[-1] == status_line("SUCCEEDED")
    assert cluster.count_requests("GET", f"/apis/ray.io/v1/namespaces/{NS}/rayjobs/{NAME}") >= 2


def test_a_get_that_is_refused_is_a_cluster_error(cluster, kube_client) -> None:
    cluster.deny(403, path_prefix="/apis/ray.io/", verbs=["get"])
    with pytest.raises(ClusterError) as raised:
        wait(kube_client, Script())
    assert raised.value.status == 403


def test_ctrl_c_during_the_wait_propagates_untouched(cluster, kube_client) -> None:
    put_rayjob(cluster, "RUNNING")

    def interrupt() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        wait(kube_client, Script({status_line("RUNNING"): interrupt}))


# ----------------------------------------------------------------------------- delete


def finalizer_remover(cluster: KubeApiServer, kube_client: client.ApiClient) -> Iterator[None]:
    """Play the controller that releases the RayJob once its deletion started."""
    custom = client.CustomObjectsApi(kube_client)
    w = watch.Watch()
    start = str(cluster.resource_version)

    def run() -> None:
        for event in w.stream(
            custom.list_namespaced_custom_object,
            "ray.io",
            "v1",
            NS,
            "rayjobs",
            resource_version=start,
            timeout_seconds=10,
        ):
            if event["object"]["metadata"].get("deletionTimestamp"):
                custom.patch_namespaced_custom_object(
                    "ray.io", "v1", NS, "rayjobs", NAME, {"metadata": {"finalizers": None}}
                )
                w.stop()

    thread = threading.Thread(target=run)
    thread.start()
    yield
    w.stop()
    thread.join()


def test_delete_waits_until_the_rayjob_is_gone(cluster, kube_client) -> None:
    put_rayjob(cluster, "SUCCEEDED", finalizers=["ray.io/rayjob-finalizer"])
    say = Script()
    remover = finalizer_remover(cluster, kube_client)
    next(remover)
    try:
        delete_rayjob(kube_client, NS, NAME, timeout=30.0, say=say)
    finally:
        next(remover, None)
    assert cluster.get_object(RAY, "RayJob", NAME, namespace=NS) is None
    assert say.lines == [f"tau python submit:   rayjob/{NAME} deleted"]
    deletes = [r for r in cluster.requests if r.method == "DELETE"]
    assert [d.query.get("propagationPolicy") for d in deletes] == ["Foreground"]


def test_delete_of_a_missing_rayjob_is_fine(cluster, kube_client) -> None:
    say = Script()
    delete_rayjob(kube_client, NS, NAME, timeout=30.0, say=say)
    assert say.lines == [f"tau python submit:   rayjob/{NAME} was already gone"]


def test_delete_that_never_completes_times_out(cluster, kube_client) -> None:
    put_rayjob(cluster, "SUCCEEDED", finalizers=["example.com/hold"])
    with pytest.raises(SdkError) as raised:
        delete_rayjob(kube_client, NS, NAME, timeout=0.3, say=Script())
    assert raised.value.message == (
        f"tau python submit: failed to delete completed rayjob/{NAME}: still present after 0.3s"
    )


def test_a_refused_delete_names_the_rayjob(cluster, kube_client) -> None:
    put_rayjob(cluster, "SUCCEEDED")
    cluster.deny(403, path_prefix="/apis/ray.io/", verbs=["delete"])
    with pytest.raises(SdkError) as raised:
        delete_rayjob(kube_client, NS, NAME, timeout=30.0, say=Script())
    assert raised.value.message == (
        f"tau python submit: failed to delete completed rayjob/{NAME}: you are not allowed to "
        f'delete rayjobs.ray.io "{NAME}" in namespace "{NS}" (403 Forbidden)'
    )


# ----------------------------------------------------------------------------- durations


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("2h", 7200.0),
        ("24h", 86400.0),
        ("90", 90.0),
        ("1.5h", 5400.0),
        (" 45s ", 45.0),
        ("", 86400.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text, "--timeout") == seconds


@pytest.mark.parametrize("text", ["soon", "5d", "m", "-5s", "0", "nan", "inf", "1h30m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(SdkError) as raised:
        parse_duration(text, "--cleanup-timeout")
    assert raised.value.message == (
        f"Tau Python SDK: invalid duration {text.strip()!r}; expected e.g. 30s, 5m, 2h"
    )
    assert "--cleanup-timeout" in (raised.value.hint or "")


@pytest.mark.parametrize(
    ("seconds", "text"), [(86400.0, "24h"), (300.0, "5m"), (90.0, "90s"), (0.5, "0.5s")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
