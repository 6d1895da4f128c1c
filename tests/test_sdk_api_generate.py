"""tau.sdk.generate.plan: a module's handles → generated run configs and their staged files.

The two golden configs of the contract (§4, tests/data/python_build/) byte for byte, cases
9–15, 18, 21–23, 30–33, 36, 37, 44 and the extra-script collisions (19, 20) at the generate
level (what build writes and submit stages), and the generated configs run through our own
`tau run --config ... --dry-run=client`.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.cli import main
from tau.sdk import wrapper
from tau.sdk.discover import discover
from tau.sdk.errors import BuildArtifactError, SdkError
from tau.sdk.generate import SecretLocator, Workload, canonical_yaml, plan
from tau.sdk.overrides import Overrides
from tau.sdk.secrets import SecretSource

DATA = Path(__file__).resolve().parent / "data" / "python_build"
GOLDEN_OVERRIDES = Overrides(
    namespace="export-ns",
    data_pvc="durable-data",
    queue="priority-queue",
    gpu_class="any",
    worker_cpu_request=12,
    worker_memory_limit="96Gi",
)
LINEAGE = "/data/checkpoints/finetunes/train-model/artifacts/best/model.safetensors"
BUILD = "tau python build"
SUBMIT = "tau python submit"


def module(folder: Path, source: str, name: str = "flow.py") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def planned(path: Path, overrides: Overrides | None = None, **kw: Any) -> list[Workload]:
    return plan(discover(path), overrides or Overrides(), command=kw.pop("command", BUILD), **kw)


def file_bytes(w: Workload, name: str) -> bytes:
    return {f.name: f.data for f in w.files}[name]


@pytest.fixture(scope="module")
def golden() -> list[Workload]:
    return planned(DATA / "golden_module.py", GOLDEN_OVERRIDES)


# --- the golden module ----------------------------------------------------------------------


def test_golden_train_and_eval_configs_are_byte_exact(golden: list[Workload]) -> None:
    train, ev = golden
    assert file_bytes(train, "tau.yaml") == (DATA / "train.yaml").read_bytes()
    assert file_bytes(ev, "tau.yaml") == (DATA / "eval.yaml").read_bytes()
    assert canonical_yaml(train.config) == file_bytes(train, "tau.yaml")


def test_golden_records(golden: list[Workload]) -> None:
    train, ev = golden
    assert [(w.kind, w.name, w.attribute) for w in golden] == [
        ("train", "train-model", "train_job"),
        ("eval", "eval-model", "eval_job"),
    ]
    assert (train.namespace, train.resource_name) == ("export-ns", "tau-train-model")
    assert (train.after, train.upstream_checkpoint, train.generated_secret) == (None, None, None)
    assert (ev.after, ev.upstream_checkpoint) == ("train-model", LINEAGE)
    assert ev.resource_name == "tau-eval-model" and ev.secret_sources == ()


def test_golden_files_are_sorted_with_their_roles(golden: list[Workload]) -> None:
    for w in golden:
        assert [(f.name, f.role, f.staged_as) for f in w.files] == [
            ("tau.yaml", "config", None),
            ("tau_py_wrapper.py", "entrypoint", "train.py"),
            ("tau_user_module.py", "user-module", "tau_user_module.py"),
        ]
        assert file_bytes(w, "tau_py_wrapper.py") == wrapper.source()
        assert file_bytes(w, "tau_user_module.py") == (DATA / "golden_module.py").read_bytes()


def test_golden_override_fields(golden: list[Workload]) -> None:
    train, ev = golden
    for config in (train.config, ev.config):
        assert config["policy"]["namespace"] == "export-ns"
        assert config["storage"]["data_pvc"] == "durable-data"
        assert config["policy"]["gpu_class"] == "any"
        assert config["compute"]["worker_cpus"] == 12
        assert config["compute"]["worker_memory_limit"] == "96Gi"
        assert not Path(config["run"]["entrypoint"]).is_absolute()
        for spec in config["workflow"]["extra_scripts"]:
            assert not Path(spec.split(":", 1)[0]).is_absolute()
        assert "secret_payload" not in config["workflow"]
    assert train.config["policy"]["queue"] == "priority-queue"
    assert "queue" not in ev.config["policy"]
    assert train.config["storage"]["mounts"] == [
        {"mountPath": "/models", "name": "model-cache", "pvc": "model-cache", "readOnly": True}
    ]
    assert ev.config["workflow"]["upstream_checkpoint"] == LINEAGE
    assert (train.config["run"]["workload_kind"], ev.config["run"]["workload_kind"]) == (
        "rayjob",
        "rayjob-eval",
    )


def test_plan_is_deterministic(golden: list[Workload]) -> None:
    assert planned(DATA / "golden_module.py", GOLDEN_OVERRIDES) == golden


@pytest.mark.parametrize("index", [0, 1])
def test_golden_configs_render_through_our_own_tau_run(
    golden: list[Workload],
    index: int,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    w = golden[index]
    for f in w.files:
        (tmp_path / f.name).write_bytes(f.data)
    code = main(["run", "--config", str(tmp_path / "tau.yaml"), "--dry-run=client"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rayjobs = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "RayJob"]
    assert [r["metadata"]["name"] for r in rayjobs] == [w.resource_name]
    assert rayjobs[0]["metadata"]["namespace"] == "export-ns"


# --- namespace, placement, profiler ---------------------------------------------------------


def test_the_decorator_namespace_holds_without_a_flag_else_the_workspace_decides(
    tmp_path: Path,
) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(name="namespace-test", namespace="team-ns", runtime_pip=["torch==2.4.0"])
        def train_job(ctx):
            return ctx
        """,
    )
    (w,) = planned(path)
    assert w.namespace == w.config["policy"]["namespace"] == "team-ns"
    bare = module(
        tmp_path,
        "import tau\n\n@tau.train(name='t', runtime_pip=['p'])\ndef f(ctx):\n    pass\n",
        name="bare.py",
    )
    (w,) = planned(bare)
    # No namespace in the config: at submit the workspace names it (the reference wrote ray).
    assert w.namespace is None
    assert "policy" not in w.config


