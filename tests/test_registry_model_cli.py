"""`tau data model ...` end to end through `tau.cli.main` on a file:// registry."""

from __future__ import annotations

import json

import pytest

from tau.cli import main

FINETUNES = "checkpoints/finetunes"


def artifacts(run):
    return {
        "schema_version": 1,
        "run": run,
        "namespace": "ml",
        "resource_name": run,
        "created_at": "2026-11-01T00:00:00Z",
        "hot_root": f"/scratch/{run}",
        "durable_root": f"/data/{FINETUNES}/{run}",
        "artifacts": [
            {
                "name": "checkpoint",
                "manifest_path": "m",
                "source_path": "s",
                "durable_path": f"/data/{FINETUNES}/{run}/checkpoint",
                "status": "ready",
                "kind": "dir",
                "size_bytes": 10,
                "file_count": 1,
                "mtime": "2026-11-01T01:00:00Z",
            }
        ],
    }


@pytest.fixture
def root(tmp_path, monkeypatch):
    """Three finetune runs with artifacts.json and metrics.json, on the default registry."""
    monkeypatch.setenv("TAU_REGISTRY", f"file://{tmp_path}")
    metrics = {
        "run-a": {"eval": {"loss": 0.5}},
        "run-b": {"eval": {"loss": 0.3}, "score": 2},
        "run-c": {"eval": {"loss": 0.9}, "score": 7},
    }
    for run, m in metrics.items():
        d = tmp_path / FINETUNES / run
        d.mkdir(parents=True)
        (d / "artifacts.json").write_text(json.dumps(artifacts(run)))
        (d / "metrics.json").write_text(json.dumps(m))
    return tmp_path


