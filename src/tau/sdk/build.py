"""Write the `tau python build` artifact: a folder of generated workloads plus its index.

Performs filesystem I/O only (no cluster, no secret values). The artifact is the reference
SDK's format, kept byte for byte so a build made here and one made there verify the same way:
`tau-build.yaml` (kind `tau.python.build`) and `workloads/<kind>-<name>/` holding each
workload's generated `tau.yaml`, wrapper, user module and extra scripts, every file sized and
SHA-256'd. Nothing in it depends on where or when it was built (no host paths, no
timestamps), so two builds of the same module are identical and a reviewer can diff them.

The output is published atomically: everything is written into a `.tau-build-*` folder next
to the destination, which replaces it in one rename at the very end. A failed build leaves
the destination exactly as it was (or absent), and `--force` only ever replaces a folder
that is itself a Tau build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from tau.sdk.errors import BuildArtifactError
from tau.sdk.generate import (
    SecretLocator,
    StagedFile,
    Workload,
    canonical_yaml,
    check_extra_destination,
    unsafe_name,
)

#: The index file at the root of every build; also what marks a folder as a Tau build.
INDEX_FILE = "tau-build.yaml"
BUILD_KIND = "tau.python.build"
SCHEMA_VERSION = 1
GENERATOR_NAME = "tau-py"
WORKLOADS_DIR = "workloads"
SERVE_REASON = "tau.serve maps directly to tau serve deploy and is not a managed workflow"

ROLES = frozenset({"config", "entrypoint", "user-module", "extra-script"})
_PREFIX = "tau python build"
_FILE_MODE = 0o644
_DIR_MODE = 0o755


def write(
    workloads: Sequence[Workload],
    output: Path,
    *,
    force: bool,
    serve: Sequence[tuple[str, str]] = (),
) -> Path:
    """Publish `workloads` as a build artifact at `output`; returns `output` (~ expanded).

    Args:
        workloads: the generated workloads, train first then eval (generate.plan's order,
            which is the order submit-build replays them in).
        output: the artifact folder to create (its parents are created too).
        force: replace `output` when it already is a Tau build; anything else there is
            refused, so a typo can never wipe an unrelated folder.
        serve: (attribute, name) of the module's tau.serve handles, recorded under
            `separate_serve` so the artifact says what it deliberately left out.

    Raises:
        BuildArtifactError: the destination is taken, a workload cannot be laid out safely,
            or the filesystem refused a write; the destination is then left untouched.
    """
    _check_workloads(workloads)
    output = output.expanduser()
    target = Path(os.path.abspath(output))
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _check_destination(target, shown=output, force=force)
        staging = Path(tempfile.mkdtemp(prefix=".tau-build-", dir=target.parent))
    except OSError as exc:
        raise _write_error(output, exc) from None
    try:
        records = [_write_workload(staging, w) for w in workloads]
        _write_file(staging / INDEX_FILE, canonical_yaml(index_document(records, serve)))
        os.chmod(staging, _DIR_MODE)
        _publish(staging, target)
    except OSError as exc:
        raise _write_error(output, exc) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return output


def index_document(
    records: Sequence[dict[str, Any]], serve: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """The `tau-build.yaml` document: what generated the build and one record per workload."""
    from tau import __version__

    doc: dict[str, Any] = {
        "generator": {"name": GENERATOR_NAME, "version": __version__},
        "kind": BUILD_KIND,
        "schema_version": SCHEMA_VERSION,
        "workloads": list(records),
    }
    if serve:
        doc["separate_serve"] = [
            {"attribute": attribute, "name": name, "reason": SERVE_REASON}
            for attribute, name in sorted(serve)
        ]
    return doc


def workload_folder(workload: Workload) -> PurePosixPath:
    """The workload's folder inside the artifact, relative to its root."""
    return PurePosixPath(WORKLOADS_DIR) / f"{workload.kind}-{workload.name}"


def file_record(folder: PurePosixPath, staged: StagedFile) -> dict[str, Any]:
    """What the index says about one staged file: enough to verify it before it is submitted."""
    record: dict[str, Any] = {
        "path": (folder / staged.name).as_posix(),
        "role": staged.role,
        "sha256": hashlib.sha256(staged.data).hexdigest(),
        "size": len(staged.data),
    }
    if staged.staged_as:
        record["staged_as"] = staged.staged_as
    return record


def workload_record(workload: Workload) -> dict[str, Any]:
    """The index's record of one workload: identity, lineage, files and secret locators.

    Secrets appear only as locators (which env var or file to read at submit time), never as
    values: the artifact is meant to be shared and checked in.
    """
    folder = workload_folder(workload)
    staged = sorted(workload.files, key=lambda f: f.name)
    config = next(f for f in staged if f.role == "config")
    record: dict[str, Any] = {
        "attribute": workload.attribute,
        "config": (folder / config.name).as_posix(),
        "files": [file_record(folder, f) for f in staged],
        "kind": workload.kind,
        "name": workload.name,
        "resource_name": workload.resource_name,
    }
    if workload.namespace:
        record["namespace"] = workload.namespace
    if workload.after:
        record["after"] = workload.after
    if workload.upstream_checkpoint:
        record["upstream_checkpoint"] = workload.upstream_checkpoint
    if workload.secret_sources:
        record["generated_secret"] = workload.generated_secret
        record["secret_sources"] = [
            locator_record(loc) for loc in sorted(workload.secret_sources, key=_by_env)
        ]
    return record


