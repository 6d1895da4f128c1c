"""`tau run logs` --all-containers, --timestamps and --prefix against the local Kubernetes API."""

from __future__ import annotations

import pytest

from tau.cli import main
from tests.kubeapi.handler import LOG_TIMESTAMP
from tests.test_cli_lifecycle import project  # noqa: F401  (fixture)


def _pod(kube_api, name: str, *, init: bool = False) -> None:
    spec: dict = {"containers": [{"name": "main", "image": "x"}, {"name": "side", "image": "y"}]}
    if init:
        spec["initContainers"] = [{"name": "fetch", "image": "z"}]
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "team", "labels": {"job-name": "eval"}},
            "spec": spec,
        }
    )
    kube_api.set_pod_log(name, f"{name} main\n", namespace="team", container="main")
    kube_api.set_pod_log(name, f"{name} side\n", namespace="team", container="side")
    if init:
        kube_api.set_pod_log(name, f"{name} fetched\n", namespace="team", container="fetch")


@pytest.fixture
def job(project, kube_api, capsys):  # noqa: F811
    assert main(["run", "eval", "-n", "team"]) == 0
    capsys.readouterr()
    return project


def test_all_containers_reads_init_containers_first_then_each_container(job, kube_api, capsys):
    _pod(kube_api, "eval-0", init=True)
    assert main(["run", "logs", "eval", "-n", "team", "--all-containers"]) == 0
    assert capsys.readouterr().out == "eval-0 fetched\neval-0 main\neval-0 side\n"


def test_prefix_names_pod_and_container_on_every_line(job, kube_api, capsys):
    _pod(kube_api, "eval-0")
    _pod(kube_api, "eval-1")
    assert main(["run", "logs", "eval", "-n", "team", "--all-containers", "--prefix"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "[pod/eval-0/main] eval-0 main",
        "[pod/eval-0/side] eval-0 side",
        "[pod/eval-1/main] eval-1 main",
        "[pod/eval-1/side] eval-1 side",
    ]


def test_prefix_of_one_container(job, kube_api, capsys):
    _pod(kube_api, "eval-0")
    assert main(["run", "logs", "eval", "-n", "team", "-c", "side", "--prefix"]) == 0
    assert capsys.readouterr().out == "[pod/eval-0/side] eval-0 side\n"


def test_timestamps_come_from_the_api_server(job, kube_api, capsys):
    _pod(kube_api, "eval-0")
    assert main(["run", "logs", "eval", "-n", "team", "--timestamps", "--prefix"]) == 0
    assert capsys.readouterr().out == f"[pod/eval-0/main] {LOG_TIMESTAMP} eval-0 main\n"
    assert any(
        r.query.get("timestamps") == "true" for r in kube_api.requests if r.path.endswith("/log")
    )


def test_a_followed_log_keeps_the_prefix_per_line(job, kube_api, capsys):
    _pod(kube_api, "eval-0")
    assert main(["run", "logs", "eval", "-n", "team", "-f", "--prefix"]) == 0
    assert capsys.readouterr().out == "[pod/eval-0/main] eval-0 main\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "main", "--all-containers"], "--container and --all-containers exclude each other"),
        (["-f", "--all-containers"], "--follow streams one container"),
    ],
)
def test_conflicting_flags_are_refused_before_any_call(project, capsys, args, message):  # noqa: F811
    assert main(["run", "logs", "eval", "-n", "team", *args]) == 1
    assert message in capsys.readouterr().err


def test_job_only_flags_are_refused_for_a_rayjob(project, kube_api, capsys):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "logs", "train", "-n", "team", "--all-containers", "--prefix"]) == 1
    err = capsys.readouterr().err
    assert (
        "--all-containers, --prefix apply to Job pods; train is a RayJob whose driver log "
        "has one source"
    ) in err


def test_logs_of_a_rayjob_whose_cluster_was_torn_down_say_the_run_ended(
    project,  # noqa: F811
    kube_api,
    capsys,
    tmp_path,
):
    # KubeRay deletes a finished RayJob's RayCluster, and the head pod with its driver log;
    # here its log sidecar never wrote the copy on the claim either (an empty volume).
    from tests.kubeapi.kubelet import FakeKubelet

    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    kube_api.set_status(
        "ray.io/v1",
        "RayJob",
        "train",
        {
            "jobDeploymentStatus": "Complete",
            "jobStatus": "SUCCEEDED",
            "rayClusterName": "train-abcde",
        },
        namespace="team",
    )
    capsys.readouterr()
    volume = tmp_path / "empty-claim"
    volume.mkdir()
    with FakeKubelet(kube_api, volume):
        assert main(["run", "logs", "train", "-n", "team"]) == 3
    err = capsys.readouterr().err
    assert err.startswith(
        "error: RayJob team/train has ended (Complete) and none of its pods remain, "
        "so its logs are gone\n"
    )
    assert "tau run status train -n team` shows how it ended" in err


def _ray_head(kube_api, driver: str, head: str) -> None:
    """A RayJob's head pod: the log sidecar's driver output and the head's own Ray log."""
    kube_api.set_status(
        "ray.io/v1",
        "RayJob",
        "train",
        {"jobDeploymentStatus": "Initializing", "rayClusterName": "train-abcde"},
        namespace="team",
    )
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "train-abcde-head-x1",
                "namespace": "team",
                "labels": {"ray.io/cluster": "train-abcde", "ray.io/node-type": "head"},
            },
            "spec": {
                "containers": [
                    {"name": "ray-head", "image": "ray"},
                    {"name": "ray-driver-log-offload", "image": "ray"},
                ]
            },
        }
    )
    pod = "train-abcde-head-x1"
    kube_api.set_pod_log(pod, driver, namespace="team", container="ray-driver-log-offload")
    kube_api.set_pod_log(pod, head, namespace="team", container="ray-head")


def test_a_rayjob_without_driver_output_shows_what_its_ray_head_said(
    project,  # noqa: F811
    kube_api,
    capsys,
):
    """Ray did not start (the head's `ray start` failed), so no driver ran: the logs say what
    the head said instead of nothing, each line labelled with where it comes from."""
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "train", "-n", "team"]) == 0
    _ray_head(kube_api, "", "Local node IP: 10.0.0.7\nValueError: object store too small\n")
    capsys.readouterr()
    assert main(["run", "logs", "train", "-n", "team"]) == 0
    assert capsys.readouterr().out == (
        "[pod/train-abcde-head-x1/ray-head] Local node IP: 10.0.0.7\n"
        "[pod/train-abcde-head-x1/ray-head] ValueError: object store too small\n"
    )
    # Once the driver speaks, its output is the log again.
    _ray_head(kube_api, "driver says hello\n", "ray start output\n")
    assert main(["run", "logs", "train", "-n", "team"]) == 0
    assert capsys.readouterr().out == "driver says hello\n"
