"""The artifact-index step: after a successful workload, record its servable checkpoint.

Pure (returns shell text). When `storage.checkpoint` is set, the rendered workload ends by
writing `/data/checkpoints/finetunes/<run>/artifacts.json` (the registry's artifact index), so
`tau serve deploy --from-finetune RUN` and `tau data model index rebuild` can resolve a model
trained by tau alone. The step runs only after the training command succeeded, locates the
declared artifact, copies it to the durable run directory when it lies on node-local scratch,
and writes the index atomically (a temporary file, then a rename), so a reader never sees half
an index.
"""

from __future__ import annotations

import shlex

from tau.plan.model import Plan

#: Exit code when the index cannot be written (no python3, refused or failed write): a run
#: that declared a checkpoint but left no index is not servable, so it must not look successful.
CANNOT_INDEX = 126

# Runs under `python3 -`; reads the TAU_ARTIFACT_* values the shell exports before it. Written
# for any python3 >= 3.8 the user's image may ship (no f-strings needed, no newer APIs).
PROGRAM = """\
import datetime, json, os, pathlib, shutil, sys

env = os.environ
artifact, run = env["TAU_ARTIFACT_CHECKPOINT"], env["TAU_ARTIFACT_RUN"]
hot = pathlib.Path(env.get("TAU_CHECKPOINTS_DIR") or "/mnt/checkpoints")
durable = pathlib.Path(env.get("TAU_DURABLE_CHECKPOINTS_DIR") or "/data/checkpoints")
rel = pathlib.PurePosixPath(artifact)
# Validation already refused such paths; the PVC is shared by every run of the namespace, so
# the step checks again rather than write into another run's directory.
if rel.is_absolute() or any(p in ("", ".", "..") for p in artifact.split("/")):
    sys.exit("tau: refusing checkpoint path %r (must be relative, no '.' or '..')" % artifact)
run_dir = durable / "finetunes" / run
candidates = [hot / rel, hot / "finetunes" / run / rel, durable / rel, run_dir / rel]
if env.get("TAU_OUTPUT_DIR"):
    candidates.append(pathlib.Path(env["TAU_OUTPUT_DIR"]) / rel)
source = next((c for c in candidates if c.exists()), None)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def inside(path, root):
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


entry = {"name": "checkpoint", "manifest_path": artifact, "kind": "", "source_path": "",
         "durable_path": "", "status": "missing", "size_bytes": 0, "file_count": 0}
if source is None:
    print("tau: checkpoint %r not found after the run; looked in %s" % (
        artifact, ", ".join(str(c) for c in candidates)), file=sys.stderr)
else:
    started = now()
    target = source
    if not inside(source, durable.parent):
        # Node-local scratch does not outlive the pod: copy the artifact to the PVC. Data only,
        # since Azure Files refuses the utime calls of metadata-preserving copies.
        target = run_dir / "artifacts" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not inside(target, run_dir):
            sys.exit("tau: refusing to copy the checkpoint outside %s" % run_dir)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True, copy_function=shutil.copyfile)
        else:
            shutil.copyfile(source, target)
    files = [p for p in target.rglob("*") if p.is_file()] if target.is_dir() else [target]
    mtime = datetime.datetime.fromtimestamp(target.stat().st_mtime, datetime.timezone.utc)
    entry.update(kind="directory" if target.is_dir() else "file", source_path=str(source),
                 durable_path=str(target), status="ready",
                 size_bytes=sum(p.stat().st_size for p in files), file_count=len(files),
                 mtime=mtime.strftime("%Y-%m-%dT%H:%M:%SZ"), upload_started_at=started,
                 upload_completed_at=now())
index = {"schema_version": 1, "run": run, "namespace": env.get("TAU_ARTIFACT_NAMESPACE", ""),
         "resource_name": env.get("TAU_ARTIFACT_RESOURCE", ""), "created_at": now(),
         "hot_root": str(hot), "durable_root": str(durable), "artifacts": [entry]}
run_dir.mkdir(parents=True, exist_ok=True)
path = run_dir / "artifacts.json"
partial = run_dir / (".artifacts.json.%d.tmp" % os.getpid())
with open(str(partial), "w") as out:
    out.write(json.dumps(index, indent=2, sort_keys=True) + "\\n")
    out.flush()
    os.fsync(out.fileno())
os.replace(str(partial), str(path))
print("tau: wrote the artifact index %s (%s)" % (path, entry["status"]), file=sys.stderr)
"""


def script(plan: Plan) -> str:
    """The shell step that writes the index, or "" when no checkpoint is declared.

    Only the first pod of an Indexed Job (JOB_COMPLETION_INDEX 0, or unset) writes: every
    rank sees the same PVC.
    """
    if not plan.storage.checkpoint_artifact:
        return ""
    values = (
        ("TAU_ARTIFACT_CHECKPOINT", plan.storage.checkpoint_artifact),
        ("TAU_ARTIFACT_RUN", plan.storage.finetune_run or plan.name),
        ("TAU_ARTIFACT_RESOURCE", plan.name),
        ("TAU_ARTIFACT_NAMESPACE", plan.namespace),
    )
    assign = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in values)
    return (
        'if [ "${JOB_COMPLETION_INDEX:-0}" = 0 ]; then\n'
        f"{assign}\n"
        "if ! command -v python3 >/dev/null 2>&1; then\n"
        '  echo "tau: storage.checkpoint is set but the image has no python3:'
        ' the artifact index was not written" >&2\n'
        f"  exit {CANNOT_INDEX}\n"
        "fi\n"
        "if ! python3 - <<'TAU_ARTIFACT_INDEX'\n"
        f"{PROGRAM}"
        "TAU_ARTIFACT_INDEX\n"
        "then\n"
        '  echo "tau: the artifact index was not written" >&2\n'
        f"  exit {CANNOT_INDEX}\n"
        "fi\n"
        "fi"
    )


def wrap_command(plan: Plan, argv: list[str]) -> list[str]:
    """`argv` followed by the index step when it succeeded; unchanged without a checkpoint."""
    step = script(plan)
    if not step:
        return argv
    return ["bash", "-c", '"$@" || exit $?\n' + step, "tau-artifact-index", *argv]
