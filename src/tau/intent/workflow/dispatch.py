"""Load a managed workflow run: the wrapper config, its manifest and the files they name.

Performs I/O (reads the manifest, the extra scripts and the secret payload). Two documents
select this path: a tau.yaml that is itself a manifest (`schema_version` and no engine; the
SDK writes these) and a direct config whose `workflow.file` names one. Either way the result
is a `ValidConfig` like any other, whose run config is the translation of the manifest
(tau.intent.workflow.translate), so resolve and render treat a managed run as a direct one.
Every problem of both files is reported at once, each located in its own file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml

from tau.errors import ConfigError, Diagnostic
from tau.intent import load, runconfig
from tau.intent.load import RawDocument, SourceMap
from tau.intent.validate import ValidConfig, imports
from tau.intent.validate import image as image_rule
from tau.intent.validate import workflow as rules
from tau.intent.validate.context import Context, canonical, lookup
from tau.intent.validate.findings import Findings
from tau.intent.workflow import files, gpu_mode, keyvault, manifest, translate
from tau.intent.workflow.model import KeyVaultRef, Manifest
from tau.intent.workflow.probe import Options, is_managed
from tau.intent.workflow.problems import WorkflowInputError

POSITIONAL_NAME = (
    "managed workflow configs take the run name from the config file; remove positional NAME"
)
#: What the /manifest copy shows instead of a Secret's name and key.
REDACTED = "<redacted>"


def _projection(doc: RawDocument, findings: Findings) -> dict[str, Any]:
    """The run-config part of a managed tau.yaml, type-checked against the run-config schema.

    Keys only the manifest knows (eval, artifacts, compute.cpus, the env list, the mounts list)
    are left out: the manifest parser reads those, and unknown keys are warnings here.
    """
    from tau.intent.validate import structure

    known = set(structure.known_paths())

    def keep(value: Any, path: tuple[str, ...]) -> Any:
        if not isinstance(value, dict):
            return value
        out = {}
        for key, child in value.items():
            sub = (*path, key)
            if sub not in known or sub in _MANIFEST_SHAPED:
                continue
            if sub == ("entrypoint",) and isinstance(child, dict):
                # The Python SDK's entrypoint mode: {script, function, args, kwargs, pass_ctx}
                # for the cluster wrapper, which reads it from the manifest under /manifest.
                continue
            out[key] = keep(child, sub)
        return out

    data = keep(doc.data, ())
    data.pop("schema_version", None)
    projected = RawDocument(doc.path, data, doc.source)
    return structure.check(projected, findings).data


#: Paths of a managed tau.yaml that the manifest parser owns: its own shapes (a list where the
#: run config has a map) and the fields both know, which it checks by the manifest's rules.
_MANIFEST_SHAPED = {
    ("name",),
    ("compute", "gpus"),
    ("compute", "workers"),
    ("compute", "cpu_limit"),
    ("compute", "memory_limit"),
    ("compute", "worker_cpu_limit"),
    ("compute", "worker_memory_limit"),
    ("runtime", "env"),
    ("runtime", "env_kv"),
    ("runtime", "image"),
    ("runtime", "pip"),
    ("storage", "data_pvc"),
    ("storage", "mounts"),
}


def _ignored_run_config(
    manifest_doc: RawDocument, wrapper_file: str, wrapper_data: dict[str, Any], inner: Findings
) -> None:
    """Warn at each run-config field of a manifest reached through workflow.file.

    Such a manifest (often a tau.yaml the SDK wrote, which is manifest and run config at once)
    may say policy, kind or profiler; on this path the run config around it decides those, as
    in the reference, so they have no effect: said, never dropped silently (unless the run
    config says the same). The GPU mode is the exception (tau.intent.workflow.gpu_mode reads
    it from the manifest).
    """
    from tau.intent.runconfig import ALIASES
    from tau.intent.validate import structure

    alias_of = {alias: canon for canon, aliases in ALIASES for alias in aliases}

    known = set(structure.known_paths())
    honoured = {("compute", key) for key in gpu_mode.FIELDS}

    def walk(value: dict[str, Any], path: tuple[str, ...]) -> None:
        for key, child in value.items():
            sub = (*path, str(key))
            if sub not in known or sub in _MANIFEST_SHAPED or sub in honoured:
                continue
            if sub == ("entrypoint",) and isinstance(child, dict):
                continue  # the SDK's entrypoint mode, read by the cluster wrapper
            deeper = isinstance(child, dict) and any(p[: len(sub)] == sub for p in known - {sub})
            if deeper:
                walk(child, sub)
                continue
            dotted = ".".join(sub)
            ours = (
                canonical(wrapper_data, alias_of[dotted])[1]
                if dotted in alias_of
                else lookup(wrapper_data, dotted)
            )
            if ours == child:
                continue
            inner.warn(
                dotted,
                f"{dotted} has no effect in a manifest reached through workflow.file: the run "
                f"config ({wrapper_file}) decides it",
                f"set it in {wrapper_file}, or remove it from the manifest",
            )

    top = {k: v for k, v in manifest_doc.data.items() if k != "schema_version"}
    walk(top, ())


def _wrapper(doc: RawDocument, findings: Findings, managed_itself: bool) -> ValidConfig:
    """The run config around the manifest, validated on its path (lenient or strict)."""
    if not managed_itself:
        from tau.intent.validate import validate

        return validate(doc)
    data = _projection(doc, findings)
    ctx = Context(data, findings, doc.path.parent)
    rules.check(ctx, managed=True)
    entry_path, entry = canonical(data, "entrypoint")
    ctx.entry_path, ctx.entrypoint = entry_path, entry
    imports.check(ctx, managed=True)
    config = runconfig.build(data, name="", engine=runconfig.JOB, entrypoint=entry)
    return ValidConfig(doc.path, config, doc.source, data, entry_path=entry_path)


def _main_script(data: dict[str, Any]) -> tuple[str, str | None]:
    """(path written at, value): run.main_script > workflow.main_script > workflow.script >
    the entrypoint.
    """
    path, value = canonical(data, "run.main_script")
    if value:
        return path, value
    return canonical(data, "entrypoint")


def _overrides(m: Manifest, wrapper: runconfig.RunConfig) -> Manifest:
    """The run config's values that replace the manifest's (the reference's order)."""
    st, rt = m.storage, m.runtime
    if wrapper.storage.data_pvc:
        st = st._replace(data_pvc=wrapper.storage.data_pvc)
    if wrapper.runtime.image:
        rt = rt._replace(image=wrapper.runtime.image)
    if wrapper.runtime.env_kv:
        rt = rt._replace(env_kv=tuple({**dict(rt.env_kv), **dict(wrapper.runtime.env_kv)}.items()))
    compute, ev = m.compute, m.eval
    if wrapper.compute.workers > 1:
        compute = compute._replace(workers=wrapper.compute.workers)
    if (wrapper.compute.cpu_workers or 0) > 0:
        ev = ev._replace(cpu_workers=wrapper.compute.cpu_workers or 0)
    return m._replace(storage=st, runtime=rt, compute=compute, eval=ev)


def redacted_copy(data: dict[str, Any]) -> bytes:
    """The manifest as shipped to /manifest: Secret names and keys of its env redacted."""
    copy = dict(data)
    runtime = copy.get("runtime")
    if isinstance(runtime, dict) and isinstance(runtime.get("env"), list):
        env = []
        for entry in runtime["env"]:
            ref = (
                entry.get("valueFrom", {}).get("secretKeyRef") if isinstance(entry, dict) else None
            )
            if isinstance(ref, dict):
                ref = {**ref, "name": REDACTED, "key": REDACTED}
                entry = {**entry, "valueFrom": {**entry["valueFrom"], "secretKeyRef": ref}}
            env.append(entry)
        copy["runtime"] = {**runtime, "env": env}
    return yaml.safe_dump(copy, sort_keys=False, allow_unicode=True).encode()


def _key_vault(m: Manifest, options: Options, findings: Findings) -> KeyVaultRef | None:
    try:
        entries = keyvault.parse_entries(m.runtime.env_kv, options.key_vault)
    except WorkflowInputError as exc:
        exc.report(findings)
        return None
    if not entries:
        return None
    # The ServiceAccount is checked where it is known: the CLI, after the workspace lookup.
    problems = keyvault.tenant_client_problems(options.tenant_id, options.client_id)
    for p in problems:
        findings.error(p.path, p.message, p.hint)
    if problems:
        return None
    name = m.resource_name
    return KeyVaultRef(
        entries[0].vault,
        (options.tenant_id or "").strip(),
        (options.client_id or "").strip(),
        tuple((e.env, e.secret) for e in entries),
        keyvault.spc_name(name),
        keyvault.synced_secret_name(name),
    )


def _merged(wrapper: SourceMap, manifest_map: SourceMap) -> SourceMap:
    """One source map for resolve: the wrapper's places over the manifest's."""
    return SourceMap(
        wrapper.file,
        {**manifest_map.keys, **wrapper.keys},
        {**manifest_map.values, **wrapper.values},
    )


def load_run(doc: RawDocument, options: Options | None = None) -> ValidConfig:
    """The managed run `doc` describes, translated onto the typed run config.

    Raises:
        ConfigError: every problem of the wrapper and the manifest (warnings ride along).
    """
    options = options or Options()
    itself = is_managed(doc.data)
    # The manifest parser reports the YAML problems of its file; a managed tau.yaml is both.
    outer = Findings(doc.source, [] if itself else list(doc.problems))
    if options.name:
        outer.out.append(Diagnostic("", POSITIONAL_NAME, "run `tau run --config PATH`"))
    try:
        wrapper = _wrapper(doc, outer, itself)
    except ConfigError as exc:
        outer.out.extend(exc.diagnostics)
        raise ConfigError(outer.out) from None
    outer.out.extend(wrapper.warnings)
    data = wrapper.data
    base = doc.path.parent
    if itself:
        manifest_doc, manifest_path = doc, doc.path
    else:
        written = str(lookup(data, "workflow.file"))
        manifest_path = Path(written) if written.startswith("/") else base / written
        try:
            manifest_doc = load.load(manifest_path)
        except ConfigError as exc:
            # A missing or broken manifest is the wrapper's problem, at workflow.file.
            for d in exc.diagnostics:
                outer.error("workflow.file", f"workflow.file: {d.message}", d.hint)
            raise ConfigError(outer.out) from None
    inner = Findings(manifest_doc.source)
    parsed = None
    try:
        parsed, found = manifest.parse(manifest_doc)
        inner.out.extend(found)
    except ConfigError as exc:
        inner.out.extend(exc.diagnostics)
    _removed_eval_fields(manifest_doc, inner)
    # Reached through workflow.file, the manifest's own GPU mode counts as it does when the
    # manifest is the tau.yaml (whose run-config part already holds it).
    manifest_gpu = None if itself else gpu_mode.manifest_fields(manifest_doc, inner)
    if not itself:
        _ignored_run_config(manifest_doc, doc.path.name, data, inner)
    main_path, main = _main_script(data)
    if not main:
        outer.error("run.entrypoint", rules.NO_MAIN_SCRIPT, rules.NO_MAIN_SCRIPT_HINT)
    try:
        extra = files.load_extra_scripts(wrapper.config.workflow.extra_scripts, base)
    except WorkflowInputError as exc:
        exc.report(outer)
        extra = ()
    try:
        payload = files.load_secret_payload(wrapper.config.workflow.secret_payload, base)
    except WorkflowInputError as exc:
        exc.report(outer)
        payload = None
    if parsed is None:
        raise ConfigError([*outer.out, *inner.out])
    m = _overrides(parsed.manifest, wrapper.config)
    kind_path, requested = canonical(data, "workload_kind")
    choice = translate.choose_kind(str(requested or ""), m)
    if choice.problem:
        if choice.subject == "kind" and requested:
            outer.error(kind_path, choice.problem)
        else:
            inner.error("compute", choice.problem)
    kind = choice.kind
    if kind != "job" and (problem := manifest.rayjob_name_problem(m)):
        inner.error("name", problem)
    _profiler(wrapper.config, kind, outer)
    gpu = gpu_mode.decide(kind, data, manifest_gpu, outer, inner, manifest_path.name)
    if m.checkpoint and not m.storage.data_pvc:
        # The reference submits such a run (the SDK writes artifacts.checkpoint on every train)
        # and says /data is ephemeral; no artifact index is written where nothing persists.
        inner.warn(
            "artifacts.checkpoint",
            f'artifacts.checkpoint "{m.checkpoint}" is not indexed: /data is ephemeral '
            "(emptyDir); set storage.data_pvc to persist files beyond RayJob teardown",
            "set storage.data_pvc in the manifest or the run config (tau python: --data-pvc)",
        )
    # The run config's own image was checked with it; here the manifest's.
    floating = (
        image_rule.floating_warning("runtime.image", m.runtime.image)
        if m.runtime.image and not wrapper.config.runtime.image
        else None
    )
    if floating:
        inner.warn("runtime.image", *floating)
    key_vault = _key_vault(m, options, inner)
    if any(d.severity == "error" for d in (*outer.out, *inner.out)):
        raise ConfigError([*outer.out, *inner.out])
    wf, run = wrapper.config.workflow, wrapper.config.run
    inputs = translate.Inputs(
        kind=kind,
        main_script=str(main),
        manifest_file=manifest_path.name,
        manifest_copy=redacted_copy(manifest_doc.data),
        extra_scripts=extra,
        secret=(payload.name, payload.string_data) if payload else None,
        key_vault=key_vault,
        smoke_pairs=wf.smoke_pairs if wf.smoke_pairs is not None else run.smoke_pairs,
        upstream_checkpoint=wf.upstream_checkpoint,
        notes=(choice.note,) if choice.note else (),
    )
    around = wrapper.config
    around = around._replace(
        compute=around.compute._replace(gpu_resource_mode=gpu.mode, mig_profile=gpu.mig_profile)
    )
    config = translate.translate(m, around, inputs)
    digest = hashlib.sha256(parsed.text).hexdigest()
    # The config hash covers the wrapper and the manifest's bytes (resume compares it).
    hashed = {"manifest": digest} if itself else {"wrapper": data, "manifest": digest}
    warnings = tuple(d for d in (*outer.out, *inner.out) if d.severity != "error")
    return ValidConfig(
        doc.path,
        config,
        _merged(doc.source, manifest_doc.source),
        hashed,
        tuple(sorted(warnings, key=Diagnostic.sort_key)),
        main_path,
        config.engine,
        None,
        translate.managed_parts(m, inputs),
    )


def _profiler(config: runconfig.RunConfig, kind: str, findings: Findings) -> None:
    mode = config.profiler.mode
    if not mode:
        return
    if mode != "nsys":
        findings.error(
            "profiler.mode",
            f'profile.mode "{mode}": managed workflow RayJob profiling supports nsys only',
            "use profiler.mode: nsys, or a direct run config for ncu",
        )
    elif kind == "job":
        findings.error(
            "profiler.mode",
            f'profile.mode nsys currently requires rayjob training (got "{kind}")',
            "set workload_kind: rayjob, or remove profiler",
        )


#: The removed eval task surface (a manifest's `eval` group is the eval workers, not this).
_REMOVED_EVAL = (("task",), ("run", "task"), ("eval", "harness"), ("eval", "model"))


def _removed_eval_fields(doc: RawDocument, findings: Findings) -> None:
    """The reference rejects these on both parse paths with the migration story."""
    from tau.intent.validate.structure import EVAL_MIGRATION, EVAL_MIGRATION_HINT

    removed = {
        ".".join(p) for p in _REMOVED_EVAL if lookup(doc.data, ".".join(p), _ABSENT) is not _ABSENT
    }
    # The migration error replaces the unknown-key warning of the same key.
    findings.out[:] = [
        d for d in findings.out if not (d.severity == "warning" and d.path in removed)
    ]
    for path in sorted(removed):
        findings.error(path, EVAL_MIGRATION, EVAL_MIGRATION_HINT, key=True)


_ABSENT = object()
