"""The fast tests' Kubernetes API emulation (tests/kubeapi) against the real kube-apiserver.

The same requests go to both, and the parts of the answers tau relies on must agree: status
codes and Status reasons, the metadata the renderer and the status reader read, list
resourceVersions, merge patches, watch event types, a 410 for a compacted resourceVersion,
access reviews and /version. A change in either that tau would notice fails here, so the
emulation cannot drift away from the real server unseen.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.e2e.controlplane.cluster import ControlPlane
from tests.kubeapi.server import KubeApiServer

pytestmark = pytest.mark.e2e

NS = "parity"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"


@dataclass
class Endpoint:
    """One API server reached over HTTP(S) with the admin's identity."""

    name: str
    base: str
    context: ssl.SSLContext | None = None

    def call(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(req, context=self.context, timeout=30) as resp:
                return int(resp.status), json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            return int(err.code), json.loads(err.read() or b"{}")

    def watch(self, path: str, resource_version: str) -> list[tuple[str, str]]:
        """The (type, name) of each event from `resource_version` until the server ends it."""
        url = f"{self.base}{path}?watch=1&resourceVersion={resource_version}&timeoutSeconds=2"
        events = []
        with urllib.request.urlopen(url, context=self.context, timeout=30) as resp:
            for line in resp:
                if line.strip():
                    event = json.loads(line)
                    events.append((event["type"], event["object"]["metadata"].get("name", "")))
        return events


@pytest.fixture(scope="module")
def emulator() -> Iterator[KubeApiServer]:
    server = KubeApiServer(default_watch_timeout=2).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def endpoints(plane: ControlPlane, emulator: KubeApiServer) -> Iterator[tuple[Endpoint, Endpoint]]:
    ctx = ssl.create_default_context(cafile=str(plane.ca.cert_path))
    ctx.load_cert_chain(str(plane.admin_client.cert), str(plane.admin_client.key))
    real = Endpoint("kube-apiserver", plane.server, ctx)
    emu = Endpoint("emulator", emulator.url)
    for ep in (real, emu):
        ep.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    try:
        yield real, emu
    finally:
        real.call("DELETE", f"/api/v1/namespaces/{NS}")


def job(name: str) -> dict[str, Any]:
    """A Job as tau renders one (no queue label: Kueue's webhooks are not what is compared)."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"tau.azure.com/managed-by": "tau", "tau.azure.com/run-id": name},
            "annotations": {"tau.azure.com/submission-id": "0123456789abcdef01234567"},
        },
        "spec": {
            "backoffLimit": 0,
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "main", "image": "python:3.12-slim"}],
                }
            },
        },
    }


def both(
    endpoints: tuple[Endpoint, Endpoint], method: str, path: str, body: Any = None, **kw: Any
) -> tuple[tuple[int, dict[str, Any]], tuple[int, dict[str, Any]]]:
    real, emu = endpoints
    return real.call(method, path, body, **kw), emu.call(method, path, body, **kw)


def status_reason(answer: tuple[int, dict[str, Any]]) -> tuple[int, str | None]:
    code, doc = answer
    return code, doc.get("reason") if doc.get("kind") == "Status" else None


def test_create_get_conflict_invalid_and_not_found_answer_alike(endpoints) -> None:
    real, emu = both(endpoints, "GET", f"{JOBS}/parity-a")
    assert status_reason(real) == status_reason(emu) == (404, "NotFound")

    real, emu = both(endpoints, "POST", JOBS, job("parity-a"))
    assert real[0] == emu[0] == 201
    for answer in (real, emu):
        meta = answer[1]["metadata"]
        # What submit and the status reader use from a created object.
        assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
        assert meta["annotations"]["tau.azure.com/submission-id"] == "0123456789abcdef01234567"
        assert answer[1]["spec"]["suspend"] is True
        assert (answer[1]["apiVersion"], answer[1]["kind"]) == ("batch/v1", "Job")

    real, emu = both(endpoints, "POST", JOBS, job("parity-a"))
    assert status_reason(real) == status_reason(emu) == (409, "AlreadyExists")

    bad = job("Parity_A")
    bad["metadata"]["name"] = "Parity_A"
    real, emu = both(endpoints, "POST", JOBS, bad)
    assert status_reason(real) == status_reason(emu) == (422, "Invalid")
    for answer in (real, emu):
        assert "metadata.name" in json.dumps(answer[1].get("details") or answer[1]["message"])


def test_lists_patches_and_watches_answer_alike(endpoints) -> None:
    real_ep, emu_ep = endpoints
    for ep in (real_ep, emu_ep):
        ep.call("POST", JOBS, job("parity-w"))
    real, emu = both(endpoints, "GET", JOBS)
    assert real[0] == emu[0] == 200
    for answer in (real, emu):
        assert answer[1]["metadata"]["resourceVersion"]
        assert "parity-w" in [i["metadata"]["name"] for i in answer[1]["items"]]
    starts = {
        ep.name: ans[1]["metadata"]["resourceVersion"]
        for ep, ans in zip(endpoints, (real, emu), strict=True)
    }

    patch = {"metadata": {"labels": {"tau.azure.com/phase": "watched"}}}
    real, emu = both(
        endpoints, "PATCH", f"{JOBS}/parity-w", patch, content_type="application/merge-patch+json"
    )
    assert real[0] == emu[0] == 200
    for answer in (real, emu):
        assert answer[1]["metadata"]["labels"]["tau.azure.com/phase"] == "watched"
    real, emu = both(endpoints, "DELETE", f"{JOBS}/parity-w")
    assert real[0] == emu[0] == 200

    seen = {
        ep.name: [e for e in ep.watch(JOBS, starts[ep.name]) if e[1] == "parity-w"]
        for ep in endpoints
    }
    # The real Job controller also writes the Job (finalizers, status): compare the kinds of
    # change tau's watch loop handles, in the order they came.
    real_types = [t for t, _ in seen["kube-apiserver"]]
    emu_types = [t for t, _ in seen["emulator"]]
    assert real_types[0] == emu_types[0] == "MODIFIED"
    assert real_types[-1] == emu_types[-1] == "DELETED"
    assert set(real_types) == set(emu_types) == {"MODIFIED", "DELETED"}


def first_watch_answer(ep: Endpoint, resource_version: str) -> tuple[int, str, int | None]:
    """(HTTP status, first event type, its Status code) of a watch from `resource_version`."""
    url = f"{ep.base}{JOBS}?watch=1&resourceVersion={resource_version}&timeoutSeconds=2"
    try:
        with urllib.request.urlopen(url, context=ep.context, timeout=30) as resp:
            for line in resp:
                if line.strip():
                    event = json.loads(line)
                    return int(resp.status), event["type"], event["object"].get("code")
            return int(resp.status), "", None
    except urllib.error.HTTPError as err:
        doc = json.loads(err.read() or b"{}")
        return int(err.code), "", doc.get("code")


def test_a_compacted_resource_version_is_gone_on_both(
    endpoints, emulator: KubeApiServer, plane: ControlPlane
) -> None:
    real_ep, emu_ep = endpoints
    for ep in (real_ep, emu_ep):
        ep.call("POST", JOBS, job("parity-old"))
        ep.call("DELETE", f"{JOBS}/parity-old")
    # Compact: etcd through its own API up to its current revision, the emulator its history.
    etcd = f"http://127.0.0.1:{plane.ports.etcd}"
    with urllib.request.urlopen(f"{etcd}/v3/kv/range", data=b'{"key":"AA=="}', timeout=10) as r:
        revision = json.load(r)["header"]["revision"]
    body = json.dumps({"revision": revision, "physical": True}).encode()
    with urllib.request.urlopen(f"{etcd}/v3/kv/compaction", data=body, timeout=30) as r:
        assert r.status == 200
    emulator.compact()
    # A resourceVersion from before both compactions. The emulator ends the watch with an
    # ERROR event carrying a 410 Status (what kube-apiserver does past its watch cache's
    # window); kube-apiserver v1.37 with its default watch cache answers this one by starting
    # the watch afresh (ADDED events). tau's watch loop (kube/streams.watch_kind) handles both:
    # the first by relisting, the second as a list. Anything else is a drift that matters.
    real, emu = first_watch_answer(real_ep, "1"), first_watch_answer(emu_ep, "1")
    handled = {(200, "ERROR", 410), (200, "ADDED", None)}
    assert real in handled, real
    assert emu == (200, "ERROR", 410), emu


def test_access_reviews_and_version_answer_alike(endpoints) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "namespace": NS,
                "verb": "create",
                "group": "batch",
                "resource": "jobs",
            }
        },
    }
    real, emu = both(
        endpoints, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review
    )
    assert real[0] == emu[0] == 201
    assert real[1]["status"]["allowed"] is emu[1]["status"]["allowed"] is True

    real, emu = both(endpoints, "GET", "/version")
    assert real[0] == emu[0] == 200
    for answer in (real, emu):
        assert {"major", "minor", "gitVersion"} <= set(answer[1])
