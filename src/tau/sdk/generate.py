"""From a module's handles to the runs it describes: one generated tau.yaml and its files each.

Pure (reads the user's module and extra scripts, never a secret value). Shared by
`tau python build` (which writes the result to a folder) and `submit` (which stages it and
runs it through `tau run`), so what a build records is exactly what a submit would send.

The generated config is a managed-workflow manifest (`schema_version: 1`): the handle's
manifest with the override flags applied, the cluster wrapper as `run.entrypoint`, the user
module and extra scripts as `workflow.extra_scripts`, all paths RELATIVE to the config's own
folder, and secret sources rewritten to keys of the run's own Secret (only their locators are
kept: the values are read when the run is submitted).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from tau.k8s.names import DNS_1123_LABEL
from tau.sdk.discover import Found, Handles
from tau.sdk.errors import BuildArtifactError, SdkError
from tau.sdk.manifest import (
    DEFAULT_CHECKPOINT_ARTIFACT,
    DEFAULT_WORKLOAD_KIND,
    EVAL_WORKLOAD_KIND,
    validate_checkpoint_artifact,
    with_data_pvc,
)
from tau.sdk.overrides import Overrides
from tau.sdk.secrets import SecretSource

CONFIG_FILE = "tau.yaml"
WRAPPER_FILE = "tau_py_wrapper.py"
USER_MODULE_FILE = "tau_user_module.py"
#: The wrapper is staged as train.py: the pod runs `python3 /script/train.py`.
WRAPPER_STAGED_AS = "train.py"
#: File names the generator writes itself; an extra script may not take them.
GENERATED_FILES = frozenset({WRAPPER_FILE, CONFIG_FILE})
#: A workload name becomes a folder name and part of resource names: a DNS-1123 label.
SAFE_NAME = DNS_1123_LABEL
CHECKPOINTS_ROOT = PurePosixPath("/data/checkpoints/finetunes")
DEFAULT_PREFIX = "tau"


@dataclass(frozen=True)
class StagedFile:
    """One file of a workload: its name in the workload folder and in /script."""

    name: str
    data: bytes
    role: str  # "config" | "entrypoint" | "user-module" | "extra-script"
    staged_as: str | None


@dataclass(frozen=True)
class SecretLocator:
    """Where the value of one key of the run's Secret is read at submit time."""

    env_name: str
    key: str
    source: SecretSource


@dataclass(frozen=True)
class Workload:
    """One generated run: its config (tau.yaml) and every file staged beside it."""

    attribute: str
    kind: str
    name: str
    #: --namespace, else the decorator's; None lets the workspace decide at submit (the
    #: reference fell back to `ray`, which a workspace of another namespace refuses).
    namespace: str | None
    resource_name: str
    config: dict[str, Any]
    files: tuple[StagedFile, ...]
    after: str | None = None
    upstream_checkpoint: str | None = None
    generated_secret: str | None = None
    secret_sources: tuple[SecretLocator, ...] = ()


def canonical_yaml(doc: Mapping[str, Any]) -> bytes:
    """The one byte-stable YAML form of `doc`: sorted keys, block style, UTF-8, LF newlines."""
    text = yaml.safe_dump(
        dict(doc),
        allow_unicode=True,
        default_flow_style=False,
        line_break="\n",
        sort_keys=True,
    )
    return text.encode("utf-8")


def _check_counts(handles: Handles, command: str) -> None:
    for kind, found in (("train", handles.train), ("eval", handles.eval)):
        if len(found) > 1:
            names = ", ".join(f.attribute for f in found)
            raise SdkError(
                f"{command}: multiple @tau.{kind} handles found ({names}); v1 supports at most "
                "one per file"
            )
    if handles.train or handles.eval:
        return
    if command.endswith("build"):
        if handles.serve:
            raise SdkError(
                f"{command}: tau.serve handles remain separate from managed train/eval "
                "artifacts; use ServeHandle.deploy() or tau serve deploy"
            )
        raise SdkError(f"{command}: no @tau.train or @tau.eval handles found")
    raise SdkError(
        f"{command}: no @tau.train or @tau.eval functions found in {handles.module_path}"
    )


def lineage_checkpoint(train_name: str, artifact: str) -> str:
    """Where a train run's checkpoint artifact lands on the data PVC, as its eval reads it."""
    return (CHECKPOINTS_ROOT / train_name / "artifacts" / artifact).as_posix()


