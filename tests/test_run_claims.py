"""Before a submit, tau checks that the claims a run mounts exist (local Kubernetes API): a
missing one is a warning at the config line that names it, and the run is submitted anyway."""

from __future__ import annotations

import pytest

from tau.cli import main
from tau.runs import claims
from tests.test_cli_lifecycle import project  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("project")

WARNING = (
    "tau/finetune.yaml:20:13: warning: storage.data_pvc: persistentvolumeclaim "
    '"training-data" not found in namespace team\n'
    "  hint: a Ready workspace can still lack a PVC: the platform team provisions claims (tau does "
    "not create them); the run is submitted and waits Pending until the claim exists\n"
)


def test_a_missing_claim_is_a_located_warning_and_the_run_is_submitted(kube_api, capsys):
    assert main(["run", "finetune", "-n", "team"]) == 0
    captured = capsys.readouterr()
    assert captured.err == WARNING
    assert captured.out.startswith("submitted finetune (")
    assert kube_api.get_object("batch/v1", "Job", "finetune", namespace="team")


def test_a_server_dry_run_warns_the_same_way(kube_api, capsys):
    assert main(["run", "finetune", "-n", "team", "--dry-run=server"]) == 0
    assert capsys.readouterr().err == WARNING


def test_an_existing_claim_says_nothing(kube_api, capsys):
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "training-data", "namespace": "team"},
            "spec": {
                "accessModes": ["ReadWriteMany"],
                "resources": {"requests": {"storage": "1Ti"}},
            },
        }
    )
    assert main(["run", "finetune", "-n", "team"]) == 0
    assert capsys.readouterr().err == ""


def test_every_pod_template_of_a_rayjob_is_read():
    rayjob = {
        "kind": "RayJob",
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {
                    "template": {
                        "spec": {
                            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "a"}}]
                        }
                    }
                },
                "workerGroupSpecs": [
                    {
                        "template": {
                            "spec": {
                                "volumes": [
                                    {"name": "d", "persistentVolumeClaim": {"claimName": "a"}},
                                    {"name": "e", "persistentVolumeClaim": {"claimName": "b"}},
                                    {"name": "f", "emptyDir": {}},
                                ]
                            }
                        }
                    }
                ],
            }
        },
    }
    assert claims.mounted([rayjob, {"kind": "Service", "spec": {}}]) == ["a", "b"]


SCHEDULER = (
    '0/3 nodes are available: persistentvolumeclaim "training-data" not found. preemption: '
    "0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


def _stuck_pod(kube_api, job: str) -> None:
    """Play the scheduler: the Job's pod waits for the missing claim."""
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{job}-0-x1", "namespace": "team", "labels": {"job-name": job}},
            "spec": {
                "containers": [{"name": "main", "image": "x"}],
                "volumes": [
                    {"name": "data", "persistentVolumeClaim": {"claimName": "training-data"}}
                ],
            },
            "status": {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": SCHEDULER,
                    }
                ],
            },
        }
    )


def test_the_retry_loop_says_once_that_a_run_waits_on_a_missing_claim(kube_api, kube_client):
    from pathlib import Path

    from tau.intent import load, validate
    from tau.runs.recovery import ClusterRun

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _stuck_pod(kube_api, "eval")
    polls: list[float] = []

    def poll_interval(seconds: float) -> None:
        polls.append(seconds)
        if len(polls) == 3:  # the platform provides the claim; the run then completes
            kube_api.set_status(
                "batch/v1",
                "Job",
                "eval",
                {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
                namespace="team",
            )

    said: list[str] = []
    run = ClusterRun(
        kube_client,
        "team",
        validate.validate(load.load(Path.cwd() / "tau" / "eval.yaml")),
        {},
        sleep=poll_interval,
        echo=said.append,
    )
    assert run.wait_terminal().succeeded
    assert len(polls) == 3
    assert said == [
        'resilience: team/eval is waiting on ClaimNotFound: persistentvolumeclaim "training-data" '
        "not found in namespace team; waiting: pod eval-0-x1\n"
        "  fix: platform — a Ready workspace can still lack a PVC: the platform team provisions "
        "claims, tau does not create them; the pod waits until the claim exists\n"
        "  still watching; it starts once that is fixed (Ctrl-C stops watching, the run stays; "
        "`tau run cancel eval -n team` ends it)"
    ]
