"""Logs that outlive their pods, against the local Kubernetes API: what tau keeps before a
retry, `resume` or `cancel` deletes an attempt, where, and how `tau run logs` shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tau.cli import main
from tests.kubeapi.handler import LOG_TIMESTAMP
from tests.kubeapi.kubelet import FakeKubelet
from tests.test_cli_lifecycle import (  # noqa: F401  (project is a fixture)
    PREEMPTED,
    _fail_job,
    attempts,
    complete_job,
    job_failed,
    project,
    retry_target,
    run_beside,
)
from tests.test_workspace_objects import tau_workspace


def local_logs(namespace: str, run: str) -> Path:
    return Path(os.environ["XDG_STATE_HOME"]) / "tau" / "evidence" / namespace / run / "logs"


def _owner(kube_api, kind: str, name: str) -> list[dict[str, Any]]:
    api = "batch/v1" if kind == "Job" else "ray.io/v1"
    obj = kube_api.get_object(api, kind, name, namespace="team")
    return [{"apiVersion": api, "kind": kind, "name": name, "uid": obj["metadata"]["uid"]}]


def _put_pod(kube_api, job: str, pod: str, spec: dict, status: dict) -> None:
    """Play the Job controller: a pod of the Job (labelled and owned as it labels them)."""
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod,
                "namespace": "team",
                "labels": {"job-name": job},
                "ownerReferences": _owner(kube_api, "Job", job),
            },
            "spec": spec,
            "status": status,
        }
    )


def failed_pod(kube_api, job: str, pod: str = "", *, restarted: bool = False) -> str:
    """A pod of the Job that ran an init container, its main container and a sidecar; the main
    container OOMKilled (and, `restarted`, once before too), each container with its log."""
    pod = pod or f"{job}-0-abcde"
    main_status: dict[str, Any] = {
        "name": "main",
        "restartCount": 1 if restarted else 0,
        "state": {
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": "2026-01-01T00:01:00Z",
                "finishedAt": "2026-01-01T00:02:00Z",
            }
        },
    }
    if restarted:
        main_status["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    spec = {
        "nodeName": "gpu-node-1",
        "initContainers": [{"name": "fetch", "image": "busybox"}],
        "containers": [
            {"name": "main", "image": "python"},
            {"name": "sidecar", "image": "busybox"},
            {"name": "never", "image": "busybox"},
        ],
    }
    status = {
        "phase": "Failed",
        "startTime": "2026-01-01T00:00:00Z",
        "initContainerStatuses": [{"name": "fetch", "state": {"terminated": {"exitCode": 0}}}],
        "containerStatuses": [
            main_status,
            {"name": "sidecar", "state": {"terminated": {"exitCode": 0}}},
            {"name": "never", "state": {"waiting": {"reason": "PodInitializing"}}},
        ],
    }
    _put_pod(kube_api, job, pod, spec, status)
    kube_api.set_pod_log(pod, "fetched the data\n", namespace="team", container="fetch")
    kube_api.set_pod_log(pod, "step 1\nstep 2\nout of memory\n", namespace="team", container="main")
    kube_api.set_pod_log(pod, "sidecar says hi\n", namespace="team", container="sidecar")
    if restarted:
        kube_api.set_pod_log(
            pod, "the first try\n", namespace="team", container="main", previous=True
        )
    return pod


@pytest.fixture
def failed_eval(project, kube_api, capsys):  # noqa: F811
    """The eval Job, failed (OOMKilled) with one pod whose containers printed something."""
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", container_reason="OOMKilled")
    kube_api.delete_object("v1", "Pod", "eval-0", namespace="team")
    failed_pod(kube_api, "eval", restarted=True)
    capsys.readouterr()
    return project


def test_cancel_keeps_every_container_that_ran_and_the_pod_facts(failed_eval, kube_api, capsys):
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    captured = capsys.readouterr()
    root = local_logs("team", "eval")
    assert captured.err.splitlines() == [
        f"kept the logs of attempt 0 of team/eval (4 container log(s)) in {root.parent}"
    ]
    assert captured.out.startswith("cancelled Job team/eval")
    attempt = root / "attempt-0"
    pod = attempt / "eval-0-abcde"
    assert sorted(p.name for p in pod.iterdir()) == [
        "fetch.log",
        "main.log",
        "main.previous.log",
        "sidecar.log",
    ]
    # Read with the kubelet's timestamps, so --timestamps can show them later.
    assert (pod / "main.log").read_text() == "".join(
        f"{LOG_TIMESTAMP} {line}\n" for line in ("step 1", "step 2", "out of memory")
    )
    assert (pod / "main.previous.log").read_text() == f"{LOG_TIMESTAMP} the first try\n"
    assert oct((pod / "main.log").stat().st_mode & 0o777) == "0o600"
    facts = json.loads((attempt / "pods.json").read_text())
    assert (facts["run"], facts["namespace"], facts["kind"], facts["attempt"]) == (
        "eval",
        "team",
        "Job",
        0,
    )
    (only,) = facts["pods"]
    assert (only["name"], only["node"], only["phase"]) == ("eval-0-abcde", "gpu-node-1", "Failed")
    by_name = {c["name"]: c for c in only["containers"]}
    assert by_name["main"] == {
        "name": "main",
        "init": False,
        "restarts": 1,
        "state": "terminated",
        "exit_code": 137,
        "reason": "OOMKilled",
        "started_at": "2026-01-01T00:01:00Z",
        "finished_at": "2026-01-01T00:02:00Z",
        "last": {"state": "terminated", "exit_code": 1, "reason": "Error"},
        "log": "eval-0-abcde/main.log",
        "previous_log": "eval-0-abcde/main.previous.log",
    }
    assert by_name["fetch"]["init"] is True
    assert by_name["never"]["log"] is None  # it never started: no log to keep
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


#: What the kubelet serves for a container it has removed (an evicted pod's, at once).
REMOVED = "unable to retrieve container logs for containerd://5f0c1e\n"
EVICTION = (
    "The node was low on resource: memory. Threshold quantity: 1Gi, available: 900Mi. "
    "Container main was using 2300Mi, request is 256Mi, has larger consumption of memory. "
)


def test_a_log_the_node_removed_is_kept_as_what_it_is_with_the_kubelets_words(
    project,  # noqa: F811
    kube_api,
    capsys,
):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval")
    kube_api.delete_object("v1", "Pod", "eval-0", namespace="team")
    pod = failed_pod(kube_api, "eval")
    evicted = kube_api.get_object("v1", "Pod", pod, namespace="team")
    evicted["status"].update(reason="Evicted", message=EVICTION)
    kube_api.put(evicted)
    kube_api.set_pod_log(pod, REMOVED, namespace="team", container="main")
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    capsys.readouterr()
    facts = json.loads((local_logs("team", "eval") / "attempt-0" / "pods.json").read_text())
    main_facts = next(c for c in facts["pods"][0]["containers"] if c["name"] == "main")
    assert main_facts["log"] is None
    assert main_facts["log_error"] == (
        "node gpu-node-1 had removed it (unable to retrieve container logs for "
        "containerd://5f0c1e): a kubelet removes an evicted pod's containers, their logs "
        "with them"
    )
    assert not (local_logs("team", "eval") / "attempt-0" / pod / "main.log").exists()
    assert main(["run", "logs", "eval", "-n", "team"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: attempt 0 kept no log of container main (in ")
    assert "node gpu-node-1 had removed it" in err
    assert f"pod {pod}: Evicted {EVICTION.strip()}" in err
    # What the node still had is kept and shown.
    assert main(["run", "logs", "eval", "-n", "team", "-c", "sidecar"]) == 0
    assert capsys.readouterr().out == "sidecar says hi\n"


def test_logs_of_a_cancelled_run_show_the_kept_copy_and_say_so(failed_eval, capsys):
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "logs", "eval", "-n", "team"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "step 1\nstep 2\nout of memory\n"
    where = local_logs("team", "eval").parent
    assert captured.err == (
        f"showing the logs of attempt 0 of team/eval kept in {where} (its workload is gone)\n"
    )
    assert main(["run", "logs", "eval", "-n", "team", "--all-containers", "--prefix"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "[pod/eval-0-abcde/fetch] fetched the data",
        "[pod/eval-0-abcde/main] step 1",
        "[pod/eval-0-abcde/main] step 2",
        "[pod/eval-0-abcde/main] out of memory",
        "[pod/eval-0-abcde/sidecar] sidecar says hi",
    ]
    assert main(["run", "logs", "eval", "-n", "team", "--previous", "--timestamps"]) == 0
    assert capsys.readouterr().out == f"{LOG_TIMESTAMP} the first try\n"
    assert main(["run", "logs", "eval", "-n", "team", "--tail", "1"]) == 0
    assert capsys.readouterr().out == "out of memory\n"
    assert main(["run", "logs", "eval", "-n", "team", "-c", "ghost"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: attempt 0 kept no log of container ghost")
    assert "its kept logs: fetch, main, sidecar" in err


def test_resume_keeps_the_failed_attempt_and_attempt_selects_it(project, kube_api, capsys):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    _fail_job(kube_api, "eval", pod_condition=PREEMPTED)
    kube_api.set_pod_log("eval-0", "preempted at step 40\n", namespace="team")
    capsys.readouterr()
    assert main(["run", "resume", "eval", "--config", "tau/eval.yaml", "-n", "team"]) == 0
    assert "kept the logs of attempt 0 of team/eval" in capsys.readouterr().err
    # The replacement (attempt 1) runs: its pod is live.
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "eval-1-xyz", "namespace": "team", "labels": {"job-name": "eval"}},
            "spec": {"containers": [{"name": "main", "image": "x"}]},
        }
    )
    kube_api.set_pod_log("eval-1-xyz", "resumed from step 40\n", namespace="team")
    assert main(["run", "logs", "eval", "-n", "team"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("resumed from step 40\n", "")
    assert main(["run", "logs", "eval", "-n", "team", "--attempt", "1"]) == 0
    assert capsys.readouterr().out == "resumed from step 40\n"
    assert main(["run", "logs", "eval", "-n", "team", "--attempt", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "preempted at step 40\n"
    where = local_logs("team", "eval").parent
    assert captured.err == f"showing the logs of attempt 0 of team/eval kept in {where}\n"
    assert main(["run", "logs", "eval", "-n", "team", "--attempt", "7"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(
        f"error: run team/eval has no attempt 7; its attempts: 0 (kept in {where}), "
        "1 (the current one)\n"
    )
    assert main(["run", "logs", "eval", "-n", "team", "--attempt", "-1"]) == 1
    assert "--attempt -1 must be an attempt number" in capsys.readouterr().err


def test_the_retry_loop_keeps_each_failed_attempt_before_resubmitting(
    project,  # noqa: F811
    kube_api,
    capsys,
    monkeypatch,
):
    kube_api.register_kueue_kuberay_tau_kinds()
    retry_target(project / "tau", monkeypatch)

    def preempted() -> None:
        _fail_job(kube_api, "retryme", pod_condition=PREEMPTED)
        kube_api.set_pod_log("retryme-0", "attempt zero was preempted\n", namespace="team")

    controller, _ = attempts(kube_api, preempted)
    assert run_beside(controller, ["run", "retryme", "-n", "team"]) == 0
    err = capsys.readouterr().err
    assert "kept the logs of attempt 0 of team/retryme (1 container log(s))" in err
    kept = local_logs("team", "retryme") / "attempt-0" / "retryme-0" / "main.log"
    assert kept.read_text() == f"{LOG_TIMESTAMP} attempt zero was preempted\n"
    assert main(["run", "logs", "retryme", "-n", "team", "--attempt", "0"]) == 0
    assert capsys.readouterr().out == "attempt zero was preempted\n"


def _running_pod(kube_api, job: str, text: str) -> str:
    """The Job's pod with its main container running and `text` in its log."""
    pod = f"{job}-0"
    running = {"name": "main", "ready": True, "restartCount": 0, "state": {"running": {}}}
    _put_pod(
        kube_api,
        job,
        pod,
        {"nodeName": "gpu-node-1", "containers": [{"name": "main", "image": "x"}]},
        {"phase": "Running", "containerStatuses": [running]},
    )
    kube_api.set_pod_log(pod, text, namespace="team", container="main")
    return pod


