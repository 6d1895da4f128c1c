"""Rules of a run config that dispatches a managed workflow (`workflow.file`, or a manifest).

Pure. The manifest decides the workload's shape, so the direct-dispatch features are refused
with the reference's words, and direct-only fields the translation does not read are
reported as having no effect rather than silently dropped.
"""

from __future__ import annotations

from pathlib import Path

from tau.intent.probe import is_file
from tau.intent.validate.context import Context, canonical

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

_DIRECT_ONLY = (
    (
        "run.ttl_seconds_after_finished",
        "run.ttl_seconds_after_finished requires direct Job dispatch and cannot be used with "
        "workflow.file",
    ),
    (
        "run.source",
        "run.source requires direct Job dispatch and cannot be used with workflow.file",
    ),
    (
        "storage.image_assets",
        "storage.image_assets requires direct Job dispatch and cannot be used with workflow.file",
    ),
)
CLEAR_NODE_SELECTOR = (
    "policy.clear_node_selector requires native job dispatch; managed workflow dispatch cannot "
    "clear profile/topology node selectors"
)
PUBLISH = "storage.publish is not supported for managed workflow configs"
#: The reference's words for a managed run without a trainer script.
NO_MAIN_SCRIPT = "workflow config requires run.entrypoint"
NO_MAIN_SCRIPT_HINT = (
    "name the trainer in workflow.main_script (or run.entrypoint), relative to this file"
)

#: Wrapper fields the manifest decides instead, with what decides them.
_NO_EFFECT_WRAPPER = (
    ("compute.gpus", "the manifest's compute.gpus"),
    ("compute.gpus_per_worker", "the manifest's compute.gpus"),
    ("runtime.pip", "the manifest's runtime.pip"),
    ("storage.volumes", "the manifest's storage.mounts"),
    ("storage.mounts", "the manifest's storage.mounts"),
    ("storage.checkpoint", "the manifest's artifacts.checkpoint"),
    # In a manifest these two are its own fields; in a wrapper they are the run config's.
    ("compute.cpu_limit", "the manifest's compute.cpu_limit"),
    ("compute.memory_limit", "the manifest's compute.memory_limit"),
)
_NO_EFFECT = (
    ("execution", "the manifest's kind and GPUs (torchrun for a multi-GPU job)"),
    ("run.working_dir", "the shipped scripts (workflow.extra_scripts)"),
    ("runtime.working_dir", "the trainer's own working directory"),
    ("metrics.history", "the trainer"),
    ("metrics.offload", "the trainer"),
    ("compute.cpu_request", "the manifest's compute.cpus"),
    ("compute.memory_request", "the manifest's compute.memory"),
)


def check(ctx: Context, *, managed: bool) -> None:
    """The managed-dispatch rules; `managed` when the config is itself the manifest."""
    file = ctx.get("workflow.file")
    if not managed and isinstance(file, str):
        manifest = Path(file) if file.startswith("/") else ctx.config_dir / file
        if not is_file(manifest):
            ctx.error(
                "workflow.file",
                f'workflow.file "{file}": manifest not found ({manifest})',
                "workflow.file resolves relative to the config file's directory",
            )
    if not managed and not canonical(ctx.data, "run.main_script")[1] and ctx.entrypoint is None:
        # A manifest that is itself the tau.yaml is checked where it is read (dispatch).
        ctx.error("run.entrypoint", NO_MAIN_SCRIPT, NO_MAIN_SCRIPT_HINT)
    for path, message in _DIRECT_ONLY:
        if ctx.has(path):
            ctx.error(path, message, f"remove {path}, or write a direct run config")
    if ctx.get("policy.clear_node_selector"):
        ctx.error("policy.clear_node_selector", CLEAR_NODE_SELECTOR, "remove it")
    if ctx.get("storage.publish"):
        ctx.error("storage.publish", PUBLISH, "publish from the trainer, or remove storage.publish")
    for path, owner in (*_NO_EFFECT, *(() if managed else _NO_EFFECT_WRAPPER)):
        if ctx.has(path):
            ctx.warn(
                path,
                f"{path} has no effect on a managed workflow run: {owner} decides it",
                f"remove {path}",
            )