def _lineage(
    train: Found | None, ev: Found | None, explicit: str | None, command: str
) -> tuple[str | None, str | None]:
    """(after, upstream checkpoint) of the eval, if there is one."""
    if ev is None:
        return None, None
    after = ev.handle.after
    submitting = not command.endswith("build")
    if train is not None:
        train_name = str(train.handle.name)
        if after and after != train_name:
            tail = " in this file (typo?)" if submitting else ""
            raise SdkError(
                f"{command}: @tau.eval after={after!r} does not match @tau.train "
                f"name={train_name!r}{tail}"
            )
        artifacts = train.handle.manifest().get("artifacts") or {}
        artifact = validate_checkpoint_artifact(
            artifacts.get("checkpoint", DEFAULT_CHECKPOINT_ARTIFACT),
            f"{command}: train manifest artifacts.checkpoint",
        )
        return train_name, lineage_checkpoint(train_name, artifact)
    if after:
        tail = " in this file" if submitting else ""
        raise SdkError(
            f"{command}: @tau.eval references after={after!r} but no @tau.train handle is "
            f"defined{tail}"
        )
    if not explicit:
        if submitting:
            raise SdkError(
                f"{command}: @tau.eval without a sibling @tau.train needs "
                "TAU_UPSTREAM_CHECKPOINT in the env (or call "
                "handle.submit(upstream_checkpoint=...) directly)"
            )
        raise SdkError(
            f"{command}: eval-only workflows require --upstream-checkpoint so the exported "
            "production intent is self-contained"
        )
    if not PurePosixPath(explicit).is_absolute():
        raise SdkError(
            f"{command}: the upstream checkpoint must be an absolute path inside the pod "
            f"(got {explicit!r})",
            hint="e.g. /data/checkpoints/finetunes/<train>/artifacts/last.safetensors",
        )
    return None, explicit


def plan(
    handles: Handles,
    overrides: Overrides,
    *,
    command: str,
    upstream_checkpoint: str | None = None,
) -> list[Workload]:
    """The runs of a module: its train (if any), then its eval (if any); serve is left out.

    `command` ("tau python build" / "tau python submit") prefixes the messages;
    `upstream_checkpoint` is the pod path an eval-only module evaluates.
    """
    overrides.check()
    _check_counts(handles, command)
    train = handles.train[0] if handles.train else None
    ev = handles.eval[0] if handles.eval else None
    after, upstream = _lineage(train, ev, upstream_checkpoint, command)
    out = []
    if train is not None:
        out.append(_workload(train, "train", overrides, command))
    if ev is not None:
        out.append(_workload(ev, "eval", overrides, command, after=after, upstream=upstream))
    return out


def require_runtime_pip(manifest: Mapping[str, Any], name: str) -> None:
    """The pod installs exactly what runtime.pip lists; tau ships no default set."""
    runtime = manifest.get("runtime")
    if isinstance(runtime, Mapping) and runtime.get("pip"):
        return
    raise SdkError(
        f"tau-py: {name!r} has no runtime.pip — declare your trainer's pip deps via "
        'extra_manifest, e.g. @tau.train(..., extra_manifest={"runtime": {"pip": '
        '["torch==2.4.0", "transformers==4.45.0"]}}). tau ships no default pip list.'
    )


def _prefix(manifest: Mapping[str, Any]) -> str:
    naming = manifest.get("resource_naming")
    if isinstance(naming, Mapping) and naming.get("prefix"):
        return str(naming["prefix"])
    return DEFAULT_PREFIX


def _rewrite_secrets(
    manifest: dict[str, Any], secret_name: str
) -> tuple[dict[str, Any], tuple[SecretLocator, ...]]:
    """Env entries read from a local source become keys of the run's Secret `secret_name`."""
    runtime = manifest.get("runtime")
    if not isinstance(runtime, Mapping):
        return manifest, ()
    locators: dict[str, SecretLocator] = {}
    entries = []
    for item in runtime.get("env") or []:
        value_from = item.get("valueFrom") if isinstance(item, Mapping) else None
        source = value_from.get("tauSecretSource") if isinstance(value_from, Mapping) else None
        if not isinstance(source, Mapping):
            entries.append(item)
            continue
        env_name = str(item.get("name") or "")
        key = str(source.get("key") or env_name)
        locators[env_name] = SecretLocator(
            env_name,
            key,
            SecretSource(
                key=key,
                env=str(source["env"]) if source.get("env") else None,
                path=str(source["path"]) if source.get("path") else None,
            ),
        )
        entry = {k: v for k, v in item.items() if k not in ("value", "valueFrom")}
        entry["valueFrom"] = {"secretKeyRef": {"name": secret_name, "key": key}}
        entries.append(entry)
    if not locators:
        return manifest, ()
    rewritten = {**manifest, "runtime": {**runtime, "env": entries}}
    return rewritten, tuple(locators[name] for name in sorted(locators))


def _with_overrides(manifest: dict[str, Any], overrides: Overrides) -> dict[str, Any]:
    out = with_data_pvc(manifest, overrides.data_pvc, override=True)
    resources = overrides.compute()
    if resources:
        compute = out.get("compute") or {}
        if not isinstance(compute, dict):
            raise SdkError("tau-py: config['compute'] must be a dict")
        out = {**out, "compute": {**compute, **resources}}
    return out


def _set_block(doc: dict[str, Any], key: str) -> dict[str, Any]:
    block = doc.setdefault(key, {})
    if not isinstance(block, dict):
        raise SdkError(f"tau-py: config/extra_manifest['{key}'] must be a dict")
    return block