def test_train_placement_profiler_and_flags(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(
            name="placed", runtime_pip=["p"], team="research", preset="h100x8", lane="batch",
            queue="decorator-q", gpu_class="a100-80gb", gpu_resource_mode="dra",
            node_selector={"pool": "gpu"}, smoke_pairs=4, workload_kind="job",
            data_pvc="decorator-pvc",
        )
        def f(ctx):
            pass

        @tau.eval(name="placed-eval", after="placed", team="research", node_selector="zone=a",
                  extra_manifest={"runtime": {"pip": ["p"]}})
        def g(ctx):
            pass
        """,
    )
    flags = Overrides(
        data_pvc="flag-pvc",
        disable_default_priorities=True,
        profiler="nsys",
        profile_rank="0,8",
        profile_warmup="30s",
        profile_duration="2m",
    )
    train, ev = planned(path, flags)
    assert train.config["run"] == {
        "entrypoint": "tau_py_wrapper.py",
        "workload_kind": "job",
        "smoke_pairs": 4,
    }
    assert train.config["policy"] == {
        "team": "research",
        "preset": "h100x8",
        "lane": "batch",
        "queue": "decorator-q",
        "gpu_class": "a100-80gb",
        "node_selector": {"pool": "gpu"},
        "disable_default_priorities": True,
    }
    assert train.config["compute"]["gpu_resource_mode"] == "dra"
    assert train.config["storage"]["data_pvc"] == "flag-pvc"  # the flag wins
    assert train.config["profiler"] == {
        "mode": "nsys",
        "rank": "0,8",
        "warmup": "30s",
        "duration": "2m",
    }
    assert "profiler" not in ev.config and "smoke_pairs" not in ev.config["run"]
    assert ev.config["policy"] == {
        "team": "research",
        "node_selector": {"zone": "a"},
        "disable_default_priorities": True,
    }
    flagged = Overrides(node_selector=(("pool", "cpu"),), queue="flag-q", gpu_class="any")
    train, ev = planned(path, flagged)
    assert train.config["policy"]["node_selector"] == {"pool": "cpu"}
    assert (train.config["policy"]["queue"], train.config["policy"]["gpu_class"]) == (
        "flag-q",
        "any",
    )
    assert ev.config["policy"]["node_selector"] == {"pool": "cpu"}


def test_a_resource_naming_prefix_names_the_resource_and_the_secret(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(name="t", runtime_pip=["p"],
                   extra_manifest={"resource_naming": {"prefix": "lab"}},
                   env={"HF_TOKEN": tau.secret_from_env("hf", env="HF_TOKEN")})
        def f(ctx):
            pass
        """,
    )
    (w,) = planned(path)
    assert (w.resource_name, w.generated_secret) == ("lab-t", "lab-t-secrets")


