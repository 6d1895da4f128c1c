"""The emulator's resource semantics, exercised with the official client over real HTTP."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from tests.kubeapi import KubeApiServer
from tests.kubeapi.fixtures import api_client_for


def pod(name: str, labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    body.update(extra)
    return body


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "busybox"}],
                }
            }
        },
    }


def rayjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": name},
        "spec": {"entrypoint": "python train.py"},
    }


def status_of(error: ApiException) -> dict[str, Any]:
    return json.loads(error.body)


def raw_get(server: KubeApiServer, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(server.url + path, timeout=5) as response:
        return json.loads(response.read())


# ---------------------------------------------------------------- discovery and routing


def test_discovery_reports_version_core_resources_and_registered_groups(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert client.VersionApi(kube_client).get_code().git_version.startswith("v1.")
    core = client.CoreV1Api(kube_client).get_api_resources()
    assert {"pods", "pods/log", "pods/status", "namespaces"} <= {r.name for r in core.resources}
    groups = {g.name for g in client.ApisApi(kube_client).get_api_versions().groups}
    assert {"batch", "apps", "kueue.x-k8s.io", "ray.io", "tau.azure.com"} <= groups
    ray = raw_get(kube_api, "/apis/ray.io/v1")
    assert {r["name"]: r["kind"] for r in ray["resources"]}["rayjobs"] == "RayJob"
    kueue = raw_get(kube_api, "/apis/kueue.x-k8s.io/v1beta2")
    scopes = {r["name"]: r["namespaced"] for r in kueue["resources"]}
    assert scopes["clusterqueues"] is False and scopes["localqueues"] is True


def test_unregistered_custom_resource_is_a_not_found_status_like_a_missing_crd(kube_client):
    with pytest.raises(ApiException) as caught:
        client.CustomObjectsApi(kube_client).list_namespaced_custom_object(
            "ray.io", "v1", "default", "rayjobs"
        )
    assert caught.value.status == 404
    assert status_of(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "reason": "NotFound",
        "code": 404,
        "message": "the server could not find the requested resource",
    }


def test_registered_custom_resources_round_trip_namespaced_and_cluster_scoped(
    kube_api, kube_client
):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    custom.create_namespaced_custom_object("ray.io", "v1", "team-a", "rayjobs", rayjob("r1"))
    custom.create_namespaced_custom_object("ray.io", "v1", "team-b", "rayjobs", rayjob("r2"))
    got = custom.get_namespaced_custom_object("ray.io", "v1", "team-a", "rayjobs", "r1")
    assert got["metadata"]["namespace"] == "team-a" and got["spec"]["entrypoint"]
    everywhere = custom.list_cluster_custom_object("ray.io", "v1", "rayjobs")
    assert [i["metadata"]["name"] for i in everywhere["items"]] == ["r1", "r2"]
    assert everywhere["kind"] == "RayJobList"
    queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "gpu"},
        "spec": {"namespaceSelector": {}},
    }
    custom.create_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", queue)
    stored = custom.get_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "clusterqueues", "gpu")
    assert "namespace" not in stored["metadata"]


def test_a_custom_kind_registered_by_the_test_is_served(kube_api, kube_client):
    kube_api.register_kind("example.com", "v1", "widgets", "Widget", namespaced=False)
    custom = client.CustomObjectsApi(kube_client)
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    created = custom.create_cluster_custom_object("example.com", "v1", "widgets", body)
    assert created["kind"] == "Widget"
    assert kube_api.get_object("example.com/v1", "Widget", "w", namespace=None) is not None


# ---------------------------------------------------------------- create and metadata


def test_create_stamps_uid_timestamp_generation_namespace_and_increasing_versions(tmp_path: Path):
    fixed = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    with KubeApiServer(clock=lambda: fixed) as server:
        api = client.CoreV1Api(api_client_for(server, tmp_path))
        first = api.create_namespaced_pod("default", pod("a"))
        second = api.create_namespaced_pod("default", pod("b"))
    assert first.metadata.namespace == "default"
    assert first.metadata.creation_timestamp == fixed
    assert first.metadata.generation == 1
    assert first.metadata.uid and first.metadata.uid != second.metadata.uid
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)


def test_create_answers_201_and_a_duplicate_is_already_exists(kube_api, kube_client):
    batch = client.BatchV1Api(kube_client)
    created, code, _headers = batch.create_namespaced_job_with_http_info("default", job("train"))
    assert code == 201 and created.metadata.name == "train"
    with pytest.raises(ApiException) as caught:
        batch.create_namespaced_job("default", job("train"))
    body = status_of(caught.value)
    assert caught.value.status == 409 and body["reason"] == "AlreadyExists"
    assert body["message"] == 'jobs.batch "train" already exists'


def test_generate_name_gets_a_unique_suffix(kube_client):
    api = client.CoreV1Api(kube_client)
    body = pod("")
    body["metadata"] = {"generateName": "tau-run-"}
    names = {api.create_namespaced_pod("default", body).metadata.name for _ in range(3)}
    assert len(names) == 3
    assert all(n.startswith("tau-run-") and len(n) == len("tau-run-") + 5 for n in names)


def test_an_invalid_name_is_rejected_as_invalid(kube_client):
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube_client).create_namespaced_pod("default", pod("Bad_Name"))
    assert caught.value.status == 422 and status_of(caught.value)["reason"] == "Invalid"


def test_a_missing_namespace_is_accepted_unless_namespaces_are_required(kube_client, tmp_path):
    client.CoreV1Api(kube_client).create_namespaced_pod("nowhere", pod("p"))
    with KubeApiServer(require_namespaces=True) as strict:
        api = client.CoreV1Api(api_client_for(strict, tmp_path))
        with pytest.raises(ApiException) as caught:
            api.create_namespaced_pod("nowhere", pod("p"))
        assert status_of(caught.value)["message"] == 'namespaces "nowhere" not found'
        api.create_namespace({"metadata": {"name": "nowhere"}})
        assert api.create_namespaced_pod("nowhere", pod("p")).metadata.namespace == "nowhere"


# ---------------------------------------------------------------- get and list


@pytest.fixture
def labelled_pods(kube_client) -> client.CoreV1Api:
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("web", {"app": "web", "tier": "front"}))
    api.create_namespaced_pod("default", pod("db", {"app": "db", "tier": "back"}))
    api.create_namespaced_pod("default", pod("bare"))
    return api


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", ["web"]),
        ("app==db", ["db"]),
        ("app!=web", ["bare", "db"]),
        ("tier", ["db", "web"]),
        ("!tier", ["bare"]),
        ("app in (web,db)", ["db", "web"]),
        ("app notin (web)", ["bare", "db"]),
        ("tier,app in (db, other)", ["db"]),
    ],
)
def test_label_selectors_filter_lists(labelled_pods, selector, expected):
    items = labelled_pods.list_namespaced_pod("default", label_selector=selector).items
    assert sorted(p.metadata.name for p in items) == expected


def test_field_selectors_filter_by_name_namespace_and_pod_phase(kube_api, labelled_pods):
    kube_api.set_status("v1", "Pod", "db", {"phase": "Running"})
    by_name = labelled_pods.list_namespaced_pod("default", field_selector="metadata.name=web")
    assert [p.metadata.name for p in by_name.items] == ["web"]
    running = labelled_pods.list_pod_for_all_namespaces(
        field_selector="status.phase=Running,metadata.namespace=default"
    )
    assert [p.metadata.name for p in running.items] == ["db"]
    not_running = labelled_pods.list_namespaced_pod(
        "default", field_selector="status.phase!=Running"
    )
    assert sorted(p.metadata.name for p in not_running.items) == ["bare", "web"]
    with pytest.raises(ApiException) as caught:
        labelled_pods.list_namespaced_pod("default", field_selector="spec.unknown=x")
    assert caught.value.status == 400


def test_lists_paginate_with_limit_and_continue(labelled_pods):
    first = labelled_pods.list_namespaced_pod("default", limit=2)
    assert [p.metadata.name for p in first.items] == ["bare", "db"]
    assert first.metadata.remaining_item_count == 1
    rest = labelled_pods.list_namespaced_pod("default", limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in rest.items] == ["web"] and not rest.metadata._continue


def test_get_of_a_missing_object_is_a_not_found_status(kube_client):
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube_client).read_namespaced_pod("ghost", "default")
    body = status_of(caught.value)
    assert (body["reason"], body["message"]) == ("NotFound", 'pods "ghost" not found')
    assert body["details"] == {"kind": "pods", "name": "ghost"}


def test_cluster_scoped_core_kinds_are_listed_without_a_namespace(kube_api, kube_client):
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "gpu-0"},
            "status": {"allocatable": {"nvidia.com/gpu": "8"}},
        }
    )
    api = client.CoreV1Api(kube_client)
    nodes = api.list_node()
    assert [n.metadata.name for n in nodes.items] == ["gpu-0"]
    assert nodes.items[0].status.allocatable == {"nvidia.com/gpu": "8"}
    assert {"default", "kube-system"} <= {n.metadata.name for n in api.list_namespace().items}


# ---------------------------------------------------------------- update, status, patch


def test_replace_with_a_stale_resource_version_is_a_conflict(kube_client):
    api = client.CoreV1Api(kube_client)
    created = api.create_namespaced_config_map(
        "default", {"metadata": {"name": "c"}, "data": {"k": "1"}}
    )
    stale = created.metadata.resource_version
    fresh = api.replace_namespaced_config_map(
        "c", "default", {"metadata": {"name": "c", "resourceVersion": stale}, "data": {"k": "2"}}
    )
    assert int(fresh.metadata.resource_version) > int(stale)
    with pytest.raises(ApiException) as caught:
        api.replace_namespaced_config_map(
            "c", "default", {"metadata": {"name": "c", "resourceVersion": stale}, "data": {}}
        )
    body = status_of(caught.value)
    assert caught.value.status == 409 and body["reason"] == "Conflict"
    assert "the object has been modified" in body["message"]


def test_generation_bumps_on_spec_changes_but_not_on_metadata_or_status(kube_client):
    api = client.BatchV1Api(kube_client)
    created = api.create_namespaced_job("default", job("g")).to_dict()
    relabelled = api.patch_namespaced_job("g", "default", {"metadata": {"labels": {"a": "b"}}})
    assert relabelled.metadata.generation == 1
    api.patch_namespaced_job_status("g", "default", {"status": {"active": 1}})
    respec = api.patch_namespaced_job("g", "default", {"spec": {"parallelism": 3}})
    assert respec.metadata.generation == 2
    assert respec.metadata.uid == created["metadata"]["uid"]


def test_status_subresource_writes_only_status_and_main_writes_keep_status(kube_client):
    api = client.BatchV1Api(kube_client)
    api.create_namespaced_job("default", job("s"))
    current = api.read_namespaced_job("s", "default")
    current.status = client.V1JobStatus(succeeded=1)
    current.spec.parallelism = 5
    written = api.replace_namespaced_job_status("s", "default", current)
    assert written.status.succeeded == 1 and written.spec.parallelism in (None, 1)
    written.status = client.V1JobStatus(failed=9)
    written.spec.parallelism = 2
    replaced = api.replace_namespaced_job("s", "default", written)
    assert replaced.status.succeeded == 1 and replaced.status.failed is None
    assert replaced.spec.parallelism == 2


def test_merge_and_strategic_patches_merge_maps_and_null_deletes(kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("p", {"keep": "1", "drop": "1"}))
    patched = api.patch_namespaced_pod(
        "p", "default", {"metadata": {"labels": {"drop": None, "new": "2"}}}
    )
    assert patched.metadata.labels == {"keep": "1", "new": "2"}
    merged = api.patch_namespaced_pod(
        "p",
        "default",
        {"metadata": {"annotations": {"a": "b"}}},
        _content_type="application/merge-patch+json",
    )
    assert merged.metadata.annotations == {"a": "b"} and merged.metadata.labels["keep"] == "1"


def test_custom_resources_take_merge_patches_and_reject_strategic_ones(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", rayjob("r"))
    patched = custom.patch_namespaced_custom_object(
        "ray.io", "v1", "default", "rayjobs", "r", {"spec": {"suspend": True}}
    )
    assert patched["spec"] == {"entrypoint": "python train.py", "suspend": True}
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            "ray.io",
            "v1",
            "default",
            "rayjobs",
            "r",
            {"spec": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert caught.value.status == 415


def test_json_patch_applies_operations_in_order(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", rayjob("r"))
    patched = custom.patch_namespaced_custom_object(
        "ray.io",
        "v1",
        "default",
        "rayjobs",
        "r",
        [
            {"op": "test", "path": "/spec/entrypoint", "value": "python train.py"},
            {"op": "add", "path": "/metadata/labels", "value": {"a": "1"}},
            {"op": "replace", "path": "/spec/entrypoint", "value": "python eval.py"},
            {"op": "add", "path": "/spec/args", "value": ["x"]},
            {"op": "add", "path": "/spec/args/-", "value": "y"},
            {"op": "copy", "from": "/spec/args/0", "path": "/spec/first"},
            {"op": "remove", "path": "/spec/args/0"},
        ],
        _content_type="application/json-patch+json",
    )
    assert patched["spec"] == {"entrypoint": "python eval.py", "args": ["y"], "first": "x"}
    assert patched["metadata"]["labels"] == {"a": "1"}
    with pytest.raises(ApiException) as caught:
        custom.patch_namespaced_custom_object(
            "ray.io",
            "v1",
            "default",
            "rayjobs",
            "r",
            [{"op": "test", "path": "/spec/entrypoint", "value": "nope"}],
            _content_type="application/json-patch+json",
        )
    assert caught.value.status == 422


def test_a_patch_carrying_a_stale_resource_version_is_a_conflict(kube_client):
    api = client.CoreV1Api(kube_client)
    created = api.create_namespaced_pod("default", pod("p"))
    api.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "1"}}})
    with pytest.raises(ApiException) as caught:
        api.patch_namespaced_pod(
            "p",
            "default",
            {
                "metadata": {
                    "resourceVersion": created.metadata.resource_version,
                    "labels": {"a": "2"},
                }
            },
        )
    assert caught.value.status == 409


def test_an_unchanged_write_keeps_the_resource_version(kube_client):
    api = client.CoreV1Api(kube_client)
    created = api.create_namespaced_pod("default", pod("p", {"a": "1"}))
    same = api.patch_namespaced_pod("p", "default", {"metadata": {"labels": {"a": "1"}}})
    assert same.metadata.resource_version == created.metadata.resource_version


# ---------------------------------------------------------------- delete


def test_delete_returns_the_object_and_a_second_delete_is_not_found(kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("p"))
    deleted = api.delete_namespaced_pod("p", "default")
    assert deleted.metadata.name == "p"
    with pytest.raises(ApiException) as caught:
        api.delete_namespaced_pod("p", "default")
    assert caught.value.status == 404 and status_of(caught.value)["reason"] == "NotFound"


def test_delete_with_a_mismatched_uid_precondition_is_a_conflict(kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("p"))
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as caught:
        api.delete_namespaced_pod("p", "default", body=options)
    assert caught.value.status == 409
    assert (
        "Precondition failed: UID in precondition: not-the-uid"
        in status_of(caught.value)["message"]
    )
    assert api.read_namespaced_pod("p", "default").metadata.name == "p"


def _job_with_pods(kube_api: KubeApiServer, kube_client: client.ApiClient) -> str:
    created = client.BatchV1Api(kube_client).create_namespaced_job("default", job("train"))
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "train",
        "uid": created.metadata.uid,
        "controller": True,
    }
    for index in range(2):
        body = pod(f"train-{index}")
        body["metadata"]["ownerReferences"] = [owner]
        kube_api.put(body)
    return created.metadata.uid


def test_deleting_a_job_with_background_propagation_deletes_its_pods(kube_api, kube_client):
    _job_with_pods(kube_api, kube_client)
    kube_api.put(pod("unrelated"))
    client.BatchV1Api(kube_client).delete_namespaced_job(
        "train", "default", propagation_policy="Background"
    )
    names = [p["metadata"]["name"] for p in kube_api.list_objects("v1", "Pod", "default")]
    assert names == ["unrelated"]


def test_deleting_a_job_without_propagation_orphans_its_pods(kube_api, kube_client):
    _job_with_pods(kube_api, kube_client)
    client.BatchV1Api(kube_client).delete_namespaced_job("train", "default")
    pods = kube_api.list_objects("v1", "Pod", "default")
    assert [p["metadata"]["name"] for p in pods] == ["train-0", "train-1"]
    assert all("ownerReferences" not in p["metadata"] for p in pods)


def test_finalizers_hold_deletion_until_they_are_removed(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    body = rayjob("held")
    body["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", body)
    custom.delete_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "held")
    pending = custom.get_namespaced_custom_object("ray.io", "v1", "default", "rayjobs", "held")
    assert pending["metadata"]["deletionTimestamp"]
    custom.patch_namespaced_custom_object(
        "ray.io", "v1", "default", "rayjobs", "held", {"metadata": {"finalizers": None}}
    )
    assert kube_api.get_object("ray.io/v1", "RayJob", "held") is None


def test_deleting_a_namespace_deletes_what_it_contains(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespace({"metadata": {"name": "scratch"}})
    api.create_namespaced_pod("scratch", pod("p"))
    api.create_namespaced_pod("default", pod("p"))
    api.delete_namespace("scratch")
    assert kube_api.get_object("v1", "Pod", "p", namespace="scratch") is None
    assert kube_api.get_object("v1", "Pod", "p", namespace="default") is not None


# ---------------------------------------------------------------- dry run


def test_dry_run_never_persists_and_never_bumps_the_resource_version(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("real", {"a": "1"}))
    before = kube_api.resource_version
    dry = api.create_namespaced_pod("default", pod("imaginary"), dry_run="All")
    assert dry.metadata.name == "imaginary" and dry.metadata.uid
    patched = api.patch_namespaced_pod(
        "real", "default", {"metadata": {"labels": {"a": "2"}}}, dry_run="All"
    )
    assert patched.metadata.labels == {"a": "2"}
    replaced = api.replace_namespaced_pod("real", "default", pod("real", {"a": "3"}), dry_run="All")
    assert replaced.metadata.labels == {"a": "3"}
    api.delete_namespaced_pod("real", "default", dry_run="All")
    assert kube_api.resource_version == before
    assert kube_api.get_object("v1", "Pod", "imaginary") is None
    assert kube_api.get_object("v1", "Pod", "real")["metadata"]["labels"] == {"a": "1"}


def test_an_unknown_dry_run_value_is_a_bad_request(kube_client):
    with pytest.raises(ApiException) as caught:
        client.CoreV1Api(kube_client).create_namespaced_pod("default", pod("p"), dry_run="Some")
    assert caught.value.status == 400


# ---------------------------------------------------------------- concurrency


def test_concurrent_creates_get_distinct_resource_versions(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    versions: list[str] = []
    lock = threading.Lock()

    def create_many(worker: int) -> None:
        for index in range(10):
            created = api.create_namespaced_config_map(
                "default", {"metadata": {"name": f"c-{worker}-{index}"}}
            )
            with lock:
                versions.append(created.metadata.resource_version)

    threads = [threading.Thread(target=create_many, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(versions)) == 60
    assert len(api.list_namespaced_config_map("default").items) == 60


# ---------------------------------------------------------------- other clients and routes


def test_discovery_is_enough_for_the_dynamic_client(kube_api, kube_client, tmp_path: Path):
    kube_api.register_kueue_kuberay_tau_kinds()
    dyn = dynamic.DynamicClient(kube_client, cache_file=str(tmp_path / "discovery.json"))
    workspaces = dyn.resources.get(api_version="tau.azure.com/v1alpha1", kind="TauWorkspace")
    assert workspaces.namespaced
    dyn.create(
        workspaces,
        namespace="default",
        body={
            "apiVersion": "tau.azure.com/v1alpha1",
            "kind": "TauWorkspace",
            "metadata": {"name": "ws"},
            "spec": {},
        },
    )
    assert kube_api.get_object("tau.azure.com/v1alpha1", "TauWorkspace", "ws") is not None


def test_delete_collection_removes_only_selected_objects(kube_api, kube_client):
    api = client.CoreV1Api(kube_client)
    api.create_namespaced_pod("default", pod("a", {"run": "1"}))
    api.create_namespaced_pod("default", pod("b", {"run": "2"}))
    api.delete_collection_namespaced_pod("default", label_selector="run=1")
    assert [p.metadata.name for p in api.list_namespaced_pod("default").items] == ["b"]


def test_unknown_paths_and_subresources_are_not_found(kube_api):
    for path in (
        "/nonsense",
        "/api/v1/namespaces/default/configmaps/c/status",
        "/apis/batch/v2/namespaces/default/jobs",
    ):
        with pytest.raises(urllib.error.HTTPError) as caught:
            raw_get(kube_api, path)
        assert caught.value.code == 404
        assert json.loads(caught.value.read())["reason"] == "NotFound"


def test_custom_resources_refuse_updates_without_a_resource_version(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    custom = client.CustomObjectsApi(kube_client)
    created = custom.create_namespaced_custom_object(
        "ray.io", "v1", "default", "rayjobs", rayjob("r")
    )
    with pytest.raises(ApiException) as caught:
        custom.replace_namespaced_custom_object(
            "ray.io", "v1", "default", "rayjobs", "r", rayjob("r")
        )
    assert caught.value.status == 422
    created["spec"]["suspend"] = True
    replaced = custom.replace_namespaced_custom_object(
        "ray.io", "v1", "default", "rayjobs", "r", created
    )
    assert replaced["spec"]["suspend"] is True and replaced["metadata"]["generation"] == 2
