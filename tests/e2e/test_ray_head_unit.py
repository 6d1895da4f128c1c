"""The fake Ray head (tests/e2e/controlplane/ray_head.py) answers what KubeRay v1.5.0 asks.

None of these tests needs a cluster. A stub state source stands in for the cluster, and a real
HTTP client reaches the server as its proxy, as the operator does. The last tests run
:class:`KubeStateSource` against the in-process API emulator (tests/kubeapi).

Field names are the json tags of KubeRay's Go structs in
ray-operator@v1.5.0/controllers/ray/utils/types/: ``RayJobInfo``, ``RayJobResponse``,
``RayJobStopResponse``, ``RayJobLogsResponse`` (dashboard_httpclient.go) and ``ServeDetails``,
``ServeApplicationDetails``, ``ServeDeploymentDetails`` (serve_api_models.go).
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controlplane.ray_head import (
    FakeRayHead,
    JobOutcome,
    KubeStateSource,
    LoggedRequest,
    StateUnavailable,
)

NS = "team"
SVC = "raycluster-x-head-svc"
HOST = f"{SVC}.{NS}.svc.cluster.local:8265"  # RayJob.status.dashboardURL
DASHBOARD = f"http://{HOST}"
JOB = "rayjob-x-abc12"
T0 = 1_700_000_000.0

# The json tags of RayJobInfo that KubeRay reads.
RAY_JOB_INFO_TAGS = {
    "error_type",
    "metadata",
    "runtime_env",
    "status",
    "entrypoint",
    "job_id",
    "submission_id",
    "message",
    "start_time",
    "end_time",
}


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """No test may reach past 127.0.0.1, even if a proxy bypass sent a request direct."""
    for name in ("NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    real = socket.create_connection

    def guarded(address, *args, **kwargs):
        assert address[0] in ("127.0.0.1", "localhost"), f"outbound connection to {address}"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", guarded)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Stub:
    """A state source with outcomes set by the test, recording what it was asked."""

    def __init__(self) -> None:
        self.outcomes: dict[tuple[str, str, str], JobOutcome | Exception | None] = {}
        self.calls: list[tuple[str, str, str]] = []

    def set(self, submission_id: str, outcome: JobOutcome | Exception | None) -> None:
        self.outcomes[(NS, SVC, submission_id)] = outcome

    def __call__(self, namespace: str, service: str, submission_id: str) -> JobOutcome | None:
        self.calls.append((namespace, service, submission_id))
        outcome = self.outcomes.get((namespace, service, submission_id))
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stub() -> Stub:
    return Stub()


@pytest.fixture
def head(stub, clock):
    with FakeRayHead(stub, clock=clock) as server:
        yield server


@dataclass
class Response:
    status: int
    content_type: str
    body: bytes

    def json(self) -> Any:
        assert self.content_type.startswith("application/json"), self.content_type
        return json.loads(self.body)


def call(head: FakeRayHead, method: str, url: str, body: Any = None) -> Response:
    """One request through the fake head as an HTTP proxy, as Go's http.Client sends it."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": head.proxy_url}))
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with opener.open(request, timeout=5) as response:
            return Response(response.status, response.headers["Content-Type"], response.read())
    except urllib.error.HTTPError as error:
        with error:
            return Response(error.code, error.headers["Content-Type"], error.read())


def job_url(submission_id: str, suffix: str = "") -> str:
    return f"{DASHBOARD}/api/jobs/{submission_id}{suffix}"  # dashboardclient.JobPath + id


# ---------------------------------------------------------------------- lifecycle


def test_start_binds_loopback_and_stop_releases_the_port(stub):
    server = FakeRayHead(stub)
    with pytest.raises(RuntimeError):
        _ = server.proxy_url
    port = server.start()
    assert server.proxy_url == f"http://127.0.0.1:{port}"
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


# ---------------------------------------------------------------------- Jobs API: GetJobInfo


def test_get_job_info_has_the_ray_job_info_fields(head, stub):
    stub.set(JOB, JobOutcome("RUNNING", start_time=1234, entrypoint="python main.py"))
    reply = call(head, "GET", job_url(JOB))
    assert reply.status == 200
    info = reply.json()
    assert info.keys() >= RAY_JOB_INFO_TAGS
    assert info["status"] == "RUNNING"  # RayJobInfo.JobStatus
    assert info["submission_id"] == JOB  # RayJobInfo.SubmissionId
    assert info["start_time"] == 1234  # RayJobInfo.StartTime (uint64 milliseconds)
    assert info["end_time"] is None  # RayJobInfo.EndTime: null decodes to 0 in Go
    assert info["entrypoint"] == "python main.py"
    assert info["message"] == "Job is currently running."
    assert stub.calls == [(NS, SVC, JOB)]