def locator_record(locator: SecretLocator) -> dict[str, Any]:
    """Where submit-build reads one Secret value from: an env var or a file, by name only."""
    source = locator.source
    where = (
        {"kind": "env", "name": source.env} if source.env else {"kind": "file", "path": source.path}
    )
    return {"env_name": locator.env_name, "key": locator.key, "source": where}


def _by_env(locator: SecretLocator) -> str:
    return locator.env_name


def _check_workloads(workloads: Sequence[Workload]) -> None:
    """Refuse, before anything is written, a workload that cannot be laid out safely.

    generate.plan already enforces the name and collision rules; they are checked again here
    because these values become folder and file names on disk, and a bad one must not escape
    the artifact or silently overwrite another file.
    """
    if not workloads:
        raise BuildArtifactError(f"{_PREFIX}: no @tau.train or @tau.eval handles found")
    folders: set[str] = set()
    for w in workloads:
        if w.kind not in ("train", "eval"):
            raise BuildArtifactError(f"{_PREFIX}: unknown workload kind {w.kind!r}")
        if problem := unsafe_name(w.name, _PREFIX):
            raise BuildArtifactError(problem)
        folder = workload_folder(w).as_posix()
        if folder in folders:
            raise BuildArtifactError(f"{_PREFIX}: two workloads would share {folder}")
        folders.add(folder)
        if w.secret_sources and not w.generated_secret:
            raise BuildArtifactError(
                f"{_PREFIX}: workload '{w.name}' reads secret sources but names no generated Secret"
            )
        _check_files(w)


def _check_files(w: Workload) -> None:
    for f in w.files:
        if f.role == "extra-script":
            check_extra_destination(f.name)
    names: set[str] = set()
    for f in w.files:
        if f.name in ("", ".", "..") or "/" in f.name or "\\" in f.name or "\0" in f.name:
            raise BuildArtifactError(
                f"{_PREFIX}: staged file name {f.name!r} of workload '{w.name}' is not a "
                "single path segment"
            )
        if f.name in names:
            raise BuildArtifactError(
                f"{_PREFIX}: workload '{w.name}' stages {f.name!r} more than once"
            )
        names.add(f.name)
        if f.role not in ROLES:
            raise BuildArtifactError(
                f"{_PREFIX}: staged file {f.name!r} of workload '{w.name}' has unknown role "
                f"{f.role!r}"
            )
    if sum(1 for f in w.files if f.role == "config") != 1:
        raise BuildArtifactError(
            f"{_PREFIX}: workload '{w.name}' must stage exactly one config file"
        )


def _write_workload(root: Path, workload: Workload) -> dict[str, Any]:
    """Write one workload's files under `root`; returns its index record."""
    folder = root.joinpath(*workload_folder(workload).parts)
    for directory in (folder.parent, folder):
        directory.mkdir(exist_ok=True)
        os.chmod(directory, _DIR_MODE)
    for staged in workload.files:
        _write_file(folder / staged.name, staged.data)
    return workload_record(workload)


def _write_file(path: Path, data: bytes) -> None:
    """Create `path` fresh with `data`, 0644 whatever the umask (the artifact is shareable)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, _FILE_MODE)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
        os.fchmod(out.fileno(), _FILE_MODE)


def _check_destination(target: Path, *, shown: Path, force: bool) -> None:
    """The destination must be free, or (with --force) an existing Tau build folder."""
    if not target.exists() and not target.is_symlink():
        return
    if not force:
        raise BuildArtifactError(f"{_PREFIX}: output already exists: {shown}; pass --force")
    if target.is_symlink() or not target.is_dir() or not (target / INDEX_FILE).is_file():
        raise BuildArtifactError(f"{_PREFIX}: refusing to replace non-Tau-build output: {shown}")


def _publish(staging: Path, target: Path) -> None:
    """Move the finished build into place; an old build is removed only once the new one is in.

    The old folder is first renamed aside (not deleted), so if the final rename fails it is
    put back and the destination is unchanged. A destination that appeared since the check
    makes the rename fail rather than be overwritten.
    """
    if not (target.exists() or target.is_symlink()):
        os.replace(staging, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=".tau-build-old-", dir=target.parent))
    try:
        os.replace(target, aside)
        try:
            os.replace(staging, target)
        except BaseException:  # Ctrl-C too: never leave the destination empty
            os.replace(aside, target)
            raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def _write_error(output: Path, exc: OSError) -> BuildArtifactError:
    """One line naming what could not be written, never a traceback."""
    what = exc.strerror or str(exc) or type(exc).__name__
    where = exc.filename or output
    return BuildArtifactError(f"{_PREFIX}: cannot write {output}: {what}: {where}")
