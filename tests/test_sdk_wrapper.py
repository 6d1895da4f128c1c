"""The cluster-side wrapper (`tau_py_wrapper.py`): its merge rule, shim, Ctx and a local run.

The wrapper file is imported under a private name (never as `tau`, never registering a shim in
this process unless a test says so). The end-to-end runs execute it in a subprocess laid out
like /script, with a fake `ray` package on PYTHONPATH that records what Ray Train was asked for.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.sdk import wrapper

WRAPPER_FILE = Path(wrapper.__file__).with_name("_cluster_wrapper.py")


@pytest.fixture(scope="module")
def w() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("tau_py_wrapper_under_test", WRAPPER_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ----------------------------------------------------------------------------- the source


def test_source_is_the_packaged_file_byte_for_byte() -> None:
    assert wrapper.source() == WRAPPER_FILE.read_bytes()
    assert wrapper.source() == wrapper.source()


def test_source_parses_as_python_3_10_and_imports_no_tau() -> None:
    tree = ast.parse(wrapper.source(), feature_version=(3, 10))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    assert "tau" not in imported
    assert imported <= set(sys.stdlib_module_names)


# ----------------------------------------------------------------------------- cases 53-56

GPU_SCALING = {
    "num_workers": 8,
    "use_gpu": True,
    "resources_per_worker": {"GPU": 1},
    "placement_strategy": "SPREAD",
}


def merge(w: types.ModuleType, raw: str) -> tuple[dict, dict, dict]:
    return w.merge_ray_train_config({"backend": "nccl"}, GPU_SCALING, {}, raw)


def test_case_53_unset_keeps_the_defaults(w) -> None:
    torch, scaling, failure = merge(w, "")
    assert torch == {"backend": "nccl"}
    assert scaling == GPU_SCALING
    assert failure == {}


def test_case_54_each_section_is_updated(w) -> None:
    raw = json.dumps(
        {
            "failure_config": {"max_failures": 3},
            "torch_config": {"timeout_s": 1800},
            "scaling_config": {"placement_strategy": "PACK", "use_gpu": False},
        }
    )
    torch, scaling, failure = merge(w, raw)
    assert torch == {"backend": "nccl", "timeout_s": 1800}
    assert scaling["placement_strategy"] == "PACK"
    assert scaling["use_gpu"] is False
    assert scaling["num_workers"] == 8
    assert failure == {"max_failures": 3}
    assert GPU_SCALING["placement_strategy"] == "SPREAD"  # the defaults are not modified


def test_case_55_backend_override(w) -> None:
    torch, _, _ = merge(w, json.dumps({"torch_config": {"backend": "gloo"}}))
    assert torch["backend"] == "gloo"


def test_case_56_unknown_keys_pass_through(w) -> None:
    raw = json.dumps(
        {"failure_config": {"max_failures": 2}, "torch_config": {"unknown_future_field": 42}}
    )
    torch, _, failure = merge(w, raw)
    assert torch == {"backend": "nccl", "unknown_future_field": 42}
    assert failure == {"max_failures": 2}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "TAU_RAY_TRAIN_CONFIG_JSON is malformed"),
        ("[1, 2]", "TAU_RAY_TRAIN_CONFIG_JSON must be a JSON object"),
        ('{"scaling_config": 4}', "scaling_config must be a JSON object"),
    ],
)
def test_a_bad_ray_train_config_is_one_error(w, raw: str, message: str) -> None:
    with pytest.raises(w.WrapperError, match=message):
        merge(w, raw)


def ctx_for(w: types.ModuleType, manifest: dict, env: dict | None = None) -> Any:
    return w.build_ctx(manifest, "/manifest/tau.yaml", 0, env or {})


def test_ray_train_config_runs_one_worker_per_gpu(w) -> None:
    ctx = ctx_for(w, {"name": "ft", "compute": {"gpus": 2, "workers": 3}})
    torch, scaling, failure = w.ray_train_config(ctx, {})
    assert torch == {"backend": "nccl"}
    assert scaling == {
        "num_workers": 6,
        "use_gpu": True,
        "resources_per_worker": {"GPU": 1},
        "placement_strategy": "SPREAD",
    }
    assert failure == {}


def test_ray_train_config_on_cpus_and_with_the_renderers_variables(w) -> None:
    ctx = ctx_for(w, {"name": "ft", "compute": {"gpus": 0, "workers": 2}})
    torch, scaling, _ = w.ray_train_config(ctx, {})
    assert torch == {"backend": "gloo"}
    assert scaling["num_workers"] == 2 and scaling["use_gpu"] is False
    assert scaling["resources_per_worker"] == {"CPU": 1}
    env = {
        "TAU_NUM_WORKERS": "5",
        "TAU_DIST_BACKEND": "nccl",
        "TAU_RAY_TRAIN_CONFIG_JSON": '{"failure_config": {"max_failures": 1}}',
    }
    torch, scaling, failure = w.ray_train_config(ctx, env)
    assert torch == {"backend": "nccl"}
    assert scaling["num_workers"] == 5
    assert failure == {"max_failures": 1}


# ----------------------------------------------------------------------------- the shim

MANIFEST = {"name": "demo-ft", "compute": {"gpus": 1}, "runtime": {"pip": ["torch"]}}


def test_shim_handles_refuse_to_run_or_submit(w) -> None:
    shim = w.make_shim(MANIFEST)

    @shim.train(name="demo-ft", gpus=1)
    def finetune(ctx: Any) -> str:
        return "trained"

    @shim.eval(name="demo-eval", after="demo-ft")
    def score(ctx: Any) -> str:
        return "scored"

    assert finetune._tau_train_handle and score._tau_eval_handle
    assert finetune.name == "demo-ft" and finetune.__name__ == "finetune"
    assert finetune.fn(None) == "trained"  # what the wrapper calls
    with pytest.raises(RuntimeError, match=r"^tau-py: refusing to call the train function"):
        finetune()
    with pytest.raises(RuntimeError, match=r"^tau-py: refusing to call the eval function score"):
        score()
    for handle in (finetune, score):
        with pytest.raises(RuntimeError, match=r"^tau-py: refusing to \.submit\(\)"):
            handle.submit(dry_run="client")
    endpoint = shim.serve(name="api", profile="research-serve", from_finetune=finetune)
    assert endpoint._tau_serve_handle
    with pytest.raises(RuntimeError, match=r"^tau-py: refusing to deploy"):
        endpoint.deploy()
    with pytest.raises(RuntimeError, match=r"^tau-py: refusing to \.submit\(\)"):
        endpoint.submit()


def test_shim_decorators_take_keywords_only(w) -> None:
    with pytest.raises(TypeError, match=r"^tau\.train: pass parameters as keyword arguments$"):
        w.make_shim(MANIFEST).train("demo-ft")


def test_shim_config_answers_a_copy_of_the_manifest(w) -> None:
    shim = w.make_shim(MANIFEST)
    got = shim.config("project.yaml", overrides={"x": 1})
    assert got == MANIFEST
    got["compute"]["gpus"] = 99
    assert shim.load_config("other.toml") == MANIFEST


def test_shim_secret_and_mount_helpers_describe_without_reading(w, monkeypatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    shim = w.make_shim(MANIFEST)
    ref = shim.secret("shared", "api-key")
    assert (type(ref), ref.name, ref.key) == (shim.SecretRef, "shared", "api-key")
    source = shim.secret_from_env("hf-token", env="HF_TOKEN")
    assert (source.key, source.env, source.path) == ("hf-token", "HF_TOKEN", None)
    assert shim.secret_from_file("t", path="token.txt").path == "token.txt"
    assert shim.pvc_mount("cache", pvc="model-cache", mount_path="/models", read_only=True) == {
        "name": "cache",
        "pvc": "model-cache",
        "mountPath": "/models",
        "readOnly": True,
    }


def test_entrypoint_mode_calls_the_staged_function(w, tmp_path: Path, monkeypatch) -> None:
    script = tmp_path / "tau_entrypoint_train.py"
    script.write_text("def main(ctx, a, *, b):\n    return (ctx.name, a, b)\n")
    manifest = {
        "name": "ep",
        "entrypoint": {
            "script": str(script),
            "function": "main",
            "args": [1],
            "kwargs": {"b": 2},
            "pass_ctx": True,
        },
    }
    handle = w.make_shim(manifest).train(name="ep", entrypoint="train.py:main")
    assert handle._tau_train_handle
    assert handle.fn(ctx_for(w, manifest)) == ("ep", 1, 2)
    # On a Ray Train worker /script is absent; the staged copy is in the working directory.
    manifest["entrypoint"]["script"] = "/script/tau_entrypoint_train.py"
    monkeypatch.chdir(tmp_path)
    assert handle.fn(ctx_for(w, manifest)) == ("ep", 1, 2)


def test_install_shim_registers_tau_once(w, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "tau")
    first = w.install_shim(MANIFEST)
    assert sys.modules["tau"] is first and first._tau_cluster_shim
    assert w.install_shim({"name": "other"}) is first


# ----------------------------------------------------------------------------- handles


@pytest.mark.parametrize(
    ("manifest", "kind"),
    [
        ({"eval": {"cpu_workers": 4}}, "eval"),
        ({"eval": {}}, "train"),
        ({"eval": {"cpu_workers": 0}}, "train"),
        ({}, "train"),
    ],
)
def test_workload_kind_follows_eval_cpu_workers(w, manifest: dict, kind: str) -> None:
    assert w.workload_kind(manifest) == kind


def module_with(**attributes: Any) -> types.ModuleType:
    module = types.ModuleType("tau_user_module")
    module.__dict__.update(attributes)
    return module


def test_find_handle_picks_the_kind_and_counts_aliases_once(w) -> None:
    shim = w.make_shim(MANIFEST)
    train = shim.train(name="t")(lambda ctx: None)
    evaluate = shim.eval(name="e")(lambda ctx: None)
    module = module_with(job=train, alias=train, score=evaluate, tau=shim)
    assert w.find_handle(module, "train", "m.py") == ("alias", train)
    assert w.find_handle(module, "eval", "m.py") == ("score", evaluate)


def test_find_handle_refuses_none_and_several(w) -> None:
    shim = w.make_shim(MANIFEST)
    with pytest.raises(w.WrapperError, match=r"^no @tau.eval-decorated function found in m.py$"):
        w.find_handle(module_with(tau=shim), "eval", "m.py")
    two = module_with(a=shim.train(name="a")(print), b=shim.train(name="b")(print))
    with pytest.raises(
        w.WrapperError, match=r"multiple @tau.train-decorated functions found \(a, b\); only one"
    ):
        w.find_handle(two, "train", "m.py")


def test_a_user_module_named_tau_is_refused(w, tmp_path: Path) -> None:
    module = tmp_path / "tau.py"
    module.write_text("raise SystemExit('must not run')\n")
    with pytest.raises(w.WrapperError, match="a module named tau would shadow the tau shim"):
        w.load_user_module(module)
    with pytest.raises(w.WrapperError, match="does not exist"):
        w.load_user_module(tmp_path / "tau_user_module.py")


def test_a_staged_script_named_tau_cannot_join_the_ray_working_dir(w, tmp_path: Path) -> None:
    scripts = tmp_path / "script"
    scripts.mkdir()
    (scripts / "tau_user_module.py").write_text("")
    (scripts / "tau").mkdir()
    with pytest.raises(w.WrapperError, match="the staged script tau would shadow the tau shim"):
        w.ray_working_dir(scripts, MANIFEST)


# ----------------------------------------------------------------------------- Ctx


def test_ctx_defaults_are_the_pod_mounts(w) -> None:
    ctx = w.build_ctx({"name": "ft", "compute": {"gpus": 2}}, "/manifest/tau.yaml", 3, {})
    assert (ctx.name, ctx.gpus, ctx.workers, ctx.smoke_pairs) == ("ft", 2, 1, 3)
    assert ctx.manifest_path == Path("/manifest/tau.yaml")
    assert ctx.data_dir == Path("/data") and ctx.hot_dir == Path("/mnt")
    assert ctx.datasets_dir == Path("/mnt/datasets")
    assert ctx.checkpoints_dir == Path("/mnt/checkpoints")
    assert ctx.durable_datasets_dir == Path("/data/datasets")
    assert ctx.durable_checkpoints_dir == Path("/data/checkpoints")
    assert ctx.upstream_checkpoint is None and ctx.resume_from is None
    assert (ctx.storage_hot_status, ctx.storage_hot_reason) == ("hot", "")
    assert ctx.storage_hot_write_mbps is None
    assert ctx.is_remote is True


def test_ctx_follows_the_environment_and_survives_the_trip_to_workers(w) -> None:
    env = {
        "TAU_DATA_DIR": "/pvc",
        "TAU_CHECKPOINTS_DIR": "/fast/ckpt",
        "TAU_UPSTREAM_CHECKPOINT": "/data/checkpoints/finetunes/ft/artifacts/last.safetensors",
        "TAU_RESUME_FROM": "/data/resume",
        "TAU_STORAGE_HOT_STATUS": "degraded",
        "TAU_STORAGE_HOT_REASON": "slow disk",
        "TAU_STORAGE_HOT_WRITE_MBPS": "412.5",
    }
    ctx = w.build_ctx({"name": "ft", "compute": {"workers": 2}}, "/m.yaml", 0, env)
    assert ctx.data_dir == Path("/pvc") and ctx.checkpoints_dir == Path("/fast/ckpt")
    assert ctx.upstream_checkpoint == Path(env["TAU_UPSTREAM_CHECKPOINT"])
    assert ctx.resume_from == Path("/data/resume") and ctx.workers == 2
    assert (ctx.storage_hot_status, ctx.storage_hot_write_mbps) == ("degraded", 412.5)
    payload = w.ctx_payload(ctx)
    assert json.loads(json.dumps(payload)) == payload
    again = w.ctx_from_payload(payload)
    assert vars(again) == vars(ctx)
    assert (
        w.build_ctx({}, "", 0, {"TAU_STORAGE_HOT_WRITE_MBPS": "fast"}).storage_hot_write_mbps
        is None
    )


# ----------------------------------------------------------------------------- local runs

FAKE_RAY = {
    "ray/__init__.py": """
        import json, os
        _initialized = False
        runtime_env = None

        def is_initialized():
            return _initialized

        def init(address=None, runtime_env=None):
            global _initialized
            _initialized = True
            globals()["runtime_env"] = runtime_env
            with open(os.environ["FAKE_RAY_RECORD"] + ".init", "w") as f:
                json.dump({"address": address, "runtime_env": runtime_env}, f)
    """,
    "ray/train/__init__.py": """
        class _Recorded:
            def __init__(self, **kwargs):
                self.kwargs = kwargs

        class ScalingConfig(_Recorded): pass
        class RunConfig(_Recorded): pass
        class FailureConfig(_Recorded): pass
    """,
    "ray/train/torch.py": """
        import json, os, sys
        from ray.train import _Recorded

        class TorchConfig(_Recorded): pass

        class TorchTrainer:
            def __init__(self, loop, *, train_loop_config, torch_config, scaling_config,
                         run_config):
                self.loop, self.config = loop, train_loop_config
                failure = run_config.kwargs.get("failure_config")
                self.record = {
                    "torch": torch_config.kwargs,
                    "scaling": scaling_config.kwargs,
                    "failure": failure.kwargs if failure else None,
                }

            def fit(self):
                import ray
                with open(os.environ["FAKE_RAY_RECORD"], "w") as f:
                    json.dump(self.record, f)
                # A worker is another process, started in the job's working directory: nothing
                # of the driver's imports is there, and neither is /script.
                sys.modules.pop("tau", None)
                sys.modules.pop("tau_user_module", None)
                sys.modules.pop("helpers", None)
                working_dir = ray.runtime_env["working_dir"]
                os.chdir(working_dir)
                sys.path.insert(0, working_dir)
                return self.loop(json.loads(json.dumps(self.config)))
    """,
}

USER_MODULE = """
    import json, os
    import tau
    import helpers  # an extra script beside the module

    @tau.train(name="demo-ft", gpus=2, workers=2, runtime_pip=["torch"])
    def finetune(ctx):
        out = {k: str(v) for k, v in vars(ctx).items() if k != "manifest"}
        out["shim"] = getattr(tau, "_tau_cluster_shim", False)
        out["helper"] = helpers.VALUE
        out["config_name"] = tau.config()["name"]
        out["module_file"] = __file__
        try:
            finetune()
        except RuntimeError as exc:
            out["refusal"] = str(exc)
        with open(os.environ["USER_OUT"], "w") as f:
            json.dump(out, f)

    @tau.eval(name="demo-eval", after="demo-ft", cpu_workers=2)
    def score(ctx):
        with open(os.environ["USER_OUT"], "w") as f:
            json.dump({"kind": "eval", "upstream": str(ctx.upstream_checkpoint)}, f)