def run(capsys, *argv):
    code = main(["data", "model", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_index_rebuild_writes_records_and_copies(capsys, root):
    assert run(capsys, "index", "rebuild", "--model", "llama") == (
        0,
        "indexed 3 model run(s)\n",
        "",
    )
    rec = json.loads((root / "model-registry/models/llama/runs/run-b.json").read_text())
    assert rec["kind"] == "tau.model" and rec["primary_metric"] == {
        "name": "eval.loss",
        "value": 0.3,
        "direction": "lower",
    }
    assert rec["metrics"] == {"eval.loss": 0.3, "score": 2.0}
    copy = (root / FINETUNES / "run-b/model.json").read_text()
    assert copy == (root / "model-registry/models/llama/runs/run-b.json").read_text()


def test_index_rebuild_is_deterministic_and_keeps_the_model(capsys, root):
    run(capsys, "index", "rebuild", "--model", "llama")
    before = (root / "model-registry/models/llama/runs/run-a.json").read_bytes()
    assert run(capsys, "index", "rebuild", "--run", "run-a")[1] == "indexed 1 model run(s)\n"
    assert (root / "model-registry/models/llama/runs/run-a.json").read_bytes() == before


def test_index_rebuild_never_rewrites_a_registered_record(capsys, root):
    """Records are immutable once registered (only aliases move), as dataset versions are."""
    run(capsys, "index", "rebuild", "--model", "llama")
    record = root / "model-registry/models/llama/runs/run-a.json"
    before = record.read_bytes()
    (root / FINETUNES / "run-a/metrics.json").write_text(json.dumps({"eval": {"loss": 0.01}}))
    code, out, err = run(capsys, "index", "rebuild", "--run", "run-a")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: model run llama/run-a is already registered and its artifacts.json or "
        "metrics.json now gives a different record (records are immutable; only aliases move)\n"
        f"  hint: the registered record stays as it is ({record}); register the new state "
        "under a new run name\n"
    ), err
    assert record.read_bytes() == before
    # Over all runs, the others are indexed; the refused one is said and the exit is 1.
    code, out, err = run(capsys, "index", "rebuild")
    assert (code, out) == (1, "indexed 2 model run(s)\n")
    assert "warning: refused run run-a: model run llama/run-a is already registered" in err
    assert "error: 1 run(s) refused: their records are registered and would change" in err
    assert record.read_bytes() == before
    assert json.loads((root / FINETUNES / "run-a/model.json").read_text())["metrics"] == {
        "eval.loss": 0.5
    }


def test_index_rebuild_under_another_model_writes_a_new_record(capsys, root):
    run(capsys, "index", "rebuild", "--run", "run-a")
    first = root / "model-registry/models/unknown/runs/run-a.json"
    before = first.read_bytes()
    assert run(capsys, "index", "rebuild", "--run", "run-a", "--model", "llama")[0] == 0
    assert first.read_bytes() == before
    assert (root / "model-registry/models/llama/runs/run-a.json").exists()


def test_index_rebuild_defaults_the_model_to_unknown(capsys, root):
    run(capsys, "index", "rebuild")
    assert (root / "model-registry/models/unknown/runs/run-c.json").exists()
    code, _, err = run(capsys, "index", "rebuild", "--run", "run-z")
    assert code == 1 and "run run-z has no artifacts.json" in err


def test_list_table_and_sort(capsys, root):
    run(capsys, "index", "rebuild", "--model", "llama")
    code, out, _ = run(capsys, "list", "--metric", "score", "--sort", "desc")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == [
        "MODEL",
        "RUN",
        "METRIC(score)",
        "DIRECTION",
        "TAGS",
        "ARTIFACT",
        "STATUS",
    ]
    assert [ln.split()[1] for ln in lines[1:]] == ["run-c", "run-b", "run-a"]
    assert lines[1].split()[2:4] == ["7", "higher"]
    assert run(capsys, "list")[1].splitlines()[0].split()[2] == "METRIC(primary)"
    assert len(json.loads(run(capsys, "list", "-o", "json")[1])) == 3


def test_best_follows_the_direction_rules(capsys, root):
    run(capsys, "index", "rebuild", "--model", "llama")
    assert run(capsys, "best", "llama")[1] == "llama@run-b\n"  # eval.loss: lower
    assert run(capsys, "best", "llama", "--metric", "score")[1] == "llama@run-c\n"
    assert (
        run(capsys, "best", "llama", "--metric", "eval.loss", "--direction", "higher")[1]
        == "llama@run-c\n"
    )
    assert json.loads(run(capsys, "best", "llama", "-o", "json")[1])["run"] == "run-b"


def test_best_refuses_mixed_primary_metrics(capsys, root):
    (root / FINETUNES / "run-c/metrics.json").write_text(json.dumps({"loss": 0.1}))
    run(capsys, "index", "rebuild", "--model", "llama")
    code, _, err = run(capsys, "best", "llama")
    assert code == 1 and "mixed primary metrics (eval.loss, loss)" in err and "--metric" in err
    code, _, err = run(capsys, "best", "llama", "--direction", "sideways")
    assert code == 1 and "--direction must be one of: lower, higher" in err


def test_aliases_and_show_forms(capsys, root):
    run(capsys, "index", "rebuild", "--model", "llama")
    code, _, err = run(capsys, "show", "llama")
    assert code == 1 and 'no alias "default"' in err
    assert run(capsys, "alias", "set", "llama", "default", "run-b")[1] == "llama@run-b\n"
    assert json.loads(run(capsys, "show", "llama")[1])["run"] == "run-b"
    assert json.loads(run(capsys, "show", "run-a")[1])["run"] == "run-a"
    assert json.loads(run(capsys, "show", "llama/run-c")[1])["run"] == "run-c"
    assert json.loads(run(capsys, "show", "llama@run-c")[1])["run"] == "run-c"
    assert json.loads(run(capsys, "show", "llama:default")[1])["run"] == "run-b"
    out = run(capsys, "show", "llama", "-o", "summary")[1]
    assert "Primary metric: eval.loss=0.3 (lower)" in out
    assert run(capsys, "alias", "get", "llama", "default")[1] == "llama@run-b\n"
    code, _, err = run(capsys, "alias", "set", "llama", "default", "run-a", "--expect", "run-c")
    assert code == 1 and "points at run-b, not run-c" in err
    code, _, err = run(capsys, "alias", "set", "llama", "default", "run-zz")
    assert code == 1 and "model llama has no run run-zz" in err
    code, _, err = run(capsys, "show", "Bad/Run")
    assert code == 1 and "invalid model name" in err