# --- secrets --------------------------------------------------------------------------------


def test_secret_sources_become_keys_of_the_runs_secret_and_only_locators_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAU_TEST_TOKEN", "environment-secret")
    (tmp_path / "token.txt").write_text("file-secret\n")
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(
            name="secret-train",
            gpus=1,
            runtime_pip=["torch==2.4.0"],
            env={
                "FROM_ENV": tau.secret_from_env("env-token", env="TAU_TEST_TOKEN"),
                "FROM_FILE": tau.secret_from_file("file-token", path="token.txt"),
                "EXTERNAL": tau.secret_ref("shared-secret", "api-key"),
            },
        )
        def train_job(ctx):
            return ctx
        """,
        name="secret_workflow.py",
    )
    (w,) = planned(path, Overrides(namespace="replay-ns"))
    for f in w.files:
        assert b"environment-secret" not in f.data and b"file-secret" not in f.data
    assert w.generated_secret == "tau-secret-train-secrets"
    assert w.secret_sources == (
        SecretLocator("FROM_ENV", "env-token", SecretSource(key="env-token", env="TAU_TEST_TOKEN")),
        SecretLocator("FROM_FILE", "file-token", SecretSource(key="file-token", path="token.txt")),
    )
    refs = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in w.config["runtime"]["env"]}
    assert refs == {
        "EXTERNAL": {"name": "shared-secret", "key": "api-key"},
        "FROM_ENV": {"name": "tau-secret-train-secrets", "key": "env-token"},
        "FROM_FILE": {"name": "tau-secret-train-secrets", "key": "file-token"},
    }
    assert b"tauSecretSource" not in file_bytes(w, "tau.yaml")


def test_an_eval_secret_source_from_extra_manifest_is_rewritten_too(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.eval(name="e", extra_manifest={"runtime": {"pip": ["p"], "env": [
            {"name": "TOKEN", "valueFrom": {"tauSecretSource": {"key": "tok", "env": "MY_TOK"}}}
        ]}})
        def g(ctx):
            pass
        """,
    )
    (w,) = planned(path, upstream_checkpoint="/data/m.pt")
    assert w.config["runtime"]["env"] == [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "tau-e-secrets", "key": "tok"}}}
    ]
    assert w.secret_sources == (SecretLocator("TOKEN", "tok", SecretSource("tok", env="MY_TOK")),)


# --- lineage and refusals -------------------------------------------------------------------

EVAL_ONLY = """
import tau

@tau.eval(name="standalone-eval", gpus=1, cpu_workers=3,
          extra_manifest={"runtime": {"pip": ["torch==2.4.0"]}})
def eval_job(ctx):
    return ctx
"""


