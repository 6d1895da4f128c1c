"""`portal serve` boards against the local API emulation: live data, 503 per missing source,
a constant number of API calls per refresh, and the shared cache."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.portal.web.app import create_app
from tau.portal.web.cluster import ClusterReader
from tests.kubeapi import KubeApiServer
from tests.portal_web_support import XSS, Served, serve_app

FIXTURE = Path(__file__).parent / "fixtures" / "status" / "image-pull-backoff.yaml"


def cluster_objects() -> list[dict[str, Any]]:
    objects = [o for o in yaml.safe_load_all(FIXTURE.read_text()) if o]
    for obj in objects:
        if obj["kind"] == "Pod":  # pods of a tau run carry its identity labels
            obj["metadata"]["labels"]["tau.azure.com/managed-by"] = "tau"
    objects += [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": "tau-cq"},
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": "h100",
                                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "16"}],
                            }
                        ],
                    }
                ]
            },
            "status": {
                "admittedWorkloads": 1,
                "pendingWorkloads": 1,
                "flavorsUsage": [
                    {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}
                ],
            },
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": "jobqueue", "namespace": "research"},
            "spec": {"clusterQueue": "tau-cq"},
            "status": {"pendingWorkloads": 1, "admittedWorkloads": 1},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-waiting",
                "namespace": "research",
                "creationTimestamp": "2026-12-02T11:00:00Z",
            },
            "spec": {"queueName": "jobqueue"},
            "status": {
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "False",
                        "reason": "Pending",
                        "message": "couldn't assign flavors: insufficient nvidia.com/gpu",
                    }
                ]
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": "aks-h100-0",
                "labels": {
                    "tau.azure.com/gpu-class": "h100",
                    "tau.azure.com/gpu-health": "healthy",
                    "node.kubernetes.io/instance-type": "Standard_ND96isr_H100_v5",
                },
            },
            "status": {
                "capacity": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1843200Mi"},
                "allocatable": {"nvidia.com/gpu": "7", "cpu": "94", "memory": "1800000Mi"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "aks-system-0", "labels": {}},
            "status": {
                "capacity": {"cpu": "8"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {
                "name": XSS.replace("<", "x")
                .replace(">", "x")
                .replace("(", "")
                .replace(")", "")
                .replace("/", "")[:20]
                .lower(),
                "namespace": "research",
                "labels": {"tau.azure.com/run-id": "tune"},
            },
            "status": {"state": "ready", "desiredWorkerReplicas": 2, "availableWorkerReplicas": 1},
        },
    ]
    return objects


def load(kube_api: KubeApiServer, objects: list[dict[str, Any]], *, crds: bool = True) -> None:
    if crds:
        kube_api.register_kueue_kuberay_tau_kinds()
    uids: dict[str, str] = {}
    # The emulator assigns uids: Jobs first, then Workloads labelled with the uid it gave.
    for obj in sorted(objects, key=lambda o: o["kind"] != "Job"):
        if not (crds or obj["apiVersion"].startswith(("v1", "batch/"))):
            continue
        obj = copy.deepcopy(obj)
        labels = obj["metadata"].get("labels") or {}
        if labels.get("kueue.x-k8s.io/job-uid") in uids:
            labels["kueue.x-k8s.io/job-uid"] = uids[labels["kueue.x-k8s.io/job-uid"]]
        stored = kube_api.put(obj)
        if obj["kind"] == "Job":
            uids[obj["metadata"]["uid"]] = stored["metadata"]["uid"]


@pytest.fixture
def portal(kube_api: KubeApiServer, kube_client: Any) -> Iterator[tuple[Served, KubeApiServer]]:
    load(kube_api, cluster_objects())
    reader = ClusterReader(kube_client, ttl=60)
    with serve_app(lambda guard: create_app(guard=guard, portal=reader)) as s:
        yield s, kube_api


def test_runs_board_uses_taus_status_interpreter(portal: tuple[Served, KubeApiServer]) -> None:
    served, _ = portal
    status, body = served.json("/api/portal/runs")
    assert status == 200 and body["total"] == 1
    run = body["runs"][0]
    assert (run["name"], run["namespace"], run["kind"]) == ("train", "research", "Job")
    assert run["phase"] == "Image pull" and run["owner"] == "researcher"
    assert "ImagePull" in run["reason"] or "image" in run["reason"].lower()
    assert run["queue"] == "jobqueue" and run["pods"] == 1


def test_queue_nodes_and_ray_boards(portal: tuple[Served, KubeApiServer]) -> None:
    served, _ = portal
    status, jobs = served.json("/api/portal/jobs")
    assert status == 200
    assert jobs["clusterQueues"][0]["gpuUsed"] == 8 and jobs["clusterQueues"][0]["gpuQuota"] == 16
    assert jobs["localQueues"][0]["clusterQueue"] == "tau-cq"
    assert [p["name"] for p in jobs["pending"]] == ["job-waiting"]
    assert "insufficient nvidia.com/gpu" in jobs["pending"][0]["reason"]
    status, nodes = served.json("/api/portal/nodes")
    assert status == 200 and [n["name"] for n in nodes["nodes"]] == ["aks-h100-0"]
    node = nodes["nodes"][0]
    assert node["gpuClass"] == "h100" and node["gpuCapacity"] == 8 and node["gpuAllocatable"] == 7
    assert node["health"] == {"tau.azure.com/gpu-health": "healthy"}
    status, ray = served.json("/api/portal/ray")
    assert status == 200 and ray["clusters"][0]["availableWorkers"] == 1
    status, overview = served.json("/api/portal/overview")
    assert overview["cards"]["fleet"] == {
        "totalNodes": 2,
        "readyNodes": 2,
        "gpuNodes": 1,
        "totalGPUs": 8,
        # Contract §10's fleet card: every node's cores and memory (the system node reports no
        # memory: it adds nothing, it is not zero), and the GPU nodes' most common VM size.
        "totalCPUCores": 104,
        "totalMemoryGiB": 1800.0,
        "topSKU": "Standard_ND96isr_H100_v5",
    }
    assert overview["cards"]["queue"]["pending"] == 1
    assert (
        overview["cards"]["health"] is None
        and "not configured" in overview["cards"]["healthUnavailable"]
    )
    assert [r["name"] for r in overview["running"]] == ["train"]


def test_one_refresh_is_eight_calls_and_is_shared(portal: tuple[Served, KubeApiServer]) -> None:
    served, kube_api = portal
    kube_api.reset_requests()
    for path in (
        "/api/portal/runs",
        "/api/portal/jobs",
        "/api/portal/nodes",
        "/portal",
        "/api/portal/overview",
    ):
        assert served.get(path)[0] == 200
    assert kube_api.count_requests("GET") == 8


@pytest.mark.parametrize("board", ["cluster", "cost", "nodeutil"])
def test_kusto_boards_are_not_configured(portal: tuple[Served, KubeApiServer], board: str) -> None:
    served, _ = portal
    status, body = served.json(f"/api/portal/{board}")
    assert status == 503 and body["code"] == "SOURCE_UNAVAILABLE"
    assert body["detail"].startswith("not configured")


def test_missing_kueue_crds_disable_only_the_queue_board(
    kube_api: KubeApiServer, kube_client: Any
) -> None:
    load(kube_api, cluster_objects(), crds=False)
    reader = ClusterReader(kube_client)
    with serve_app(lambda guard: create_app(guard=guard, portal=reader)) as served:
        status, body = served.json("/api/portal/jobs")
        assert (
            status == 503 and "kueue.x-k8s.io" in body["detail"] and "not served" in body["detail"]
        )
        status, runs = served.json("/api/portal/runs")
        assert status == 200 and runs["total"] == 1 and runs["partial"]
        assert served.json("/api/portal/nodes")[0] == 200
        assert served.json("/api/portal/ray")[0] == 503
        status, _, page = served.get("/portal")
        assert status == 200 and b"not served" in page and b"train" in page


def test_forbidden_nodes_disable_the_nodes_board(kube_api: KubeApiServer, kube_client: Any) -> None:
    load(kube_api, cluster_objects())
    kube_api.deny(403, path_prefix="/api/v1/nodes")
    with serve_app(
        lambda guard: create_app(guard=guard, portal=ClusterReader(kube_client))
    ) as served:
        status, body = served.json("/api/portal/nodes")
        assert status == 503 and body["detail"].startswith("Node capacity and health need read")
        assert served.json("/api/portal/runs")[0] == 200


def test_a_namespaced_researcher_sees_what_their_role_allows_and_who_has_the_rest(
    kube_api: KubeApiServer, kube_client: Any
) -> None:
    """A researcher's role reads its namespace, not Nodes or ClusterQueues: the boards show
    the runs, LocalQueues and workloads, and say in one line which access the rest needs and
    that the platform operator has it, never the API server's raw 403."""
    load(kube_api, cluster_objects())
    kube_api.deny(403, path_prefix="/api/v1/nodes")
    kube_api.deny(403, path_prefix="/apis/kueue.x-k8s.io/v1beta2/clusterqueues")
    with serve_app(
        lambda guard: create_app(guard=guard, portal=ClusterReader(kube_client))
    ) as served:
        status, jobs = served.json("/api/portal/jobs")
        assert status == 200 and jobs["localQueues"] and jobs["clusterQueues"] == []
        line = jobs["clusterQueuesUnavailable"]
        assert line.startswith("ClusterQueue quota and usage need read access to ClusterQueue")
        assert "across the cluster" in line and "platform operator" in line
        status, overview = served.json("/api/portal/overview")
        queue = overview["cards"]["queue"]
        assert status == 200 and queue["gpuUsed"] is None and queue["quotaUnavailable"] == line
        assert "platform operator" in overview["cards"]["fleetUnavailable"]
        status, _, page = served.get("/portal")
        text = page.decode()
        assert status == 200 and "platform operator" in text
        assert "403" not in text and "forbidden" not in text.lower()


def test_without_a_cluster_every_board_says_why(tmp_path: Path) -> None:
    reader = ClusterReader(None, unavailable="no workspace connection")
    with serve_app(lambda guard: create_app(guard=guard, portal=reader)) as served:
        for board in ("runs", "jobs", "nodes", "ray"):
            status, body = served.json(f"/api/portal/{board}")
            assert status == 503 and "no Kubernetes access" in body["detail"]
        status, overview = served.json("/api/portal/overview")
        assert status == 200 and overview["cards"]["fleet"] is None
        status, _, page = served.get("/portal")
        assert status == 200 and b"no workspace connection" in page
        assert served.get("/")[1]["location"] == "/portal"
        assert served.json("/healthz") == (200, {"status": "ok"})
