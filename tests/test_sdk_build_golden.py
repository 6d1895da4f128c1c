"""`tau python build` end to end: discover → generate.plan → build.write → load_artifact.

The golden module (tests/data/python_build/golden_module.py) is the reference SDK's build test
module; its generated configs must equal train.yaml and eval.yaml beside it byte for byte, as
the reference's own goldens do, and the artifact around them must verify.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from tau.sdk import build
from tau.sdk.artifact import load_artifact, staged_config
from tau.sdk.discover import discover
from tau.sdk.errors import BuildArtifactError, SdkError
from tau.sdk.generate import plan
from tau.sdk.overrides import Overrides

DATA = Path(__file__).parent / "data" / "python_build"
GOLDEN_OVERRIDES = Overrides(
    namespace="export-ns",
    data_pvc="durable-data",
    queue="priority-queue",
    gpu_class="any",
    worker_cpu_request=12,
    worker_memory_limit="96Gi",
)
CHECKPOINT = "/data/checkpoints/finetunes/train-model/artifacts/best/model.safetensors"
REASON = "tau.serve maps directly to tau serve deploy and is not a managed workflow"


def build_module(
    module: Path,
    out: Path,
    overrides: Overrides | None = None,
    *,
    upstream: str | None = None,
    force: bool = False,
) -> Path:
    """What `tau python build` does between parsing its flags and printing the output path."""
    handles = discover(module)
    workloads = plan(
        handles, overrides or Overrides(), command="tau python build", upstream_checkpoint=upstream
    )
    serve = [(f.attribute, f.handle.name) for f in handles.serve]
    return build.write(workloads, out, force=force, serve=serve)


def golden(out: Path) -> Path:
    return build_module(DATA / "golden_module.py", out, GOLDEN_OVERRIDES)


def module_file(tmp_path: Path, source: str, name: str = "workflow.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def config_of(out: Path, record: dict) -> dict:
    return yaml.safe_load((out / record["config"]).read_text())


# --- the golden module (cases 5-16) ----------------------------------------------------------


def test_the_golden_build_is_byte_stable_and_free_of_host_paths(tmp_path: Path) -> None:
    first = golden(tmp_path / "build-a")
    second = golden(tmp_path / "build-b")
    assert tree(first) == tree(second)
    for data in tree(first).values():
        assert str(tmp_path).encode() not in data
        assert str(DATA).encode() not in data


def test_the_golden_configs_equal_the_reference_goldens(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    train = (out / "workloads" / "train-train-model" / "tau.yaml").read_bytes()
    ev = (out / "workloads" / "eval-eval-model" / "tau.yaml").read_bytes()
    assert train == (DATA / "train.yaml").read_bytes()
    assert ev == (DATA / "eval.yaml").read_bytes()


def test_the_golden_artifact_verifies_and_records_the_chain(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    artifact = load_artifact(out)
    assert artifact.root == out.resolve()
    assert artifact.index["kind"] == "tau.python.build"
    assert artifact.index["schema_version"] == 1
    assert artifact.index["generator"]["name"] == "tau-py"
    assert artifact.index["separate_serve"] == [
        {"attribute": "endpoint", "name": "model-api", "reason": REASON}
    ]
    assert [(r["kind"], r["name"]) for r in artifact.index["workloads"]] == [
        ("train", "train-model"),
        ("eval", "eval-model"),
    ]
    train, ev = artifact.index["workloads"]
    assert ev["after"] == "train-model"
    assert ev["upstream_checkpoint"] == CHECKPOINT
    assert "after" not in train and "upstream_checkpoint" not in train
    assert (train["namespace"], ev["namespace"]) == ("export-ns", "export-ns")
    assert (train["resource_name"], ev["resource_name"]) == ("tau-train-model", "tau-eval-model")
    assert (train["attribute"], ev["attribute"]) == ("train_job", "eval_job")


def test_the_golden_files_have_their_roles(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    train = load_artifact(out).index["workloads"][0]
    assert [
        (f["path"].rsplit("/", 1)[1], f["role"], f.get("staged_as")) for f in train["files"]
    ] == [
        ("tau.yaml", "config", None),
        ("tau_py_wrapper.py", "entrypoint", "train.py"),
        ("tau_user_module.py", "user-module", "tau_user_module.py"),
    ]
    staged_module = out / "workloads" / "train-train-model" / "tau_user_module.py"
    assert staged_module.read_bytes() == (DATA / "golden_module.py").read_bytes()


def test_the_golden_configs_carry_the_overrides(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    train_record, eval_record = load_artifact(out).index["workloads"]
    train, ev = config_of(out, train_record), config_of(out, eval_record)
    for config in (train, ev):
        assert config["policy"]["namespace"] == "export-ns"
        assert config["storage"]["data_pvc"] == "durable-data"
        assert config["policy"]["gpu_class"] == "any"
        assert config["compute"]["worker_cpus"] == 12
        assert config["compute"]["worker_memory_limit"] == "96Gi"
        assert not Path(config["run"]["entrypoint"]).is_absolute()
        for spec in config["workflow"]["extra_scripts"]:
            assert not Path(spec.split(":", 1)[0]).is_absolute()
    assert train["policy"]["queue"] == "priority-queue"
    assert "queue" not in ev["policy"]
    assert train["storage"]["mounts"] == [
        {"mountPath": "/models", "name": "model-cache", "pvc": "model-cache", "readOnly": True}
    ]
    assert ev["workflow"]["upstream_checkpoint"] == CHECKPOINT


# --- other modules -----------------------------------------------------------------------------


def test_an_eval_only_build_records_the_given_checkpoint(tmp_path: Path) -> None:
    module = module_file(
        tmp_path,
        """
        import tau

        @tau.eval(name="standalone-eval", gpus=1, cpu_workers=3,
                  extra_manifest={"runtime": {"pip": ["torch==2.4.0"]}})
        def eval_job(ctx):
            return ctx
        """,
    )
    out = build_module(module, tmp_path / "gen", upstream="/data/models/model.safetensors")
    record = load_artifact(out).index["workloads"][0]
    assert "after" not in record
    assert record["upstream_checkpoint"] == "/data/models/model.safetensors"
    assert config_of(out, record)["workflow"]["upstream_checkpoint"] == (
        "/data/models/model.safetensors"
    )


@pytest.mark.parametrize("reserved", ["tau_py_wrapper.py", "tau.yaml"])
def test_an_extra_script_named_like_a_generated_file_builds_nothing(
    tmp_path: Path, reserved: str
) -> None:
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / reserved).write_text("print('mine')\n")
    (scripts / "main.py").write_text("def main(ctx):\n    return ctx\n")
    module = module_file(
        tmp_path,
        f"""
        import tau

        job = tau.train(name="entry-train", runtime_pip=["torch==2.4.0"],
                        entrypoint={str(scripts / "main.py")!r},
                        extra_scripts=[{str(scripts / reserved)!r}])
        """,
    )
    with pytest.raises(SdkError, match="collides with a generated build file"):
        build_module(module, tmp_path / "gen")
    assert not (tmp_path / "gen").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tau-build")]


def test_an_existing_output_needs_force_then_is_replaced(tmp_path: Path) -> None:
    module = module_file(
        tmp_path,
        """
        import tau

        @tau.train(name="replace-test", runtime_pip=["torch==2.4.0"])
        def train_job(ctx):
            return ctx
        """,
    )
    out = build_module(module, tmp_path / "gen")
    with pytest.raises(BuildArtifactError, match="already exists"):
        build_module(module, out)
    assert build_module(module, out, force=True) == out
    assert [w.name for w in load_artifact(out).workloads] == ["replace-test"]


def test_tampering_with_a_built_file_is_caught(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    staged = out / load_artifact(out).index["workloads"][0]["files"][0]["path"]
    staged.write_text(staged.read_text() + "# modified\n")
    with pytest.raises(BuildArtifactError, match=r"(size|digest) mismatch"):
        load_artifact(out)


def test_a_config_path_leaving_the_build_is_refused(tmp_path: Path) -> None:
    out = golden(tmp_path / "gen")
    index = yaml.safe_load((out / "tau-build.yaml").read_text())
    index["workloads"][0]["config"] = "../outside.yaml"
    (out / "tau-build.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
    with pytest.raises(BuildArtifactError, match="invalid workload config path"):
        load_artifact(out)


def test_a_secret_build_keeps_locators_not_values(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "token.txt").write_text("file-secret\n")
    monkeypatch.setenv("TAU_TEST_TOKEN", "environment-secret")
    module = module_file(
        tmp_path,
        """
        import tau

        @tau.train(name="secret-train", gpus=1, runtime_pip=["torch==2.4.0"], env={
            "FROM_ENV": tau.secret_from_env("env-token", env="TAU_TEST_TOKEN"),
            "FROM_FILE": tau.secret_from_file("file-token", path="token.txt"),
            "EXTERNAL": tau.secret_ref("shared-secret", "api-key"),
        })
        def train_job(ctx):
            return ctx
        """,
        name="secret_workflow.py",
    )
    out = build_module(module, tmp_path / "gen", Overrides(namespace="replay-ns"))
    for data in tree(out).values():
        assert b"environment-secret" not in data
        assert b"file-secret" not in data
    artifact = load_artifact(out)
    record = artifact.index["workloads"][0]
    assert record["secret_sources"] == [
        {
            "env_name": "FROM_ENV",
            "key": "env-token",
            "source": {"kind": "env", "name": "TAU_TEST_TOKEN"},
        },
        {
            "env_name": "FROM_FILE",
            "key": "file-token",
            "source": {"kind": "file", "path": "token.txt"},
        },
    ]
    w = artifact.workloads[0]
    assert w.generated_secret == record["generated_secret"]
    assert [loc.env_name for loc in w.secret_sources] == ["FROM_ENV", "FROM_FILE"]
    payload = tmp_path / "private" / "tau-job-secrets.json"
    config = staged_config(w, secret_payload=payload)
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in config["runtime"]["env"]}
    assert refs["EXTERNAL"] == {"name": "shared-secret", "key": "api-key"}
    assert refs["FROM_ENV"] == {"name": w.generated_secret, "key": "env-token"}
    assert config["workflow"]["secret_payload"] == str(payload)
    assert (w.folder / config["run"]["entrypoint"]).is_file()
