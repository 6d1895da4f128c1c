"""Labels, annotations and env that both workload kinds carry: identity, placement, capture.

Pure.
"""

from __future__ import annotations

from tau.k8s import meta
from tau.plan.model import Plan

_EXPERIMENT_LABELS = {
    "project": meta.LABEL_STELLAR_PROJECT,
    "name": meta.LABEL_STELLAR_EXPERIMENT,
    "group": meta.LABEL_STELLAR_GROUP,
}


def experiment_id(plan: Plan) -> str:
    """experiment.name, else an id derived from the deprecated title, else experiment.group.

    A blank name is not a name: it falls through like an absent one.
    """
    fields = {k: v.strip() for k, v in plan.capture.experiment}
    if fields.get("name"):
        return fields["name"]
    if fields.get("title"):
        return meta.label_value(fields["title"])
    return fields.get("group", "")


def correlation_annotations(plan: Plan) -> dict[str, str]:
    """The experiment identity as written, for the evidence portal; on workloads and pods."""
    fields = {k: v.strip() for k, v in plan.capture.experiment}
    notes = {
        meta.ANNOTATION_STELLAR_PROJECT_VALUE: fields.get("project", ""),
        meta.ANNOTATION_STELLAR_EXPERIMENT_ID: experiment_id(plan),
        meta.ANNOTATION_STELLAR_GROUP_VALUE: fields.get("group", ""),
    }
    notes = {k: v for k, v in notes.items() if v}
    # Metrics offload's session and experiment source correlate pods with the store's rows too.
    from tau.render import metrics_offload

    return {**notes, **metrics_offload.session_annotations(plan)}


def profile_name(plan: Plan) -> str:
    """The synthetic resource profile: policy.profile, the preset's profile, the preset name."""
    return plan.placement.profile or plan.placement.preset or f"direct-{plan.engine}"


def _identity(plan: Plan, kind: str) -> dict[str, str]:
    out = {
        meta.LABEL_MANAGED_BY: meta.MANAGED_BY_VALUE,
        meta.LABEL_RUN_ID: meta.label_value(plan.name),
        # A managed eval is a RayJob whose kind label says rayjob-eval.
        meta.LABEL_WORKLOAD_KIND: plan.kind or kind,
        meta.LABEL_PROFILE: meta.label_value(profile_name(plan)),
    }
    p = plan.placement
    if p.preset:
        out[meta.LABEL_PRESET] = meta.label_value(p.preset)
    if p.preemptable:
        out[meta.LABEL_PREEMPTIBLE] = "true"
    if p.reclaimable:
        out[meta.LABEL_RECLAIMABLE] = "true"
    if p.gpu_class:
        out[meta.LABEL_GPU_CLASS] = p.gpu_class
    if plan.capture.workspace:
        out[meta.LABEL_WORKSPACE] = meta.label_value(plan.capture.workspace)
    experiment = {**dict(plan.capture.experiment), "name": experiment_id(plan)}
    for key, label in _EXPERIMENT_LABELS.items():
        value = meta.label_value(experiment.get(key, ""))
        if value:
            out[label] = value
    if p.workload_priority_class:
        out[meta.KUEUE_PRIORITY_CLASS] = p.workload_priority_class
    return out


def workload_labels(plan: Plan, kind: str) -> dict[str, str]:
    """Labels of the Job or RayJob itself, with the Kueue queue label."""
    return {**_identity(plan, kind), meta.KUEUE_QUEUE_NAME: plan.placement.queue}


def pod_labels(plan: Plan, kind: str) -> dict[str, str]:
    """Labels of the pod template: the identity labels, never the queue label."""
    return _identity(plan, kind)


def podset_topology(plan: Plan) -> dict[str, str]:
    """The Kueue podset topology annotation the placement asks for."""
    p = plan.placement
    if not p.topology_annotations or not p.topology:
        return {}
    if p.topology == "single-node-nvlink":
        return {meta.KUEUE_PODSET_REQUIRED_TOPOLOGY: meta.NODE_HOSTNAME}
    return {meta.KUEUE_PODSET_UNCONSTRAINED_TOPOLOGY: "true"}


def pod_annotations(plan: Plan) -> dict[str, str]:
    return {**correlation_annotations(plan), **podset_topology(plan)}


