"""The operator's `tau cluster` commands on the real control plane: install (done by the
session, with real helm and the test chart), validate installation, nodes and topology, and
uninstall, which runs after every other e2e test."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.cluster import ADMIN_CONTEXT
from tests.e2e.controlplane.log_feeder import PROBE_ANNOTATION
from tests.e2e.controlplane.objects import Api

pytestmark = pytest.mark.e2e

READY_LINES = [
    "  ok kubernetes: v1.37.2 (>= 1.30)",
    "  ok deployment/kuberay-operator: 1/1 available in tau-system",
    "  ok deployment/kueue-controller-manager: 1/1 available in tau-system",
    "  ok deployment/tau-core-controller: 1/1 available in tau-system",
    "  ok taucluster: Ready",
    "  ok clusterqueue/taugrid-cq: Active",
    "  ok quota-guard: TauQuotaRequest is served (ReportOnly)",
    "summary: 7 passed, 0 warnings, 0 errors",
]


def test_install_bootstrapped_then_installed_then_found_everything_ready(researcher) -> None:
    out = researcher.install_output.splitlines()
    assert out[0] == "TauGrid installation plan"
    assert any(line.startswith('Bootstrap: release "taugrid" is not installed yet') for line in out)
    ready = out.index("Readiness: checking the installation (waiting up to 5m)")
    assert out[ready + 1 : ready + 1 + len(READY_LINES)] == READY_LINES
    assert "Next:" in out


def test_validate_installation_rereads_the_live_state(operator: Shell) -> None:
    out = operator.ok("cluster", "validate", "installation", "--context", ADMIN_CONTEXT)
    for line in READY_LINES:
        assert line in out.splitlines()


def test_validate_nodes_probes_each_gpu_node_and_cleans_up(operator: Shell, admin: Api) -> None:
    # gpu-h100-1's recorded hardware report has an NVLink down; gpu-h100-0's is healthy.
    admin.patch(
        "v1", "Node", "gpu-h100-1", {"metadata": {"annotations": {PROBE_ANNOTATION: "nvlink-down"}}}
    )
    # The KWOK nodes, whose recorded hardware reports the probes read (the real node has no
    # GPU to probe).
    kwok = ("--selector", "type=kwok")
    try:
        proc = operator.tau("cluster", "validate", "nodes", "--context", ADMIN_CONTEXT, *kwok)
        strict = operator.tau(
            "cluster", "validate", "nodes", "--context", ADMIN_CONTEXT, *kwok, "--min-healthy", "2"
        )
    finally:
        admin.patch(
            "v1", "Node", "gpu-h100-1", {"metadata": {"annotations": {PROBE_ANNOTATION: None}}}
        )
    rows = {
        line.split()[0]: line.split()
        for line in proc.stdout.splitlines()
        if line.startswith("gpu-")
    }
    assert set(rows) == {"gpu-h100-0", "gpu-h100-1"}, proc.stdout
    assert rows["gpu-h100-0"][1:3] == ["8", "device-plugin"]
    assert "HEALTHY" in rows["gpu-h100-0"]
    assert "HEALTHY" not in rows["gpu-h100-1"], rows["gpu-h100-1"]
    assert "DEGRADED (NVLink down" in " ".join(rows["gpu-h100-1"])
    assert "1/2 nodes healthy" in proc.stdout
    # Degraded is not unhealthy: without --min-healthy the check passes (contract §1.2).
    assert proc.returncode == 0, proc.stderr
    # Two healthy nodes required, one found: it fails.
    assert strict.returncode == 1 and "1/2 nodes healthy" in strict.stdout, strict.stdout
    # The probe pods are gone afterwards.
    wait_for(
        "the probe pods to be removed",
        lambda: (
            not admin.list(
                "v1", "Pod", "default", label_selector="app.kubernetes.io/managed-by=tau-validate"
            )
        ),
        timeout=60,
    )


def test_validate_topology_checks_the_baseline_queue(operator: Shell) -> None:
    # Flag-less: the default ClusterQueue is the one the chart installs (and every preset names).
    proc = operator.tau("cluster", "validate", "topology", "--context", ADMIN_CONTEXT)
    lines = proc.stdout.splitlines()
    assert "clusterqueue: taugrid-cq" in lines, proc.stdout
    assert "resourceflavor: taugrid-default" in lines, proc.stdout
    assert not [line for line in lines if "not found" in line], proc.stdout
    assert lines[-1].startswith("summary: ")
    errors = int(lines[-1].split(",")[2].split()[0])
    assert proc.returncode == (1 if errors else 0), proc.stdout


def test_uninstall_drains_the_queue_then_removes_the_release(operator: Shell, admin: Api) -> None:
    out = operator.ok("cluster", "uninstall", "--context", ADMIN_CONTEXT, "--yes")
    assert "helm uninstall" in out or "uninstall" in out.lower()
    assert admin.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", "taugrid-cq") is None
    assert not admin.list(
        "apps/v1", "Deployment", "tau-system", label_selector="app.kubernetes.io/instance=taugrid"
    )
    proc = operator.tau("cluster", "validate", "installation", "--context", ADMIN_CONTEXT)
    assert proc.returncode == 1
    assert "no Deployments labelled app.kubernetes.io/instance=taugrid" in proc.stdout