def _evict(kube_api, job: str, pod: str) -> None:
    """Play the kubelet under memory pressure: the pod evicted, its container removed (its
    log with it), and the Job controller: the Job failed."""
    evicted = kube_api.get_object("v1", "Pod", pod, namespace="team")
    evicted["status"] = {
        "phase": "Failed",
        "reason": "Evicted",
        "message": EVICTION,
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
        ],
        "containerStatuses": [
            {
                "name": "main",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "Error"}},
            }
        ],
    }
    kube_api.put(evicted)
    kube_api.set_pod_log(pod, REMOVED, namespace="team", container="main")
    job_failed(kube_api, job)


def test_the_retry_loop_keeps_its_own_copy_of_a_log_the_node_removed_on_eviction(
    project,  # noqa: F811
    kube_api,
    capsys,
    monkeypatch,
):
    from tau.runs import log_tee

    kube_api.register_kueue_kuberay_tau_kinds()
    retry_target(project / "tau", monkeypatch)
    jobs, seen = attempts(
        kube_api, lambda: _running_pod(kube_api, "retryme", "checkpoint written at step 7\n")
    )

    def controller() -> None:
        jobs()
        if len(seen) != 1:
            return
        # Evicted once tau's copy has the line: the node then removes the log at once.
        copy = log_tee.spool_dir("team", "retryme", seen[0]) / "retryme-0" / "main.log"
        pod = kube_api.get_object("v1", "Pod", "retryme-0", namespace="team") or {}
        # (The pod goes, and the copy with it, once tau has kept the attempt.)
        running = (pod.get("status") or {}).get("phase") == "Running"
        if running and copy.is_file() and copy.stat().st_size:
            _evict(kube_api, "retryme", "retryme-0")

    assert run_beside(controller, ["run", "retryme", "-n", "team"]) == 0
    captured = capsys.readouterr()
    assert "attempt 1/2 failed (Evicted)" in captured.out + captured.err
    attempt = local_logs("team", "retryme") / "attempt-0"
    kept = attempt / "retryme-0" / "main.log"
    assert kept.read_text() == f"{LOG_TIMESTAMP} checkpoint written at step 7\n"
    facts = json.loads((attempt / "pods.json").read_text())
    main_facts = facts["pods"][0]["containers"][0]
    assert main_facts["log"] == "retryme-0/main.log"
    assert main_facts["log_from"] == (
        "tau's copy, followed while it watched: node gpu-node-1 had removed it (unable to "
        "retrieve container logs for containerd://5f0c1e): a kubelet removes an evicted "
        "pod's containers, their logs with them"
    )
    # The copy is gone once the attempt is kept, and the run's success removed the other.
    assert not log_tee.spool_dir("team", "retryme", seen[0]).exists()
    assert main(["run", "logs", "retryme", "-n", "team", "--attempt", "0"]) == 0
    assert capsys.readouterr().out == "checkpoint written at step 7\n"


