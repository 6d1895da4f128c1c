"""`tau run TARGET`, list, get, logs and cancel end to end against the local Kubernetes API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau.cli import main
from tau.k8s import meta
from tests.kubeapi.kubelet import FakeKubelet
from tests.test_workspace_objects import tau_workspace

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path, monkeypatch, kubeconfig_file):
    """A repository with the examples' tau/ directory, pointed at the emulator."""
    shutil.copytree(ROOT / "examples" / "tau", tmp_path / "tau")
    (tmp_path / "tau" / "workspace.connection.yaml").unlink(missing_ok=True)
    # Without retries, so a submit returns instead of watching the run to its end.
    train = tmp_path / "tau" / "train.yaml"
    train.write_text(train.read_text().split("\nresilience:")[0] + "\n")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    return tmp_path


def test_submitting_a_target_prints_where_to_follow_it(project, kube_api, capsys):
    assert main(["run", "finetune", "-n", "team"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "submitted finetune (profile=azure.research.training.xl, ns=team)",
        "status:  tau run status finetune -n team",
        "logs:    tau run logs finetune -n team -f",
        "profile: tau run status finetune -n team --run-profile",
    ]
    job = kube_api.get_object("batch/v1", "Job", "finetune", namespace="team")
    assert len(job["metadata"]["annotations"][meta.ANNOTATION_SUBMISSION_ID]) == 24
    assert kube_api.get_object("v1", "Service", "finetune-headless", namespace="team")


def test_outside_a_repository_a_submit_needs_a_context_or_namespace(project, capsys):
    assert main(["run", "finetune"]) == 1
    assert (
        "lifecycle commands outside a Git repository require explicit --context or --namespace"
    ) in capsys.readouterr().err


def test_a_cluster_without_a_workspace_gives_no_default_namespace(project, kube_api, capsys):
    import subprocess

    subprocess.run(["git", "init", "-q", str(project)], check=True)
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "finetune"]) == 1
    assert "no namespace resolved for this workload" in capsys.readouterr().err


def test_the_workspace_supplies_namespace_and_queue(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    kube_api.put(tau_workspace("vision", namespace="vision-team", queue="vision-q", generation=1))
    assert main(["run", "finetune", "--workspace", "vision", "--context", "emulator"]) == 0
    assert "ns=vision-team" in capsys.readouterr().out
    job = kube_api.get_object("batch/v1", "Job", "finetune", namespace="vision-team")
    assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "vision-q"


def test_a_server_dry_run_prints_the_servers_objects_and_creates_nothing(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team", "--dry-run=server"]) == 0
    out = capsys.readouterr().out
    assert "kind: Job" in out and "uid:" in out
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


def test_list_shows_managed_runs_newest_first_with_their_status(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    assert main(["run", "train", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "not-ours", "namespace": "team"},
            "spec": {},
        }
    )
    capsys.readouterr()
    assert main(["run", "list", "-n", "team", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {(r["name"], r["kind"], r["status"]) for r in doc["runs"]} == {
        ("eval", "Job", "Suspended"),
        ("train", "RayJob", "Pending"),
    }
    assert main(["run", "list", "-n", "team"]) == 0
    table = capsys.readouterr().out.splitlines()
    # The contract's first line says where history comes from; the table follows it.
    assert table[0] == "History: live-only"
    assert table[1].split() == ["NAME", "KIND", "STATUS", "AGE"]


def test_list_of_an_empty_namespace_says_so(project, kube_api, capsys):
    assert main(["run", "list", "-n", "empty"]) == 0
    assert capsys.readouterr().out == 'History: live-only\nNo jobs found in namespace "empty"\n'


def test_logs_reads_the_job_pods(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "eval-abc", "namespace": "team", "labels": {"job-name": "eval"}},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
        }
    )
    kube_api.set_pod_log("eval-abc", "line one\nline two\n", namespace="team", container="main")
    capsys.readouterr()
    assert main(["run", "logs", "eval", "-n", "team"]) == 0
    assert capsys.readouterr().out == "line one\nline two\n"


def test_logs_before_any_pod_exists_points_at_status(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team"]) == 0
    assert main(["run", "logs", "eval", "-n", "team"]) == 3
    assert "has no pods yet" in capsys.readouterr().err


def test_cancel_without_waiting_says_teardown_is_not_complete(project, kube_api, capsys):
    assert main(["run", "finetune", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "cancel", "finetune", "-n", "team", "--no-wait"]) == 0
    assert "teardown is NOT complete" in capsys.readouterr().out
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []
    assert kube_api.list_objects("v1", "Service", namespace="team") == []


def test_cancel_waits_until_the_pods_are_gone(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team"]) == 0
    job = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "eval-0",
                "namespace": "team",
                "labels": {"job-name": "eval"},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "eval",
                        "uid": job["metadata"]["uid"],
                    }
                ],
            },
            "spec": {"containers": [{"name": "main", "image": "x"}]},
        }
    )
    capsys.readouterr()
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    assert capsys.readouterr().out.startswith("cancelled Job team/eval")
    assert kube_api.list_objects("v1", "Pod", namespace="team") == []