def _run_config(
    manifest: dict[str, Any],
    *,
    kind: str,
    handle: Any,
    overrides: Overrides,
    namespace: str | None,
    scripts: list[str],
    upstream: str | None,
) -> dict[str, Any]:
    """The §3.4 mapping: the manifest plus run, policy, workflow and profiler blocks."""
    doc = copy.deepcopy(manifest)
    place = handle.placement
    train = kind == "train"
    run = _set_block(doc, "run")
    run["entrypoint"] = WRAPPER_FILE
    run["workload_kind"] = (
        (place.workload_kind or DEFAULT_WORKLOAD_KIND) if train else (EVAL_WORKLOAD_KIND)
    )
    if train and place.smoke_pairs:
        run["smoke_pairs"] = int(place.smoke_pairs)
    policy = _set_block(doc, "policy")
    chosen = {
        "namespace": namespace,
        "team": place.team,
        "preset": place.preset,
        "lane": place.lane if train else None,
        "queue": (overrides.queue or place.queue) if train else None,
        "gpu_class": overrides.gpu_class or place.gpu_class,
    }
    policy.update({k: v for k, v in chosen.items() if v})
    selector = overrides.node_selector or place.node_selector
    if selector:
        policy["node_selector"] = dict(selector)
    if overrides.disable_default_priorities:
        policy["disable_default_priorities"] = True
    if not policy:
        del doc["policy"]
    if place.gpu_resource_mode:
        _set_block(doc, "compute")["gpu_resource_mode"] = place.gpu_resource_mode
    workflow = _set_block(doc, "workflow")
    workflow["extra_scripts"] = scripts
    if upstream:
        workflow["upstream_checkpoint"] = upstream
    if train:
        profiler = {
            "mode": overrides.profiler,
            "rank": overrides.profile_rank,
            "warmup": overrides.profile_warmup,
            "duration": overrides.profile_duration,
        }
        block = _set_block(doc, "profiler")
        block.update({k: v for k, v in profiler.items() if v})
        if not block:
            del doc["profiler"]
    return doc


def _wrapper_bytes() -> bytes:
    from tau.sdk import wrapper

    return wrapper.source()


def unsafe_name(name: str, command: str) -> str | None:
    """The reference's words when `name` cannot be a folder name and part of resource names
    (a DNS label); None when it can.
    """
    if SAFE_NAME.fullmatch(name):
        return None
    return f"{command}: workload name {name!r} is not a safe generated path segment"


def check_extra_destination(dest: str) -> None:
    """An extra script may not take the name of a file the generator writes itself."""
    if dest in GENERATED_FILES:
        raise BuildArtifactError(
            f"extra script destination {dest!r} collides with a generated build file"
        )


def _workload(
    found: Found,
    kind: str,
    overrides: Overrides,
    command: str,
    *,
    after: str | None = None,
    upstream: str | None = None,
) -> Workload:
    handle = found.handle
    name = str(handle.name)
    if problem := unsafe_name(name, command):
        raise SdkError(
            problem, hint="use lowercase letters, digits and inner hyphens (a DNS label)"
        )
    manifest = _with_overrides(handle.manifest(), overrides)
    require_runtime_pip(manifest, name)
    prefix = _prefix(manifest)
    secret_name = f"{prefix}-{name}-secrets"
    manifest, locators = _rewrite_secrets(manifest, secret_name)
    extras = list(handle.staged_scripts)
    for _, dest in extras:
        check_extra_destination(dest)
    files = [
        StagedFile(USER_MODULE_FILE, handle.source_bytes(), "user-module", USER_MODULE_FILE),
        StagedFile(WRAPPER_FILE, _wrapper_bytes(), "entrypoint", WRAPPER_STAGED_AS),
    ]
    scripts = [f"{USER_MODULE_FILE}:{USER_MODULE_FILE}"]
    for source, dest in extras:
        try:
            data = source.read_bytes()
        except OSError as exc:
            raise SdkError(f"tau-py: cannot read extra script {source}: {exc.strerror}") from None
        files.append(StagedFile(dest, data, "extra-script", dest))
        scripts.append(f"{dest}:{dest}")
    namespace = overrides.namespace or handle.placement.namespace or None
    config = _run_config(
        manifest,
        kind=kind,
        handle=handle,
        overrides=overrides,
        namespace=namespace,
        scripts=scripts,
        upstream=upstream,
    )
    files.append(StagedFile(CONFIG_FILE, canonical_yaml(config), "config", None))
    return Workload(
        attribute=found.attribute,
        kind=kind,
        name=name,
        namespace=namespace,
        resource_name=f"{prefix}-{name}",
        config=config,
        files=tuple(sorted(files, key=lambda f: f.name)),
        after=after,
        upstream_checkpoint=upstream,
        generated_secret=secret_name if locators else None,
        secret_sources=locators,
    )
