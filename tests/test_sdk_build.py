"""`tau python build`'s artifact writer (tau.sdk.build.write), driven with hand-made workloads.

The workloads here are built by hand (not by generate.plan) so each rule of the artifact format
is pinned on its own: layout, index bytes, determinism, file modes, the destination rules and
the all-or-nothing publication. tests/test_sdk_build_golden.py drives the real pipeline.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

import tau
from tau.sdk import build
from tau.sdk.artifact import load_artifact
from tau.sdk.errors import BuildArtifactError
from tau.sdk.generate import SecretLocator, StagedFile, Workload, canonical_yaml
from tau.sdk.secrets import SecretSource

WRAPPER = b"# the cluster wrapper\nprint('wrapped')\n"
MODULE = b"import tau\n\n@tau.train(name='t')\ndef job(ctx):\n    return ctx\n"


def workload(
    kind: str = "train",
    name: str = "train-model",
    *,
    extra: dict[str, bytes] | None = None,
    after: str | None = None,
    upstream: str | None = None,
    secrets: tuple[SecretLocator, ...] = (),
    namespace: str = "ray",
) -> Workload:
    """A generated workload as generate.plan shapes it: relative paths, files sorted by name."""
    extra = extra or {}
    config: dict = {
        "name": name,
        "run": {
            "entrypoint": "tau_py_wrapper.py",
            "workload_kind": "rayjob" if kind == "train" else "rayjob-eval",
        },
        "policy": {"namespace": namespace},
        "runtime": {"pip": ["torch==2.4.0"]},
        "schema_version": 1,
        "workflow": {
            "extra_scripts": ["tau_user_module.py:tau_user_module.py"]
            + [f"{d}:{d}" for d in sorted(extra)]
        },
    }
    if upstream:
        config["workflow"]["upstream_checkpoint"] = upstream
    files = [
        StagedFile("tau.yaml", canonical_yaml(config), "config", None),
        StagedFile("tau_py_wrapper.py", WRAPPER, "entrypoint", "train.py"),
        StagedFile("tau_user_module.py", MODULE, "user-module", "tau_user_module.py"),
    ] + [StagedFile(d, data, "extra-script", d) for d, data in extra.items()]
    return Workload(
        attribute=f"{kind}_job",
        kind=kind,
        name=name,
        namespace=namespace,
        resource_name=f"tau-{name}",
        config=config,
        files=tuple(sorted(files, key=lambda f: f.name)),
        after=after,
        upstream_checkpoint=upstream,
        generated_secret=f"tau-{name}-secrets" if secrets else None,
        secret_sources=secrets,
    )


CHECKPOINT = "/data/checkpoints/finetunes/train-model/artifacts/best/model.safetensors"


def pair() -> list[Workload]:
    return [
        workload("train", "train-model"),
        workload("eval", "eval-model", after="train-model", upstream=CHECKPOINT),
    ]


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(".tau-build"))


# --- layout and determinism (cases 5-10) -------------------------------------------------


def test_two_builds_of_the_same_workloads_are_byte_identical(tmp_path: Path) -> None:
    first = build.write(pair(), tmp_path / "a", force=False, serve=[("endpoint", "model-api")])
    second = build.write(pair(), tmp_path / "b", force=False, serve=[("endpoint", "model-api")])
    assert tree(first) == tree(second)
    assert sorted(tree(first)) == [
        "tau-build.yaml",
        "workloads/eval-eval-model/tau.yaml",
        "workloads/eval-eval-model/tau_py_wrapper.py",
        "workloads/eval-eval-model/tau_user_module.py",
        "workloads/train-train-model/tau.yaml",
        "workloads/train-train-model/tau_py_wrapper.py",
        "workloads/train-train-model/tau_user_module.py",
    ]


def test_no_file_of_the_artifact_names_a_host_path(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    for data in tree(out).values():
        assert str(tmp_path).encode() not in data
        assert b".tau-build-" not in data


def test_staged_files_are_written_byte_for_byte(tmp_path: Path) -> None:
    w = workload(extra={"helpers.py": b"X = 1\n", "data.bin": bytes(range(256))})
    out = build.write([w], tmp_path / "gen", force=False)
    folder = out / "workloads" / "train-train-model"
    for staged in w.files:
        assert (folder / staged.name).read_bytes() == staged.data


def test_the_index_is_exactly_the_reference_format(tmp_path: Path) -> None:
    w = workload(extra={"helpers.py": b"X = 1\n"})
    out = build.write([w], tmp_path / "gen", force=False, serve=[("endpoint", "model-api")])
    data = {f.name: f.data for f in w.files}

    def sha(name: str) -> str:
        return hashlib.sha256(data[name]).hexdigest()

    def size(name: str) -> int:
        return len(data[name])

    folder = "workloads/train-train-model"
    expected = f"""\
