"""Read back and verify a `tau python build` artifact before anything of it is submitted.

Performs filesystem reads only. A build may have travelled (checked in, copied, reviewed)
between `tau python build` and `tau python submit-build`, so nothing in it is trusted: every
path must stay inside the build folder (even through symlinks), every staged file must have
the size and SHA-256 the index records, and every workload must name its config among its
files. Any failure is one BuildArtifactError line, in the reference SDK's words, so a user
sees exactly which entry of which file is wrong.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from tau.sdk.errors import BuildArtifactError
from tau.sdk.generate import SecretLocator, StagedFile
from tau.sdk.secrets import SecretSource

INDEX_FILE = "tau-build.yaml"
BUILD_KIND = "tau.python.build"
SCHEMA_VERSION = 1
INVALID_RECORD = "Tau build contains an invalid workload record"


@dataclass(frozen=True)
class ArtifactFile:
    """One verified staged file of a workload."""

    name: str  # its file name inside the workload folder (and in /script)
    path: Path  # absolute, inside the build root
    role: str
    staged_as: str | None
    sha256: str
    size: int


@dataclass(frozen=True)
class ArtifactWorkload:
    """One verified workload record, with its paths made absolute under the build root."""

    kind: str
    name: str
    namespace: str | None
    resource_name: str
    attribute: str | None
    config_path: Path
    config_rel: str  # the config's path as the index writes it, relative to the build root
    folder: Path
    files: tuple[ArtifactFile, ...]
    after: str | None = None
    upstream_checkpoint: str | None = None
    generated_secret: str | None = None
    secret_sources: list[SecretLocator] = field(default_factory=list)


@dataclass(frozen=True)
class Artifact:
    """A verified build: its resolved root, its index as read, and its workloads in order."""

    root: Path
    index: dict[str, Any]
    workloads: list[ArtifactWorkload]

    def staged_config(
        self, workload: ArtifactWorkload, *, secret_payload: Path | None = None
    ) -> dict[str, Any]:
        """See the module-level staged_config."""
        return staged_config(workload, secret_payload=secret_payload)

    def files(self, workload: ArtifactWorkload) -> list[StagedFile]:
        """See the module-level staged_files."""
        return staged_files(workload)


def load_artifact(path: Path) -> Artifact:
    """Load the build at `path` (its folder or its tau-build.yaml) and verify all of it.

    Raises:
        BuildArtifactError: the index is missing, unreadable or malformed, a path is unsafe
            or missing, a file's size or digest differs, or a workload record is incomplete.
    """
    root = path.expanduser()
    if root.name == INDEX_FILE and root.is_file():
        root = root.parent
    index_path = root / INDEX_FILE
    if not index_path.is_file():
        raise BuildArtifactError(f"Tau build manifest not found: {index_path}")
    index = _read_index(index_path)

    records = index.get("workloads")
    if not isinstance(records, list) or not records:
        raise BuildArtifactError(f"{index_path} workloads must be a non-empty list")
    seen: set[str] = set()
    verified: list[tuple[dict[str, Any], Path, tuple[ArtifactFile, ...]]] = []
    for record in records:
        if not isinstance(record, dict):
            raise BuildArtifactError(f"{index_path} workload entries must be mappings")
        config = _inside(root, record.get("config"), subject="workload config")
        files = _verify_files(root, index_path, record.get("files"), seen)
        if config not in {f.path for f in files}:
            raise BuildArtifactError(
                f"{index_path} workload config {record.get('config')!r} is not listed in files"
            )
        verified.append((record, config, files))

    workloads = [_workload(record, config, files) for record, config, files in verified]
    return Artifact(root=root.resolve(), index=index, workloads=workloads)


def staged_config(workload: ArtifactWorkload, *, secret_payload: Path | None) -> dict[str, Any]:
    """The workload's generated tau.yaml as a dict, re-verified as it is read.

    Its paths stay relative to the workload folder: the submission writes the dict next to a
    copy of the staged files. `secret_payload`, when given, is recorded as
    `workflow.secret_payload` (the file holding the values read from the secret sources).
    """
    data = _verified_bytes(_config_file(workload))
    try:
        doc = yaml.safe_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BuildArtifactError(
            f"cannot read Tau build config {workload.config_path}: {_one_line(exc)}"
        ) from None
    if not isinstance(doc, dict):
        raise BuildArtifactError(f"{workload.config_path} must contain a mapping")
    if secret_payload is not None:
        workflow = doc.setdefault("workflow", {})
        if not isinstance(workflow, dict):
            raise BuildArtifactError(f"{workload.config_path} workflow must be a mapping")
        workflow["secret_payload"] = str(secret_payload)
    return doc


def staged_files(workload: ArtifactWorkload) -> list[StagedFile]:
    """Every staged file with its bytes, re-verified as read, in the index's order.

    The build was verified when loaded; reading again through the digest check means a file
    swapped in between cannot reach the cluster.
    """
    return [StagedFile(f.name, _verified_bytes(f), f.role, f.staged_as) for f in workload.files]


def _read_index(index_path: Path) -> dict[str, Any]:
    try:
        index = yaml.safe_load(index_path.read_bytes().decode("utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise BuildArtifactError(
            f"cannot read Tau build manifest {index_path}: {_one_line(exc)}"
        ) from None
    if not isinstance(index, dict):
        raise BuildArtifactError(f"{index_path} must contain a mapping")
    if index.get("kind") != BUILD_KIND:
        raise BuildArtifactError(
            f"{index_path} kind must be {BUILD_KIND!r}, got {index.get('kind')!r}"
        )
    version = index.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise BuildArtifactError(
            f"{index_path} schema_version must be {SCHEMA_VERSION}, got {version!r}"
        )
    return index


def _verify_files(
    root: Path, index_path: Path, entries: Any, seen: set[str]
) -> tuple[ArtifactFile, ...]:
    """Check one workload's file list; `seen` spans the whole build (no path twice anywhere)."""
    if not isinstance(entries, list) or not entries:
        raise BuildArtifactError(f"{index_path} workload files must be a non-empty list")
    files = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise BuildArtifactError(f"{index_path} file entries must be mappings")
        raw = entry.get("path")
        file_path = _inside(root, raw, subject="staged file")
        shown = str(raw)
        if shown in seen:
            raise BuildArtifactError(f"{index_path} repeats staged file path {shown!r}")
        seen.add(shown)
        size = entry.get("size")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise BuildArtifactError(f"{index_path} has invalid size for {shown!r}")
        staged = ArtifactFile(
            name=PurePosixPath(shown).name,
            path=file_path,
            role=str(entry.get("role") or ""),
            staged_as=_optional_text(entry.get("staged_as")),
            sha256=str(entry.get("sha256")),
            size=size,
        )
        _check_content(staged, file_path.read_bytes(), shown)
        files.append(staged)
    return tuple(files)


