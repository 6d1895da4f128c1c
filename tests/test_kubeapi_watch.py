"""Watch streams and pod logs served by the emulator, consumed with ``kubernetes.watch.Watch``."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiServer
from tests.kubeapi.fixtures import api_client_for


def pod(name: str, labels: dict[str, str] | None = None, containers: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": f"c{i}", "image": "busybox"} for i in range(containers)]},
    }


def collect(stream: Any, count: int, w: watch.Watch) -> list[tuple[str, str]]:
    """The first ``count`` events as (type, name), stopping the watch once they arrived."""
    seen: list[tuple[str, str]] = []
    for event in stream:
        obj = event["object"]
        name = obj["metadata"]["name"] if isinstance(obj, dict) else obj.metadata.name
        seen.append((event["type"], name))
        if len(seen) == count:
            w.stop()
    return seen


def test_watch_replays_changes_after_the_given_resource_version(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    start = str(kube_api.resource_version)
    api.create_namespaced_pod("default", pod("a"))
    api.patch_namespaced_pod("a", "default", {"metadata": {"labels": {"x": "1"}}})
    api.delete_namespaced_pod("a", "default")
    api.create_namespaced_pod("other", pod("elsewhere"))
    w = watch.Watch()
    events = collect(
        w.stream(api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=5),
        3,
        w,
    )
    assert events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


def test_watch_events_carry_increasing_resource_versions_and_typed_objects(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    start = str(kube_api.resource_version)
    api.create_namespaced_pod("default", pod("a"))
    api.create_namespaced_pod("default", pod("b"))
    w = watch.Watch()
    objects = []
    for event in w.stream(
        api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=5
    ):
        objects.append(event["object"])
        if len(objects) == 2:
            w.stop()
    assert all(isinstance(o, client.V1Pod) for o in objects)
    versions = [int(o.metadata.resource_version) for o in objects]
    assert versions == sorted(versions) and versions[0] > int(start)
    assert w.resource_version == str(versions[-1])


def test_watch_delivers_live_changes_made_by_a_controller_thread(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    start = str(kube_api.resource_version)

    def kubelet() -> None:
        time.sleep(0.1)
        kube_api.put(pod("live"))
        kube_api.set_status("v1", "Pod", "live", {"phase": "Running"})

    thread = threading.Thread(target=kubelet)
    thread.start()
    began = time.monotonic()
    w = watch.Watch()
    phases = []
    for event in w.stream(
        api.list_namespaced_pod, "default", resource_version=start, timeout_seconds=5
    ):
        phases.append((event["type"], event["object"].status and event["object"].status.phase))
        if len(phases) == 2:
            w.stop()
    thread.join()
    assert phases == [("ADDED", None), ("MODIFIED", "Running")]
    assert time.monotonic() - began < 2


def test_watch_without_a_resource_version_starts_with_the_current_objects(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("existing"))
    w = watch.Watch()
    assert collect(w.stream(api.list_namespaced_pod, "default", timeout_seconds=5), 1, w) == [
        ("ADDED", "existing")
    ]


def test_watch_ends_when_timeout_seconds_elapse(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    began = time.monotonic()
    events = list(
        watch.Watch().stream(
            api.list_namespaced_pod,
            "default",
            resource_version=str(kube_api.resource_version),
            timeout_seconds=1,
        )
    )
    elapsed = time.monotonic() - began
    assert events == [] and 0.9 <= elapsed < 3


def test_watch_from_a_compacted_resource_version_raises_410_gone(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    old = str(kube_api.resource_version)
    api.create_namespaced_pod("default", pod("a"))
    kube_api.compact()
    with pytest.raises(ApiException) as caught:
        list(
            watch.Watch().stream(
                api.list_namespaced_pod, "default", resource_version=old, timeout_seconds=2
            )
        )
    assert caught.value.status == 410 and "Expired" in caught.value.reason


def test_a_too_old_watch_gets_an_error_event_with_an_expired_status(tmp_path):
    with KubeApiServer(history_limit=3) as server:
        api = client.CoreV1Api(api_client_for(server, tmp_path))
        for index in range(5):
            api.create_namespaced_config_map("default", {"metadata": {"name": f"c{index}"}})
        url = f"{server.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1"
        with urllib.request.urlopen(url, timeout=5) as response:
            lines = response.read().decode().splitlines()
    event = json.loads(lines[0])
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    assert event["object"]["kind"] == "Status"


def test_label_filtered_watch_sees_objects_enter_and_leave_the_selection(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    start = str(kube_api.resource_version)
    api.create_namespaced_pod("default", pod("p", {"role": "worker"}))
    api.create_namespaced_pod("default", pod("q", {"role": "head"}))
    api.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"role": "head"}}})
    api.patch_namespaced_pod("q", "default", {"metadata": {"labels": {"role": "worker"}}})
    w = watch.Watch()
    events = collect(
        w.stream(
            api.list_namespaced_pod,
            "default",
            resource_version=start,
            label_selector="role=worker",
            timeout_seconds=5,
        ),
        3,
        w,
    )
    assert events == [("ADDED", "p"), ("DELETED", "p"), ("ADDED", "q")]


def test_custom_objects_can_be_watched_across_namespaces(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    start = str(kube_api.resource_version)
    for namespace in ("team-a", "team-b"):
        kube_api.put(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": "wl", "namespace": namespace},
                "spec": {},
            }
        )
    custom = client.CustomObjectsApi(kube_client)
    w = watch.Watch()
    stream = w.stream(
        custom.list_cluster_custom_object,
        "kueue.x-k8s.io",
        "v1beta2",
        "workloads",
        resource_version=start,
        timeout_seconds=5,
    )
    namespaces = []
    for event in stream:
        namespaces.append(event["object"]["metadata"]["namespace"])
        assert event["object"]["kind"] == "Workload"
        if len(namespaces) == 2:
            w.stop()
    assert namespaces == ["team-a", "team-b"]


def test_stopping_the_server_ends_an_open_watch(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    stopper = threading.Timer(0.2, kube_api.stop)
    stopper.start()
    began = time.monotonic()
    events = list(
        watch.Watch().stream(
            api.list_namespaced_pod,
            "default",
            resource_version=str(kube_api.resource_version),
            timeout_seconds=10,
        )
    )
    stopper.join()
    assert events == [] and time.monotonic() - began < 3


# ---------------------------------------------------------------- pod logs


def test_pod_log_returns_stored_text_and_honours_tail_lines(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    kube_api.put(pod("trainer"))
    kube_api.set_pod_log("trainer", "epoch 1\nepoch 2\nepoch 3\n")
    assert api.read_namespaced_pod_log("trainer", "default") == "epoch 1\nepoch 2\nepoch 3\n"
    assert api.read_namespaced_pod_log("trainer", "default", tail_lines=2) == "epoch 2\nepoch 3\n"


def test_following_a_pod_log_streams_what_is_stored_then_closes(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    kube_api.put(pod("trainer"))
    kube_api.set_pod_log("trainer", "a\nb\nc\n")
    lines = list(
        watch.Watch().stream(api.read_namespaced_pod_log, "trainer", "default", tail_lines=2)
    )
    assert lines == ["b", "c"]


def test_pod_log_of_a_multi_container_pod_needs_a_container_name(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    kube_api.put(pod("ray-head", containers=2))
    kube_api.set_pod_log("ray-head", "sidecar says hi\n", container="c1")
    with pytest.raises(ApiException) as caught:
        api.read_namespaced_pod_log("ray-head", "default")
    assert caught.value.status == 400 and "choose one of: [c0 c1]" in caught.value.body
    assert api.read_namespaced_pod_log("ray-head", "default", container="c1") == (
        "sidecar says hi\n"
    )


def test_pod_log_of_a_missing_pod_is_not_found(kube_client):
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube_client).read_namespaced_pod_log("ghost", "default")
    assert caught.value.status == 404
