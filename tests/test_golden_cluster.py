"""Goldens of the operator output: the install plan block, the dry-run render summary, the
uninstall plan, the nodes table and the topology report (exact text, `make golden` updates)."""

from __future__ import annotations

from pathlib import Path

from tau.cli import main
from tau.cluster import nodes as n
from tau.cluster import plan, topology
from tau.cluster.options import InstallOptions, Target, UninstallOptions
from tau.cluster.values import enabled_components
from tests.cluster_objects import cluster_queue, fake_helm_env, flavor, node, probe_log
from tests.golden_plugin import assert_golden

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "cluster"


def test_install_plan_block(update_golden) -> None:
    options = InstallOptions(
        target=Target(timeout="20m"),
        version="0.3.2",
        values=("prod-values.yaml",),
        set_values=("nodeHealth.enabled=true,kuberay.enabled=false",),
        set_strings=("registry.password=hunter2",),
        atomic=True,
    )
    toggles = enabled_components([], (*options.set_values, *options.set_strings))
    text = plan.install_plan(options, helm_version="3.15.4", context="aks-prod", toggles=toggles)
    assert "hunter2" not in text
    assert_golden(text, GOLDEN / "install-plan.txt", update_golden)


def test_install_dry_run_output(tmp_path, monkeypatch, capsys, update_golden) -> None:
    fake_helm_env(monkeypatch, tmp_path)
    code = main(["cluster", "install", "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    assert_golden(out, GOLDEN / "install-dry-run.txt", update_golden)


def test_uninstall_plan_block(update_golden) -> None:
    text = plan.uninstall_plan(UninstallOptions(yes=True), helm_version="4.0.1", context="aks-prod")
    assert_golden(text, GOLDEN / "uninstall-plan.txt", update_golden)


def test_nodes_table(update_golden) -> None:
    gpu_nodes = [
        n.GpuNode("aks-ndh100-0", 8, "device-plugin"),
        n.GpuNode("aks-ndh100-1", 8, "device-plugin"),
        n.GpuNode("aks-ndh100-2", 8, "device-plugin"),
        n.GpuNode("aks-ndh100-3", 8, "device-plugin"),
        n.GpuNode("aks-ndh100-4", 8, "device-plugin"),
        n.GpuNode("aks-nca100-0", 2, "device-plugin"),
        n.GpuNode("aks-nca100-1", 2, "mig"),
        n.GpuNode("aks-stranded-0", 0, "none"),
    ]
    outcomes = {
        "aks-ndh100-0": n.Outcome(log=probe_log("healthy")),
        "aks-ndh100-1": n.Outcome(log=probe_log("nvlink-down")),
        "aks-ndh100-2": n.Outcome(log=probe_log("ecc-errors")),
        "aks-ndh100-3": n.Outcome(log=probe_log("driver-mismatch")),
        "aks-ndh100-4": n.Outcome(log=probe_log("ib-down")),
        "aks-nca100-0": n.Outcome(log=probe_log("no-ib")),
        "aks-nca100-1": n.Outcome(error="probe did not finish within 120s (Pending, ErrImagePull)"),
    }
    assert_golden(
        n.table(n.assess_nodes(gpu_nodes, outcomes)), GOLDEN / "nodes-table.txt", update_golden
    )


def test_topology_report(update_golden) -> None:
    h100 = {"tau.azure.com/gpu-class": "h100-95gb"}
    facts = topology.Facts(
        cluster_queue=cluster_queue(
            "taugrid-cq",
            {"nd-h100": {"nvidia.com/gpu": "24", "cpu": "288"}, "nd-h200": {"nvidia.com/gpu": "8"}},
        ),
        flavors={
            "nd-h100": flavor("nd-h100", h100),
            "nd-h200": flavor("nd-h200", {"tau.azure.com/gpu-class": "h200-141gb"}),
        },
        nodes=[node("aks-ndh100-0"), node("aks-ndh100-1"), node("aks-ndh100-2", rdma=False)],
        topologies={},
        slices=[],
    )
    text, _ = topology.report(
        ["cluster: aks-prod", "clusterqueue: taugrid-cq"], topology.evaluate(facts, "taugrid-cq")
    )
    assert_golden(text, GOLDEN / "topology-report.txt", update_golden)
