"""`tau serve deploy` --init, --sidecar, --volume, --mount, --command, --arg/--args: a real
deploy against the local Kubernetes API sends them, with the Secret volume unredacted."""

from __future__ import annotations

from tests.test_serve_cluster import NS, _deploy, kuberay, tau  # noqa: F401  (fixtures)


def test_a_deployment_is_created_with_its_extra_containers_volumes_and_command(tau, kube_api):  # noqa: F811
    code, _, err = _deploy(
        tau,
        "api",
        "--kind",
        "deployment",
        "--init",
        "fetch=ghcr.io/example/fetch:1.0.0",
        "--sidecar",
        "metrics=ghcr.io/example/exporter:2.0.1",
        "--volume",
        "creds=secret:hf-token",
        "--mount",
        "creds:/etc/creds:ro",
        "--command",
        "python3",
        "--arg=--port=8000",
    )
    assert code == 0, err
    pod = kube_api.get_object("apps/v1", "Deployment", "api", namespace=NS)["spec"]["template"]
    spec = pod["spec"]
    assert [c["name"] for c in spec["containers"]] == ["server", "metrics"]
    assert spec["initContainers"] == [{"name": "fetch", "image": "ghcr.io/example/fetch:1.0.0"}]
    assert spec["volumes"] == [{"name": "creds", "secret": {"secretName": "hf-token"}}]
    server = spec["containers"][0]
    assert (server["command"], server["args"]) == (["python3"], ["--port=8000"])
    assert server["volumeMounts"] == [
        {"name": "creds", "mountPath": "/etc/creds", "readOnly": True}
    ]


def test_a_rayservice_mounts_volumes_on_head_and_workers(tau, kuberay):  # noqa: F811
    code, _, err = _deploy(tau, "chat", "--volume", "cache=emptyDir", "--mount", "cache:/cache")
    assert code == 0, err
    obj = kuberay.get_object("ray.io/v1", "RayService", "chat", namespace=NS)
    cluster = obj["spec"]["rayClusterConfig"]
    for group in (cluster["headGroupSpec"], *cluster["workerGroupSpecs"]):
        pod = group["template"]["spec"]
        assert pod["volumes"] == [{"name": "cache", "emptyDir": {}}]
        assert pod["containers"][0]["volumeMounts"] == [{"name": "cache", "mountPath": "/cache"}]


def test_a_rayservice_refuses_init_containers_before_contacting_the_cluster(tau, kuberay):  # noqa: F811
    code, _, err = _deploy(tau, "chat", "--init", "fetch=ghcr.io/example/fetch:1.0.0")
    assert code == 1
    assert "--init applies to --kind deployment only (got --kind rayservice)" in err
    assert kuberay.list_objects("ray.io/v1", "RayService", namespace=NS) == []
