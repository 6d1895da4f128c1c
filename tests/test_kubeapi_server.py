"""The emulator as a test tool: lifecycle, fixtures, request log, auth simulation, helpers."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiServer
from tests.kubeapi.fixtures import EMULATOR_TOKEN, write_kubeconfig


def test_a_server_starts_quickly_on_loopback_and_stop_releases_port_and_threads():
    threads_before = threading.active_count()
    began = time.monotonic()
    server = KubeApiServer().start()
    started_in = time.monotonic() - began
    port = server.port
    assert server.url == f"http://127.0.0.1:{port}" and port != 0
    with socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    server.stop()
    assert started_in < 0.05
    assert threading.active_count() == threads_before
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_stop_closes_kept_alive_client_connections(kube_api, kube_client):
    client.CoreV1Api(kube_client).list_namespace()
    threads_with_connection = threading.active_count()
    kube_api.stop()
    assert threading.active_count() < threads_with_connection


def test_kubeconfig_file_has_an_emulator_context_with_a_bearer_token(kube_api, kubeconfig_file):
    document = yaml.safe_load(kubeconfig_file.read_text())
    assert document["current-context"] == "emulator"
    assert document["clusters"][0]["cluster"]["server"] == kube_api.url
    assert document["users"][0]["user"]["token"] == EMULATOR_TOKEN
    _contexts, active = config.list_kube_config_contexts(config_file=str(kubeconfig_file))
    assert active["name"] == "emulator"


def test_kube_client_talks_to_the_emulator_with_the_kubeconfig_token(kube_api, kube_client):
    client.CoreV1Api(kube_client).list_namespace()
    request = kube_api.requests[-1]
    assert request.headers["authorization"] == f"Bearer {EMULATOR_TOKEN}"
    assert kube_client.configuration.host == kube_api.url


def test_request_log_records_method_path_and_query_and_can_be_reset(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod(
        "default",
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    )
    api.list_namespaced_pod("default", label_selector="app=web", limit=5)
    post, listing = kube_api.requests[-2:]
    assert (post.method, post.path) == ("POST", "/api/v1/namespaces/default/pods")
    assert post.body["metadata"]["name"] == "p"
    assert listing.method == "GET" and listing.query == {"labelSelector": "app=web", "limit": "5"}
    assert kube_api.count_requests("GET", "/api/v1/namespaces/default/pods") == 1
    kube_api.reset_requests()
    assert kube_api.requests == []
    api.read_namespace("default")
    assert kube_api.count_requests() == 1


def test_denying_a_path_prefix_answers_403_with_a_forbidden_status(kube_api, kube_client):
    kube_api.deny(403, path_prefix="/apis/batch/v1/namespaces/locked/")
    batch = client.BatchV1Api(kube_client)
    with pytest.raises(ApiException) as caught:
        batch.list_namespaced_job("locked")
    assert caught.value.status == 403
    status = json.loads(caught.value.body)
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        'jobs.batch is forbidden: User "emulator-user" cannot list resource "jobs" in API group '
        '"batch" in the namespace "locked"'
    )
    assert batch.list_namespaced_job("open").items == []
    kube_api.allow_all()
    assert batch.list_namespaced_job("locked").items == []


def test_denials_can_target_single_verbs(kube_api, kube_client):
    kube_api.deny(403, verbs=["create"])
    api = client.CoreV1Api(kube_client)
    assert api.list_namespaced_pod("default").items == []
    with pytest.raises(ApiException) as caught:
        api.create_namespaced_config_map("default", {"metadata": {"name": "c"}})
    assert caught.value.status == 403


def test_a_global_401_denial_answers_unauthorized(kube_api, kube_client):
    kube_api.deny(401)
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube_client).list_namespaced_pod("default")
    assert caught.value.status == 401
    assert '"reason": "Unauthorized"' in caught.value.body
    with pytest.raises(ApiException) as discovery:
        client.VersionApi(kube_client).get_code()
    assert discovery.value.status == 401


def test_a_required_token_rejects_other_tokens(kube_api, tmp_path: Path):
    kube_api.require_token("the-real-token")
    wrong = config.new_client_from_config(
        config_file=str(write_kubeconfig(kube_api, tmp_path / "wrong", token="guess")),
        context="emulator",
    )
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(wrong).list_namespace()
    assert caught.value.status == 401
    right = config.new_client_from_config(
        config_file=str(write_kubeconfig(kube_api, tmp_path / "right", token="the-real-token")),
        context="emulator",
    )
    assert client.CoreV1Api(right).list_namespace().items


def test_controller_helpers_write_objects_and_statuses_that_clients_and_watches_see(
    kube_api, kube_client
):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    start = str(kube_api.resource_version)
    created = kube_api.put(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "job-train-1a2b3", "namespace": "team"},
            "spec": {"queueName": "gpu"},
        }
    )
    admitted = kube_api.set_status(
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        "job-train-1a2b3",
        {"conditions": [{"type": "Admitted", "status": "True"}]},
        namespace="team",
    )
    assert admitted["metadata"]["generation"] == created["metadata"]["generation"] == 1
    assert int(admitted["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    seen = custom.get_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", "team", "workloads", "job-train-1a2b3"
    )
    assert seen["status"]["conditions"][0]["type"] == "Admitted"
    merged = kube_api.set_status(
        "kueue.x-k8s.io/v1beta2",
        "workloads",
        "job-train-1a2b3",
        {"admission": {"clusterQueue": "gpu"}},
        namespace="team",
        merge=True,
    )
    assert set(merged["status"]) == {"conditions", "admission"}
    assert (
        kube_api.delete_object(
            "kueue.x-k8s.io/v1beta2", "Workload", "job-train-1a2b3", namespace="team"
        )
        is not None
    )
    assert (
        kube_api.delete_object(
            "kueue.x-k8s.io/v1beta2", "Workload", "job-train-1a2b3", namespace="team"
        )
        is None
    )
    w = watch.Watch()
    types = []
    for event in w.stream(
        custom.list_namespaced_custom_object,
        "kueue.x-k8s.io",
        "v1beta2",
        "team",
        "workloads",
        resource_version=start,
        timeout_seconds=5,
    ):
        types.append(event["type"])
        if len(types) == 4:
            w.stop()
    assert types == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]


def test_put_overwrites_an_existing_object_and_keeps_its_identity(kube_api):
    first = kube_api.put(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}}
    )
    second = kube_api.put(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "2"}}
    )
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert kube_api.get_object("v1", "ConfigMap", "c")["data"] == {"k": "2"}


def test_helpers_refuse_kinds_that_are_not_registered(kube_api):
    with pytest.raises(KeyError):
        kube_api.put({"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": {"name": "r"}})