def test_cancel_waits_until_the_rayjob_itself_is_gone(project, kube_api, kube_client):
    # Deleted in the foreground (or held by KubeRay's finalizer), a RayJob outlives its cluster
    # and pods for a while; a resubmit of its name meanwhile would be refused as AlreadyExists.
    from tau.runs.cancel import cancel

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    rayjob = kube_api.get_object("ray.io/v1", "RayJob", "train", namespace="team")
    rayjob["metadata"]["finalizers"] = ["ray.io/rayjob-finalizer"]
    kube_api.put(rayjob)
    naps: list[float] = []

    def kuberay_lets_go(seconds: float) -> None:
        naps.append(seconds)
        held = kube_api.get_object("ray.io/v1", "RayJob", "train", namespace="team")
        assert held["metadata"]["deletionTimestamp"]
        held["metadata"]["finalizers"] = []
        kube_api.put(held)

    result = cancel(kube_client, "team", "train", sleep=kuberay_lets_go)
    assert result.complete and naps == [1.0]
    assert kube_api.list_objects("ray.io/v1", "RayJob", namespace="team") == []


def test_cancel_waits_until_the_runs_kueue_workload_is_gone(project, kube_api, kube_client):
    # The garbage collector removes the Workload only after the Job: until then it holds the
    # quota that "Kueue reclaimed the quota" says is free.
    from tau.runs.cancel import cancel

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    job = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    uid = job["metadata"]["uid"]
    kube_api.put(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-eval-1",
                "namespace": "team",
                "labels": {meta.KUEUE_JOB_UID: uid},
            },
            "spec": {},
        }
    )
    naps: list[float] = []

    def garbage_collector(seconds: float) -> None:
        naps.append(seconds)
        kube_api.delete_object("kueue.x-k8s.io/v1beta2", "Workload", "job-eval-1", namespace="team")

    result = cancel(kube_client, "team", "eval", sleep=garbage_collector)
    assert result.complete and naps == [1.0]


def test_cancel_says_which_pod_holds_its_node_and_why_it_does_not_stop(
    project, kube_api, kube_client
):
    """A main process that ignores SIGTERM (python as PID 1) keeps its pod for the whole grace
    period: cancel says what it waits for, and once the pod outlasts its SIGTERM, why."""
    from tau.runs.cancel import cancel

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "eval-0-abcde",
                "namespace": "team",
                "labels": {"job-name": "eval"},
                # Held until the kubelet's kill, as a pod in its grace period is.
                "finalizers": ["tau-test/held"],
            },
            "spec": {
                "nodeName": "gpu-node-3",
                "terminationGracePeriodSeconds": 600,
                "containers": [{"name": "main", "image": "python:3.12"}],
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [{"name": "main", "state": {"running": {}}}],
            },
        }
    )
    kube_api.delete_object("v1", "Pod", "eval-0-abcde", namespace="team")
    now = [0.0]
    said: list[str] = []

    def kubelet(seconds: float) -> None:
        now[0] += 10.0
        if now[0] >= 40.0:  # the grace period ends: SIGKILL, and the pod goes
            pod = kube_api.get_object("v1", "Pod", "eval-0-abcde", namespace="team")
            pod["metadata"]["finalizers"] = []
            kube_api.put(pod)

    result = cancel(
        kube_client, "team", "eval", sleep=kubelet, clock=lambda: now[0], say=said.append
    )
    assert result.complete
    assert said == [
        "waiting for eval to release compute (1 pod(s) still holding capacity on gpu-node-3)",
        "pod eval-0-abcde (main) still runs 30s after it was told to stop: its main process does "
        "not exit on SIGTERM (a process that runs as PID 1, as `exec python` makes it, ignores "
        "SIGTERM unless it installs a handler); the kubelet kills it after "
        "terminationGracePeriodSeconds=600s",
        "compute released: no RayCluster or pods remain for eval",
    ]


MISSING_RUN_ERROR = (
    "error: run team/ghost not found: no RayJob or Job of that name\n"
    "  hint: list the runs with `tau run list -n team`\n"
)