generator:
  name: tau-py
  version: {tau.__version__}
kind: tau.python.build
schema_version: 1
separate_serve:
- attribute: endpoint
  name: model-api
  reason: tau.serve maps directly to tau serve deploy and is not a managed workflow
workloads:
- attribute: train_job
  config: {folder}/tau.yaml
  files:
  - path: {folder}/helpers.py
    role: extra-script
    sha256: {sha("helpers.py")}
    size: {size("helpers.py")}
    staged_as: helpers.py
  - path: {folder}/tau.yaml
    role: config
    sha256: {sha("tau.yaml")}
    size: {size("tau.yaml")}
  - path: {folder}/tau_py_wrapper.py
    role: entrypoint
    sha256: {sha("tau_py_wrapper.py")}
    size: {size("tau_py_wrapper.py")}
    staged_as: train.py
  - path: {folder}/tau_user_module.py
    role: user-module
    sha256: {sha("tau_user_module.py")}
    size: {size("tau_user_module.py")}
    staged_as: tau_user_module.py
  kind: train
  name: train-model
  namespace: ray
  resource_name: tau-train-model
"""
    assert (out / "tau-build.yaml").read_text(encoding="utf-8") == expected


def test_load_artifact_reads_back_what_was_written(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    artifact = load_artifact(out)
    assert artifact.root == out.resolve()
    assert artifact.index["kind"] == "tau.python.build"
    assert artifact.index["schema_version"] == 1
    assert artifact.index["generator"] == {"name": "tau-py", "version": tau.__version__}
    assert [(w.kind, w.name) for w in artifact.workloads] == [
        ("train", "train-model"),
        ("eval", "eval-model"),
    ]
    train, ev = artifact.workloads
    assert train.after is None and train.upstream_checkpoint is None
    assert ev.after == "train-model"
    assert ev.upstream_checkpoint == CHECKPOINT
    assert ev.config_path == out.resolve() / "workloads" / "eval-eval-model" / "tau.yaml"
    assert ev.folder == ev.config_path.parent
    assert ev.resource_name == "tau-eval-model"
    assert "separate_serve" not in artifact.index


def test_separate_serve_is_sorted_by_attribute_then_name(tmp_path: Path) -> None:
    serve = [("zeta", "b-api"), ("endpoint", "model-api"), ("alpha", "z-api"), ("alpha", "a-api")]
    out = build.write(pair(), tmp_path / "gen", force=False, serve=serve)
    reason = "tau.serve maps directly to tau serve deploy and is not a managed workflow"
    assert load_artifact(out).index["separate_serve"] == [
        {"attribute": "alpha", "name": "a-api", "reason": reason},
        {"attribute": "alpha", "name": "z-api", "reason": reason},
        {"attribute": "endpoint", "name": "model-api", "reason": reason},
        {"attribute": "zeta", "name": "b-api", "reason": reason},
    ]


def test_secret_sources_are_recorded_as_locators_sorted_by_env_name(tmp_path: Path) -> None:
    secrets = (
        SecretLocator("FROM_FILE", "file-token", SecretSource(key="file-token", path="token.txt")),
        SecretLocator("FROM_ENV", "env-token", SecretSource(key="env-token", env="TAU_TEST_TOKEN")),
    )
    out = build.write([workload(secrets=secrets)], tmp_path / "gen", force=False)
    record = yaml.safe_load((out / "tau-build.yaml").read_text())["workloads"][0]
    assert record["generated_secret"] == "tau-train-model-secrets"
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
    loaded = load_artifact(out).workloads[0]
    assert loaded.generated_secret == "tau-train-model-secrets"
    assert loaded.secret_sources == sorted(secrets, key=lambda s: s.env_name)


def test_records_without_lineage_or_secrets_have_no_such_keys(tmp_path: Path) -> None:
    out = build.write([workload()], tmp_path / "gen", force=False)
    record = yaml.safe_load((out / "tau-build.yaml").read_text())["workloads"][0]
    assert set(record) == {
        "attribute",
        "config",
        "files",
        "kind",
        "name",
        "namespace",
        "resource_name",
    }


def test_files_are_0644_and_folders_0755_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        out = build.write(pair(), tmp_path / "gen", force=False)
    finally:
        os.umask(old)
    for path in [out, *out.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o755 if path.is_dir() else 0o644), path


def test_parent_folders_of_the_output_are_created(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "dist" / "nested" / "gen", force=False)
    assert (out / "tau-build.yaml").is_file()
    assert leftovers(out.parent) == []


def test_the_output_path_is_returned_as_given(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert build.write(pair(), Path("gen"), force=False) == Path("gen")
    assert (tmp_path / "gen" / "tau-build.yaml").is_file()


# --- refused workloads leave nothing behind (cases 19, 20, 36) ------------------------------


@pytest.mark.parametrize("reserved", ["tau_py_wrapper.py", "tau.yaml"])
def test_an_extra_script_may_not_replace_a_generated_file(tmp_path: Path, reserved: str) -> None:
    w = workload()
    clash = StagedFile(reserved, b"print('mine')\n", "extra-script", reserved)
    w = replace(w, files=(*w.files, clash))
    with pytest.raises(BuildArtifactError, match="collides with a generated build file") as err:
        build.write([w], tmp_path / "gen", force=False)
    assert err.value.message == (
        f"extra script destination '{reserved}' collides with a generated build file"
    )
    assert not (tmp_path / "gen").exists()
    assert leftovers(tmp_path) == []


def test_an_unsafe_workload_name_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildArtifactError) as err:
        build.write([workload(name="Bad_Name")], tmp_path / "gen", force=False)
    assert err.value.message == (
        "tau python build: workload name 'Bad_Name' is not a safe generated path segment"
    )
    assert not (tmp_path / "gen").exists()


@pytest.mark.parametrize("bad", ["../escape.py", "sub/file.py", "..", ""])
def test_a_staged_file_name_must_be_one_path_segment(tmp_path: Path, bad: str) -> None:
    w = workload()
    w = replace(w, files=(*w.files, StagedFile(bad, b"x", "extra-script", bad)))
    with pytest.raises(BuildArtifactError, match="is not a single path segment"):
        build.write([w], tmp_path / "gen", force=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_file_staged_twice_is_refused(tmp_path: Path) -> None:
    w = workload(extra={"helpers.py": b"A\n"})
    w = replace(w, files=(*w.files, StagedFile("helpers.py", b"B\n", "extra-script", "x")))
    with pytest.raises(BuildArtifactError, match=r"stages 'helpers\.py' more than once"):
        build.write([w], tmp_path / "gen", force=False)


def test_two_workloads_in_one_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildArtifactError, match="two workloads would share"):
        build.write([workload(), workload()], tmp_path / "gen", force=False)


def test_no_workloads_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildArtifactError) as err:
        build.write([], tmp_path / "gen", force=False)
    assert err.value.message == "tau python build: no @tau.train or @tau.eval handles found"


def test_secret_sources_need_a_generated_secret(tmp_path: Path) -> None:
    loc = SecretLocator("TOKEN", "token", SecretSource(key="token", env="TOKEN"))
    w = workload(secrets=(loc,))
    w = replace(w, generated_secret=None)
    with pytest.raises(BuildArtifactError, match="names no generated Secret"):
        build.write([w], tmp_path / "gen", force=False)


# --- the destination (cases 34, 35) -----------------------------------------------------------


def test_an_existing_output_needs_force(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    before = tree(out)
    with pytest.raises(BuildArtifactError) as err:
        build.write([workload()], out, force=False)
    assert err.value.message == f"tau python build: output already exists: {out}; pass --force"
    assert tree(out) == before


def test_force_replaces_a_previous_build_entirely(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    (out / "stale.txt").write_text("from an older build\n")
    assert build.write([workload()], out, force=True) == out
    artifact = load_artifact(out)
    assert [w.name for w in artifact.workloads] == ["train-model"]
    assert not (out / "stale.txt").exists()
    assert not (out / "workloads" / "eval-eval-model").exists()
    assert leftovers(tmp_path) == []


def test_force_on_a_free_destination_just_builds(tmp_path: Path) -> None:
    out = build.write(pair(), tmp_path / "gen", force=True)
    assert len(load_artifact(out).workloads) == 2


def test_force_refuses_a_plain_file(tmp_path: Path) -> None:
    target = tmp_path / "gen"
    target.write_text("precious\n")
    with pytest.raises(BuildArtifactError) as err:
        build.write(pair(), target, force=True)
    assert (
        err.value.message == f"tau python build: refusing to replace non-Tau-build output: {target}"
    )
    assert target.read_text() == "precious\n"
    assert leftovers(tmp_path) == []


def test_force_refuses_a_folder_that_is_not_a_build(tmp_path: Path) -> None:
    target = tmp_path / "gen"
    target.mkdir()
    (target / "notes.md").write_text("precious\n")
    with pytest.raises(BuildArtifactError, match="refusing to replace non-Tau-build output"):
        build.write(pair(), target, force=True)
    assert (target / "notes.md").read_text() == "precious\n"


def test_force_refuses_a_symlink_even_to_a_build(tmp_path: Path) -> None:
    real = build.write(pair(), tmp_path / "real", force=False)
    link = tmp_path / "gen"
    link.symlink_to(real)
    with pytest.raises(BuildArtifactError, match="already exists"):
        build.write(pair(), link, force=False)
    with pytest.raises(BuildArtifactError, match="refusing to replace non-Tau-build output"):
        build.write(pair(), link, force=True)
    assert link.is_symlink()


def test_a_dangling_symlink_counts_as_taken(tmp_path: Path) -> None:
    link = tmp_path / "gen"
    link.symlink_to(tmp_path / "nowhere")
    with pytest.raises(BuildArtifactError, match="already exists"):
        build.write(pair(), link, force=False)
    assert link.is_symlink() and not (tmp_path / "nowhere").exists()


# --- all or nothing -------------------------------------------------------------------------


def _fail_on_second_write(monkeypatch) -> None:
    real = build._write_file
    calls = []

    def flaky(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(path))
        real(path, data)

    monkeypatch.setattr(build, "_write_file", flaky)


def test_a_failed_write_leaves_no_output_and_no_temp_folder(tmp_path: Path, monkeypatch) -> None:
    _fail_on_second_write(monkeypatch)
    with pytest.raises(BuildArtifactError) as err:
        build.write(pair(), tmp_path / "gen", force=False)
    assert err.value.message.startswith(f"tau python build: cannot write {tmp_path / 'gen'}: ")
    assert "No space left on device" in err.value.message
    assert "\n" not in err.value.message
    assert sorted(tmp_path.iterdir()) == []


def test_a_failed_forced_rebuild_keeps_the_old_build(tmp_path: Path, monkeypatch) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    before = tree(out)
    _fail_on_second_write(monkeypatch)
    with pytest.raises(BuildArtifactError, match="No space left on device"):
        build.write([workload()], out, force=True)
    assert tree(out) == before
    assert leftovers(tmp_path) == []


def test_a_failed_final_rename_puts_the_old_build_back(tmp_path: Path, monkeypatch) -> None:
    out = build.write(pair(), tmp_path / "gen", force=False)
    before = tree(out)
    real = os.replace

    def refuse_publish(src, dst) -> None:
        if Path(src).name.startswith(".tau-build-") and not Path(src).name.startswith(
            ".tau-build-old-"
        ):
            raise OSError(13, "Permission denied", str(dst))
        real(src, dst)

    monkeypatch.setattr(build.os, "replace", refuse_publish)
    with pytest.raises(BuildArtifactError, match="Permission denied"):
        build.write([workload()], out, force=True)
    monkeypatch.undo()
    assert tree(out) == before
    assert leftovers(tmp_path) == []


def test_an_unwritable_parent_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(BuildArtifactError) as err:
        build.write(pair(), blocker / "gen", force=False)
    assert err.value.message.startswith(f"tau python build: cannot write {blocker / 'gen'}: ")
    assert "\n" not in err.value.message


def test_a_home_relative_output_is_expanded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    out = build.write(pair(), Path("~/gen"), force=False)
    assert out == tmp_path / "gen"
    assert (tmp_path / "gen" / "tau-build.yaml").is_file()


def test_an_unknown_kind_role_or_config_count_is_refused(tmp_path: Path) -> None:
    w = workload()
    serve_kind = replace(w, kind="serve")
    odd_role = replace(w, files=(*w.files, StagedFile("x.py", b"x", "notebook", "x.py")))
    no_config = replace(w, files=tuple(f for f in w.files if f.role != "config"))
    cases = [
        (serve_kind, "tau python build: unknown workload kind 'serve'"),
        (
            odd_role,
            "tau python build: staged file 'x.py' of workload 'train-model' has unknown role "
            "'notebook'",
        ),
        (no_config, "tau python build: workload 'train-model' must stage exactly one config file"),
    ]
    for bad, message in cases:
        with pytest.raises(BuildArtifactError) as err:
            build.write([bad], tmp_path / "gen", force=False)
        assert err.value.message == message
    assert sorted(tmp_path.iterdir()) == []