def _workspace_with_store(kube_api, store: str) -> None:
    ws = tau_workspace("team-ws", namespace="team", queue="team-q", generation=1)
    ws["spec"]["experiments"] = {"store": store}
    kube_api.put(ws)


def test_the_workspaces_folder_store_holds_the_kept_logs(failed_eval, kube_api, capsys, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    _workspace_with_store(kube_api, str(store))
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    assert f"(4 container log(s)) in {store}\n" in capsys.readouterr().err
    kept = store / "runs" / "eval" / "logs" / "attempt-0"
    assert (kept / "eval-0-abcde" / "sidecar.log").read_text() == (
        f"{LOG_TIMESTAMP} sidecar says hi\n"
    )
    assert (kept / "pods.json").is_file()
    assert not local_logs("team", "eval").exists()
    assert main(["run", "logs", "eval", "-n", "team", "-c", "sidecar"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "sidecar says hi\n"
    assert f"kept in {store} (its workload is gone)" in captured.err


def test_a_store_tau_cannot_write_falls_back_to_the_state_folder_in_one_line(
    failed_eval, kube_api, capsys, tmp_path
):
    _workspace_with_store(kube_api, str(tmp_path / "not-mounted-here"))
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    captured = capsys.readouterr()
    where = local_logs("team", "eval").parent
    assert captured.err.splitlines()[0] == (
        f"warning: could not keep the logs of attempt 0 of team/eval in "
        f"{tmp_path / 'not-mounted-here'} (folder store {tmp_path / 'not-mounted-here'} does "
        f"not exist on this machine); kept them in {where} instead"
    )
    assert (local_logs("team", "eval") / "attempt-0" / "pods.json").is_file()


def test_a_store_url_with_a_password_is_never_printed(failed_eval, kube_api, capsys):
    _workspace_with_store(kube_api, "postgresql://tau:hunter2@db:5432/exp?objects=s3://b/p")
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    err = capsys.readouterr().err
    assert "hunter2" not in err
    assert "postgresql://tau:<redacted>@db:5432/exp" in err and "must not hold a password" in err


def test_keeping_that_fails_everywhere_still_cancels(failed_eval, kube_api, capsys, monkeypatch):
    blocker = Path(os.environ["XDG_STATE_HOME"]) / "tau"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the folder would go")
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith(
        f"warning: could not keep the logs of attempt 0 of team/eval in {blocker / 'evidence'}"
    )
    assert line.endswith("; deleting without them")
    assert captured.out.startswith("cancelled Job team/eval")
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


def test_no_keep_logs_deletes_at_once(failed_eval, kube_api, capsys):
    assert main(["run", "cancel", "eval", "-n", "team", "--no-keep-logs"]) == 0
    assert capsys.readouterr().err == ""
    assert not local_logs("team", "eval").exists()
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


def test_a_run_with_no_pods_keeps_nothing_and_says_nothing(project, kube_api, capsys):  # noqa: F811
    assert main(["run", "eval", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "cancel", "eval", "-n", "team"]) == 0
    assert capsys.readouterr().err == ""
    assert not local_logs("team", "eval").exists()


def test_a_missing_run_without_kept_logs_is_still_not_found(project, kube_api, capsys):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "logs", "ghost", "-n", "team", "--attempt", "0"]) == 1
    assert "run team/ghost not found" in capsys.readouterr().err


# ----------------------------------------------------------------------------- RayJob


def _ended_rayjob(kube_api) -> None:
    kube_api.set_status(
        "ray.io/v1",
        "RayJob",
        "train",
        {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED", "rayClusterName": "train-a"},
        namespace="team",
    )


def test_a_rayjob_whose_head_is_gone_shows_the_drivers_copy_on_the_claim(
    project,  # noqa: F811
    kube_api,
    capsys,
    tmp_path,
):
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    rayjob = kube_api.get_object("ray.io/v1", "RayJob", "train", namespace="team")
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    sidecar = next(c for c in head["containers"] if c["name"] == "ray-driver-log-offload")
    copy = "/data/checkpoints/workflows/train/.tau/logs/attempt-0/ray-driver.log"
    assert sidecar["env"] == [{"name": "TAU_DRIVER_LOG_COPY", "value": copy}]
    assert {"name": "data", "mountPath": "/data"} in sidecar["volumeMounts"]
    _ended_rayjob(kube_api)
    volume = tmp_path / "claim"
    on_claim = volume / copy.removeprefix("/data/")
    on_claim.parent.mkdir(parents=True)
    on_claim.write_text("epoch 1 loss 0.5\nepoch 2 loss 0.3\ndriver done\n")
    capsys.readouterr()
    with FakeKubelet(kube_api, volume):
        assert main(["run", "logs", "train", "-n", "team"]) == 0
        captured = capsys.readouterr()
        assert captured.out == "epoch 1 loss 0.5\nepoch 2 loss 0.3\ndriver done\n"
        assert captured.err == (
            "showing the Ray driver's output of attempt 0 of team/train kept on the claim "
            f"training-data at {copy} (the head pod is gone)\n"
        )
        assert main(["run", "logs", "train", "-n", "team", "--tail", "1"]) == 0
        assert capsys.readouterr().out == "driver done\n"


def test_an_earlier_attempt_of_a_rayjob_is_read_from_its_own_folder_on_the_claim(
    project,  # noqa: F811
    kube_api,
    capsys,
    tmp_path,
):
    from tau.k8s import meta

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    # The retry loop's resubmit: attempt 1, whose head writes its own folder.
    rayjob = kube_api.get_object("ray.io/v1", "RayJob", "train", namespace="team")
    rayjob["metadata"]["annotations"][meta.ANNOTATION_RETRY_ATTEMPT] = "1"
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    sidecar = next(c for c in head["containers"] if c["name"] == "ray-driver-log-offload")
    sidecar["env"][0]["value"] = sidecar["env"][0]["value"].replace("attempt-0", "attempt-1")
    kube_api.put(rayjob)
    volume = tmp_path / "claim"
    first = volume / "checkpoints/workflows/train/.tau/logs/attempt-0/ray-driver.log"
    first.parent.mkdir(parents=True)
    first.write_text("attempt 0 was preempted\n")
    capsys.readouterr()
    with FakeKubelet(kube_api, volume):
        assert main(["run", "logs", "train", "-n", "team", "--attempt", "0"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "attempt 0 was preempted\n"
    assert captured.err == (
        "showing the Ray driver's output of attempt 0 of team/train kept on the claim "
        "training-data at /data/checkpoints/workflows/train/.tau/logs/attempt-0/ray-driver.log\n"
    )


def test_a_rayjob_without_a_data_claim_renders_the_sidecar_as_before(project, kube_api):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    config = project / "tau" / "train.yaml"
    text = config.read_text()
    config.write_text(text.split("\nstorage:")[0] + "\n")
    assert main(["run", "train", "-n", "team"]) == 0
    rayjob = kube_api.get_object("ray.io/v1", "RayJob", "train", namespace="team")
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    sidecar = next(c for c in head["containers"] if c["name"] == "ray-driver-log-offload")
    assert "env" not in sidecar and "tee" not in sidecar["command"][2]
    assert sidecar["securityContext"]["runAsUser"] == 65532
    assert [m["name"] for m in sidecar["volumeMounts"]] == ["ray-tmp"]


def test_a_rayjob_cancelled_mid_run_keeps_its_heads_driver_log(project, kube_api, capsys):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    kube_api.set_status(
        "ray.io/v1",
        "RayJob",
        "train",
        {"jobDeploymentStatus": "Running", "rayClusterName": "train-a"},
        namespace="team",
    )
    for pod, node_type, containers in (
        ("train-a-head", "head", ["ray-head", "ray-driver-log-offload"]),
        ("train-a-worker-0", "worker", ["ray-worker"]),
    ):
        kube_api.put(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod,
                    "namespace": "team",
                    "labels": {"ray.io/cluster": "train-a", "ray.io/node-type": node_type},
                },
                "spec": {"containers": [{"name": c, "image": "ray"} for c in containers]},
            }
        )
        for c in containers:
            kube_api.set_pod_log(pod, f"{c} of {pod}\n", namespace="team", container=c)
    capsys.readouterr()
    # No garbage collector here to remove the pods: return once deletion is requested.
    assert main(["run", "cancel", "train", "-n", "team", "--no-wait"]) == 0
    assert "(3 container log(s))" in capsys.readouterr().err
    assert main(["run", "logs", "train", "-n", "team"]) == 0
    assert capsys.readouterr().out == "ray-driver-log-offload of train-a-head\n"
    assert main(["run", "logs", "train", "-n", "team", "--prefix"]) == 1
    assert "--prefix apply to Job pods" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the team store


def test_a_team_store_place_writes_and_lists_under_its_object_prefix(tmp_path):
    import pyarrow.fs as pafs

    from tau.runs import kept_place

    place = kept_place.store_place("postgresql://tau@db:5432/exp?objects=s3://bucket/team", "r1")
    assert (place.kind, place.root) == ("team", "bucket/team/runs/r1")
    # An object store needs no folders; the local stand-in does.
    (tmp_path / "bucket/team/runs/r1/logs/attempt-0/p").mkdir(parents=True)
    place._fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    place.write("logs/attempt-0/p/main.log", b"hello\n")
    assert (tmp_path / "bucket/team/runs/r1/logs/attempt-0/p/main.log").read_bytes() == b"hello\n"
    assert place.files("logs") == ["attempt-0/p/main.log"]
    assert place.read("logs/attempt-0/p/main.log") == b"hello\n"
    assert place.read("logs/attempt-0/p/absent.log") is None