@pytest.mark.parametrize("verb", ["logs", "get", "cancel"])
def test_a_missing_run_is_invalid_input_for_every_verb(project, kube_api, capsys, verb):
    # One rule with `tau run status` (state not_found, exit 1): the cluster answered, the name
    # the user gave is wrong. Exit 3 stays for a cluster that failed the request.
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", verb, "ghost", "-n", "team"]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", MISSING_RUN_ERROR)


def test_status_and_the_other_verbs_agree_on_a_missing_run(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    codes = {verb: main(["run", verb, "ghost", "-n", "team"]) for verb in VERBS_ON_A_RUN}
    assert codes == dict.fromkeys(VERBS_ON_A_RUN, 1)
    assert "State: not_found" in capsys.readouterr().out


VERBS_ON_A_RUN = ("status", "logs", "get", "cancel")


def test_get_lists_and_reads_results_through_a_helper_pod(project, kube_api, tmp_path, capsys):
    assert main(["run", "finetune", "-n", "team"]) == 0
    volume = tmp_path / "pvc"
    out = volume / "checkpoints" / "workflows" / "finetune"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text('{"loss": 0.5}\n')
    capsys.readouterr()
    with FakeKubelet(kube_api, volume):
        assert main(["run", "get", "finetune", "-n", "team"]) == 0
        listing = capsys.readouterr().out
        assert "results: /data/checkpoints/workflows/finetune on pvc training-data" in listing
        assert "metrics.json" in listing
        assert (
            main(
                ["run", "get", "finetune", "-n", "team", "--artifact", "metrics.json", "-o", "raw"]
            )
            == 0
        )
        assert capsys.readouterr().out == '{"loss": 0.5}\n'


def test_get_of_a_run_without_durable_output_explains_why(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "scratch",
                "namespace": "team",
                "labels": {meta.LABEL_MANAGED_BY: "tau"},
            },
            "spec": {},
        }
    )
    assert main(["run", "get", "scratch", "-n", "team"]) == 1
    assert "recorded no durable result" in capsys.readouterr().err


def test_an_unauthorized_cluster_is_reported_without_a_traceback(project, kube_api, capsys):
    kube_api.deny(401)
    assert main(["run", "list", "-n", "team"]) == 3
    err = capsys.readouterr().err
    assert "401 Unauthorized" in err and "Traceback" not in err


def test_an_unreachable_cluster_is_reported_without_a_traceback(project, kube_api, capsys):
    kube_api.stop()
    assert main(["run", "list", "-n", "team"]) == 3
    err = capsys.readouterr().err
    assert "connection to the Kubernetes API server was refused" in err
    assert "Traceback" not in err


def test_history_lists_the_attempts_recorded_as_events(project, kube_api, capsys):
    from datetime import UTC, datetime

    from tau.runs.events import emit, event_body
    from tests.kubeapi.fixtures import api_client_for

    assert main(["run", "eval", "-n", "team"]) == 0
    job = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    api = api_client_for(kube_api, project)
    now = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
    emit(
        api,
        event_body(
            "team",
            "eval-retry-1",
            "RayJobAttempt",
            "submission_id=eval attempt=1/2 failure=Preempted signature=node drained",
            job,
            now,
        ),
    )
    emit(
        api,
        event_body(
            "team",
            "eval-retry-succeeded-1",
            "RayJobRetrySucceeded",
            "submission_id=eval recovered_after_attempt=1 last_failure=Preempted signature=",
            job,
            now.replace(hour=13),
        ),
    )
    capsys.readouterr()
    assert main(["run", "history", "eval", "-n", "team"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ATTEMPT", "OUTCOME", "REASON", "TIME", "SIGNATURE"]
    assert lines[1].split()[:3] == ["1/2", "retried", "Preempted"]
    assert "succeeded after attempt 1" in lines[2]


def test_history_of_a_run_without_retries_says_so(project, kube_api, capsys):
    assert main(["run", "history", "eval", "-n", "team", "-o", "json"]) == 0
    assert '"attempts": []' in capsys.readouterr().out


def _pending_workload(job: dict) -> dict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-eval-1",
            "namespace": "team",
            "labels": {"kueue.x-k8s.io/job-uid": job["metadata"]["uid"]},
        },
        "spec": {
            "queueName": "research-eval",
            "podSets": [{"name": "main", "count": 1, "template": {}}],
        },
        "status": {
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": (
                        "couldn't assign flavors to pod set main: insufficient quota for cpu"
                    ),
                    "lastTransitionTime": "2026-12-02T10:00:02Z",
                }
            ]
        },
    }


