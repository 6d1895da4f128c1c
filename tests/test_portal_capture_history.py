"""`capture run-profile` imports the run's metrics.history from its result PVC (helper pods run
by the fake kubelet against a temporary directory), through `experiment import jsonl`'s code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.k8s import meta
from tests.kubeapi.kubelet import FakeKubelet
from tests.portal_capture_seed import CTX, NS, job, new_store, prepare
from tests.portal_helpers import portal, write_history

RESULTS = {
    meta.ANNOTATION_RESULT_PATH: "/data/results/train",
    meta.ANNOTATION_RESULT_PVC: "results-pvc",
    meta.ANNOTATION_CONFIG_HASH: "sha256:abc",
}


@pytest.fixture
def emulator(kube_api, kubeconfig_file, monkeypatch, tmp_path):
    return prepare(kube_api, kubeconfig_file, monkeypatch, tmp_path)


@pytest.fixture
def store(tmp_path, capsys):
    return new_store(tmp_path, capsys)


@pytest.fixture
def volume(tmp_path: Path) -> Path:
    """The PVC's content: two histories, a chunk still being written, and a non-history file."""
    out = tmp_path / "pvc" / "results" / "train"
    out.mkdir(parents=True)
    write_history(out / "metrics.jsonl", 5)
    write_history(out / "eval.jsonl", 2, start=5)
    (out / ".chunk-7.jsonl").write_text('{"_step": 7, "loss"')  # dotfile: not yet renamed
    (out / "model.txt").write_text("weights\n")
    return tmp_path / "pvc"


def capture(capsys, store: Path, *args: str):
    base = ["experiment", "capture", "run-profile", "train", "-n", NS, *CTX, "--store", store]
    return portal(capsys, *base, *args)


def sql(capsys, store: Path, query: str) -> list[dict]:
    result = portal(capsys, "experiment", "sql", query, "--store", store, "--format", "json")
    assert result.code == 0, result.err
    return result.json()  # type: ignore[return-value]


def test_run_profile_imports_the_history_files_on_the_result_pvc(emulator, store, volume, capsys):
    emulator.put(job("train", **RESULTS))
    with FakeKubelet(emulator, volume) as kubelet:
        result = capture(capsys, store, "-o", "json")
        again = capture(capsys, store)
    assert result.code == 0, result.err
    body = result.json()
    assert body["history"] == {
        "action": "imported",
        "files": ["/data/results/train/eval.jsonl", "/data/results/train/metrics.jsonl"],
        "rows": (5 + 2) * 2,  # loss and acc per step
        "metric_file": body["history"]["metric_file"],
    }
    assert body["history"]["metric_file"].endswith(".parquet") and body["warnings"] == []
    # One listing and one read per history file, each through a helper pod on the PVC.
    names = sorted(p["metadata"]["name"].rsplit("-", 1)[0] for p in kubelet.pods)
    assert names == ["tau-get", "tau-get", "tau-get", "tau-get", "tau-ls", "tau-ls"]
    assert all(
        p["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "results-pvc"
        for p in kubelet.pods
    )
    summaries = sql(capsys, store, "select metric_name, count, max_step from metric_summaries")
    assert sorted((s["metric_name"], s["count"], s["max_step"]) for s in summaries) == [
        ("acc", 7, 6),
        ("loss", 7, 6),
    ]
    # The captured run keeps what capture recorded; the import only adds its history.
    (run,) = sql(capsys, store, "select owner, state, config_hash from runs")
    assert run == {"owner": "tau-status", "state": "pending", "config_hash": "sha256:abc"}
    assert again.code == 0, again.err
    assert "history:        reused" in again.out and "history_rows:   14" in again.out
    assert "history_files:  2" in again.out


def test_a_run_without_result_annotations_is_a_warning(emulator, store, capsys):
    emulator.put(job("train"))
    result = capture(capsys, store, "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["history"]["action"] == "none"
    (warning,) = result.json()["warnings"]
    assert f"{NS}/train records no result location" in warning
    assert meta.ANNOTATION_RESULT_PVC in warning
    table = capture(capsys, store)
    assert table.code == 0 and "warning: " in table.err and "history:        none" in table.out


def test_a_result_directory_without_histories_is_a_warning(emulator, store, tmp_path, capsys):
    emulator.put(job("train", **RESULTS))
    (tmp_path / "pvc" / "results" / "train").mkdir(parents=True)
    with FakeKubelet(emulator, tmp_path / "pvc"):
        result = capture(capsys, store, "-o", "json")
    assert result.code == 0, result.err
    assert result.json()["warnings"] == [
        "no metrics history (*.jsonl) in /data/results/train on pvc results-pvc; nothing imported"
    ]
    assert sql(capsys, store, "select count(*) as n from metric_files") == [{"n": 0}]


def test_no_history_records_the_profile_without_a_helper_pod(emulator, store, volume, capsys):
    emulator.put(job("train", **RESULTS))
    with FakeKubelet(emulator, volume) as kubelet:
        result = capture(capsys, store, "--no-history", "-o", "json")
    assert result.code == 0, result.err
    assert kubelet.pods == [] and result.json()["history"]["action"] == "none"
    assert result.json()["run"]["run_id"] == "train"


def test_a_malformed_history_fails_as_import_jsonl_reports_it(emulator, store, volume, capsys):
    emulator.put(job("train", **RESULTS))
    (volume / "results" / "train" / "metrics.jsonl").write_text('{"_step": 0, "loss": 1}\nnope\n')
    with FakeKubelet(emulator, volume):
        result = capture(capsys, store)
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err.startswith("error: /data/results/train/metrics.jsonl:2: malformed JSON")