def test_an_unknown_job_is_404_which_kuberay_turns_into_bad_request(head, stub):
    stub.set(JOB, None)
    reply = call(head, "GET", job_url(JOB))
    assert reply.status == 404
    assert "error" in reply.json()


def test_job_state_follows_the_source_until_terminal_then_stays(head, stub, clock):
    stub.set(JOB, JobOutcome("PENDING"))
    pending = call(head, "GET", job_url(JOB)).json()
    assert pending["status"] == "PENDING" and pending["start_time"] is None

    clock.now = T0 + 5
    stub.set(JOB, JobOutcome("RUNNING"))
    running = call(head, "GET", job_url(JOB)).json()
    # No start time from the source: the time the head first saw the job.
    assert running["status"] == "RUNNING" and running["start_time"] == int(T0 * 1000)

    clock.now = T0 + 9
    stub.set(JOB, JobOutcome("FAILED", "exit status 1"))
    failed = call(head, "GET", job_url(JOB)).json()
    assert failed["status"] == "FAILED"
    assert failed["message"] == "exit status 1"  # copied to RayJob.status.message
    assert failed["end_time"] == int((T0 + 9) * 1000)

    # Ray never leaves a terminal status, whatever the cluster says next.
    stub.set(JOB, JobOutcome("RUNNING"))
    assert call(head, "GET", job_url(JOB)).json() == failed


def test_a_state_source_failure_is_an_error_kuberay_cannot_parse_as_a_job(head, stub):
    stub.set(JOB, StateUnavailable("no head pod"))
    unavailable = call(head, "GET", job_url(JOB))
    assert unavailable.status == 503 and unavailable.content_type.startswith("text/plain")
    assert b"no head pod" in unavailable.body

    stub.set(JOB, RuntimeError("API server down"))
    broken = call(head, "GET", job_url(JOB))
    assert broken.status == 500 and broken.content_type.startswith("text/plain")
    with pytest.raises(ValueError):
        json.loads(broken.body)  # GetJobInfo fails to unmarshal it and requeues


# ---------------------------------------------------------------------- Jobs API: HTTPMode


def submit_request(submission_id: str) -> dict[str, Any]:
    """The body of dashboardclient.ConvertRayJobToReq: json tags of RayJobRequest."""
    return {
        "entrypoint": "bash -c 'python3 /script/main.py'",
        "submission_id": submission_id,
        "metadata": {"owner": "tau"},
        "runtime_env": {"working_dir": "file:///script/project.zip"},
        "entrypoint_num_cpus": 1,
    }


def test_http_mode_is_404_then_submitted_then_runs_for_its_time(head, stub, clock):
    stub.set(JOB, JobOutcome("SUCCEEDED", needs_submission=True, after_seconds=2.0))
    assert call(head, "GET", job_url(JOB)).status == 404  # so KubeRay submits

    clock.now = T0 + 1
    submitted = call(head, "POST", f"{DASHBOARD}/api/jobs/", submit_request(JOB))
    assert submitted.status == 200
    assert submitted.json()["job_id"] == JOB  # RayJobResponse.JobId
    assert head.submission(NS, SVC, JOB)["entrypoint"].startswith("bash")

    clock.now = T0 + 2
    running = call(head, "GET", job_url(JOB)).json()
    assert running["status"] == "RUNNING"
    assert running["start_time"] == int((T0 + 1) * 1000)
    assert running["metadata"] == {"owner": "tau"}
    assert running["runtime_env"] == {"working_dir": "file:///script/project.zip"}

    clock.now = T0 + 3.5
    done = call(head, "GET", job_url(JOB)).json()
    assert done["status"] == "SUCCEEDED"
    assert done["end_time"] == int((T0 + 3) * 1000)  # two seconds after the submission


def test_a_second_submission_gets_the_error_kuberay_matches(head, stub):
    call(head, "POST", f"{DASHBOARD}/api/jobs/", submit_request(JOB))
    again = call(head, "POST", f"{DASHBOARD}/api/jobs/", submit_request(JOB))
    assert again.status == 500
    assert b"Please use a different submission_id" in again.body  # SubmitJobReq checks this


def test_a_submission_without_an_id_gets_one_and_bad_bodies_are_400(head):
    reply = call(head, "POST", f"{DASHBOARD}/api/jobs/", {"entrypoint": "echo hi"})
    assert reply.status == 200
    assert reply.json()["submission_id"].startswith("raysubmit_")
    assert call(head, "POST", f"{DASHBOARD}/api/jobs/", b"not json").status == 400
    assert call(head, "POST", f"{DASHBOARD}/api/jobs/", {"metadata": {}}).status == 400