def test_status_says_a_run_waits_on_quota_and_who_owns_the_fix(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        _pending_workload(kube_api.get_object("batch/v1", "Job", "eval", namespace="team"))
    )
    capsys.readouterr()
    assert main(["run", "status", "eval", "-n", "team", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["status"]["state"]) == ("RunStatus", "queued")
    assert "QuotaPending" in {d["code"] for d in doc["diagnostics"]}
    assert main(["run", "status", "eval", "-n", "team"]) == 0
    view = capsys.readouterr().out
    assert "Kueue admission" in view and "queue owner" in view


def test_status_of_a_missing_run_exits_1(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "status", "ghost", "-n", "team", "-o", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"]["state"] == "not_found"


def _fail_job(
    kube_api, name: str, *, pod_condition: dict | None = None, container_reason: str | None = None
) -> None:
    """Play the Job controller and kubelet: the Job failed, its pod says why."""
    job = kube_api.get_object("batch/v1", "Job", name, namespace="team")
    job_failed(kube_api, name)
    status: dict = {"phase": "Failed", "conditions": [pod_condition] if pod_condition else []}
    if container_reason:
        status["containerStatuses"] = [
            {
                "name": "main",
                "ready": False,
                "restartCount": 0,
                "image": "x",
                "imageID": "",
                "state": {"terminated": {"exitCode": 137, "reason": container_reason}},
            }
        ]
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{name}-0",
                "namespace": "team",
                "labels": {"job-name": name},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": name,
                        "uid": job["metadata"]["uid"],
                    }
                ],
            },
            "spec": {"containers": [{"name": "main", "image": "x"}]},
            "status": status,
        }
    )


PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def test_resume_replaces_a_preempted_run_with_one_that_resumes(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    capsys.readouterr()
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "failure reason: Preempted",
        "checkpoint: /data/checkpoints/finetunes/eval",
        "deleting failed workload team/eval...",
        "resumed eval after Preempted (attempt 1, "
        "TAU_RESUME_FROM=/data/checkpoints/finetunes/eval, ns=team)",
    ]
    job = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    env = {
        e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TAU_RETRY_ATTEMPT"] == "1" and env["TAU_RETRY_REASON"] == "Preempted"
    assert env["TAU_RESUME_FROM"] == "/data/checkpoints/finetunes/eval"
    assert job["metadata"]["annotations"][meta.ANNOTATION_RETRY_ATTEMPT] == "1"
    assert "status" not in job or not job["status"].get("failed")


def test_resume_warns_when_the_config_changed_since_the_submit(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    config = project / "tau" / "eval.yaml"
    config.write_text(config.read_text().replace('cpu_request: "2"', 'cpu_request: "3"'))
    capsys.readouterr()
    code = main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"])
    err = capsys.readouterr().err
    assert code == 0, err
    warning = next(line for line in err.splitlines() if line.startswith("warning: "))
    assert warning.startswith("warning: config hash changed (") and " → " in warning, warning


def test_resume_refuses_an_oomkilled_run_without_force(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", container_reason="OOMKilled")
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 1
    assert "was OOMKilled" in capsys.readouterr().err
    assert kube_api.get_object("batch/v1", "Job", "eval", namespace="team")  # untouched


def _without_data_pvc(project: Path) -> None:
    config = project / "tau" / "eval.yaml"
    config.write_text(config.read_text().replace("storage:\n  data_pvc: training-data\n", ""))
    assert "data_pvc" not in config.read_text()


def test_resume_of_a_run_without_a_volume_is_refused_before_anything_is_deleted(
    project, kube_api, capsys
):
    """The seed: a workload that only wrote to node-local scratch has nothing to resume from."""
    kube_api.register_kueue_kuberay_tau_kinds()
    _without_data_pvc(project)
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    before = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    capsys.readouterr()
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 1
    out, err = capsys.readouterr()
    assert "deleting" not in out
    assert (
        "error: run team/eval has nothing to resume from: no PersistentVolumeClaim holds "
        "/data/checkpoints/finetunes/eval in its pods, so it only wrote to node-local scratch, "
        "and that state does not survive workload deletion"
    ) in err
    assert "hint: nothing was deleted; set storage.data_pvc" in err
    assert "Traceback" not in err
    after = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


def test_resume_refuses_a_replacement_that_drops_the_volume(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    before = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    _without_data_pvc(project)
    capsys.readouterr()
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 1
    err = capsys.readouterr().err
    assert (
        "the replacement of team/eval mounts no PersistentVolumeClaim at "
        "/data/checkpoints/finetunes/eval"
    ) in err
    assert "(the failed run wrote to claim training-data)" in err
    after = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


def test_resume_refuses_a_run_that_is_still_active(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 1
    assert "is still" in capsys.readouterr().err


def test_resume_dry_run_prints_the_replacement_and_changes_nothing(project, kube_api, capsys):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    before = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    capsys.readouterr()
    assert (
        main(
            ["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team", "--dry-run=client"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "TAU_RETRY_ATTEMPT" in out and "kind: Job" in out
    after = kube_api.get_object("batch/v1", "Job", "eval", namespace="team")
    assert after["metadata"]["uid"] == before["metadata"]["uid"]


def retry_target(tau_dir: Path, monkeypatch) -> None:
    """tau/retryme.yaml: the eval target with two quick retries; the loop's sleeps cut short."""
    import time

    config = (tau_dir / "eval.yaml").read_text().replace("name: eval", "name: retryme")
    config += "resilience:\n  max_retries: 2\n  backoff_initial: 10ms\n  backoff_max: 20ms\n"
    (tau_dir / "retryme.yaml").write_text(config)
    real_sleep = time.sleep
    monkeypatch.setattr(time, "sleep", lambda s: real_sleep(min(s, 0.02)))


def job_failed(kube_api, name: str) -> None:
    """Play the Job controller: the Job failed (its backoff limit reached)."""
    kube_api.set_status(
        "batch/v1",
        "Job",
        name,
        {
            "failed": 1,
            "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}],
        },
        namespace="team",
    )


def complete_job(kube_api, name: str) -> None:
    """Play the Job controller: the Job succeeded."""
    kube_api.set_status(
        "batch/v1",
        "Job",
        name,
        {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
        namespace="team",
    )


def attempts(kube_api, first, name: str = "retryme"):
    """(controller, seen) for `run_beside`: each new Job of the run is played once, the
    first by `first()`, every later one completed; `seen` lists their UIDs in order."""
    seen: list[str] = []

    def controller() -> None:
        for job in kube_api.list_objects("batch/v1", "Job", namespace="team"):
            uid = job["metadata"]["uid"]
            if uid in seen:
                continue
            seen.append(uid)
            if len(seen) == 1:
                first()
            else:
                complete_job(kube_api, name)

    return controller, seen


def run_beside(step, argv: list[str]) -> int:
    """`tau <argv>` while `step` runs every 10 ms on another thread (a controller's part)."""
    import threading

    stop = threading.Event()

    failed: list[BaseException] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                step()
            except BaseException as exc:  # a broken step fails the test, never hangs it
                failed.append(exc)
                raise
            stop.wait(0.01)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        return main(argv)
    finally:
        stop.set()
        thread.join(5)
        assert not failed, f"the controller's step failed: {failed[0]!r}"


def test_a_preempted_run_is_retried_automatically_until_it_succeeds(
    project, kube_api, capsys, monkeypatch
):
    kube_api.register_kueue_kuberay_tau_kinds()
    retry_target(project / "tau", monkeypatch)
    controller, seen = attempts(
        kube_api, lambda: _fail_job(kube_api, "retryme", pod_condition=PREEMPTED)
    )
    code = run_beside(controller, ["run", "retryme", "-n", "team"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "resilience: watching team/retryme (max 2 retries, retry on: Preempted, Evicted)" in out
    assert "attempt 1/2 failed (Preempted) — retrying in 10ms" in out
    assert "workload team/retryme completed successfully" in out
    events = {e["reason"] for e in kube_api.list_objects("v1", "Event", namespace="team")}
    assert {"RayJobAttempt", "RayJobRetrySucceeded"} <= events
    assert len(seen) == 2


def test_list_filters_by_queue(project, kube_api, capsys):
    # The examples name no queue (a workspace does); here the config names its own.
    evaluation = project / "tau" / "eval.yaml"
    evaluation.write_text(
        evaluation.read_text().replace(
            "  profile: cpu\n", "  profile: cpu\n  queue: research-eval\n"
        )
    )
    assert main(["run", "eval", "-n", "team"]) == 0
    assert main(["run", "finetune", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "list", "-n", "team", "--queue", "research-eval", "-o", "json"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["eval"]


def test_logs_reads_the_named_container(project, kube_api, capsys):
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "eval-abc", "namespace": "team", "labels": {"job-name": "eval"}},
            "spec": {
                "containers": [{"name": "main", "image": "x"}, {"name": "sidecar", "image": "y"}]
            },
        }
    )
    kube_api.set_pod_log("eval-abc", "from the sidecar\n", namespace="team", container="sidecar")
    capsys.readouterr()
    assert main(["run", "logs", "eval", "-n", "team", "-c", "sidecar"]) == 0
    assert capsys.readouterr().out == "from the sidecar\n"