def _check_content(staged: ArtifactFile, data: bytes, shown: str) -> None:
    if len(data) != staged.size:
        raise BuildArtifactError(
            f"Tau build file size mismatch for {shown}: expected {staged.size}, got {len(data)}"
        )
    digest = hashlib.sha256(data).hexdigest()
    if digest != staged.sha256:
        raise BuildArtifactError(
            f"Tau build digest mismatch for {shown}: expected {staged.sha256}, got {digest}"
        )


def _verified_bytes(staged: ArtifactFile) -> bytes:
    try:
        data = staged.path.read_bytes()
    except OSError as exc:
        raise BuildArtifactError(
            f"cannot read Tau build file {staged.path}: {exc.strerror or exc}"
        ) from None
    _check_content(staged, data, str(staged.path))
    return data


def _config_file(workload: ArtifactWorkload) -> ArtifactFile:
    for f in workload.files:
        if f.path == workload.config_path:
            return f
    raise BuildArtifactError(f"workload config {workload.config_path} is not listed in files")


def _inside(root: Path, value: Any, *, subject: str) -> Path:
    """The absolute path of a build-relative POSIX path that must name a file inside `root`."""
    raw = str(value) if value else ""
    pure = PurePosixPath(raw)
    if not raw or pure.is_absolute() or ".." in pure.parts or pure.as_posix() != raw:
        raise BuildArtifactError(f"invalid {subject} path in Tau build: {raw!r}")
    base = root.resolve()
    candidate = base.joinpath(*pure.parts).resolve()
    if not candidate.is_relative_to(base):
        raise BuildArtifactError(f"{subject} escapes Tau build root: {raw!r}")
    if not candidate.is_file():
        raise BuildArtifactError(f"{subject} not found in Tau build: {raw!r}")
    return candidate