def workload_annotations(plan: Plan) -> dict[str, str]:
    """Provenance, placement and result annotations of the workload object."""
    p = plan.placement
    notes = {
        meta.ANNOTATION_CAPTURE_VERSION: meta.CAPTURE_VERSION,
        meta.ANNOTATION_NAMESPACE: plan.namespace,
        meta.ANNOTATION_IMAGE: plan.image,
        meta.ANNOTATION_CONFIG_HASH: plan.config_hash,
    }
    if "@sha256:" in plan.image:
        notes[meta.ANNOTATION_IMAGE_DIGEST] = plan.image.split("@", 1)[1]
    for key, value in (
        (meta.ANNOTATION_TOPOLOGY_POLICY_SOURCE, p.source),
        (meta.ANNOTATION_PRESET_DESCRIPTION, p.description),
        (meta.ANNOTATION_PRESET_EXPLAIN, p.explain),
        (meta.ANNOTATION_RESOURCE_FLAVOR, p.resource_flavor),
        (meta.ANNOTATION_CLUSTER_QUEUE, p.cluster_queue),
        (meta.ANNOTATION_KUEUE_TOPOLOGY, p.kueue_topology),
        (meta.ANNOTATION_WORKLOAD_PRIORITY_CLASS, p.workload_priority_class),
        (meta.ANNOTATION_POD_PRIORITY_CLASS, p.pod_priority_class),
        (meta.ANNOTATION_CHECKPOINT_ARTIFACT, plan.storage.checkpoint_artifact or ""),
    ):
        if value:
            notes[key] = value
    if plan.storage.output and plan.storage.result_pvc:
        notes[meta.ANNOTATION_RESULT_PATH] = plan.storage.output
        notes[meta.ANNOTATION_RESULT_PVC] = plan.storage.result_pvc
    if plan.profiler.mode:
        notes.update(profiler_annotations(plan))
    retry = dict(plan.capture.retry_env)
    if retry.get("TAU_RETRY_ATTEMPT"):
        notes[meta.ANNOTATION_RETRY_ATTEMPT] = retry["TAU_RETRY_ATTEMPT"]
        notes[meta.ANNOTATION_RETRY_REASON] = retry.get("TAU_RETRY_REASON", "")
    notes.update(correlation_annotations(plan))
    notes.update(podset_topology(plan))
    return notes


def profile_dir(plan: Plan) -> str:
    """The directory every rank's profile is written into (the profile-path annotation)."""
    return f"{plan.storage.output or '/tmp/tau-profile'}/profile"


def profile_out(plan: Plan) -> tuple[str, str]:
    """(env name, value) of where the profile is written: one rank's file, or a pattern.

    `<rank>` in TAU_PROFILE_OUT_PATTERN stands for each pod's rank (JOB_COMPLETION_INDEX),
    spelled as the reference spells it so tools written for either read the same pattern;
    the pod's command builds its own file name from TAU_PROFILE_OUT_DIR, not from the pattern.
    """
    ext = "nsys-rep" if plan.profiler.mode == "nsys" else "ncu-rep"
    directory = profile_dir(plan)
    if plan.profiler.rank == "all":
        return "TAU_PROFILE_OUT_PATTERN", f"{directory}/rank-<rank>.{ext}"
    return "TAU_PROFILE_OUT", f"{directory}/rank-{plan.profiler.rank}.{ext}"


def profiler_annotations(plan: Plan) -> dict[str, str]:
    """Where the profile lands and how it was taken; durations normalized (90s → 1m30s)."""
    from tau.intent.duration import format_duration, parse_duration

    notes = {
        meta.ANNOTATION_PROFILE_MODE: plan.profiler.mode or "",
        meta.ANNOTATION_PROFILE_RANK: plan.profiler.rank,
        meta.ANNOTATION_PROFILE_PATH: profile_dir(plan),
    }
    if plan.storage.result_pvc:
        notes[meta.ANNOTATION_PROFILE_PVC] = plan.storage.result_pvc
    if plan.profiler.warmup:
        notes[meta.ANNOTATION_PROFILE_WARMUP] = format_duration(
            parse_duration(plan.profiler.warmup)
        )
    if plan.profiler.duration:
        notes[meta.ANNOTATION_PROFILE_DURATION] = format_duration(
            parse_duration(plan.profiler.duration)
        )
    return notes


def profiler_env(plan: Plan) -> dict[str, str]:
    """What the entrypoint needs to start Nsight itself on the chosen rank."""
    if not plan.profiler.mode:
        return {}
    from tau.intent.duration import parse_duration

    ext = "nsys-rep" if plan.profiler.mode == "nsys" else "ncu-rep"
    out = {
        "TAU_PROFILE_MODE": plan.profiler.mode,
        "TAU_PROFILE_TOOL": plan.profiler.mode,
        "TAU_PROFILE_RANK": plan.profiler.rank,
        "TAU_PROFILE_RUN_ID": plan.name,
        "TAU_PROFILE_NAMESPACE": plan.namespace,
        "TAU_PROFILE_EXT": ext,
        "TAU_PROFILE_OUT_DIR": profile_dir(plan),
    }
    key, value = profile_out(plan)
    out[key] = value
    if plan.profiler.warmup:
        out["TAU_PROFILE_WARMUP_SEC"] = str(int(parse_duration(plan.profiler.warmup)))
    if plan.profiler.duration:
        out["TAU_PROFILE_ACTIVE_SEC"] = str(int(parse_duration(plan.profiler.duration)))
    return out