# ---------------------------------------------------------------------- stop, delete, list, logs


def test_stop_stops_a_running_job_once(head, stub, clock):
    stub.set(JOB, JobOutcome("RUNNING"))
    clock.now = T0 + 4
    first = call(head, "POST", job_url(JOB, "/stop"))
    assert first.status == 200 and first.json() == {"stopped": True}  # RayJobStopResponse
    info = call(head, "GET", job_url(JOB)).json()
    assert info["status"] == "STOPPED"
    assert info["message"] == "Job was intentionally stopped."
    assert info["end_time"] == int((T0 + 4) * 1000)
    # Terminal: StopJob then reads the job and accepts the terminal status.
    assert call(head, "POST", job_url(JOB, "/stop")).json() == {"stopped": False}
    stub.set("nobody", None)
    assert call(head, "POST", job_url("nobody", "/stop")).status == 404


def test_delete_refuses_a_live_job_and_forgets_an_ended_one(head, stub):
    stub.set(JOB, JobOutcome("RUNNING"))
    assert call(head, "DELETE", job_url(JOB)).status == 400
    call(head, "POST", job_url(JOB, "/stop"))
    deleted = call(head, "DELETE", job_url(JOB))
    assert deleted.status == 200 and deleted.json() == {"deleted": True}
    assert call(head, "GET", job_url(JOB)).status == 404


def test_list_jobs_and_job_logs(head, stub):
    stub.set(JOB, JobOutcome("RUNNING"))
    call(head, "GET", job_url(JOB))
    listed = call(head, "GET", f"{DASHBOARD}/api/jobs/")
    assert listed.status == 200
    assert [job["submission_id"] for job in listed.json()] == [JOB]  # []RayJobInfo
    logs = call(head, "GET", job_url(JOB, "/logs"))
    assert logs.status == 200 and logs.json() == {"logs": ""}  # RayJobLogsResponse.Logs
    stub.set("nobody", None)
    assert call(head, "GET", job_url("nobody", "/logs")).status == 404


# ---------------------------------------------------------------------- Serve API


SERVE_CONFIG = {  # RayService.spec.serveConfigV2 as KubeRay PUTs it (JSON of the YAML)
    "http_options": {"host": "0.0.0.0", "port": 8000},
    "applications": [
        {
            "name": "llm",
            "route_prefix": "/v1",
            "import_path": "serve_app:app",
            "deployments": [{"name": "LLMServer", "num_replicas": 1}, {"name": "Router"}],
        },
        {"import_path": "other:app"},
    ],
}


def test_serve_applications_are_empty_until_put_then_running_and_healthy(head):
    details_url = f"{DASHBOARD}/api/serve/applications/?api_type=declarative"
    empty = call(head, "GET", details_url)
    assert empty.status == 200 and empty.json()["applications"] == {}

    put = call(head, "PUT", f"{DASHBOARD}/api/serve/applications/", SERVE_CONFIG)
    assert put.status == 200
    assert head.serve_config(NS, SVC) == SERVE_CONFIG

    details = call(head, "GET", details_url).json()  # ServeDetails
    assert details["deploy_mode"] == "MULTI_APP"  # ServeDetails.DeployMode
    apps = details["applications"]  # ServeDetails.Applications
    assert set(apps) == {"llm", "default"}
    llm = apps["llm"]  # ServeApplicationDetails
    assert llm["name"] == "llm" and llm["status"] == "RUNNING" and llm["message"] == ""
    assert llm["route_prefix"] == "/v1"
    assert llm["deployments"] == {  # ServeDeploymentDetails: name, status, message
        name: {
            "name": name,
            "status": "HEALTHY",
            "status_trigger": "CONFIG_UPDATE_COMPLETED",
            "message": "",
        }
        for name in ("LLMServer", "Router")
    }
    assert apps["default"]["deployments"] == {}

    # Another head Service is another Ray head.
    other = "http://rs-raycluster-y-head-svc.team.svc.cluster.local:8265"
    assert call(head, "GET", f"{other}/api/serve/applications/").json()["applications"] == {}


def test_serve_put_rejects_what_is_not_a_deploy_schema(head):
    url = f"{DASHBOARD}/api/serve/applications/"
    assert call(head, "PUT", url, b"{").status == 400
    assert call(head, "PUT", url, {"apps": []}).status == 400