def _workload(
    record: dict[str, Any], config: Path, files: tuple[ArtifactFile, ...]
) -> ArtifactWorkload:
    """The typed view of one verified record; anything incomplete is an invalid record."""
    kind, name, resource = record.get("kind"), record.get("name"), record.get("resource_name")
    if kind not in ("train", "eval") or not _text(name) or not _text(resource):
        raise BuildArtifactError(INVALID_RECORD)
    optional = ("namespace", "attribute", "after", "upstream_checkpoint", "generated_secret")
    if any(record.get(k) is not None and not isinstance(record.get(k), str) for k in optional):
        raise BuildArtifactError(INVALID_RECORD)
    sources = _secret_locators(record.get("secret_sources"))
    secret = _optional_text(record.get("generated_secret"))
    if sources and not secret:
        raise BuildArtifactError("workload with secret_sources is missing generated_secret")
    return ArtifactWorkload(
        kind=str(kind),
        name=str(name),
        namespace=_optional_text(record.get("namespace")),
        resource_name=str(resource),
        attribute=_optional_text(record.get("attribute")),
        config_path=config,
        config_rel=str(record.get("config")),
        folder=config.parent,
        files=files,
        after=_optional_text(record.get("after")),
        upstream_checkpoint=_optional_text(record.get("upstream_checkpoint")),
        generated_secret=secret,
        secret_sources=sources,
    )


def _secret_locators(value: Any) -> list[SecretLocator]:
    """The record's secret locators (where to read each value at submit time)."""
    if not value:
        return []
    if not isinstance(value, list):
        raise BuildArtifactError("workload secret_sources must be a list")
    locators: dict[str, SecretLocator] = {}
    for entry in value:
        if not isinstance(entry, dict):
            raise BuildArtifactError("invalid source-backed secret metadata in Tau build")
        env_name, key, where = entry.get("env_name"), entry.get("key"), entry.get("source")
        if not _text(env_name) or not _text(key) or not isinstance(where, dict):
            raise BuildArtifactError("invalid source-backed secret metadata in Tau build")
        kind = where.get("kind")
        if kind not in ("env", "file"):
            raise BuildArtifactError(
                f"invalid source-backed secret kind for {env_name!r}: {kind!r}"
            )
        locator = where.get("name" if kind == "env" else "path")
        if not _text(locator):
            raise BuildArtifactError("invalid source-backed secret metadata in Tau build")
        source = (
            SecretSource(key=str(key), env=str(locator))
            if kind == "env"
            else SecretSource(key=str(key), path=str(locator))
        )
        if env_name in locators:
            raise BuildArtifactError(f"duplicate source-backed secret env name {env_name!r}")
        locators[str(env_name)] = SecretLocator(env_name=str(env_name), key=str(key), source=source)
    return [locators[name] for name in sorted(locators)]


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _one_line(exc: Exception) -> str:
    """Parser errors span lines (with a caret drawing); the error must stay one line."""
    return " ".join(str(exc).split()) or type(exc).__name__
