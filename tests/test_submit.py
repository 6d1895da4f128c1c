"""Submitting rendered runs to the local Kubernetes API over real HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau import pipeline
from tau.errors import ClusterError
from tau.intent import load, validate
from tau.k8s import meta
from tau.render import manifests
from tau.runs.submit import submit

ROOT = Path(__file__).resolve().parents[1]


def _valid(case: str):
    return validate.validate(load.load(ROOT / "golden" / case / "tau.yaml"))


def _docs(case: str, namespace: str = "team", queue: str | None = None):
    return pipeline.cluster_render(_valid(case), {}, namespace=namespace, queue=queue).documents


def test_a_multi_node_run_creates_the_job_then_a_service_owned_by_it(kube_api, kube_client):
    result = submit(kube_client, _docs("job-torchrun-multi-node"), submission_id="sub-1")
    job, service = result.objects
    assert (job["kind"], service["kind"]) == ("Job", "Service")
    owner = service["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Job",
        "torchrun-two",
        job["metadata"]["uid"],
    )
    stored = kube_api.get_object("batch/v1", "Job", "torchrun-two", namespace="team")
    assert stored["metadata"]["annotations"][meta.ANNOTATION_SUBMISSION_ID] == "sub-1"
    assert stored["spec"]["suspend"] is True


def test_submitted_objects_equal_the_client_dry_run_but_for_resolved_values(kube_api, kube_client):
    valid = _valid("job-env-secret-redacted")
    shown = manifests.dump_yaml(pipeline.client_preview(valid, {}).documents)
    sent = pipeline.cluster_render(
        valid, {}, namespace="team", queue=None, service_account="runner"
    ).documents
    submit(kube_client, sent, submission_id="sub-2")
    expected = (
        shown.replace("<unresolved-namespace>", "team")
        .replace("<unresolved-service-account>", "runner")
        .replace("name: <redacted>", "name: hf-credentials", 1)
    )
    rendered = manifests.dump_yaml(sent)
    # Only the namespace and the Secret references differ from what the preview showed.
    differing = [
        (a, b) for a, b in zip(expected.splitlines(), rendered.splitlines(), strict=True) if a != b
    ]
    assert all("<redacted>" in a for a, _ in differing), differing


def test_resubmitting_the_same_submission_recovers_instead_of_failing(kube_api, kube_client):
    docs = _docs("job-cpu-python", namespace="research")
    submit(kube_client, docs, submission_id="same")
    again = submit(kube_client, docs, submission_id="same")
    assert again.recovered and again.objects[0]["metadata"]["name"] == "cpu-python"


def test_a_name_taken_by_another_submission_is_a_clear_conflict(kube_api, kube_client):
    docs = _docs("job-cpu-python", namespace="research")
    submit(kube_client, docs, submission_id="first")
    with pytest.raises(ClusterError) as err:
        submit(kube_client, docs, submission_id="second")
    assert err.value.status == 409
    assert "run research/cpu-python already exists from another submission" in err.value.message
    assert "tau run cancel cpu-python" in err.value.hint


def test_a_name_held_by_an_object_tau_did_not_submit_is_not_offered_to_cancel(
    kube_api, kube_client
):
    docs = _docs("job-cpu-python", namespace="research")
    foreign = {k: v for k, v in docs[0].items() if k != "metadata"}
    foreign["metadata"] = {"name": "cpu-python", "namespace": "research"}
    kube_api.put(foreign)
    with pytest.raises(ClusterError) as err:
        submit(kube_client, docs, submission_id="mine")
    assert err.value.status == 409 and err.value.exit_code == 3
    assert err.value.message == (
        "Job research/cpu-python already exists and tau did not submit it "
        f"(no {meta.ANNOTATION_SUBMISSION_ID} annotation)"
    )
    assert "tau run cancel" not in (err.value.hint or "")


def test_a_server_dry_run_returns_objects_and_persists_nothing(kube_api, kube_client):
    result = submit(
        kube_client, _docs("job-preset-single-gpu"), submission_id="dry", server_dry_run=True
    )
    assert result.objects[0]["metadata"]["name"] == "single-gpu"
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


def test_a_rayjob_without_kuberay_says_which_operator_is_missing(kube_api, kube_client):
    with pytest.raises(ClusterError) as err:
        submit(kube_client, _docs("rayjob-cpu-workers"), submission_id="x")
    assert err.value.message == "RayJob CRD not installed: is KubeRay installed?"


def test_a_rayjob_is_created_when_kuberay_is_installed(kube_api, kube_client):
    kube_api.register_kueue_kuberay_tau_kinds()
    result = submit(kube_client, _docs("rayjob-ray-train-preset"), submission_id="ray-1")
    assert result.objects[0]["kind"] == "RayJob"
    stored = kube_api.get_object("ray.io/v1", "RayJob", "ray-train", namespace="team")
    assert stored["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "jobqueue"


def test_forbidden_is_reported_in_plain_words(kube_api, kube_client):
    kube_api.deny(403)
    with pytest.raises(ClusterError) as err:
        submit(kube_client, _docs("job-cpu-python"), submission_id="x")
    assert err.value.message == (
        'you are not allowed to create jobs.batch "cpu-python" in namespace "team" (403 Forbidden)'
    )
