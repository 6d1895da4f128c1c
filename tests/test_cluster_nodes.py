"""`tau cluster validate nodes` against the API emulator, with a kubelet that answers probe pods
from recorded nvidia-smi / ibstat outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.cli import main
from tau.cluster import nodes as n
from tests.cluster_objects import node, operator_shell, probe_log
from tests.kubeapi.fixtures import EMULATOR_CONTEXT
from tests.kubeapi.probe_kubelet import ProbeKubelet
from tests.kubeapi.server import KubeApiServer
from tests.sigint_launch import python_ignoring_sigint

LOGS = {
    "gpu-a": probe_log("healthy"),
    "gpu-b": probe_log("nvlink-down"),
    "gpu-c": probe_log("ecc-errors"),
    "gpu-d": probe_log("healthy"),
}


@pytest.fixture
def cluster(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch
) -> KubeApiServer:
    operator_shell(kubeconfig_file, tmp_path, monkeypatch)
    return kube_api


def probe_pods(api: KubeApiServer) -> list[dict]:
    return [
        p
        for p in api.list_objects("v1", "Pod", "default")
        if p["metadata"]["labels"].get("app.kubernetes.io/managed-by") == "tau-validate"
    ]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["cluster", "validate", "nodes", "--context", EMULATOR_CONTEXT, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_statuses_and_exit_one_on_an_unhealthy_node(cluster, capsys) -> None:
    for name in LOGS:
        cluster.put(node(name))
    cluster.put(node("cpu-1", gpus=0, gpu_class=None))
    with ProbeKubelet(cluster, LOGS) as kubelet:
        code, out, _ = run(capsys)
    table = out[out.index("NODE") :]
    lines = table.splitlines()
    assert lines[0].split() == ["NODE", "GPUS", "SOURCE", "NVLINK", "IB", "ECC", "DRIVER", "STATUS"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert set(rows) == {"gpu-a", "gpu-b", "gpu-c", "gpu-d"}  # the CPU node is not a GPU node
    assert rows["gpu-a"].split()[1:3] == ["8", "device-plugin"] and rows["gpu-a"].endswith(
        "HEALTHY"
    )
    assert "DEGRADED (NVLink down: GPU 2 link 5)" in rows["gpu-b"]
    assert "UNHEALTHY (uncorrectable ECC errors on GPU 3 (2)" in rows["gpu-c"]
    assert lines[-1] == "2/4 nodes healthy"
    assert code == 1  # an UNHEALTHY node fails the run when --min-healthy is not set
    assert probe_pods(cluster) == [], "every probe pod is deleted"
    assert len(kubelet.seen) == 4


def test_probe_pods_are_privileged_pinned_and_labelled(cluster, capsys) -> None:
    cluster.put(node("gpu-a"))
    created: list[dict] = []
    original = cluster.store.create

    def spy(kind, ns, body, **kw):
        if kind.plural == "pods":
            created.append(body)
        return original(kind, ns, body, **kw)

    cluster.store.create = spy  # type: ignore[method-assign]
    with ProbeKubelet(cluster, LOGS):
        run(capsys)
    (pod,) = created
    assert pod["metadata"]["name"].startswith("tau-validate-gpu-a-")
    assert pod["metadata"]["namespace"] == "default"
    assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "tau-validate"
    spec = pod["spec"]
    assert spec["hostPID"] is True and spec["hostNetwork"] is True and spec["nodeName"] == "gpu-a"
    assert spec["containers"][0]["securityContext"]["privileged"] is True
    assert spec["containers"][0]["command"][:3] == ["nsenter", "-t", "1"]


def test_min_healthy_decides_the_exit_code(cluster, capsys) -> None:
    for name in LOGS:
        cluster.put(node(name))
    with ProbeKubelet(cluster, LOGS):
        assert run(capsys, "--min-healthy", "2")[0] == 0
        assert run(capsys, "--min-healthy", "3")[0] == 1


def test_gpu_class_and_selector_narrow_the_nodes(cluster, capsys) -> None:
    cluster.put(node("gpu-a"))
    cluster.put(node("gpu-b", gpu_class="a100-80gb", labels={"pool": "a"}))
    cluster.put(node("gpu-c", gpu_class="a100-80gb", labels={"pool": "b"}))
    with ProbeKubelet(cluster, LOGS):
        code, out, _ = run(capsys, "--gpu-class", "a100-80gb", "--selector", "pool=b")
    assert "gpu-c" in out and "gpu-a " not in out and "gpu-b " not in out
    assert out.endswith("0/1 nodes healthy\n") and code == 1


def test_mig_dra_and_stranded_nodes_are_discovered() -> None:
    nodes = [
        node(
            "mig",
            gpus=0,
            allocatable={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-2g.20gb": "2"},
        ),
        node("dra", gpus=0),
        node("stranded", gpus=0, allocatable={"nvidia.com/gpu": "0"}),
        node("cpu", gpus=0, gpu_class=None),
    ]
    slices = [
        {
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "dra",
                "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}],
            }
        },
        {"spec": {"driver": "other.example.com", "nodeName": "cpu", "devices": [{"name": "x"}]}},
    ]
    found = {g.name: (g.gpus, g.source) for g in n.discover(nodes, slices, "any")}
    assert found == {"mig": (9, "mig"), "dra": (2, "dra"), "stranded": (0, "none")}


def test_a_stranded_node_is_reported_unhealthy_without_a_probe(cluster, capsys) -> None:
    cluster.put(node("gpu-a"))
    cluster.put(node("gpu-z", gpus=0))  # labelled as a GPU node, exposes nothing
    with ProbeKubelet(cluster, LOGS) as kubelet:
        code, out, _ = run(capsys)
    assert "UNHEALTHY (stranded: GPU node exposes no schedulable GPUs)" in out
    assert code == 1 and all("gpu-z" not in name for name in kubelet.seen)


def test_a_probe_that_hangs_times_out_as_unknown_and_is_deleted(cluster, capsys) -> None:
    cluster.put(node("gpu-a"))
    cluster.put(node("gpu-b"))
    with ProbeKubelet(cluster, LOGS, hang={"gpu-b"}):
        code, out, _ = run(capsys, "--timeout", "1s")
    assert "UNKNOWN (probe did not finish within 1s (Pending))" in out
    assert code == 1 and probe_pods(cluster) == []


def test_a_failed_probe_pod_is_unknown(cluster, capsys) -> None:
    cluster.put(node("gpu-a"))
    with ProbeKubelet(cluster, LOGS, fail={"gpu-a"}):
        code, out, _ = run(capsys)
    assert "UNKNOWN (probe pod failed: Error (exit 1))" in out and code == 1
    assert probe_pods(cluster) == []


def test_ctrl_c_deletes_every_probe_pod(kube_api: KubeApiServer, kube_client) -> None:
    targets = [n.GpuNode(f"gpu-{i}", 8, "device-plugin") for i in range(12)]
    for t in targets:
        kube_api.put(node(t.name))
    ticks = []

    def sleep(_seconds: float) -> None:
        ticks.append(1)
        if len(ticks) == 3:
            assert len(probe_pods(kube_api)) == 4  # the run really is in flight
            raise KeyboardInterrupt

    # The kubelet never completes anything: pods are in flight when Ctrl-C arrives.
    with pytest.raises(KeyboardInterrupt):
        n.probe_nodes(kube_client, targets, timeout=60, parallel=4, sleep=sleep)
    assert probe_pods(kube_api) == []


def test_concurrency_is_bounded(kube_api: KubeApiServer, kube_client) -> None:
    targets = [n.GpuNode(f"gpu-{i}", 8, "device-plugin") for i in range(10)]
    with ProbeKubelet(kube_api, lambda _n: probe_log("healthy"), delay=0.1) as kubelet:
        outcomes = n.probe_nodes(kube_client, targets, timeout=30, parallel=3)
    assert len(outcomes) == 10 and all(o.log for o in outcomes.values())
    assert 1 <= kubelet.max_in_flight <= 3
    assert probe_pods(kube_api) == []


def test_pod_names_fit_a_dns_label() -> None:
    name = n.pod_name("aks-ndh100v5-12345678-vmss00000a." + "x" * 60, "abcdef")
    assert (
        len(name) <= 63
        and name.startswith("tau-validate-aks-ndh100v5")
        and name.endswith("-abcdef")
    )


def test_bad_flags_are_usage_errors(cluster, capsys) -> None:
    code, _, err = run(capsys, "--gpu-class", "v100")
    assert code == 1 and '--gpu-class "v100"' in err and "h100-95gb" in err
    code, _, err = run(capsys, "--timeout", "soon")
    assert code == 1 and "--timeout" in err


def test_no_gpu_nodes_is_an_error(cluster, capsys) -> None:
    cluster.put(node("cpu", gpus=0, gpu_class=None))
    code, _, err = run(capsys)
    assert code == 1 and "no GPU nodes found" in err


#: Seconds a real process may take to start or to end after Ctrl-C before the test gives up.
BUSY_MACHINE_BOUND = 180


def test_sigint_to_a_real_process_leaves_no_probe_pod(cluster, kubeconfig_file, tmp_path) -> None:
    import os
    import signal
    import subprocess
    import time

    for i in range(6):
        cluster.put(node(f"gpu-{i}"))
    env = dict(os.environ, KUBECONFIG=str(kubeconfig_file), TAU_CONFIG_DIR=str(tmp_path / "cfg"))
    # Started as a script's background job starts it (SIGINT ignored): tau takes it back.
    argv = python_ignoring_sigint(
        "-m", "tau", "cluster", "validate", "nodes", "--context", EMULATOR_CONTEXT
    )
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Ctrl-C only once the probes are in flight (the state it signals into; tau installed
        # its handler before it created any). The bound only ends a broken run; on a loaded
        # machine starting and cleaning up take many times their quiet duration.
        deadline = time.monotonic() + BUSY_MACHINE_BOUND
        while len(probe_pods(cluster)) < 6 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            time.sleep(0.05)
        assert len(probe_pods(cluster)) == 6, "the probes are in flight (no kubelet answers)"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=BUSY_MACHINE_BOUND)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "Traceback" not in err
    assert probe_pods(cluster) == []
