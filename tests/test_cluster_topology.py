"""`tau cluster validate topology` against the API emulator: per-flavor checks, preset object
checks, the report lines and the exit code; and a constant number of list calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.cli import main
from tests.cluster_objects import KUEUE, cluster_queue, flavor, node, operator_shell
from tests.kubeapi.fixtures import EMULATOR_CONTEXT
from tests.kubeapi.server import KubeApiServer

H100 = {"tau.azure.com/gpu-class": "h100-95gb"}


@pytest.fixture
def cluster(
    kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch
) -> KubeApiServer:
    operator_shell(kubeconfig_file, tmp_path, monkeypatch)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    kube_api.register_kueue_kuberay_tau_kinds()
    return kube_api


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["cluster", "validate", "topology", "--context", EMULATOR_CONTEXT, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def healthy_h100(api: KubeApiServer, nodes: int = 2) -> None:
    for i in range(nodes):
        api.put(node(f"h100-{i}"))
    api.put(flavor("nd-h100", H100))
    api.put(cluster_queue("taugrid-cq", {"nd-h100": {"nvidia.com/gpu": "16", "cpu": "192"}}))


def test_default_cluster_queue_all_checks_pass(cluster, capsys) -> None:
    healthy_h100(cluster)
    code, out, _ = run(capsys)
    lines = out.splitlines()
    assert lines[:3] == ["cluster: emulator", "clusterqueue: taugrid-cq", "resourceflavor: nd-h100"]
    assert "  ok node-match: 2 nodes match tau.azure.com/gpu-class=h100-95gb" in lines
    assert "  ok nvidia.com/gpu: quota 16, 16 allocatable on 2 nodes" in lines
    assert "  ok topology-zone: all matched nodes in zone eastus-1" in lines
    assert "  ok ib-capable: 2/2 nodes expose RDMA (InfiniBand)" in lines
    assert "  ok gpu-contract: device-plugin: 2/2 nodes expose GPUs" in lines
    assert lines[-1] == "summary: 6 passed, 0 warnings, 0 errors" and code == 0
    for line in lines[3:-1]:
        assert line.startswith(("  ok ", "  warn ", "  error ")), line


def test_flavor_matching_no_node_is_an_error(cluster, capsys) -> None:
    healthy_h100(cluster)
    cluster.put(flavor("nd-h200", {"tau.azure.com/gpu-class": "h200-141gb"}))
    cluster.put(
        cluster_queue(
            "taugrid-cq", {"nd-h100": {"nvidia.com/gpu": "16"}, "nd-h200": {"nvidia.com/gpu": "8"}}
        )
    )
    code, out, _ = run(capsys)
    section = out[out.index("resourceflavor: nd-h200") :]
    assert "  error node-match: no node matches tau.azure.com/gpu-class=h200-141gb" in section
    assert "  error nvidia.com/gpu: quota 8 but the matched nodes expose none" in section
    assert (
        code == 1
        and out.splitlines()[-1].endswith("errors")
        and " 0 errors" not in out.splitlines()[-1]
    )


def test_quota_over_capacity_zones_and_ib_warn(cluster, capsys) -> None:
    cluster.put(node("h100-0", labels={"topology.kubernetes.io/zone": "eastus-1"}))
    cluster.put(node("h100-1", labels={"topology.kubernetes.io/zone": "eastus-2"}, rdma=False))
    cluster.put(flavor("nd-h100", H100))
    cluster.put(cluster_queue("taugrid-cq", {"nd-h100": {"nvidia.com/gpu": "32"}}))
    code, out, _ = run(capsys)
    assert "  warn nvidia.com/gpu: quota 32 exceeds the 16 allocatable on 2 nodes" in out
    assert "  warn topology-zone: nodes span zones eastus-1, eastus-2" in out
    assert "  warn ib-capable: only 1/2 nodes expose RDMA (InfiniBand)" in out
    assert code == 0 and "summary: 3 passed, 3 warnings, 0 errors" in out


def test_topology_levels_and_dra_contract(cluster, capsys) -> None:
    cluster.put(node("dra-0", gpus=0, labels={"cloud.provider.com/rack": "r1"}))
    cluster.put(
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "rack-topology"},
            "spec": {
                "levels": [
                    {"nodeLabel": "cloud.provider.com/rack"},
                    {"nodeLabel": "kubernetes.io/hostname"},
                ]
            },
        }
    )
    cluster.put(flavor("dra-gpus", H100, topologyName="rack-topology"))
    cluster.put(
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "dra-0-gpu"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": "dra-0",
                "pool": {"name": "dra-0"},
                "devices": [{"name": f"gpu-{i}"} for i in range(4)],
            },
        }
    )
    cluster.put(cluster_queue("taugrid-cq", {"dra-gpus": {"cpu": "64"}}))
    code, out, _ = run(capsys)
    assert (
        '  ok topology-zone: Topology "rack-topology" levels '
        "cloud.provider.com/rack, kubernetes.io/hostname on every node" in out
    )
    assert "  ok gpu-contract: dra: 1/1 nodes publish GPU devices" in out
    assert "  ok gpu-resourceslices: 4 gpu.nvidia.com devices on 1 nodes" in out
    assert code == 0


def test_missing_topology_and_missing_cluster_queue_are_errors(cluster, capsys) -> None:
    code, out, _ = run(capsys, "--cluster-queue", "nope")
    assert (
        "clusterqueue: nope" in out and '  error clusterqueue: ClusterQueue "nope" not found' in out
    )
    assert code == 1
    healthy_h100(cluster)
    cluster.put(flavor("nd-h100", H100, topologyName="gone"))
    code, out, _ = run(capsys)
    assert '  error topology-zone: Topology "gone" does not exist' in out and code == 1


def test_preset_checks_its_objects(cluster, capsys) -> None:
    healthy_h100(cluster)
    cluster.put(cluster_queue("taugrid-cq", {"nd-h100": {"nvidia.com/gpu": "16"}}))
    cluster.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "taugrid-default"}})
    cluster.put(
        {
            "apiVersion": KUEUE,
            "kind": "LocalQueue",
            "metadata": {"name": "jobqueue", "namespace": "taugrid-default"},
            "spec": {"clusterQueue": "taugrid-cq"},
        }
    )
    cluster.put(
        {
            "apiVersion": KUEUE,
            "kind": "Topology",
            "metadata": {"name": "default-node-topology"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]},
        }
    )
    cluster.put(
        {
            "apiVersion": KUEUE,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "taugrid-default"},
            "value": 100,
        }
    )
    code, out, _ = run(capsys, "--preset", "azure.research.training.xl")
    lines = out.splitlines()
    assert lines[:3] == [
        "preset: azure.research.training.xl",
        "source: embedded:azure-topology-policy.yaml",
        "clusterqueue: taugrid-cq",
    ]
    assert (
        '  ok localqueue: LocalQueue "jobqueue" in namespace "taugrid-default" '
        '→ ClusterQueue "taugrid-cq"' in lines
    )
    assert '  ok clusterqueue: ClusterQueue "taugrid-cq" exists' in lines
    assert '  ok topology: "default-node-topology" exists' in lines
    assert '  ok workloadpriorityclass: "taugrid-default" exists' in lines
    assert '  error priorityclass: "taugrid-default" not found' in lines
    assert code == 1
    cluster.put(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "taugrid-default"},
            "value": 100,
        }
    )
    assert run(capsys, "--preset", "azure.research.training.xl")[0] == 0


def test_unknown_preset_is_a_usage_error(cluster, capsys) -> None:
    code, _, err = run(capsys, "--preset", "nope")
    assert code == 1 and '--preset "nope" is not in the catalog' in err
    # The hint names a command that lists them (tests/test_preset_list.py runs it).
    assert "hint: list the presets with `tau run explain-config --presets`" in err


def test_list_calls_do_not_grow_with_nodes_or_flavors(cluster, capsys) -> None:
    def calls_for(nodes: int, flavors: int) -> int:
        for i in range(nodes):
            cluster.put(node(f"n-{nodes}-{i}", labels={"pool": f"p{i % flavors}"}))
        for f in range(flavors):
            cluster.put(flavor(f"f{f}", {"pool": f"p{f}"}))
        cluster.put(
            cluster_queue("taugrid-cq", {f"f{f}": {"nvidia.com/gpu": "8"} for f in range(flavors)})
        )
        cluster.reset_requests()
        run(capsys)
        return len(cluster.requests)

    assert calls_for(3, 1) == calls_for(60, 12)
