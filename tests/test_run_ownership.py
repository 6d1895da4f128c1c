"""tau deletes only what it created: cancel, resume and the retry loop refuse a Job or RayJob of
the run's name that another tool or user made, and say what it is (local Kubernetes API)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.cli import main
from tau.runs import ownership
from tests.test_cli_lifecycle import (  # noqa: F401 (project: a fixture)
    PREEMPTED,
    _fail_job,
    complete_job,
    project,
    retry_target,
    run_beside,
)

#: Each test runs in a repository with the examples' tau/ directory (the working directory).
pytestmark = pytest.mark.usefixtures("project")

HINT = (
    "  hint: tau deletes only the runs it submitted: give your run another name, or ask whoever "
    "created that object to remove it\n"
)


def foreign_job(name: str, *, failed: bool = False) -> dict:
    """A suspended Job an Argo workflow made: its own labels and owner, none of tau's."""
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": {
                "app.kubernetes.io/managed-by": "argo-workflows",
                "workflows.argoproj.io/workflow": "nightly-etl",
            },
            "ownerReferences": [
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Workflow",
                    "name": "nightly-etl",
                    "uid": "7d1c5e0a-0000-4000-8000-000000000001",
                }
            ],
        },
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "etl", "image": "ghcr.io/example/etl:2.1"}],
                }
            },
        },
    }
    if failed:
        job["status"] = {
            "failed": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
        }
    return job


ARGO = (
    "no tau.azure.com/managed-by=tau label; app.kubernetes.io/managed-by=argo-workflows; "
    "owned by Workflow/nightly-etl; labels: workflows.argoproj.io/workflow=nightly-etl"
)


def test_cancel_refuses_a_job_tau_did_not_create_and_deletes_nothing(kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(foreign_job("nightly"))
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "nightly-headless", "namespace": "team"},
            "spec": {"clusterIP": "None", "selector": {"app": "etl"}},
        }
    )
    assert main(["run", "cancel", "nightly", "-n", "team"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: refusing to cancel Job team/nightly: tau did not create it ({ARGO}); "
        "nothing was deleted\n" + HINT
    )
    job = kube_api.get_object("batch/v1", "Job", "nightly", namespace="team")
    assert job is not None and "deletionTimestamp" not in job["metadata"]
    assert kube_api.get_object("v1", "Service", "nightly-headless", namespace="team")


def test_cancel_refuses_a_rayjob_with_no_labels_at_all(kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayJob",
            "metadata": {"name": "notebook", "namespace": "team"},
            "spec": {"entrypoint": "python demo.py", "suspend": True},
        }
    )
    assert main(["run", "cancel", "notebook", "-n", "team"]) == 1
    assert capsys.readouterr().err == (
        "error: refusing to cancel RayJob team/notebook: tau did not create it "
        "(no tau.azure.com/managed-by=tau label; no labels); nothing was deleted\n" + HINT
    )
    assert kube_api.get_object("ray.io/v1", "RayJob", "notebook", namespace="team")


def test_cancel_of_tau_run_leaves_a_foreign_headless_service_alone(kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "eval-headless", "namespace": "team", "labels": {"app": "x"}},
            "spec": {"clusterIP": "None", "selector": {"app": "x"}},
        }
    )
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    assert kube_api.get_object("batch/v1", "Job", "eval", namespace="team") is None
    assert kube_api.get_object("v1", "Service", "eval-headless", namespace="team")


def test_resume_refuses_a_failed_job_tau_did_not_create_before_rendering(kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(foreign_job("eval", failed=True))
    before = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 1
    captured = capsys.readouterr()
    assert captured.err == (
        f"error: refusing to delete for resume Job team/eval: tau did not create it ({ARGO}); "
        "nothing was deleted\n" + HINT
    )
    assert "deleting" not in captured.err and captured.out == ""
    after = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert "deletionTimestamp" not in after["metadata"]


def test_the_retry_loop_refuses_to_delete_a_failed_job_it_did_not_create(
    kube_api, capsys, monkeypatch
):
    """The run tau submitted is replaced under its name by another tool's Job, which fails as
    preempted: the retry loop must not delete it to resubmit."""
    kube_api.register_kueue_kuberay_tau_kinds()
    retry_target(Path.cwd() / "tau", monkeypatch)
    swapped: list[str] = []

    def someone_else() -> None:
        job = kube_api.get_object("batch/v1", "Job", "retryme", namespace="team")
        if job is not None and not swapped:
            kube_api.delete_object("batch/v1", "Job", "retryme", namespace="team")
            created = kube_api.put(foreign_job("retryme", failed=True))
            swapped.append(created["metadata"]["uid"])
            _fail_job(kube_api, "retryme", pod_condition=PREEMPTED)
        elif job is not None and job["metadata"]["uid"] not in swapped:
            # A resubmitted attempt (the foreign Job was deleted): let it succeed, so a loop
            # that wrongly deleted ends instead of watching forever.
            complete_job(kube_api, "retryme")

    code = run_beside(someone_else, ["run", "retryme", "-n", "team"])
    captured = capsys.readouterr()
    assert code == 1, captured
    assert "attempt 1/2 failed (Preempted)" in captured.out
    error = captured.err[captured.err.index("error: ") :]
    assert error.startswith(
        "error: refusing to delete for retry Job team/retryme: tau did not create it "
        "(no tau.azure.com/managed-by=tau label;"
    )
    job = kube_api.get_object("batch/v1", "Job", "retryme", namespace="team")
    assert job["metadata"]["uid"] == swapped[0] and "deletionTimestamp" not in job["metadata"]


def tau_object(kind: str) -> dict:
    return {"kind": kind, "metadata": {"name": "r", "labels": {"tau.azure.com/managed-by": "tau"}}}


def test_choose_prefers_tau_run_beside_an_object_it_did_not_create():
    submitter = {"kind": "Job", "metadata": {"name": "r", "ownerReferences": [{"kind": "RayJob"}]}}
    chosen = ownership.choose("cancel", [("RayJob", tau_object("RayJob")), ("Job", submitter)])
    assert chosen is not None and chosen[0] == "RayJob"
    assert ownership.choose("cancel", [("RayJob", None), ("Job", None)]) is None


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"tau.azure.com/managed-by": "researcher-override"}, "tau.azure.com/managed-by="),
        ({"tau.azure.com/run-id": "r"}, "no tau.azure.com/managed-by=tau label"),
    ],
)
def test_only_tau_managed_by_label_marks_tau_work(labels, expected):
    obj = {"kind": "Job", "metadata": {"name": "r", "namespace": "team", "labels": labels}}
    assert not ownership.is_tau_owned(obj)
    with pytest.raises(ownership.ForeignWorkload, match=expected):
        ownership.choose("cancel", [("Job", obj)])


def test_a_foreign_objects_many_labels_are_counted_not_all_quoted():
    labels = {f"k{i}": "v" for i in range(9)}
    described = ownership.identity({"metadata": {"labels": labels}})
    assert described.endswith("labels: k0=v, k1=v, k2=v, k3=v, k4=v, k5=v, +3 more")
