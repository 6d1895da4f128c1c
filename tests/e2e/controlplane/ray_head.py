"""A fake Ray head for the e2e control plane: the Ray HTTP APIs the KubeRay v1.5.0 operator calls.

Pods on KWOK nodes run nothing, so no Ray head exists to answer the operator. KubeRay reaches a
Ray head in two ways, both through a Go ``http.Client`` on the default transport, which honours
``HTTP_PROXY`` (ray-operator ``controllers/ray/utils/util.go``: GetRayDashboardClientFunc and
GetRayHttpProxyClientFunc):

* the dashboard at ``http://<head-svc>.<ns>.svc.cluster.local:8265``: the Jobs API for RayJobs
  and the Serve API for RayServices (``controllers/ray/utils/dashboardclient/``);
* the Serve proxy of a head pod at ``http://<podIP>:8000/-/healthz`` (``httpproxy_httpclient.go``).

The launcher starts the operator with ``HTTP_PROXY`` set to :attr:`FakeRayHead.proxy_url`, with
``NO_PROXY`` covering loopback, and without ``--use-kubernetes-proxy``. Every such call then
arrives here as a proxy request with an absolute-form target (``GET http://host:8265/api/...``).
A head that really runs (its pod on the real node, see :mod:`node`) is not answered here: the
*router* names its address inside the node's network, and the request is forwarded there
unchanged, so KubeRay talks to the real Ray dashboard. Every other head is answered from memory
and from the cluster. The proxy refuses (502) any target that is not a
``<svc>.<ns>.svc.cluster.local`` name or an IP address, so no request leaves the machine.

Job state is not invented here. A *state source* derives it from the cluster. The default one,
:class:`KubeStateSource`, reads the RayJob's submitter Job or its head pod through the official
client. The Serve applications that KubeRay PUTs are kept in memory and reported RUNNING, with
every deployment HEALTHY.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import os
import re
import secrets
import string
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import SplitResult, unquote, urlsplit

logger = logging.getLogger(__name__)

#: Ray job statuses a job never leaves (rayv1.IsJobTerminal).
TERMINAL = frozenset({"STOPPED", "SUCCEEDED", "FAILED"})

#: Ray's default message for each status (ray/dashboard/modules/job/common.py, JobInfo). It is
#: used when the state source gives none, and KubeRay copies it into RayJob.status.message.
_STOCK_MESSAGES = {
    "PENDING": "Job has not started yet.",
    "RUNNING": "Job is currently running.",
    "SUCCEEDED": "Job finished successfully.",
    "FAILED": "Job failed.",
    "STOPPED": "Job was intentionally stopped.",
}

# `<svc>.<ns>.svc.cluster.local`: the only name form KubeRay builds for a dashboard
# (utils.FetchHeadServiceURL, with the default cluster domain).
_SERVICE_HOST = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\.([a-z0-9]([-a-z0-9]*[a-z0-9])?)"
    r"\.svc\.cluster\.local$"
)
# /api/jobs/<id>, /api/jobs/<id>/stop and /api/jobs/<id>/logs (dashboardclient.JobPath + ...).
_JOB_PATH = re.compile(r"^/api/jobs/([^/]+)(/stop|/logs)?$")
_SERVE_PATHS = ("/api/serve/applications/", "/api/serve/applications")
_PROXY_HEALTH_PATH = "/-/healthz"  # "/" + utils.RayServeProxyHealthPath

JobKey = tuple[str, str, str]  # (namespace, head service, submission id)


@dataclass(frozen=True)
class JobOutcome:
    """What the cluster says about one Ray job: a state source's answer.

    Attributes:
        status: A Ray job status: PENDING, RUNNING, SUCCEEDED, FAILED or STOPPED.
        message: The job's ``message``; empty picks Ray's stock message for the status.
        start_time: Milliseconds since the epoch, or 0 when unknown (then the submission time).
        end_time: The same, for a terminal status (0: when the server first saw it terminal).
        needs_submission: The job exists only once it is POSTed to /api/jobs/ (HTTPMode and
            InteractiveMode). Until then a GET answers 404, which is what makes KubeRay submit.
        after_seconds: How long the driver runs. ``status`` holds only this long after the
            submission, and the job is RUNNING before that.
        entrypoint: The RayJob's entrypoint, reported when no submission carried one.
        metadata: The same, for the job metadata.
    """

    status: str
    message: str = ""
    start_time: int = 0
    end_time: int = 0
    needs_submission: bool = False
    after_seconds: float = 0.0
    entrypoint: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)


#: Given (namespace, head service name, submission id), the job's outcome, or None when the
#: cluster knows no such job (the dashboard then answers 404).
StateSource = Callable[[str, str, str], JobOutcome | None]


class StateUnavailable(RuntimeError):
    """The cluster cannot tell the job's state right now. The server answers 503."""