def test_an_eval_only_module_needs_an_upstream_checkpoint(tmp_path: Path) -> None:
    path = module(tmp_path, EVAL_ONLY)
    with pytest.raises(SdkError) as caught:
        planned(path)
    assert caught.value.message == (
        "tau python build: eval-only workflows require --upstream-checkpoint so the exported "
        "production intent is self-contained"
    )
    with pytest.raises(SdkError, match="needs TAU_UPSTREAM_CHECKPOINT in the env"):
        planned(path, command=SUBMIT)
    (w,) = planned(path, upstream_checkpoint="/data/models/model.safetensors")
    assert w.after is None
    assert w.upstream_checkpoint == "/data/models/model.safetensors"
    assert w.config["workflow"]["upstream_checkpoint"] == "/data/models/model.safetensors"
    assert w.config["eval"] == {"cpu_workers": 3}
    with pytest.raises(SdkError, match="must be an absolute path inside the pod"):
        planned(path, upstream_checkpoint="models/m.pt")


LINEAGE_MISMATCH = """
import tau

@tau.train(name="train-a", runtime_pip=["torch==2.4.0"])
def train_job(ctx):
    return ctx

@tau.eval(name="eval-a", after="train-b", extra_manifest={"runtime": {"pip": ["torch==2.4.0"]}})
def eval_job(ctx):
    return ctx
"""


def test_an_eval_after_another_train_is_refused(tmp_path: Path) -> None:
    path = module(tmp_path, LINEAGE_MISMATCH)
    with pytest.raises(SdkError) as caught:
        planned(path)
    assert caught.value.message == (
        "tau python build: @tau.eval after='train-b' does not match @tau.train name='train-a'"
    )
    with pytest.raises(SdkError, match=r"name='train-a' in this file \(typo\?\)$"):
        planned(path, command=SUBMIT)


def test_an_eval_after_a_train_that_is_not_there_is_refused(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        "import tau\n\n@tau.eval(name='e', after='t')\ndef g(ctx):\n    pass\n",
    )
    with pytest.raises(SdkError) as caught:
        planned(path, upstream_checkpoint="/data/m.pt")
    assert caught.value.message == (
        "tau python build: @tau.eval references after='t' but no @tau.train handle is defined"
    )