"""


def write_files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def run_wrapper(
    tmp_path: Path,
    manifest: dict[str, Any],
    env: dict[str, str],
    user_module: str = USER_MODULE,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Lay out /script and /manifest under tmp_path and run the wrapper as the pod would."""
    scripts, fake = tmp_path / "script", tmp_path / "fake"
    scripts.mkdir(exist_ok=True)
    (scripts / "train.py").write_bytes(wrapper.source())
    write_files(scripts, {"tau_user_module.py": user_module, "helpers.py": "VALUE = 7\n"})
    write_files(fake, FAKE_RAY)
    manifest_file = tmp_path / "manifest" / "tau.yaml"
    manifest_file.parent.mkdir(exist_ok=True)
    manifest_file.write_text(yaml.safe_dump(manifest))
    out = tmp_path / "user-out.json"
    child_env = {
        k: v for k, v in os.environ.items() if not k.startswith("TAU_") and k != "PYTHONPATH"
    }
    child_env.update(
        {
            "PYTHONPATH": str(fake),
            "TAU_SCRIPT_DIR": str(scripts),
            "FAKE_RAY_RECORD": str(tmp_path / "ray-record.json"),
            "USER_OUT": str(out),
            "TMPDIR": str(tmp_path),  # the eval's Ray working directory lands here
            **env,
        }
    )
    argv = [sys.executable, str(scripts / "train.py"), "--manifest", str(manifest_file)]
    result = subprocess.run(
        [*argv, "--smoke-pairs", "4"],
        capture_output=True,
        text=True,
        env=child_env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    return result, out


#: A Ray working directory: the staged scripts, the wrapper's copy and the shim package.
WORKING_DIR = ["_tau_py_wrapper.py", "helpers.py", "tau", "tau_user_module.py", "train.py"]
TRAIN_MANIFEST = {"name": "demo-ft", "compute": {"gpus": 2, "workers": 2}, "eval": {}}


def test_a_train_runs_under_ray_train_with_the_merged_config(tmp_path: Path) -> None:
    env = {
        "TAU_NUM_WORKERS": "4",
        "TAU_DIST_BACKEND": "nccl",
        "TAU_DATA_DIR": str(tmp_path / "data"),
        "TAU_RAY_TRAIN_CONFIG_JSON": json.dumps(
            {"failure_config": {"max_failures": 3}, "torch_config": {"timeout_s": 1800}}
        ),
    }
    result, out = run_wrapper(tmp_path, TRAIN_MANIFEST, env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        "tau-py wrapper: invoking finetune (kind=train, workers=2, gpus=2, smoke_pairs=4)"
    )
    assert json.loads((tmp_path / "ray-record.json").read_text()) == {
        "torch": {"backend": "nccl", "timeout_s": 1800},
        "scaling": {
            "num_workers": 4,
            "use_gpu": True,
            "resources_per_worker": {"GPU": 1},
            "placement_strategy": "SPREAD",
        },
        "failure": {"max_failures": 3},
    }
    init = json.loads((tmp_path / "ray-record.json.init").read_text())
    assert init["address"] == "auto"
    working_dir = Path(init["runtime_env"]["working_dir"])
    assert sorted(p.name for p in working_dir.iterdir()) == WORKING_DIR
    seen = json.loads(out.read_text())
    # The worker imported the module from Ray's working directory, not from /script.
    assert seen["module_file"] == str(working_dir / "tau_user_module.py")
    assert seen["shim"] is True and seen["helper"] == 7 and seen["config_name"] == "demo-ft"
    assert (seen["name"], seen["gpus"], seen["workers"], seen["smoke_pairs"]) == (
        "demo-ft",
        "2",
        "2",
        "4",
    )
    assert seen["data_dir"] == str(tmp_path / "data") and seen["hot_dir"] == "/mnt"
    assert seen["is_remote"] == "True" and seen["upstream_checkpoint"] == "None"
    assert seen["refusal"].startswith("tau-py: refusing to call the train function finetune")


def test_a_job_train_runs_in_process(tmp_path: Path) -> None:
    result, out = run_wrapper(tmp_path, TRAIN_MANIFEST, {})
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "ray-record.json").exists()  # no Ray Train without TAU_NUM_WORKERS
    assert json.loads(out.read_text())["smoke_pairs"] == "4"