class LoggedRequest(NamedTuple):
    """One request the server answered.

    ``host`` is the target's ``host:port``, and ``path`` keeps the query string.
    """

    method: str
    host: str
    path: str
    status: int


@dataclass
class _JobRecord:
    first_seen: float
    submitted_at: float = 0.0
    submission: dict[str, Any] | None = None  # the RayJobRequest body, if the job was POSTed
    final: dict[str, Any] | None = None  # the terminal job info, kept forever, as Ray does


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes
    content_type: str = "application/json"


def _json(status: int, value: Any) -> _Reply:
    return _Reply(status, json.dumps(value).encode())


def _text(status: int, text: str) -> _Reply:
    return _Reply(status, text.encode(), "text/plain; charset=utf-8")


def _error(status: int, message: str) -> _Reply:
    return _json(status, {"error": message})


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class FakeRayHead:
    """An HTTP proxy that answers the Ray dashboard and Serve proxy calls KubeRay makes.

    Each head Service (``<svc>.<ns>``) is a separate Ray head: it has its own jobs and its own
    Serve applications. ``requests`` lists every request answered, in order.
    """

    def __init__(
        self,
        state_source: StateSource,
        *,
        clock: Callable[[], float] = time.time,
        router: Router | None = None,
    ) -> None:
        """Create a stopped server.

        Args:
            state_source: Derives a job's state from the cluster, e.g. :class:`KubeStateSource`.
            clock: Seconds since the epoch; tests inject a fake one.
            router: (host, port) -> the real address to forward to, or None to answer here.
        """
        self._router = router
        self.requests: list[LoggedRequest] = []
        self._source = state_source
        self._clock = clock
        self._lock = threading.Lock()
        self._jobs: dict[JobKey, _JobRecord] = {}
        self._deleted: set[JobKey] = set()
        self._serve: dict[tuple[str, str], tuple[dict[str, Any], float]] = {}
        self._http: _Server | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> int:
        """Listen on 127.0.0.1 (an ephemeral port) from a daemon thread.

        Returns:
            The port.
        """
        if self._http is not None:
            raise RuntimeError("the fake Ray head is already started")
        self._http = _Server(self)
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fake-ray-head-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self.port

    def stop(self) -> None:
        """Stop listening. Idempotent."""
        http, thread = self._http, self._thread
        self._http = self._thread = None
        if http is None:
            return
        http.shutdown()
        http.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> FakeRayHead:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._http is None:
            raise RuntimeError("the fake Ray head is not started")
        return int(self._http.server_address[1])

    @property
    def proxy_url(self) -> str:
        """The value for the operator's ``HTTP_PROXY``."""
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------ what tests read

    def submission(self, namespace: str, service: str, submission_id: str) -> dict[str, Any] | None:
        """The RayJobRequest body POSTed for a job, or None if nobody submitted it."""
        with self._lock:
            record = self._jobs.get((namespace, service, submission_id))
            return None if record is None else record.submission

    def serve_config(self, namespace: str, service: str) -> dict[str, Any] | None:
        """The Serve config that KubeRay last PUT to a head, or None."""
        with self._lock:
            entry = self._serve.get((namespace, service))
            return None if entry is None else entry[0]

    # ------------------------------------------------------------------ routing

    def _dispatch(self, method: str, target: str, body: bytes) -> _Reply:
        split = urlsplit(target)
        try:
            reply = self._answer(method, target, split, body)
        except StateUnavailable as error:
            # Plain text on purpose: KubeRay json.Unmarshals any non-404 body of GET /api/jobs/<id>
            # into RayJobInfo, and a JSON error would read as a job with an empty status.
            reply = _text(503, f"fake Ray head: {error}")
        except Exception as error:
            logger.exception("fake Ray head failed on %s %s", method, target)
            reply = _text(500, f"fake Ray head: {type(error).__name__}: {error}")
        if method == "CONNECT":  # the target is host:port, with no path
            host, path = target, ""
        else:
            host, path = split.netloc, split.path + (f"?{split.query}" if split.query else "")
        with self._lock:
            self.requests.append(LoggedRequest(method, host, path, reply.status))
        return reply

    def _answer(self, method: str, target: str, split: SplitResult, body: bytes) -> _Reply:
        if method == "CONNECT":
            return _error(502, f"refusing to tunnel to {target}: nothing leaves this proxy")
        if not split.scheme and target.startswith("/"):
            return _error(400, "this is an HTTP proxy: send an absolute-form target")
        host = (split.hostname or "").lower()
        service = _service_of(host)
        if split.scheme != "http" or (service is None and not _is_ip(host)):
            return _error(
                502,
                f"refusing {target!r}: only http://<svc>.<ns>.svc.cluster.local and IP targets "
                "are answered, and nothing is forwarded",
            )
        real = self._router(host, split.port or 80) if self._router is not None else None
        if real is not None:
            path = split.path or "/"
            return _forward(method, real, path + (f"?{split.query}" if split.query else ""), body)
        path = split.path or "/"
        if path == _PROXY_HEALTH_PATH:
            # Serve proxy health check (RayHttpProxyClient.CheckProxyActorHealth): 200 = healthy.
            return _text(200, "success") if method == "GET" else _error(405, "GET only")
        if service is None:
            return _error(404, f"no Ray dashboard at the IP {host}: use the head Service name")
        return self._dashboard(method, service, path, body)

    def _dashboard(self, method: str, service: tuple[str, str], path: str, body: bytes) -> _Reply:
        namespace, head = service
        if path == "/api/version":
            return _allowed(method, "GET") or _json(200, _VERSION)
        if path in ("/api/jobs/", "/api/jobs"):
            if method == "POST":
                return self._submit(namespace, head, body)
            return _allowed(method, "GET") or _json(200, self._list(namespace, head))
        if match := _JOB_PATH.match(path):
            key = (namespace, head, unquote(match.group(1)))
            action = match.group(2)
            if action == "/stop":
                return _allowed(method, "POST") or self._stop(key)
            if action == "/logs":
                return _allowed(method, "GET") or self._logs(key)
            if method == "DELETE":
                return self._delete(key)
            return _allowed(method, "GET") or self._get(key)
        if path in _SERVE_PATHS:
            if method == "PUT":
                return self._serve_put(service, body)
            if method == "DELETE":
                with self._lock:
                    self._serve.pop(service, None)
                return _Reply(200, b"")
            return _allowed(method, "GET") or _json(200, self._serve_details(service))
        return _error(404, f"the fake Ray head does not serve {method} {path}")

    # ------------------------------------------------------------------ Jobs API

    def _job_info(self, key: JobKey) -> dict[str, Any] | None:
        """The job's RayJobInfo, or None when it does not exist (404)."""
        with self._lock:
            if key in self._deleted:
                return None
            record = self._jobs.get(key)
            if record is not None and record.final is not None:
                return dict(record.final)
        outcome = self._source(*key)  # outside the lock: it may call the API server
        now = self._clock()
        with self._lock:
            record = self._jobs.get(key)
            if outcome is None or key in self._deleted:
                return None
            if outcome.needs_submission and (record is None or record.submission is None):
                return None
            if record is None:
                record = self._jobs[key] = _JobRecord(first_seen=now)
            if record.final is None:  # another request may have settled it meanwhile
                info = _render_info(key[2], outcome, record, now)
                if info["status"] in TERMINAL:
                    record.final = info
                return dict(info)
            return dict(record.final)

    def _get(self, key: JobKey) -> _Reply:
        # RayDashboardClient.GetJobInfo: 404 becomes a BadRequest, which makes KubeRay submit
        # the job in HTTPMode.
        info = self._job_info(key)
        if info is None:
            return _error(404, f"Job {key[2]} does not exist")
        return _json(200, info)

    def _list(self, namespace: str, head: str) -> list[dict[str, Any]]:
        with self._lock:
            keys = [key for key in self._jobs if key[:2] == (namespace, head)]
        return [info for key in keys if (info := self._job_info(key)) is not None]

    def _submit(self, namespace: str, head: str, body: bytes) -> _Reply:
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(request, dict) or not isinstance(request.get("entrypoint"), str):
            return _error(400, "a JobSubmitRequest needs an entrypoint")
        submission_id = request.get("submission_id") or _new_submission_id()
        key = (namespace, head, submission_id)
        with self._lock:
            if key in self._jobs:
                # Ray's answer, which RayDashboardClient.SubmitJobReq matches on.
                return _text(
                    500,
                    f"Job with submission_id {submission_id} already exists. "
                    "Please use a different submission_id.",
                )
            now = self._clock()
            self._deleted.discard(key)
            self._jobs[key] = _JobRecord(first_seen=now, submitted_at=now, submission=request)
        return _json(200, {"job_id": submission_id, "submission_id": submission_id})

    def _stop(self, key: JobKey) -> _Reply:
        info = self._job_info(key)
        if info is None:
            return _error(404, f"Job {key[2]} does not exist")
        if info["status"] in TERMINAL:
            return _json(200, {"stopped": False})  # Ray's answer for a job that already ended
        with self._lock:
            record = self._jobs[key]
            stopped = record.final is None
            if stopped:
                record.final = {
                    **info,
                    "status": "STOPPED",
                    "message": _STOCK_MESSAGES["STOPPED"],
                    "end_time": _ms(self._clock()),
                }
        return _json(200, {"stopped": stopped})

    def _delete(self, key: JobKey) -> _Reply:
        info = self._job_info(key)
        if info is None:
            return _error(404, f"Job {key[2]} does not exist")
        if info["status"] not in TERMINAL:
            return _error(400, f"Attempted to delete job in non-terminal state {info['status']}")
        with self._lock:
            self._jobs.pop(key, None)
            self._deleted.add(key)
        return _json(200, {"deleted": True})

    def _logs(self, key: JobKey) -> _Reply:
        if self._job_info(key) is None:
            return _error(404, f"Job {key[2]} does not exist")
        return _json(200, {"logs": ""})  # no driver ever ran, so it printed nothing

    # ------------------------------------------------------------------ Serve API

    def _serve_put(self, service: tuple[str, str], body: bytes) -> _Reply:
        # RayDashboardClient.UpdateDeployments: any 2xx is success. Ray answers 200 with no body.
        try:
            config = json.loads(body)
        except ValueError:
            return _error(400, "the body is not JSON")
        if not isinstance(config, dict) or not isinstance(config.get("applications"), list):
            return _error(400, "a ServeDeploySchema needs an applications list")
        with self._lock:
            self._serve[service] = (config, self._clock())
        return _Reply(200, b"")

    def _serve_details(self, service: tuple[str, str]) -> dict[str, Any]:
        """ServeDetails as KubeRay parses it (utils/types/serve_api_models.go)."""
        with self._lock:
            entry = self._serve.get(service)
        if entry is None:
            return {"deploy_mode": "UNSET", "applications": {}}
        config, deployed_at = entry
        applications = {}
        for app in config["applications"]:
            name = app.get("name") or "default"  # Ray's SERVE_DEFAULT_APP_NAME
            deployments = {
                deployment["name"]: {
                    "name": deployment["name"],
                    "status": "HEALTHY",
                    "status_trigger": "CONFIG_UPDATE_COMPLETED",
                    "message": "",
                }
                for deployment in app.get("deployments") or []
                if deployment.get("name")
            }
            applications[name] = {
                "name": name,
                "route_prefix": app.get("route_prefix", "/"),
                "docs_path": None,
                "status": "RUNNING",
                "message": "",
                "last_deployed_time_s": deployed_at,
                "deployed_app_config": app,
                "source": "declarative",
                "deployments": deployments,
            }
        return {
            "deploy_mode": "MULTI_APP",
            "proxy_location": config.get("proxy_location", "EveryNode"),
            "http_options": config.get("http_options", {}),
            "target_capacity": config.get("target_capacity"),
            "applications": applications,
        }


