"""`tau.status.fetch` against the local API emulator, playing Kueue, the Job controller, kubelet."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client

from tau.errors import ClusterError
from tau.status.fetch import fetch
from tau.status.interpret import interpret
from tau.status.model import PhaseStatus, State

NS = "default"
NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train", "labels": {"kueue.x-k8s.io/queue-name": "jobqueue"}},
    "spec": {
        "suspend": True,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "trainer", "image": "img:1"}],
            }
        },
    },
}


def submit_job(kube_client) -> dict:
    created = client.BatchV1Api(kube_client).create_namespaced_job(NS, JOB)
    return {"uid": created.metadata.uid}


def kueue_admits(kube_api, uid: str, admitted: bool = True) -> None:
    kube_api.put(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-train-abcde",
                "namespace": NS,
                "labels": {"kueue.x-k8s.io/job-uid": uid},
            },
            "spec": {
                "queueName": "jobqueue",
                "podSets": [{"name": "main", "count": 1, "template": {}}],
            },
        }
    )
    conditions = (
        [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"},
        ]
        if admitted
        else [
            {
                "type": "QuotaReserved",
                "status": "False",
                "reason": "Pending",
                "message": "insufficient quota for nvidia.com/gpu in flavor h100",
            }
        ]
    )
    kube_api.set_status(
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        "job-train-abcde",
        {"conditions": conditions, "admission": {"clusterQueue": "tau-cq"}},
        namespace=NS,
    )


def kubelet_runs(kube_api, count: int) -> None:
    for index in range(count):
        kube_api.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"train-{index}-x",
                    "namespace": NS,
                    "labels": {"job-name": "train"},
                },
                "spec": {
                    "nodeName": f"node-{index % 4}",
                    "containers": [{"name": "trainer", "image": "img:1"}],
                },
                "status": {
                    "phase": "Running",
                    "conditions": [
                        {"type": "PodScheduled", "status": "True"},
                        {"type": "Ready", "status": "True"},
                    ],
                    "containerStatuses": [
                        {
                            "name": "trainer",
                            "image": "img:1",
                            "imageID": "img@sha256:1",
                            "ready": True,
                            "restartCount": 0,
                            "state": {"running": {}},
                        }
                    ],
                },
            }
        )


@pytest.fixture
def cluster(kube_api):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.register_kind("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim")
    return kube_api


def test_not_found_when_neither_job_nor_rayjob_exists(cluster, kube_client):
    snapshot = fetch(kube_client, NS, "train")
    assert snapshot.job is None and snapshot.rayjob is None
    assert interpret(snapshot, NOW).state is State.NOT_FOUND


def test_rayjob_crd_missing_means_not_a_ray_cluster_not_an_error(kube_api, kube_client):
    kube_api.register_kind("kueue.x-k8s.io", "v1beta2", "workloads", "Workload")
    info = submit_job(kube_client)
    kueue_admits(kube_api, info["uid"])
    snapshot = fetch(kube_client, NS, "train")
    assert snapshot.job is not None and snapshot.rayjob is None
    assert snapshot.errors == ()


def test_queued_job_is_interpreted_from_the_fetched_workload(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"], admitted=False)
    status = interpret(fetch(kube_client, NS, "train"), NOW)
    assert status.state is State.QUEUED
    assert [d.code for d in status.diagnostics] == ["QuotaPending"]


def test_running_job_with_pods_is_running(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    kubelet_runs(cluster, 3)
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "train-0-x.1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "train-0-x", "namespace": NS},
            "reason": "Pulled",
            "message": "pulled",
            "type": "Normal",
        }
    )
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "other.1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "someone-else", "namespace": NS},
            "reason": "Evicted",
            "message": "not ours",
            "type": "Warning",
        }
    )
    client.BatchV1Api(kube_client).patch_namespaced_job("train", NS, {"spec": {"suspend": False}})
    snapshot = fetch(kube_client, NS, "train")
    assert len(snapshot.pods) == 3 and len(snapshot.workloads) == 1
    assert [e["reason"] for e in snapshot.events] == ["Pulled"]
    status = interpret(snapshot, NOW)
    assert status.state is State.RUNNING
    assert all(p.status in (PhaseStatus.DONE, PhaseStatus.SKIPPED) for p in status.phases)


def test_forbidden_pod_list_soft_fails_into_errors(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    cluster.deny(403, path_prefix=f"/api/v1/namespaces/{NS}/pods")
    snapshot = fetch(kube_client, NS, "train")
    assert snapshot.pods == ()
    assert snapshot.errors and snapshot.errors[0].startswith("pods: 403")
    assert interpret(snapshot, NOW).diagnostics[0].code == "PartialObservation"


def test_forbidden_job_read_raises_instead_of_claiming_not_found(cluster, kube_client):
    cluster.deny(403, path_prefix="/apis/batch/v1/")
    with pytest.raises(ClusterError):
        fetch(kube_client, NS, "train")


def test_rayjob_pods_are_found_by_cluster_label(cluster, kube_client):
    cluster.put(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "ray-train", "namespace": NS},
            "spec": {"entrypoint": "python train.py"},
            "status": {
                "jobDeploymentStatus": "Running",
                "jobStatus": "RUNNING",
                "rayClusterName": "ray-train-rc",
            },
        }
    )
    cluster.put(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": {"name": "ray-train-rc", "namespace": NS},
            "status": {"state": "ready"},
        }
    )
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "ray-train-rc-head",
                "namespace": NS,
                "labels": {"ray.io/cluster": "ray-train-rc"},
            },
            "spec": {"containers": [{"name": "ray-head", "image": "ray:2"}]},
        }
    )
    snapshot = fetch(kube_client, NS, "ray-train")
    assert snapshot.raycluster is not None
    assert [p["metadata"]["name"] for p in snapshot.pods] == ["ray-train-rc-head"]
    assert interpret(snapshot, NOW).kind == "RayJob"


def test_dra_claims_of_the_pods_are_fetched(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    cluster.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train-0-x", "namespace": NS, "labels": {"job-name": "train"}},
            "spec": {
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
                "containers": [{"name": "trainer", "image": "img:1"}],
            },
            "status": {
                "phase": "Pending",
                "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "train-0-x-gpu-1"}],
            },
        }
    )
    for name in ("train-0-x-gpu-1", "unrelated-claim"):
        cluster.put(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": NS},
                "spec": {},
            }
        )
    snapshot = fetch(kube_client, NS, "train")
    assert [c["metadata"]["name"] for c in snapshot.resource_claims] == ["train-0-x-gpu-1"]
    dra = next(p for p in interpret(snapshot, NOW).phases if p.name.value == "DRA allocation")
    assert dra.status is PhaseStatus.ACTIVE


def test_request_count_is_the_same_for_3_and_50_pods(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    kubelet_runs(cluster, 3)
    cluster.reset_requests()
    assert len(fetch(kube_client, NS, "train").pods) == 3
    with_3 = cluster.count_requests()
    kubelet_runs(cluster, 50)
    cluster.reset_requests()
    assert len(fetch(kube_client, NS, "train").pods) == 50
    with_50 = cluster.count_requests()
    # Job, RayJob, Workloads, Pods, Events: five GETs however many pods there are.
    assert with_3 == with_50 == cluster.count_requests("GET") == 5


def test_a_failed_container_s_last_lines_are_read_and_a_running_one_costs_nothing(
    cluster, kube_client
):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    kubelet_runs(cluster, 1)
    cluster.set_pod_log("train-0-x", "step 1\nNo space left on device\n", NS, "trainer")
    cluster.reset_requests()
    assert fetch(kube_client, NS, "train").last_lines == ()
    assert not [r for r in cluster.requests if r.path.endswith("/log")]
    pod = cluster.get_object("v1", "Pod", "train-0-x", namespace=NS)
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1}}
    cluster.put(pod)
    snapshot = fetch(kube_client, NS, "train")
    assert snapshot.last_lines == (("train-0-x", "trainer", "step 1\nNo space left on device\n"),)
    (read,) = [r for r in cluster.requests if r.path.endswith("/log")]
    assert read.query.get("tailLines") == "20"


def test_the_preemptor_named_by_uid_in_kueues_message_is_read_by_name(cluster, kube_client):
    info = submit_job(kube_client)
    kueue_admits(cluster, info["uid"])
    victim = cluster.get_object("kueue.x-k8s.io/v1beta2", "Workload", "job-train-abcde", NS)
    message = (
        "Preempted to accommodate a workload (UID: w-1, JobUID: 0f6e-high) due to "
        "prioritization in the ClusterQueue; preemptor path: /realqueue; preemptee path: /realqueue"
    )
    victim["status"]["conditions"] = [
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": message}
    ]
    cluster.put(victim)
    cluster.put(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-high-x",
                "namespace": NS,
                "labels": {"kueue.x-k8s.io/job-uid": "0f6e-high"},
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "high", "uid": "0f6e-high"}
                ],
            },
            "spec": {"queueName": "jobqueue", "podSets": []},
        }
    )
    snapshot = fetch(kube_client, NS, "train")
    assert snapshot.preemptors == (("0f6e-high", f"Job {NS}/high"),)