def test_an_eval_runs_on_the_head_with_an_importable_shim_for_actors(tmp_path: Path) -> None:
    upstream = "/data/checkpoints/finetunes/demo-ft/artifacts/last.safetensors"
    manifest = {"name": "demo-eval", "compute": {"gpus": 1}, "eval": {"cpu_workers": 2}}
    result, out = run_wrapper(
        tmp_path, manifest, {"TAU_NUM_WORKERS": "1", "TAU_UPSTREAM_CHECKPOINT": upstream}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"tau-py wrapper: invoking score (kind=eval, gpus=1, cpu_workers=2, upstream={upstream})"
    )
    assert json.loads(out.read_text()) == {"kind": "eval", "upstream": upstream}
    assert not (tmp_path / "ray-record.json").exists()
    init = json.loads((tmp_path / "ray-record.json.init").read_text())
    working_dir = Path(init["runtime_env"]["working_dir"])
    assert sorted(p.name for p in working_dir.iterdir()) == WORKING_DIR
    # An actor process: only the working directory on its path.
    actor = subprocess.run(
        [
            sys.executable,
            "-c",
            "import tau, tau_user_module as m\n"
            "print(tau._tau_cluster_shim, tau.config()['name'], m.score._tau_eval_handle)\n"
            "m.score()",
        ],
        capture_output=True,
        text=True,
        cwd=working_dir,
        env={"PYTHONPATH": str(working_dir), "PATH": ""},
        timeout=60,
        check=False,
    )
    assert actor.stdout == "True demo-eval True\n"
    assert "tau-py: refusing to call the eval function score" in actor.stderr


def test_a_wrapper_error_is_one_line_and_exit_1(tmp_path: Path) -> None:
    only_eval = """
        import tau

        @tau.eval(name="e")
        def score(ctx):
            pass
    """
    result, _ = run_wrapper(tmp_path, TRAIN_MANIFEST, {}, user_module=only_eval)
    assert result.returncode == 1
    assert result.stderr == (
        "tau-py wrapper: no @tau.train-decorated function found in "
        f"{tmp_path / 'script' / 'tau_user_module.py'}\n"
    )
