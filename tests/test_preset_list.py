"""One ClusterQueue name everywhere, and a way to list the presets.

The built-in presets, the chart's baseline queue, the drain of `tau cluster uninstall`, the
readiness check and the default of `tau cluster validate topology` all name `taugrid-cq` (the
seed's name), so a flag-less topology check on a default install checks the queue that
exists. `tau run explain-config --presets` lists the catalog, and an unknown `--preset` points
at it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tau.cli import main
from tau.cluster import options, readiness, topology
from tau.intent.presets import load_catalog
from tau.k8s import dra

ROOT = Path(__file__).resolve().parents[1]
CHART_QUEUE = ROOT / "tests" / "e2e" / "chart" / "taugrid" / "templates" / "baseline-queue.yaml"
Cap = pytest.CaptureFixture[str]


def test_every_place_names_the_same_cluster_queue() -> None:
    name = dra.SHARED_CLUSTER_QUEUE
    assert name == "taugrid-cq"
    assert {topology.DEFAULT_CLUSTER_QUEUE, readiness.BASELINE_CLUSTER_QUEUE} == {name}
    assert ("clusterqueue", name) in options.BASELINE_QUEUE_OBJECTS
    template = CHART_QUEUE.read_text()
    chart = re.search(r"kind: ClusterQueue\nmetadata:\n(?:  #.*\n)*  name: (\S+)", template)
    assert chart and chart.group(1) == name
    catalog = load_catalog(None, None)
    shared = {p.cluster_queue for p in catalog.presets.values() if p.queue == dra.SHARED_QUEUE}
    assert shared == {name}


@pytest.fixture
def no_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)


def test_explain_config_lists_the_presets(no_policy, capsys: Cap) -> None:
    assert main(["run", "explain-config", "--presets"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("Presets of embedded:azure-topology-policy.yaml")
    assert lines[2] == "| preset | gpus | workers | lane | queue | clusterqueue | description |"
    catalog = load_catalog(None, None)
    rows = [line for line in lines[4:] if line.startswith("| ")]
    assert [r.split(" | ")[0][2:] for r in rows] == sorted(catalog.presets)
    assert (
        "| azure.research.training.l | 1xgpu (any) | 1 | training | jobqueue | taugrid-cq | "
        "1 GPU of any class on one node for training |"
    ) in lines


def test_explain_config_lists_the_presets_as_json(no_policy, capsys: Cap) -> None:
    assert main(["run", "explain-config", "--presets", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"] == "embedded:azure-topology-policy.yaml"
    by_name = {p["name"]: p for p in doc["presets"]}
    assert by_name["azure.research.large-memory.2x"]["shape"] == "2xh200-141gb"
    assert by_name["azure.research.training.l"]["clusterQueue"] == "taugrid-cq"


def test_a_custom_catalog_is_listed(tmp_path: Path, monkeypatch, capsys: Cap) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: tau.azure.com/v1alpha1\nkind: TopologyPolicy\nmetadata:\n  name: mine\n"
        "spec:\n  presets:\n    team.one:\n      description: one GPU\n      team: t\n"
        "      lane: training\n      queue: q\n      clusterQueue: cq\n      gpuClass: any\n"
        "      shape: 1xgpu\n"
    )
    monkeypatch.setenv("TAU_TOPOLOGY_POLICY", str(policy))
    assert main(["run", "explain-config", "--presets"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Presets of policy.yaml")
    assert "| team.one | 1xgpu (any) | 1 | training | q | cq | one GPU |" in out
