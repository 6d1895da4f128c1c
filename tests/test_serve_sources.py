"""Model sources of `tau serve deploy`: finetune artifacts and the model registry."""

from __future__ import annotations

import json

import pytest

from tau.errors import TauError
from tau.registry.backend import FileBackend
from tau.registry.models import ModelRegistry
from tau.serving import sources


def _finetune(root, run: str, artifacts: list[dict]) -> None:
    path = root / "checkpoints" / "finetunes" / run
    path.mkdir(parents=True)
    (path / "artifacts.json").write_text(json.dumps({"run": run, "artifacts": artifacts}))


READY = {"name": "final", "status": "ready", "durable_path": "/data/checkpoints/finetunes/r1/f"}


def test_a_finetune_gives_its_first_ready_artifact(tmp_path):
    _finetune(
        tmp_path, "r1", [{"name": "mid", "status": "uploading", "durable_path": "/data/x"}, READY]
    )
    assert sources.from_finetune(FileBackend(tmp_path), "r1") == READY["durable_path"]


def test_a_named_artifact_must_itself_be_ready(tmp_path):
    _finetune(
        tmp_path, "r1", [{"name": "mid", "status": "uploading", "durable_path": "/data/x"}, READY]
    )
    with pytest.raises(TauError, match='no ready artifact "mid"'):
        sources.from_finetune(FileBackend(tmp_path), "r1:mid")


def test_a_run_without_artifacts_json_says_where_it_looked(tmp_path):
    with pytest.raises(TauError) as err:
        sources.from_finetune(FileBackend(tmp_path), "ghost")
    assert "finetune run ghost has no artifacts.json" in err.value.message
    assert "checkpoints/finetunes/ghost/artifacts.json" in err.value.hint


def test_a_model_reference_resolves_through_the_registry(tmp_path):
    backend = FileBackend(tmp_path)
    _finetune(tmp_path, "r1", [READY])
    registry = ModelRegistry(backend)
    assert registry.rebuild(model="llama") == (1, 0)
    assert sources.from_model(backend, "llama@r1") == READY["durable_path"]
