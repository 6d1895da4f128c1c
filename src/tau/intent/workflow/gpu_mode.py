"""The GPU mode of a managed run: one manifest, one render, whichever way it is reached.

Pure. `compute.gpu_resource_mode` and `compute.mig_profile` are run-config fields that the SDK
also writes into the manifest it generates. When that manifest is the tau.yaml itself, its
run-config part carries them; when a direct config reaches the same manifest through
`workflow.file`, nothing read them, so a DRA manifest rendered `nvidia.com/gpu`. Here the
manifest's values count either way. A run config that names a different value is refused
(the run has one GPU mode), and so is a mode the managed renderer cannot honour for the kind:
a MIG mode without a profile, or MIG on a Job, would otherwise request whole GPUs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tau.intent.load import RawDocument
from tau.intent.validate import structure
from tau.intent.validate.findings import Findings

FIELDS = ("gpu_resource_mode", "mig_profile")
#: The schema's alias of the default mode.
_SAME_AS = {"nvidia": "device-plugin"}


class GpuMode(NamedTuple):
    mode: str
    mig_profile: str | None


def manifest_fields(doc: RawDocument, findings: Findings) -> dict[str, Any]:
    """The manifest's own `compute.gpu_resource_mode`/`mig_profile`, checked by the run-config
    schema's rules (its enum and profile pattern); an invalid value is reported and left out.
    """
    compute = doc.data.get("compute")
    if not isinstance(compute, dict):
        return {}
    written = {key: compute[key] for key in FIELDS if key in compute}
    if not written:
        return {}
    checked = structure.check(RawDocument(doc.path, {"compute": written}, doc.source), findings)
    found = checked.data.get("compute")
    return found if isinstance(found, dict) else {}


def _same(a: Any, b: Any) -> bool:
    return _SAME_AS.get(a, a) == _SAME_AS.get(b, b)


def decide(
    kind: str,
    wrapper: dict[str, Any],
    manifest: dict[str, Any] | None,
    outer: Findings,
    inner: Findings,
    manifest_file: str,
) -> GpuMode:
    """The run's GPU mode and MIG profile, with every conflict and refusal recorded.

    Args:
        kind: the workload kind the dispatch chose (job, rayjob, rayjob-eval).
        wrapper: the run config's checked data (for a manifest that is itself the tau.yaml,
            its run-config part, which already holds the manifest's values).
        manifest: the manifest's own fields (`manifest_fields`) when it was reached through
            workflow.file, else None.
        outer: the run config's findings; inner: the manifest's.
        manifest_file: the manifest's file name, for the conflict message.
    """
    compute = wrapper.get("compute")
    compute = compute if isinstance(compute, dict) else {}
    chosen: dict[str, tuple[Any, Findings]] = {}
    for key in FIELDS:
        ours = compute.get(key)
        theirs = (manifest or {}).get(key)
        if ours is not None and theirs is not None and not _same(ours, theirs):
            outer.error(
                f"compute.{key}",
                f'compute.{key} "{ours}" disagrees with the manifest\'s "{theirs}" '
                f"({manifest_file}); a run has one GPU mode",
                f"remove compute.{key} from the run config (the manifest decides it), or make "
                "the two agree",
            )
        if theirs is not None:
            chosen[key] = (theirs, inner)
        elif ours is not None:
            chosen[key] = (ours, outer)
    mode, mode_at = chosen.get("gpu_resource_mode", ("device-plugin", outer))
    profile, profile_at = chosen.get("mig_profile", (None, outer))
    mode = _SAME_AS.get(mode, mode)
    if kind == "job":
        if mode == "mig":
            mode_at.error(
                "compute.gpu_resource_mode",
                'workload_kind=job cannot use compute.gpu_resource_mode="mig"; managed Jobs '
                "support device-plugin or dra GPUs",
                "use workload_kind: rayjob for MIG slices, or choose device-plugin or dra",
            )
        if profile:
            profile_at.error(
                "compute.mig_profile",
                f'workload_kind=job cannot set compute.mig_profile "{profile}"; a managed Job '
                "would request whole GPUs",
                "use workload_kind: rayjob for MIG slices, or remove compute.mig_profile",
            )
    elif mode == "mig" and not profile:
        mode_at.error(
            "compute.gpu_resource_mode",
            "compute.gpu_resource_mode: mig requires compute.mig_profile; without a profile "
            "the workers would request full GPUs",
            "set compute.mig_profile to the MIG slice, e.g. 1g.18gb",
        )
    return GpuMode(str(mode), profile)