def test_the_serve_proxy_health_check_on_a_pod_ip_is_success(head):
    # RayHttpProxyClient: http://<podIP>:<serve port>/ + "-/healthz", 200 means healthy.
    reply = call(head, "GET", "http://10.244.1.7:8000/-/healthz")
    assert reply.status == 200 and reply.body == b"success"
    assert call(head, "GET", "http://10.244.1.7:8000/api/jobs/x").status == 404


# ---------------------------------------------------------------------- refusals, 404s, the log


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/api/jobs/x",
        "http://raycluster-x-head-svc.team.svc.cluster.local.example.com:8265/api/jobs/x",
        "http://raycluster-x-head-svc.svc.cluster.local:8265/api/jobs/x",
        "http://localhost:8265/api/jobs/x",
    ],
)
def test_a_target_that_is_not_a_service_or_an_ip_is_refused_with_502(head, stub, url):
    reply = call(head, "GET", url)
    assert reply.status == 502
    assert "refusing" in reply.json()["error"]
    assert stub.calls == []


def raw(head: FakeRayHead, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", head.port), timeout=5) as sock:
        sock.sendall(request)
        return b"".join(iter(lambda: sock.recv(4096), b""))  # until the server closes


def test_an_origin_form_request_is_not_a_proxy_request(head):
    reply = raw(head, b"GET /api/jobs/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert reply.startswith(b"HTTP/1.0 400")


def test_a_tunnel_is_refused(head):
    reply = raw(head, b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
    assert reply.startswith(b"HTTP/1.0 502")
    assert head.requests == [LoggedRequest("CONNECT", "example.com:443", "", 502)]


def test_unknown_paths_are_json_404_and_wrong_methods_405(head):
    missing = call(head, "GET", f"{DASHBOARD}/api/cluster_status")
    assert missing.status == 404 and "error" in missing.json()
    assert call(head, "POST", f"{DASHBOARD}/api/version").status == 405
    assert call(head, "PUT", job_url(JOB)).status == 405


def test_version(head):
    reply = call(head, "GET", f"{DASHBOARD}/api/version")
    assert reply.status == 200 and reply.json()["version"] == "4"


def test_every_request_is_logged_with_method_host_path_and_status(head, stub):
    stub.set(JOB, JobOutcome("RUNNING"))
    call(head, "GET", job_url(JOB))
    call(head, "GET", f"{DASHBOARD}/api/serve/applications/?api_type=declarative")
    call(head, "GET", "http://example.com/")
    assert head.requests == [
        LoggedRequest("GET", HOST, f"/api/jobs/{JOB}", 200),
        LoggedRequest("GET", HOST, "/api/serve/applications/?api_type=declarative", 200),
        LoggedRequest("GET", "example.com", "/", 502),
    ]


# ---------------------------------------------------------------------- KubeStateSource


CLUSTER = "rayjob-x-raycluster-abcde"
CLUSTER_SVC = f"{CLUSTER}-head-svc"


def raycluster(env: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "ray-head", "image": "rayproject/ray:2.56.0"}
    if env:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": CLUSTER,
            "namespace": NS,
            "ownerReferences": [
                {"apiVersion": "ray.io/v1", "kind": "RayJob", "name": "rayjob-x", "uid": "u1"}
            ],
            **meta,
        },
        "spec": {"headGroupSpec": {"template": {"spec": {"containers": [container]}}}},
        "status": {"head": {"serviceName": CLUSTER_SVC}},
    }


def rayjob(mode: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rayjob-x", "namespace": NS, **meta},
        "spec": {"submissionMode": mode, "entrypoint": "python main.py"},
        "status": {"jobId": JOB, "rayClusterName": CLUSTER},
    }


def pod(name: str, labels: dict[str, str], phase: str, statuses: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": phase, **({"containerStatuses": statuses} if statuses else {})},
    }


HEAD_LABELS = {"ray.io/cluster": CLUSTER, "ray.io/node-type": "head"}


@pytest.fixture
def source(kube_api, kubeconfig_file):
    kube_api.register_kueue_kuberay_tau_kinds()
    state = KubeStateSource(kubeconfig_file, "emulator")
    yield state
    state.close()


def test_kube_source_k8s_job_mode_follows_the_submitter_job(kube_api, source):
    kube_api.put(raycluster())
    kube_api.put(rayjob("K8sJobMode"))
    assert source(NS, CLUSTER_SVC, JOB) is None  # no submitter Job: nothing was submitted
    assert source(NS, "other-head-svc", JOB) is None
    assert source(NS, CLUSTER_SVC, "another-id") is not None  # a job POSTed to the cluster

    selector = {"batch.kubernetes.io/controller-uid": "job-uid"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "rayjob-x", "namespace": NS},  # named after the RayJob
        "spec": {
            "selector": {"matchLabels": selector},
            "template": {"spec": {"containers": [{"name": "ray-job-submitter", "image": "i"}]}},
        },
        "status": {"startTime": "2026-01-01T00:00:00Z"},
    }
    kube_api.put(job)
    pending = source(NS, CLUSTER_SVC, JOB)
    assert pending.status == "PENDING" and pending.entrypoint == "python main.py"
    assert not pending.needs_submission

    kube_api.put(pod("rayjob-x-abcde", selector, "Running"))
    running = source(NS, CLUSTER_SVC, JOB)
    assert running.status == "RUNNING" and running.start_time == 1767225600000

    failed = {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}
    failed["message"] = "Job has reached the specified backoff limit"
    kube_api.set_status("batch/v1", "Job", "rayjob-x", {"conditions": [failed]}, NS)
    outcome = source(NS, CLUSTER_SVC, JOB)
    assert (outcome.status, outcome.message) == ("FAILED", failed["message"])

    complete = {"type": "Complete", "status": "True"}
    kube_api.set_status("batch/v1", "Job", "rayjob-x", {"conditions": [complete]}, NS)
    assert source(NS, CLUSTER_SVC, JOB).status == "SUCCEEDED"