def test_the_lineage_path_uses_the_default_artifact(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(name="t", runtime_pip=["p"])
        def f(ctx):
            pass

        @tau.eval(name="e", extra_manifest={"runtime": {"pip": ["p"]}})
        def g(ctx):
            pass
        """,
    )
    _, ev = planned(path, upstream_checkpoint="/ignored/with/a/train")
    assert ev.upstream_checkpoint == "/data/checkpoints/finetunes/t/artifacts/last.safetensors"
    assert ev.after == "t"


def test_serve_only_and_empty_modules(tmp_path: Path) -> None:
    serve_only = module(
        tmp_path, "import tau\nendpoint = tau.serve(name='model-api', profile='research-serve')\n"
    )
    with pytest.raises(SdkError, match=r"use ServeHandle\.deploy\(\) or tau serve deploy"):
        planned(serve_only)
    empty = module(tmp_path, "import tau\n", name="empty.py")
    with pytest.raises(SdkError) as caught:
        planned(empty)
    assert caught.value.message == "tau python build: no @tau.train or @tau.eval handles found"
    with pytest.raises(SdkError) as caught:
        planned(empty, command=SUBMIT)
    assert caught.value.message == (
        f"tau python submit: no @tau.train or @tau.eval functions found in {empty}"
    )


def test_two_train_handles_are_refused(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        """
        import tau

        @tau.train(name="a", runtime_pip=["p"])
        def a(ctx):
            pass

        @tau.train(name="b", runtime_pip=["p"])
        def b(ctx):
            pass
        """,
    )
    with pytest.raises(SdkError) as caught:
        planned(path, command=SUBMIT)
    assert caught.value.message == (
        "tau python submit: multiple @tau.train handles found (a, b); v1 supports at most one "
        "per file"
    )


def test_an_unsafe_workload_name_is_refused(tmp_path: Path) -> None:
    path = module(
        tmp_path,
        "import tau\n\n@tau.train(name='Bad_Name', runtime_pip=['p'])\ndef f(ctx):\n  pass\n",
    )
    with pytest.raises(SdkError) as caught:
        planned(path)
    assert caught.value.message == (
        "tau python build: workload name 'Bad_Name' is not a safe generated path segment"
    )


def test_a_workload_without_runtime_pip_is_refused_with_the_reference_text(
    tmp_path: Path,
) -> None:
    path = module(tmp_path, "import tau\n\n@tau.train(name='no-pip')\ndef f(ctx):\n    pass\n")
    with pytest.raises(SdkError) as caught:
        planned(path)
    assert caught.value.message == (
        "tau-py: 'no-pip' has no runtime.pip — declare your trainer's pip deps via "
        'extra_manifest, e.g. @tau.train(..., extra_manifest={"runtime": {"pip": '
        '["torch==2.4.0", "transformers==4.45.0"]}}). tau ships no default pip list.'
    )


# --- entrypoint mode and extra scripts ------------------------------------------------------


def entrypoint_module(folder: Path, extra: str) -> Path:
    (folder / "job.py").write_text("def main(ctx=None):\n    return 1\n")
    (folder / extra).write_text("# an extra script\n")
    return module(
        folder,
        f"""
        import tau
        from pathlib import Path

        HERE = Path(__file__).parent
        job = tau.train(
            name="ep-train",
            entrypoint=str(HERE / "job.py"),
            extra_scripts=[HERE / "{extra}"],
            runtime_pip=["p"],
        )
        """,
    )


def test_entrypoint_mode_stages_the_script_and_the_extra_scripts(tmp_path: Path) -> None:
    path = entrypoint_module(tmp_path, "helper.py")
    (w,) = planned(path)
    assert [(f.name, f.role, f.staged_as) for f in w.files] == [
        ("helper.py", "extra-script", "helper.py"),
        ("tau.yaml", "config", None),
        ("tau_entrypoint_job.py", "extra-script", "tau_entrypoint_job.py"),
        ("tau_py_wrapper.py", "entrypoint", "train.py"),
        ("tau_user_module.py", "user-module", "tau_user_module.py"),
    ]
    assert w.config["workflow"]["extra_scripts"] == [
        "tau_user_module.py:tau_user_module.py",
        "tau_entrypoint_job.py:tau_entrypoint_job.py",
        "helper.py:helper.py",
    ]
    assert w.config["entrypoint"]["script"] == "/script/tau_entrypoint_job.py"
    assert file_bytes(w, "tau_entrypoint_job.py") == (tmp_path / "job.py").read_bytes()
    assert b"call_staged_function" in file_bytes(w, "tau_user_module.py")


def test_an_entrypoint_mode_config_renders_through_our_own_tau_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (w,) = planned(entrypoint_module(tmp_path, "helper.py"))
    out_dir = tmp_path / "staged"
    out_dir.mkdir()
    for f in w.files:
        (out_dir / f.name).write_bytes(f.data)
    code = main(["run", "--config", str(out_dir / "tau.yaml"), "--dry-run=client"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rayjobs = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "RayJob"]
    assert [r["metadata"]["name"] for r in rayjobs] == ["tau-ep-train"]


@pytest.mark.parametrize("extra", ["tau_py_wrapper.py", "tau.yaml"])
def test_an_extra_script_named_like_a_generated_file_collides(tmp_path: Path, extra: str) -> None:
    path = entrypoint_module(tmp_path, extra)
    with pytest.raises(BuildArtifactError) as caught:
        planned(path)
    assert caught.value.message == (
        f"extra script destination '{extra}' collides with a generated build file"
    )
