"""The artifact index: the rendered step that writes it, and the reader that serve and the model
registry use (good, partial and corrupt files)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tau.cli import main
from tau.registry import artifact_index
from tau.registry.backend import open_backend
from tau.serving import sources

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "golden"


def _job_step() -> str:
    """The index wrapper exactly as the job-checkpoint-artifact golden renders it."""
    doc = yaml.safe_load((GOLDEN / "job-checkpoint-artifact" / "rendered.yaml").read_text())
    command = doc["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:2] == ["bash", "-c"] and command[3] == "tau-artifact-index"
    assert command[4:6] == ["bash", "-lc"]  # the storage preflight runs inside it
    return command[2]


def _run(tmp_path: Path, trainer: str, **env: str) -> tuple[subprocess.CompletedProcess, Path]:
    """Run the golden's index wrapper around `trainer` with /mnt and /data under tmp_path."""
    hot, durable = tmp_path / "mnt" / "checkpoints", tmp_path / "data" / "checkpoints"
    hot.mkdir(parents=True)
    durable.mkdir(parents=True)
    full = {
        "PATH": os.environ["PATH"],
        "TAU_CHECKPOINTS_DIR": str(hot),
        "TAU_DURABLE_CHECKPOINTS_DIR": str(durable),
        **env,
    }
    proc = subprocess.run(
        ["bash", "-c", _job_step(), "tau-artifact-index", "bash", "-c", trainer],
        env=full,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc, durable / "finetunes" / "servable"


WRITE_HOT = (
    'mkdir -p "$TAU_CHECKPOINTS_DIR/final/model" '
    '&& printf abcd > "$TAU_CHECKPOINTS_DIR/final/model/w.bin"'
)


def test_the_step_copies_a_hot_checkpoint_to_the_pvc_and_indexes_it(tmp_path):
    proc, run_dir = _run(tmp_path, WRITE_HOT)
    assert proc.returncode == 0, proc.stderr
    index = json.loads((run_dir / "artifacts.json").read_text())
    (entry,) = index["artifacts"]
    assert (index["schema_version"], index["run"], index["namespace"]) == (
        1,
        "servable",
        "<unresolved-namespace>",
    )
    assert entry["status"] == "ready" and entry["kind"] == "directory"
    assert entry["durable_path"] == str(run_dir / "artifacts" / "final" / "model")
    assert (entry["size_bytes"], entry["file_count"]) == (4, 1)
    assert (run_dir / "artifacts" / "final" / "model" / "w.bin").read_text() == "abcd"
    # Written atomically: no temporary file is left next to the index.
    assert sorted(p.name for p in run_dir.iterdir()) == ["artifacts", "artifacts.json"]


def test_a_checkpoint_already_on_the_pvc_is_indexed_in_place(tmp_path):
    out = tmp_path / "data" / "checkpoints" / "workflows" / "servable"
    trainer = f"mkdir -p {out}/final && printf xy > {out}/final/model"
    proc, run_dir = _run(tmp_path, trainer, TAU_OUTPUT_DIR=str(out))
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads((run_dir / "artifacts.json").read_text())["artifacts"]
    assert (entry["durable_path"], entry["kind"]) == (str(out / "final" / "model"), "file")
    assert not (run_dir / "artifacts").exists()


def test_a_failed_run_keeps_its_exit_code_and_writes_no_index(tmp_path):
    proc, run_dir = _run(tmp_path, f"{WRITE_HOT}; exit 3")
    assert proc.returncode == 3
    assert not (run_dir / "artifacts.json").exists()


def test_a_missing_checkpoint_is_indexed_as_missing_not_ready(tmp_path):
    proc, run_dir = _run(tmp_path, "true")
    assert proc.returncode == 0
    assert "checkpoint 'final/model' not found after the run" in proc.stderr
    (entry,) = json.loads((run_dir / "artifacts.json").read_text())["artifacts"]
    assert entry["status"] == "missing" and entry["durable_path"] == ""


def test_only_the_first_pod_of_an_indexed_job_writes(tmp_path):
    proc, run_dir = _run(tmp_path, WRITE_HOT, JOB_COMPLETION_INDEX="1")
    assert proc.returncode == 0
    assert not run_dir.exists()


def test_an_image_without_python3_fails_the_run_with_126(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "mkdir", "printf"):
        found = shutil.which(tool)
        assert found
        (bin_dir / tool).symlink_to(found)
    proc, _ = _run(tmp_path, WRITE_HOT, PATH=str(bin_dir))
    assert proc.returncode == 126
    assert "the image has no python3: the artifact index was not written" in proc.stderr


def test_the_rayjob_driver_runs_the_same_step_after_the_script():
    doc = yaml.safe_load((GOLDEN / "rayjob-checkpoint-artifact" / "rendered.yaml").read_text())
    entry = doc["spec"]["entrypoint"]
    assert entry.index("python3 /script/train.py") < entry.index("TAU_ARTIFACT_INDEX")
    assert "export TAU_ARTIFACT_CHECKPOINT=final/model.safetensors" in entry
    program = _job_step().split("<<'TAU_ARTIFACT_INDEX'\n")[1].split("TAU_ARTIFACT_INDEX\n")[0]
    assert program in entry


# --- the reader ---------------------------------------------------------------------------


def _registry(tmp_path: Path, run: str, content: str | None):
    if content is not None:
        path = tmp_path / artifact_index.index_path(run)
        path.parent.mkdir(parents=True)
        path.write_text(content)
    return open_backend(f"file://{tmp_path}")


GOOD = {
    "schema_version": 1,
    "run": "r1",
    "namespace": "ml",
    "resource_name": "r1",
    "created_at": "2026-11-01T00:00:00Z",
    "hot_root": "/mnt/checkpoints",
    "durable_root": "/data/checkpoints",
    "artifacts": [
        {"name": "checkpoint", "status": "ready", "durable_path": "/data/checkpoints/x"},
        {"name": "logs", "status": "missing", "durable_path": ""},
    ],
}


def test_a_good_index_is_read_with_its_ready_artifacts(tmp_path):
    index = artifact_index.read(_registry(tmp_path, "r1", json.dumps(GOOD)), "r1")
    assert index is not None and index["namespace"] == "ml"
    assert [a["name"] for a in artifact_index.ready(index)] == ["checkpoint"]


def test_a_partial_index_is_read_with_what_it_has(tmp_path):
    backend = _registry(tmp_path, "r1", json.dumps({"artifacts": [{"name": "checkpoint"}]}))
    index = artifact_index.read(backend, "r1")
    assert index is not None
    assert (index["run"], index["schema_version"]) == ("r1", 1)
    assert artifact_index.ready(index) == []
    with pytest.raises(Exception, match="finetune run r1 has no ready artifact"):
        sources.from_finetune(backend, "r1")


def test_a_run_without_an_index_reads_as_none(tmp_path):
    assert artifact_index.read(_registry(tmp_path, "r1", None), "r1") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"schema_version": 1, "artifacts": [', "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"schema_version": 2}', "schema_version 2 is not supported (this tau reads 1)"),
        ('{"artifacts": {"name": "x"}}', "artifacts must be a list of objects"),
        ('{"run": 7}', "run must be a string"),
        ('{"run": "other"}', 'names run "other" but lives in the directory of run "r1"'),
    ],
)
def test_a_corrupt_index_is_refused_with_its_path(tmp_path, content, message):
    with pytest.raises(artifact_index.CorruptIndex) as err:
        artifact_index.read(_registry(tmp_path, "r1", content), "r1")
    assert message in err.value.message
    assert "checkpoints/finetunes/r1/artifacts.json" in err.value.message


def test_rebuild_skips_a_corrupt_index_with_a_warning_and_indexes_the_rest(
    tmp_path, monkeypatch, capsys
):
    _registry(tmp_path, "r1", json.dumps(GOOD))
    _registry(tmp_path, "r2", "{not json")
    monkeypatch.setenv("TAU_REGISTRY", f"file://{tmp_path}")
    assert main(["data", "model", "index", "rebuild", "--model", "llama"]) == 0
    out, err = capsys.readouterr()
    assert out == "indexed 1 model run(s)\n"
    assert err.startswith("warning: skipped run r2: ")
    assert "checkpoints/finetunes/r2/artifacts.json is not valid JSON" in err
    assert main(["data", "model", "index", "rebuild", "--run", "r2"]) == 1
    assert "r2/artifacts.json is not valid JSON" in capsys.readouterr().err