@pytest.mark.parametrize(
    ("env", "phase", "expected"),
    [
        ({}, "Running", ("SUCCEEDED", 2.0)),
        ({"E2E_OUTCOME": "fail"}, "Running", ("FAILED", 1.0)),
        ({"E2E_OUTCOME": "hold"}, "Running", ("RUNNING", 0.0)),
        ({"E2E_OUTCOME": "hold"}, "Pending", ("PENDING", 0.0)),
        ({"E2E_OUTCOME": "hold"}, "Failed", ("FAILED", 0.0)),
        ({}, None, ("SUCCEEDED", 2.0)),  # KubeRay deleted the head pod: the env still says
    ],
)
def test_kube_source_http_mode_driver_runs_on_the_head(kube_api, source, env, phase, expected):
    kube_api.put(raycluster(env))
    kube_api.put(rayjob("HTTPMode"))
    if phase:
        kube_api.put(pod("head", HEAD_LABELS, phase))
    outcome = source(NS, CLUSTER_SVC, JOB)
    assert outcome.needs_submission
    assert (outcome.status, outcome.after_seconds) == expected


def test_kube_source_held_driver_ends_by_the_rayjob_annotation(kube_api, source):
    kube_api.put(raycluster({"E2E_OUTCOME": "hold"}))
    kube_api.put(rayjob("HTTPMode"))
    with pytest.raises(StateUnavailable):
        source(NS, CLUSTER_SVC, JOB)  # no head pod, and nothing decided the driver's end
    kube_api.put(rayjob("HTTPMode", annotations={"tau-e2e/finish": "failed"}))
    assert source(NS, CLUSTER_SVC, JOB).status == "FAILED"


def test_kube_source_sidecar_mode_reads_the_submitter_container(kube_api, source):
    kube_api.put(raycluster())
    kube_api.put(rayjob("SidecarMode"))
    terminated = {"exitCode": 1, "reason": "Error", "finishedAt": "2026-01-01T00:00:05Z"}
    statuses = [
        {
            "name": "ray-job-submitter",
            "image": "i",
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": terminated},
        }
    ]
    kube_api.put(pod("head", HEAD_LABELS, "Running", statuses))
    outcome = source(NS, CLUSTER_SVC, JOB)
    assert outcome.status == "FAILED" and "exited with code 1" in outcome.message
    assert outcome.end_time == 1767225605000


def test_http_mode_end_to_end_through_the_kube_source(kube_api, source, clock):
    kube_api.put(raycluster())
    kube_api.put(rayjob("HTTPMode"))
    kube_api.put(pod("head", HEAD_LABELS, "Running"))
    host = f"http://{CLUSTER_SVC}.{NS}.svc.cluster.local:8265"
    with FakeRayHead(source, clock=clock) as server:
        assert call(server, "GET", f"{host}/api/jobs/{JOB}").status == 404
        assert call(server, "POST", f"{host}/api/jobs/", submit_request(JOB)).status == 200
        info = call(server, "GET", f"{host}/api/jobs/{JOB}").json()
        assert info["status"] == "RUNNING"
        clock.now = T0 + 2
        assert call(server, "GET", f"{host}/api/jobs/{JOB}").json()["status"] == "SUCCEEDED"
