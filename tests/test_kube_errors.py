"""API and transport failures become one plain ClusterError, per status and per kind."""

from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes.client import ApiException

from tau.errors import ClusterError, ExitCode
from tau.k8s.kinds import JOB, LOCALQUEUE, RAYJOB, TAU_WORKSPACE, WORKLOAD
from tau.kube.errors import api_call, translate


def api_error(status: int, body: dict | str | None = None) -> ApiException:
    exc = ApiException(status=status, reason="x")
    exc.body = json.dumps(body) if isinstance(body, dict) else body
    return exc


MISSING_TYPE = {
    "kind": "Status",
    "status": "Failure",
    "reason": "NotFound",
    "code": 404,
    "message": "the server could not find the requested resource",
    "details": {},
}


@pytest.mark.parametrize(
    ("resource", "owner"),
    [(RAYJOB, "KubeRay"), (WORKLOAD, "Kueue"), (LOCALQUEUE, "Kueue"), (TAU_WORKSPACE, "TauGrid")],
)
def test_missing_crd_names_the_product_to_install(resource, owner) -> None:
    for body in (MISSING_TYPE, "404 page not found"):
        err = translate(api_error(404, body), "get", resource, namespace="ns", name="x")
        assert err is not None
        assert err.message == f"{resource.kind} CRD not installed: is {owner} installed?"
        assert err.exit_code == ExitCode.CLUSTER


def test_object_not_found_names_kind_name_namespace() -> None:
    body = {
        "kind": "Status",
        "reason": "NotFound",
        "code": 404,
        "message": 'rayjobs.ray.io "train" not found',
        "details": {"name": "train", "kind": "rayjobs"},
    }
    err = translate(api_error(404, body), "get", RAYJOB, namespace="team", name="train")
    assert err is not None and err.message == 'RayJob "train" not found in namespace "team"'
    # A name no object has is the caller's input (as a missing run is), not a cluster failure.
    assert err.exit_code == ExitCode.INVALID


def test_forbidden_and_unauthorized_are_plain_and_say_who_to_ask() -> None:
    err = translate(
        api_error(403, {"reason": "Forbidden"}), "create", RAYJOB, namespace="team", context="aks"
    )
    assert err is not None
    assert (
        err.message
        == 'you are not allowed to create rayjobs.ray.io in namespace "team" on context "aks" '
        "(403 Forbidden)"
    )
    assert "platform operator" in (err.hint or "")
    err = translate(api_error(401, {"reason": "Unauthorized"}), "list", JOB, namespace="team")
    assert (
        err is not None
        and "401 Unauthorized" in err.message
        and "sign in again" in (err.hint or "")
    )


def test_an_rbac_denial_asks_for_access_but_an_admission_refusal_says_why() -> None:
    rbac = {
        "reason": "Forbidden",
        "message": 'jobs.batch is forbidden: User "u" cannot create resource "jobs" in API '
        'group "batch" in the namespace "team"',
    }
    err = translate(api_error(403, rbac), "create", JOB, namespace="team", name="train")
    assert err is not None and err.message.startswith("you are not allowed to create")
    quota = {
        "reason": "Forbidden",
        "message": 'jobs.batch "train" is forbidden: exceeded quota: jobs, requested: '
        "count/jobs.batch=1, used: count/jobs.batch=0, limited: count/jobs.batch=0",
    }
    err = translate(api_error(403, quota), "create", JOB, namespace="team", name="train")
    assert err is not None and err.status == 403 and err.exit_code == ExitCode.CLUSTER
    assert err.message == (
        'the cluster refused to create jobs.batch "train" in namespace "team" (403 Forbidden): '
        + quota["message"]
    )
    assert "not your permissions" in (err.hint or "")


def test_an_invalid_object_names_each_field_the_server_refused() -> None:
    body = {
        "reason": "Invalid",
        "code": 422,
        "message": 'Job.batch "train" is invalid: spec.template.spec.priorityClassName: Invalid '
        'value: "Bad_Class": a lowercase RFC 1123 subdomain',
        "details": {
            "name": "train",
            "kind": "Job",
            "causes": [
                {
                    "reason": "FieldValueInvalid",
                    "message": 'Invalid value: "Bad_Class": a lowercase RFC 1123 subdomain',
                    "field": "spec.template.spec.priorityClassName",
                }
            ],
        },
    }
    err = translate(api_error(422, body), "create", JOB, namespace="team", name="train")
    assert err is not None and err.status == 422 and err.exit_code == ExitCode.CLUSTER
    assert err.message == (
        'the API server rejected Job "train" in namespace "team" as invalid (422 Invalid): '
        'spec.template.spec.priorityClassName: Invalid value: "Bad_Class": a lowercase RFC '
        "1123 subdomain"
    )
    # No causes: the message, without the preamble tau already says.
    del body["details"]
    err = translate(api_error(422, body), "create", JOB, namespace="team", name="train")
    assert err is not None and err.message.endswith(
        '(422 Invalid): spec.template.spec.priorityClassName: Invalid value: "Bad_Class": a '
        "lowercase RFC 1123 subdomain"
    )


def test_conflicts() -> None:
    exists = translate(
        api_error(409, {"reason": "AlreadyExists"}), "create", RAYJOB, namespace="t", name="train"
    )
    assert exists is not None and exists.message == 'RayJob "train" already exists in namespace "t"'
    conflict = translate(api_error(409, {"reason": "Conflict"}), "update", JOB, name="j")
    assert conflict is not None and conflict.message.startswith("conflict:")


def test_server_errors_keep_only_the_status_message() -> None:
    err = translate(api_error(500, {"message": "etcd is sad"}), "list", JOB, namespace="t")
    assert (
        err is not None
        and err.message
        == 'the API server failed to list jobs.batch in namespace "t" (500): etcd is sad'
    )
    timeout = translate(api_error(504, {"reason": "Timeout"}), "list", JOB)
    assert timeout is not None and "timed out" in timeout.message


def test_transport_errors() -> None:
    pool = urllib3.HTTPConnectionPool("127.0.0.1", 1)
    refused = urllib3.exceptions.MaxRetryError(
        pool, "/", urllib3.exceptions.NewConnectionError(pool, "[Errno 111] Connection refused")
    )
    err = translate(refused, "list", JOB, context="c")
    assert (
        err is not None
        and err.message == 'connection to the Kubernetes API server for context "c" was refused'
    )
    slow = urllib3.exceptions.ReadTimeoutError(pool, "/", "Read timed out.")
    err = translate(slow, "list", JOB)
    assert err is not None and "did not answer in time" in err.message


def test_other_exceptions_are_not_swallowed() -> None:
    assert translate(ValueError("bug"), "get", JOB) is None
    with pytest.raises(ValueError), api_call("get", JOB):
        raise ValueError("bug")


def test_api_call_translates_once_and_chains_the_cause() -> None:
    with pytest.raises(ClusterError) as info, api_call("get", RAYJOB, namespace="t", name="x"):
        raise api_error(404, MISSING_TYPE)
    assert isinstance(info.value.__cause__, ApiException)
    assert info.value.status == 404