# GET /api/version, the first call of Ray's own job client (KubeRay does not make it).
_VERSION = {"version": "4", "ray_version": "0.0.0+fake-ray-head", "ray_commit": "fake"}


#: (host, port) of a request -> where a real Ray head answers it, or None.
Router = Callable[[str, int], "tuple[str, int] | None"]


def _forward(method: str, address: tuple[str, int], path: str, body: bytes) -> _Reply:
    """The request, sent on to a real Ray head inside the node's network."""
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=_TIMEOUT)
    try:
        headers = {"Content-Type": "application/json"} if body else {}
        conn.request(method, path, body=body or None, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        kind = resp.getheader("Content-Type") or "application/json"
        return _Reply(resp.status, data, kind)
    except OSError as error:
        return _text(502, f"the Ray head at {address[0]}:{address[1]} did not answer: {error}")
    finally:
        conn.close()


def _allowed(method: str, allowed: str) -> _Reply | None:
    return None if method == allowed else _error(405, f"{method} is not allowed here")


def _service_of(host: str) -> tuple[str, str] | None:
    """(namespace, service) for ``<svc>.<ns>.svc.cluster.local``, else None."""
    match = _SERVICE_HOST.match(host)
    return (match.group(3), match.group(1)) if match else None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _new_submission_id() -> str:
    alphabet = string.ascii_letters + string.digits
    return "raysubmit_" + "".join(secrets.choice(alphabet) for _ in range(16))


def _render_info(
    submission_id: str, outcome: JobOutcome, record: _JobRecord, now: float
) -> dict[str, Any]:
    """RayJobInfo (utils/types/dashboard_httpclient.go) for an outcome, as Ray's JobDetails."""
    status, message, end_time = outcome.status, outcome.message, outcome.end_time
    began = record.submitted_at or record.first_seen
    if outcome.after_seconds and status in TERMINAL:
        due = began + outcome.after_seconds
        if now < due:
            status, message, end_time = "RUNNING", "", 0
        else:
            end_time = end_time or _ms(due)
    if status in TERMINAL and not end_time:
        end_time = _ms(now)
    start_time = outcome.start_time or (0 if status == "PENDING" else _ms(began))
    submission = record.submission or {}
    return {
        "type": "SUBMISSION",
        "job_id": None,  # the driver's id; no driver runs
        "submission_id": submission_id,
        "status": status,
        "message": message or _STOCK_MESSAGES.get(status, ""),
        "error_type": None,
        "start_time": start_time or None,
        "end_time": end_time or None,
        "entrypoint": submission.get("entrypoint") or outcome.entrypoint,
        "metadata": submission.get("metadata") or dict(outcome.metadata),
        "runtime_env": submission.get("runtime_env") or {},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, head: FakeRayHead) -> None:
        self.head = head
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up early (KubeRay's clients time out after 2 s) is worth no
        # traceback on stderr. Errors in answering are already caught in _dispatch.
        logger.debug("fake Ray head: connection from %s broke", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    """Hands each request to :meth:`FakeRayHead._dispatch`, one request per connection."""

    server: _Server
    timeout = 30

    def _handle(self) -> None:
        # Go sends a Content-Length with every body KubeRay builds (bytes.Buffer), so chunked
        # uploads are not read.
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        body = self.rfile.read(length) if length > 0 else b""
        reply = self.server.head._dispatch(self.command, self.path, body)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_CONNECT = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: :attr:`FakeRayHead.requests` is the log."""


# ---------------------------------------------------------------------- the cluster's word

_TIMEOUT = 10  # seconds for each API call, so a stuck API server cannot hang the proxy
#: The KWOK convention (kwok-stages.yaml): a test ends a held run by annotating it.
FINISH_ANNOTATION = "tau-e2e/finish"
#: The KWOK convention: the first container's env var that chooses a run's end.
OUTCOME_ENV = "E2E_OUTCOME"
#: How long a driver runs when E2E_OUTCOME is unset or "fail". These are the delays that
#: kwok-stages.yaml gives to a Job's pod.
SUCCEED_AFTER_SECONDS = 2.0
FAIL_AFTER_SECONDS = 1.0
SUBMITTER_CONTAINER = "ray-job-submitter"  # utils.SubmitterContainerName (SidecarMode)


class KubeStateSource:
    """The outcome of a Ray job, read from the cluster with the official kubernetes client.

    The head Service of the request leads to its RayCluster (``status.head.serviceName``, else
    ``spec.headGroupSpec.headService`` or ``<cluster>-head-svc``). From there the source finds
    the RayJob that owns the cluster (ownerReferences), or the one whose
    ``status.rayClusterName`` names it (clusterSelector), with ``status.jobId`` (or ``spec.jobId``)
    equal to the submission id. The job's state then depends on the RayJob's submissionMode:

    * K8sJobMode (the default). KubeRay creates a batch Job named after the RayJob, and its
      pod runs ``ray job submit`` and waits for the job (common.RayJobK8sJobNamespacedName). The
      Job is Complete → SUCCEEDED. The Job is Failed → FAILED, with the condition's message. A
      pod of the Job has started → RUNNING. Otherwise → PENDING. If there is no Job yet, nothing
      was submitted, so the answer is 404.
    * SidecarMode. The submitter is the head pod's ``ray-job-submitter`` container. It
      terminated with code 0 → SUCCEEDED, with another code → FAILED. It is running → RUNNING.
      Otherwise → PENDING.
    * HTTPMode and InteractiveMode have no submitter (utils.HasSubmitter). The same goes for a
      job POSTed straight to the dashboard of a RayCluster without a RayJob. The job exists once
      it is POSTed, and its driver runs on the head:

      - the RayJob (or the RayCluster) has the annotation ``tau-e2e/finish`` set to
        ``succeeded`` or ``failed``: SUCCEEDED or FAILED;
      - the head pod is Pending → PENDING. It is Failed → FAILED. It is Succeeded → SUCCEEDED;
      - otherwise the first container of the head template chooses, by ``E2E_OUTCOME``, as
        kwok-stages.yaml does for a Job's pod. If it is unset, the job is SUCCEEDED 2 s after
        the submission. ``fail`` gives FAILED 1 s after the submission. ``hold`` keeps it
        RUNNING until the annotation above is set. The annotation goes on the RayJob and not
        on the head pod: KubeRay deletes a head pod that has ended, so the pod's phase would be
        gone before the next GET.
    """

    def __init__(self, kubeconfig_path: str | os.PathLike[str], context: str | None = None) -> None:
        """Connect with a kubeconfig.

        Args:
            kubeconfig_path: The control plane's kubeconfig.
            context: The context to use; None is the current one.
        """
        from kubernetes import client, config

        self._api = config.new_client_from_config(
            config_file=os.fspath(kubeconfig_path), context=context
        )
        self._custom = client.CustomObjectsApi(self._api)
        self._core = client.CoreV1Api(self._api)
        self._batch = client.BatchV1Api(self._api)

    def close(self) -> None:
        """Release the client's connections."""
        self._api.close()

    def __call__(self, namespace: str, service: str, submission_id: str) -> JobOutcome | None:
        """The outcome of a job on the head behind ``service``, or None if there is none.

        Args:
            namespace: The head Service's namespace.
            service: The head Service's name.
            submission_id: The Ray job's submission id (RayJob.status.jobId).

        Returns:
            The outcome, or None when no RayCluster or no submitted job matches.
        """
        cluster = self._cluster_behind(namespace, service)
        if cluster is None:
            return None
        rayjob = self._rayjob_for(cluster, submission_id)
        spec = (rayjob.get("spec") or {}) if rayjob is not None else {}
        mode = spec.get("submissionMode") or "K8sJobMode"
        if rayjob is not None and mode == "K8sJobMode":
            outcome = self._submitter_job_outcome(rayjob)
        elif rayjob is not None and mode == "SidecarMode":
            outcome = self._sidecar_outcome(cluster)
        else:
            outcome = self._driver_outcome(cluster, rayjob)
        if outcome is None:
            return None
        return replace(
            outcome, entrypoint=spec.get("entrypoint", ""), metadata=spec.get("metadata") or {}
        )

    def _cluster_behind(self, namespace: str, service: str) -> dict[str, Any] | None:
        clusters = self._custom.list_namespaced_custom_object(
            "ray.io", "v1", namespace, "rayclusters", _request_timeout=_TIMEOUT
        )["items"]
        for cluster in clusters:
            named = _dig(cluster, "status", "head", "serviceName")
            default = (
                _dig(cluster, "spec", "headGroupSpec", "headService", "metadata", "name")
                or f"{cluster['metadata']['name']}-head-svc"
            )  # utils.GenerateHeadServiceName
            if service in (named, default):
                return cluster
        return None

    def _rayjob_for(self, cluster: dict[str, Any], submission_id: str) -> dict[str, Any] | None:
        meta = cluster["metadata"]
        owners = {
            ref["name"] for ref in meta.get("ownerReferences") or [] if ref.get("kind") == "RayJob"
        }
        rayjobs = self._custom.list_namespaced_custom_object(
            "ray.io", "v1", meta["namespace"], "rayjobs", _request_timeout=_TIMEOUT
        )["items"]
        for rayjob in rayjobs:
            bound = (
                rayjob["metadata"]["name"] in owners
                or _dig(rayjob, "status", "rayClusterName") == meta["name"]
            )
            job_id = _dig(rayjob, "status", "jobId") or _dig(rayjob, "spec", "jobId")
            if bound and job_id == submission_id:
                return rayjob
        return None

    def _submitter_job_outcome(self, rayjob: dict[str, Any]) -> JobOutcome | None:
        from kubernetes.client.exceptions import ApiException

        name, namespace = rayjob["metadata"]["name"], rayjob["metadata"]["namespace"]
        try:
            job = self._batch.read_namespaced_job(name, namespace, _request_timeout=_TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        status = job.status
        started = _epoch_ms(status.start_time) if status else 0
        for condition in (status.conditions if status else None) or []:
            if condition.status != "True":
                continue
            ended = _epoch_ms(condition.last_transition_time)
            if condition.type == "Complete":
                end_time = _epoch_ms(status.completion_time) or ended
                return JobOutcome("SUCCEEDED", start_time=started, end_time=end_time)
            if condition.type == "Failed":
                message = condition.message or condition.reason or "the submitter Job failed"
                return JobOutcome("FAILED", message, start_time=started, end_time=ended)
        selector = (job.spec.selector.match_labels if job.spec.selector else None) or {
            "batch.kubernetes.io/job-name": name
        }
        pods = self._core.list_namespaced_pod(
            namespace, label_selector=_label_selector(selector), _request_timeout=_TIMEOUT
        ).items
        if any(
            pod.status and pod.status.phase in ("Running", "Succeeded", "Failed") for pod in pods
        ):
            return JobOutcome("RUNNING", start_time=started)
        return JobOutcome("PENDING")

    def _sidecar_outcome(self, cluster: dict[str, Any]) -> JobOutcome:
        pod = self._head_pod(cluster)
        if pod is None:
            raise StateUnavailable(f"RayCluster {cluster['metadata']['name']} has no head pod")
        for container in (pod.status.container_statuses if pod.status else None) or []:
            if container.name != SUBMITTER_CONTAINER or container.state is None:
                continue
            if (ended := container.state.terminated) is not None:
                status, message = "SUCCEEDED", ""
                if ended.exit_code != 0:
                    status = "FAILED"
                    message = f"{SUBMITTER_CONTAINER} exited with code {ended.exit_code}"
                    message += f": {ended.reason}"
                start, end = _epoch_ms(ended.started_at), _epoch_ms(ended.finished_at)
                return JobOutcome(status, message, start_time=start, end_time=end)
            if container.state.running is not None:
                return JobOutcome(
                    "RUNNING", start_time=_epoch_ms(container.state.running.started_at)
                )
        return JobOutcome("PENDING")

    def _driver_outcome(self, cluster: dict[str, Any], rayjob: dict[str, Any] | None) -> JobOutcome:
        def outcome(status: str, message: str = "", after: float = 0.0) -> JobOutcome:
            return JobOutcome(status, message, needs_submission=True, after_seconds=after)

        finish = _dig(rayjob or {}, "metadata", "annotations", FINISH_ANNOTATION) or _dig(
            cluster, "metadata", "annotations", FINISH_ANNOTATION
        )
        if finish == "succeeded":
            return outcome("SUCCEEDED")
        if finish == "failed":
            return outcome("FAILED", f"Job entrypoint command failed ({FINISH_ANNOTATION}=failed)")
        pod = self._head_pod(cluster)
        phase = pod.status.phase if pod is not None and pod.status else None
        if phase == "Pending":
            return outcome("PENDING")
        if phase == "Failed":
            return outcome("FAILED", "the Ray head pod failed")
        if phase == "Succeeded":
            return outcome("SUCCEEDED")
        template = _dig(cluster, "spec", "headGroupSpec", "template", "spec", "containers")
        containers = template or [{}]
        env = {var.get("name"): var.get("value") for var in containers[0].get("env") or []}
        choice = env.get(OUTCOME_ENV) or ""
        if choice == "hold":
            if pod is None:
                raise StateUnavailable(f"RayCluster {cluster['metadata']['name']} has no head pod")
            return outcome("RUNNING")
        if choice == "fail":
            message = f"Job entrypoint command failed with exit code 1 ({OUTCOME_ENV}=fail)"
            return outcome("FAILED", message, FAIL_AFTER_SECONDS)
        return outcome("SUCCEEDED", after=SUCCEED_AFTER_SECONDS)

    def _head_pod(self, cluster: dict[str, Any]) -> Any | None:
        meta = cluster["metadata"]
        # common.RayClusterHeadPodsAssociationOptions
        selector = _label_selector({"ray.io/cluster": meta["name"], "ray.io/node-type": "head"})
        pods = self._core.list_namespaced_pod(
            meta["namespace"], label_selector=selector, _request_timeout=_TIMEOUT
        ).items
        live = [pod for pod in pods if pod.metadata.deletion_timestamp is None]
        return live[0] if live else None


def _dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...``, or None where a level is missing."""
    for key in keys:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _label_selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in labels.items())


def _epoch_ms(moment: datetime | None) -> int:
    return _ms(moment.timestamp()) if moment is not None else 0
