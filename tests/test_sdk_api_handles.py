"""The decorators a researcher writes (`@tau.train`, `@tau.eval`, `tau.serve`) and their handles.

Manifests (contract §3.1/§3.2, case 43), decoration-time refusals (cases 49–52 and the literal
secret guard), local calls with a cwd-rooted Ctx, entrypoint mode, and `ServeHandle.deploy()`
through our own `tau serve deploy`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

import tau
from tau.sdk.ctx import Ctx
from tau.sdk.errors import SdkError
from tau.sdk.workloads import EvalHandle, TrainHandle, looks_secret


def _ctx(ctx: Ctx, *args: Any, **kwargs: Any) -> tuple[Ctx, tuple[Any, ...], dict[str, Any]]:
    return ctx, args, kwargs


# --- manifests ------------------------------------------------------------------------------


def test_the_smallest_train_manifest_has_the_reference_keys_in_order() -> None:
    handle = tau.train(name="x", runtime_pip=["p"])(_ctx)
    manifest = handle.manifest()
    assert list(manifest) == ["schema_version", "name", "compute", "eval", "runtime", "artifacts"]
    assert manifest == {
        "schema_version": 1,
        "name": "x",
        "compute": {"gpus": 1},
        "eval": {},
        "runtime": {"pip": ["p"]},
        "artifacts": {"checkpoint": "last.safetensors"},
    }
    text = yaml.safe_dump(manifest, sort_keys=False)
    assert text.startswith("schema_version: 1\nname: x\ncompute:\n  gpus: 1\neval: {}\n")


def test_train_manifest_lays_every_argument_over_the_config() -> None:
    handle = tau.train(
        config={"name": "from-config", "compute": {"gpus": 4, "workers": 2}, "policy": {"x": 1}},
        gpus=2,
        cpu_request=8,
        memory_request="64Gi",
        worker_cpu_limit=16,
        worker_memory_limit="96Gi",
        data_pvc="data",
        runtime_pip=["torch==2.4.0"],
        env=["B=2", "A=1"],
        mounts=[tau.pvc_mount("cache", pvc="cache-pvc", mount_path="/cache")],
        model="my-model",
        base_model="llama",
        task="sft",
        tags={"team": "nlp"},
        primary_metric="loss",
        metric_direction="lower",
        checkpoint_artifact="final/model.safetensors",
        extra_manifest={"runtime": {"image": "img:1"}, "policy": {"y": 2}},
    )(_ctx)
    m = handle.manifest()
    assert m["name"] == "from-config"
    assert m["compute"] == {
        "gpus": 2,
        "workers": 2,
        "cpus": 8,
        "memory": "64Gi",
        "worker_cpu_limit": 16,
        "worker_memory_limit": "96Gi",
    }
    assert m["policy"] == {"x": 1, "y": 2}
    assert m["runtime"] == {
        "image": "img:1",
        "pip": ["torch==2.4.0"],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
    }
    assert m["storage"] == {
        "data_pvc": "data",
        "mounts": [{"name": "cache", "pvc": "cache-pvc", "mountPath": "/cache", "readOnly": False}],
    }
    assert m["model"] == {
        "name": "my-model",
        "base": "llama",
        "task": "sft",
        "tags": {"team": "nlp"},
        "primary_metric": "loss",
        "metric_direction": "lower",
    }
    assert m["artifacts"] == {"checkpoint": "final/model.safetensors"}


def test_secret_env_values_appear_as_locators_in_the_manifest() -> None:
    handle = tau.train(
        name="s",
        env={
            "HF_TOKEN": tau.secret_from_env("hf-token", env="MY_HF"),
            "DB_PASSWORD": tau.secret_from_file("db", path="pw.txt"),
            "API_KEY": tau.secret_ref("shared", "api-key"),
            "PLAIN": "1",
        },
    )(_ctx)
    env = {e["name"]: e for e in handle.manifest()["runtime"]["env"]}
    assert env["HF_TOKEN"]["valueFrom"] == {"tauSecretSource": {"key": "hf-token", "env": "MY_HF"}}
    assert env["DB_PASSWORD"]["valueFrom"] == {"tauSecretSource": {"key": "db", "path": "pw.txt"}}
    assert env["API_KEY"]["valueFrom"] == {"secretKeyRef": {"name": "shared", "key": "api-key"}}
    assert env["PLAIN"] == {"name": "PLAIN", "value": "1"}
    assert tau.secret_from_env("k") == tau.SecretSource(key="k", env="k")


def test_eval_manifest_is_the_eval_shape_plus_a_shallow_extra_manifest() -> None:
    handle = tau.eval(
        name="e",
        after="t",
        cpu_workers=3,
        worker_cpu_request=4,
        data_pvc="d",
        extra_manifest={"runtime": {"pip": ["x"]}},
    )(_ctx)
    assert handle.manifest() == {
        "schema_version": 1,
        "name": "e",
        "compute": {"gpus": 1, "worker_cpus": 4},
        "eval": {"cpu_workers": 3, "upstream": "t"},
        "runtime": {"pip": ["x"]},
        "storage": {"data_pvc": "d"},
    }
    assert handle.after == "t"


def test_handles_keep_the_markers_and_the_function_identity() -> None:
    train = tau.train(name="t")(_ctx)
    ev = tau.eval(name="e")(_ctx)
    assert isinstance(train, TrainHandle) and train._tau_train_handle is True
    assert isinstance(ev, EvalHandle) and ev._tau_eval_handle is True
    assert train.__name__ == "_ctx" and train.__wrapped__ is _ctx
    assert train.source_path == Path(__file__).resolve()
    assert "upstream_checkpoint" in str(ev.__signature__)
    endpoint = tau.serve(name="api", profile="p", from_finetune=train)
    assert isinstance(endpoint, tau.ServeHandle) and endpoint._tau_serve_handle is True


# --- decoration-time refusals ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: tau.train(name="x", lane="eval"), 'cannot use lane="eval"; use @tau.eval'),
        (lambda: tau.eval(name="e", cpu_workers=0), "cpu_workers must be >= 1 (got 0)"),
        (lambda: tau.eval(name="e", gpus=0), "@tau.eval gpus must be >= 1 (got 0)"),
        (lambda: tau.train(), "tau-py: @tau.train requires name=... or config['name']"),
        (lambda: tau.train(name="x", workers=0), "tau-py: workers must be >= 1 (got 0)"),
        (
            lambda: tau.train(name="x", extra_manifest={"compute": {"gpus": 9}}),
            "extra_manifest cannot override reserved keys compute",
        ),
        (
            lambda: tau.eval(name="e", extra_manifest={"name": "y", "eval": {}}),
            "extra_manifest cannot override reserved keys eval, name",
        ),
        (lambda: tau.train(name="x", checkpoint_artifact="../a"), "without '.' or '..'"),
        (lambda: tau.train(name="x", checkpoint_artifact="/abs"), "relative pod path"),
        (lambda: tau.train(name="x", cpu_request=0), "tau-py: cpu_request must be >= 1 (got 0)"),
        (
            lambda: tau.train(name="x", memory_request=" 1Gi"),
            "tau-py: memory_request must not be empty or have surrounding whitespace",
        ),
        (lambda: tau.train(name="x", node_selector="pool"), "key=value with non-empty key"),
        (lambda: tau.train(name="x", runtime_pip=[]), "runtime_pip must contain at least one"),
        (lambda: tau.train(name="x", model="Bad_Model"), "lowercase alphanumerics"),
        (lambda: tau.train(name="x", metric_direction="up"), "'lower' or 'higher'"),
        (
            lambda: tau.train(name="x", data_pvc="a", config={"storage": {"data_pvc": "b"}}),
            "data_pvc='a' conflicts with existing storage.data_pvc='b'",
        ),
        (
            lambda: tau.train(
                name="x",
                checkpoint_artifact="a.pt",
                extra_manifest={"artifacts": {"checkpoint": "b.pt"}},
            ),
            "conflicts with extra_manifest['artifacts']['checkpoint']='b.pt'",
        ),
        (lambda: tau.train(name="x", mounts=["/data"]), "use tau.pvc_mount"),
        (lambda: tau.train(name="x", env=["=1"]), "tau env entries must be KEY=VALUE"),
    ],
)
def test_bad_decorator_arguments_are_refused_when_the_function_is_decorated(
    make: Any, words: str
) -> None:
    with pytest.raises(SdkError) as caught:
        make()(_ctx)
    assert words in caught.value.message


def test_eval_reserves_the_upstream_checkpoint_parameter() -> None:
    def fn(ctx: Ctx, upstream_checkpoint: str) -> None: ...

    with pytest.raises(SdkError, match="reserves upstream_checkpoint"):
        tau.eval(name="e")(fn)


@pytest.mark.parametrize(
    "name", ["HF_TOKEN", "db_password", "OPENAI_API_KEY", "SSH_KEY", "MY_SECRET"]
)
def test_a_literal_value_under_a_secret_looking_name_is_refused_without_echoing_it(
    name: str,
) -> None:
    with pytest.raises(SdkError) as caught:
        tau.train(name="leaky", env={name: "hunter2-value"})(_ctx)
    text = caught.value.format()
    assert caught.value.message == (
        f"tau-py: env {name} of 'leaky' holds a literal value; pass it with "
        "tau.secret_from_env(...), tau.secret_from_file(...) or tau.secret_ref(...) so it never "
        "lands in a manifest"
    )
    assert "hunter2" not in text


def test_the_literal_secret_guard_reads_extra_manifest_env_and_serve_env_too() -> None:
    with pytest.raises(SdkError, match="env GITHUB_TOKEN of 'e'"):
        tau.eval(
            name="e", extra_manifest={"runtime": {"env": [{"name": "GITHUB_TOKEN", "value": "x"}]}}
        )(_ctx)
    with pytest.raises(SdkError, match="env API_KEY of 'api'"):
        tau.serve(name="api", profile="p", env={"API_KEY": "x"})


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("GITHUBTOKEN", True),
        ("aws-secret-access-key", True),
        ("APIKEY", True),
        ("KEY", True),
        ("TOKENIZERS_PARALLELISM", False),
        ("MONKEY_MODE", False),
        ("KEYBOARD", False),
        ("MODE", False),
    ],
)
def test_secret_looking_names(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_empty_and_secret_backed_values_under_secret_names_are_fine() -> None:
    handle = tau.train(
        name="ok",
        env={"HF_TOKEN": tau.secret_from_env("hf", env="HF_TOKEN"), "SSH_KEY": ""},
    )(_ctx)
    assert handle.name == "ok"


def test_entrypoint_arguments_without_an_entrypoint_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SdkError, match="entrypoint_\\* and extra_scripts require entrypoint"):
        tau.train(name="x", entrypoint_args=[1])


# --- local calls ----------------------------------------------------------------------------


def test_calling_a_train_handle_runs_it_here_with_a_cwd_rooted_ctx(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    handle = tau.train(name="local", gpus=2, workers=3, smoke_pairs=5, runtime_pip=["p"])(_ctx)
    ctx, args, kwargs = handle(1, key="v")
    assert (args, kwargs) == ((1,), {"key": "v"})
    assert (ctx.name, ctx.gpus, ctx.workers, ctx.smoke_pairs) == ("local", 2, 3, 5)
    assert ctx.is_remote is False
    assert ctx.data_dir == tmp_path and ctx.hot_dir == tmp_path
    assert ctx.checkpoints_dir == tmp_path / "checkpoints"
    assert ctx.datasets_dir == tmp_path / "datasets"
    assert ctx.durable_checkpoints_dir == tmp_path / "checkpoints"
    assert ctx.upstream_checkpoint is None and ctx.storage_hot_status == "local"
    assert ctx.manifest == handle.manifest()


def test_calling_an_eval_handle_takes_the_upstream_checkpoint(tmp_path: Path) -> None:
    handle = tau.eval(name="e", cpu_workers=2)(_ctx)
    ctx, _, kwargs = handle(upstream_checkpoint=tmp_path / "m.pt", extra=1)
    assert ctx.upstream_checkpoint == tmp_path / "m.pt"
    assert (ctx.workers, ctx.is_remote, kwargs) == (1, False, {"extra": 1})
    assert handle()[0].upstream_checkpoint is None


def test_entrypoint_mode_returns_the_handle_and_calls_the_script_locally(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("def run(ctx, a, b=0):\n    return (ctx.name, a, b)\n")
    helper = tmp_path / "helper.py"
    helper.write_text("X = 1\n")
    handle = tau.train(
        name="ep",
        entrypoint=f"{script}:run",
        entrypoint_args=[1],
        entrypoint_kwargs={"b": 2},
        entrypoint_pass_ctx=True,
        extra_scripts=[helper],
        runtime_pip=["p"],
    )
    assert isinstance(handle, TrainHandle)
    assert handle() == ("ep", 1, 2)
    assert handle.manifest()["entrypoint"] == {
        "script": "/script/tau_entrypoint_job.py",
        "function": "run",
        "args": [1],
        "kwargs": {"b": 2},
        "pass_ctx": True,
    }
    assert handle.staged_scripts == (
        (script.resolve(), "tau_entrypoint_job.py"),
        (helper.resolve(), "helper.py"),
    )
    assert b"tau.call_staged_function" in handle.source_bytes()
    with pytest.raises(SdkError, match="do not use it as a decorator"):
        handle(_ctx)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"entrypoint": "missing.py"}, "relative entrypoint missing.py was not found"),
        ({"entrypoint": "x.py:not-ident"}, "function must be a Python identifier"),
        ({"entrypoint": "/pvc/x.py", "entrypoint_args": [object()]}, "JSON-serializable"),
        ({"entrypoint": "/pvc/x.py", "extra_scripts": ["/nope/s.py"]}, "extra script not found"),
    ],
)
def test_bad_entrypoints_are_refused(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SdkError, match=words):
        tau.train(name="ep", **kwargs)


def test_an_absolute_entrypoint_missing_locally_is_a_path_in_the_pod() -> None:
    handle = tau.train(name="ep", entrypoint="/data/code/train.py")
    assert handle.manifest()["entrypoint"]["script"] == "/data/code/train.py"
    assert handle.staged_scripts == ()


def test_extra_scripts_may_not_take_the_pods_own_names(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("def main():\n    return 1\n")
    with pytest.raises(SdkError, match=r"'train\.py' is reserved or invalid"):
        tau.train(name="ep", entrypoint="/pvc/x.py", extra_scripts=[script])


# --- submit goes through tau.sdk.submission -------------------------------------------------


def test_submit_hands_the_handle_to_submission(monkeypatch: pytest.MonkeyPatch) -> None:
    from tau.sdk import submission

    seen: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(
        submission, "submit_handle", lambda handle, **kw: seen.append((handle, kw)) or 0
    )
    handle = tau.eval(name="e")(_ctx)
    assert handle.submit(dry_run="client", upstream_checkpoint="/data/m.pt") == 0
    assert seen == [(handle, {"dry_run": "client", "upstream_checkpoint": "/data/m.pt"})]


# --- serve ----------------------------------------------------------------------------------


def test_serve_deploy_argv_maps_every_setting_onto_tau_serve_deploy() -> None:
    train = tau.train(name="ft")(_ctx)
    endpoint = tau.serve(
        name="api",
        profile="research-serve",
        from_finetune=train,
        checkpoint_pvc="ckpts",
        image="img:1",
        replicas=2,
        import_path="serve:app",
        port=9000,
        volumes=["cache=pvc:cache"],
        mounts=["cache:/cache:ro"],
        env={"MODE": "serve", "HF_TOKEN": tau.secret_ref("hf", "token")},
        runtime_pip=["vllm==0.6.0"],
        args=["--a", "b c"],
        namespace="serving",
    )
    assert endpoint.deploy_argv(dry_run="client", kube_context="kind") == [
        "serve", "deploy", "api", "--kind", "rayservice", "--profile", "research-serve",
        "--from-finetune", "ft", "--checkpoint-pvc", "ckpts", "--image", "img:1",
        "--replicas", "2", "--import-path", "serve:app", "--port", "9000",
        "--volume", "cache=pvc:cache", "--mount", "cache:/cache:ro",
        "--env", "MODE=serve", "--env-secret", "HF_TOKEN=hf:token",
        "--runtime-pip", "vllm==0.6.0", "--args", "--a 'b c'",
        "-n", "serving", "--dry-run", "client", "--context", "kind",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": ""}, "tau.serve(name=...) is required"),
        ({"profile": ""}, "tau.serve(profile=...) is required"),
        ({"kind": "job"}, "must be one of: rayservice, deployment"),
        ({"replicas": -1}, "replicas=...) must be >= 0"),
        ({"port": 0}, "port=...) must be positive"),
        ({"kind": "deployment", "runtime_pip": ["x"]}, "only supported for kind='rayservice'"),
        ({"from_model": "m", "checkpoint": "c"}, "at most one of from_finetune"),
        ({"from_finetune": 3}, "must be a train handle"),
    ],
)
def test_bad_serve_arguments_are_refused(kwargs: dict[str, Any], words: str) -> None:
    with pytest.raises(SdkError, match=words.replace("(", r"\(").replace(")", r"\)")):
        tau.serve(**{"name": "api", "profile": "p", **kwargs})


def test_serve_refuses_a_secret_source_env() -> None:
    endpoint = tau.serve(name="api", profile="p", env={"T": tau.secret_from_env("t")})
    with pytest.raises(SdkError, match="existing Secrets only"):
        endpoint.deploy_argv()


def test_serve_deploy_runs_our_own_tau_serve_deploy(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAU_DATA_DIR", raising=False)
    endpoint = tau.serve(
        name="api", profile="p", kind="deployment", image="repo/img:1.0", namespace="serving"
    )
    assert endpoint.deploy(dry_run="client") == 0
    docs = [d for d in yaml.safe_load_all(capsys.readouterr().out) if d]
    assert {d["kind"] for d in docs} >= {"Deployment"}
    assert all(d["metadata"]["namespace"] == "serving" for d in docs)


def test_serve_deploy_is_refused_inside_a_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAU_DATA_DIR", "/data")
    with pytest.raises(SdkError, match="refusing to deploy from inside"):
        tau.serve(name="api", profile="p").deploy(dry_run="client")
    assert os.environ["TAU_DATA_DIR"] == "/data"
