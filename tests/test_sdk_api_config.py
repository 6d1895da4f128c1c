"""Configs (tau.config / tau.load_config), secrets (locators and reading their values), mounts,
the shared override flags (tau.sdk.overrides), and the lazy `tau.<name>` attributes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import tau
from tau.sdk import PUBLIC
from tau.sdk.errors import SdkError
from tau.sdk.overrides import Overrides, parse_node_selector, selector_pairs
from tau.sdk.secrets import read_value

ROOT = Path(__file__).resolve().parents[1]


# --- config ---------------------------------------------------------------------------------


def test_load_config_merges_dicts_yaml_and_toml_left_to_right(tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("name: base\ncompute:\n  gpus: 1\n  workers: 2\n")
    (tmp_path / "over.toml").write_text('[compute]\ngpus = 4\n[policy]\nqueue = "q"\n')
    merged = tau.load_config(
        [tmp_path / "base.yaml", str(tmp_path / "over.toml"), {"policy": {"team": "t"}}]
    )
    assert merged == {
        "name": "base",
        "compute": {"gpus": 4, "workers": 2},
        "policy": {"queue": "q", "team": "t"},
    }
    assert tau.load_config(None) == {}
    (tmp_path / "empty.yml").write_text("")
    assert tau.load_config(tmp_path / "empty.yml") == {}


def test_load_config_copies_so_the_caller_cannot_be_changed_behind_its_back() -> None:
    source = {"compute": {"gpus": 1}}
    loaded = tau.load_config(source)
    loaded["compute"]["gpus"] = 9
    assert source == {"compute": {"gpus": 1}}


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("c.json", "{}", "must be .yaml, .yml, or .toml"),
        ("c.yaml", "- a\n- b\n", "must contain a mapping"),
        ("c.yaml", "a: [\n", "cannot read tau config"),
        ("c.toml", "a = \n", "cannot read tau config"),
    ],
)
def test_bad_config_files_are_one_line(tmp_path: Path, name: str, text: str, words: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(SdkError, match=words):
        tau.load_config(tmp_path / name)


def test_a_missing_config_file_and_an_unsupported_source_are_refused(tmp_path: Path) -> None:
    with pytest.raises(SdkError, match="tau config not found"):
        tau.load_config(tmp_path / "absent.yaml")
    with pytest.raises(SdkError, match="unsupported tau config source: int"):
        tau.load_config(3)  # type: ignore[arg-type]


def test_config_lays_env_then_overrides_over_the_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "c.yaml").write_text("compute:\n  gpus: 1\npolicy:\n  queue: a\n")
    monkeypatch.setenv("MY_QUEUE", "from-env")
    monkeypatch.delenv("UNSET_VAR", raising=False)
    merged = tau.config(
        tmp_path / "c.yaml",
        {"name": "n"},
        env={"policy.queue": "MY_QUEUE", "policy.team": "UNSET_VAR"},
        overrides={"compute": {"gpus": 8}},
    )
    assert merged == {"compute": {"gpus": 8}, "policy": {"queue": "from-env"}, "name": "n"}


def test_a_handle_reads_its_config_from_a_file(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("name: from-file\ncompute:\n  gpus: 3\n")

    def fn(ctx: object) -> object:
        return ctx

    handle = tau.train(config=tmp_path / "job.yaml")(fn)
    assert (handle.name, handle.gpus, handle.manifest()["compute"]) == ("from-file", 3, {"gpus": 3})


# --- secrets and mounts ---------------------------------------------------------------------


def test_secret_constructors() -> None:
    assert tau.secret_ref("s", "k") == tau.secret("s", "k") == tau.SecretRef("s", "k")
    assert tau.secret_from_env("k", env="V") == tau.SecretSource(key="k", env="V")
    assert tau.secret_from_file("k", path="p") == tau.SecretSource(key="k", path="p")
    with pytest.raises(SdkError, match="non-empty secret name and key"):
        tau.secret_ref("", "k")
    with pytest.raises(SdkError, match="exactly one of env or path"):
        tau.SecretSource(key="k", env="V", path="p")
    with pytest.raises(SdkError, match="non-empty key"):
        tau.secret_from_env("")


def test_read_value_reads_the_env_and_files_relative_to_the_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAU_TEST_TOKEN", "environment-secret")
    (tmp_path / "token.txt").write_text("file-secret\n\n")
    env = tau.secret_from_env("env-token", env="TAU_TEST_TOKEN")
    file = tau.secret_from_file("file-token", path="token.txt")
    assert read_value(env, "FROM_ENV", base=tmp_path) == "environment-secret"
    assert read_value(file, "FROM_FILE", base=tmp_path) == "file-secret"
    absolute = tau.secret_from_file("k", path=str(tmp_path / "token.txt"))
    assert read_value(absolute, "X", base=Path("/nonexistent")) == "file-secret"


def test_read_value_names_the_missing_source_never_a_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NOT_SET", raising=False)
    with pytest.raises(SdkError) as caught:
        read_value(tau.secret_from_env("token", env="NOT_SET"), "TOKEN", base=tmp_path)
    assert caught.value.message == "tau-py: secret env source 'NOT_SET' for TOKEN is not set"
    with pytest.raises(SdkError) as caught:
        read_value(tau.secret_from_file("k", path="gone.txt"), "PW", base=tmp_path)
    assert caught.value.message == (
        f"tau-py: secret file source {tmp_path / 'gone.txt'} for PW does not exist"
    )
    (tmp_path / "folder").mkdir()
    with pytest.raises(SdkError, match="cannot read secret file source"):
        read_value(tau.secret_from_file("k", path="folder"), "PW", base=tmp_path)


def test_pvc_mount() -> None:
    assert tau.pvc_mount("m", pvc="p", mount_path="/models", read_only=True) == {
        "name": "m",
        "pvc": "p",
        "mountPath": "/models",
        "readOnly": True,
    }
    with pytest.raises(SdkError, match="absolute mount_path"):
        tau.pvc_mount("m", pvc="p", mount_path="models")


# --- overrides ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (Overrides(cpu_request=0), "tau-py: cpu_request must be >= 1 (got 0)"),
        (Overrides(worker_cpu_limit=-2), "tau-py: worker_cpu_limit must be >= 1 (got -2)"),
        (
            Overrides(memory_limit=""),
            "tau-py: memory_limit must not be empty or have surrounding whitespace",
        ),
        (
            Overrides(queue=" q"),
            "tau-py: queue must not be empty or have surrounding whitespace",
        ),
        (
            Overrides(node_selector=(("k", " "),)),
            "tau-py: node_selector entries must be key=value with non-empty key and value",
        ),
    ],
)
def test_override_check_uses_the_reference_words(overrides: Overrides, message: str) -> None:
    with pytest.raises(SdkError) as caught:
        overrides.check()
    assert caught.value.message == message


def test_overrides_compute_keys_and_node_selectors() -> None:
    chosen = Overrides(cpu_request=4, memory_request="8Gi", worker_memory_limit="96Gi")
    chosen.check()
    assert chosen.compute() == {"cpus": 4, "memory": "8Gi", "worker_memory_limit": "96Gi"}
    assert parse_node_selector([" pool = gpu ", "zone=a", "pool=cpu"]) == (
        ("pool", "cpu"),
        ("zone", "a"),
    )
    assert selector_pairs({"a": "1"}) == (("a", "1"),)
    assert selector_pairs("a=1") == (("a", "1"),)
    assert selector_pairs(None) == ()
    for bad in (["novalue"], ["=v"], ["k="]):
        with pytest.raises(SdkError, match="key=value"):
            parse_node_selector(bad)


# --- the lazy public names ------------------------------------------------------------------


def test_every_public_name_resolves_on_tau_and_the_two_tables_agree() -> None:
    assert set(PUBLIC) == tau.SDK_NAMES
    for name in tau.SDK_NAMES:
        assert getattr(tau, name) is not None, name
        assert name in dir(tau)
    with pytest.raises(AttributeError, match="no attribute '_tau_train_handle'"):
        tau._tau_train_handle  # noqa: B018 - the lookup is the test


def test_each_tau_name_has_one_meaning_the_sdk_function() -> None:
    # A fresh interpreter: the subpackages load first, then `from tau import ...` reads attributes.
    probe = (
        "import types, json, importlib\n"
        "import tau, tau.intent.load, tau.serving.apply\n"
        "from tau import config, serve\n"
        "missing = []\n"
        "for name in ('tau.config', 'tau.serve'):\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ModuleNotFoundError:\n"
        "        missing.append(name)\n"
        "print(json.dumps([config.__module__, serve.__module__, tau.config is config,"
        " tau.serve is serve, tau.__class__ is types.ModuleType, missing]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [
        "tau.sdk.config",
        "tau.sdk.serve",
        True,
        True,
        True,
        ["tau.config", "tau.serve"],
    ]


def test_no_module_of_tau_is_named_like_an_sdk_name() -> None:
    top = {p.stem for p in (ROOT / "src" / "tau").iterdir() if p.suffix == ".py" or p.is_dir()}
    assert top & tau.SDK_NAMES == set()
