"""What each read-only lifecycle verb asks the API server, and over how many connections.

The requests of `tau run status|list|get|logs` are the cost a researcher waits for on every
call: each verb's requests are pinned here (against the local API emulator, which records
them), and all of one command's requests share one keep-alive connection.
"""

from __future__ import annotations

import shlex

import pytest

from tau import cli
from tau.k8s import meta
from tests.kubeapi.server import KubeApiServer

JOB = "/apis/batch/v1/namespaces/team/jobs"
RAYJOB = "/apis/ray.io/v1/namespaces/team/rayjobs"
PODS = "/api/v1/namespaces/team/pods"


@pytest.fixture
def cluster(kube_api: KubeApiServer, emulator_env) -> KubeApiServer:
    """A Job `done` with one pod and its log, in namespace team."""
    kube_api.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "done",
                "namespace": "team",
                "labels": {meta.LABEL_MANAGED_BY: "tau"},
            },
            "spec": {},
        }
    )
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "done-0", "namespace": "team", "labels": {"job-name": "done"}},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
        }
    )
    kube_api.set_pod_log("team", "done-0", "hello\n")
    return kube_api


def requests_of(cluster: KubeApiServer, line: str) -> list[str]:
    """Run `tau LINE`; the requests it made, as "METHOD path", after checking it used one
    connection for all of them.
    """
    cluster.reset_requests()
    before = cluster.connections_accepted
    cli.main([*shlex.split(line), "-n", "team", "--context", "emulator"])
    made = [f"{r.method} {r.path}" for r in cluster.requests]
    assert cluster.connections_accepted - before == 1, (line, made)
    return made


def test_get_reads_the_run_as_rayjob_then_job(cluster: KubeApiServer) -> None:
    assert requests_of(cluster, "run get done") == [f"GET {RAYJOB}/done", f"GET {JOB}/done"]


def test_list_reads_one_list_of_each_kind(cluster: KubeApiServer) -> None:
    assert requests_of(cluster, "run list") == [f"GET {JOB}", f"GET {RAYJOB}"]


def test_logs_reads_the_run_its_pods_and_each_log(cluster: KubeApiServer) -> None:
    assert requests_of(cluster, "run logs done") == [
        f"GET {RAYJOB}/done",
        f"GET {JOB}/done",
        f"GET {PODS}",
        f"GET {PODS}/done-0/log",
    ]


def test_status_of_a_job_reads_a_fixed_set_of_kinds(cluster: KubeApiServer) -> None:
    assert requests_of(cluster, "run status done") == [
        f"GET {JOB}/done",
        f"GET {RAYJOB}/done",
        "GET /apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads",
        f"GET {PODS}",
        "GET /api/v1/namespaces/team/events",
    ]
