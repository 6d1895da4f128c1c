"""The dataset registry: register immutable versions, resolve references, move aliases, verify.

Performs I/O through a `Backend` (and reads real files for register and verify). Time comes from
an injected clock so records are reproducible in tests.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.registry import digest, layout, records
from tau.registry.backend import Backend
from tau.registry.errors import ConflictError, NotFoundError, RegistryError
from tau.registry.format import to_json

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """The default clock."""
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """``2026-12-02T15:04:05Z``: second precision, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_json(backend: Backend, path: str) -> dict[str, Any] | None:
    """Parse the document at `path`; None when absent; a clear error when it is not JSON."""
    raw = backend.read(path)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RegistryError(f"{backend.display(path)} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise RegistryError(f"{backend.display(path)} is not a JSON object")
    return doc


@dataclass(frozen=True)
class Registration:
    """The inputs of ``dataset register`` besides name, version and files."""

    purpose: str
    section: Mapping[str, Any]
    tags: Mapping[str, str]
    source: Mapping[str, str]
    location: Mapping[str, str]


class DatasetRegistry:
    """Dataset operations over one backend."""

    def __init__(self, backend: Backend, clock: Clock = utc_now) -> None:
        self.backend = backend
        self.clock = clock

    # --- reading -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Every dataset name in the registry."""
        return [n for n in self.backend.list(layout.DATASETS) if not n.startswith(".")]

    def versions(self, name: str) -> list[str]:
        """Every registered version of one dataset."""
        entries = self.backend.list(layout.dataset_dir(name))
        return [
            v
            for v in entries
            if v != "aliases"
            and not v.startswith(".")
            and self.backend.read(layout.dataset_record(name, v)) is not None
        ]

    def record(self, name: str, version: str) -> dict[str, Any] | None:
        """One version's record, or None."""
        return load_json(self.backend, layout.dataset_record(name, version))

    def list(
        self, purpose: str | None = None, tags: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        """Every record, sorted by name and version, filtered by purpose and tags."""
        if purpose is not None and purpose not in records.PURPOSES:
            raise RegistryError(f"--purpose must be one of: {', '.join(records.PURPOSES)}")
        found = []
        for name in self.names():
            for version in self.versions(name):
                rec = self.record(name, version)
                if rec is None or (purpose and rec.get("purpose") != purpose):
                    continue
                if tags and not records.tags_match(rec.get("tags") or {}, tags):
                    continue
                found.append(rec)
        return found

    def alias(self, name: str, alias: str) -> dict[str, Any]:
        """One alias record, or NotFoundError naming how to create it."""
        records.check_slug("alias", alias)
        doc = load_json(self.backend, layout.dataset_alias(name, alias))
        if doc is None:
            raise NotFoundError(
                f'dataset "{name}" has no alias "{alias}"',
                hint=f"set it with: tau data dataset alias set {name} {alias} VERSION",
            )
        return doc

    def resolve(self, text: str) -> dict[str, Any]:
        """The record a ``NAME[@VERSION|@ALIAS]`` names: a version first, then an alias.

        A bare name resolves through the ``latest`` alias.
        """
        ref = records.parse_dataset_ref(text)
        if ref.token is not None:
            rec = self.record(ref.name, ref.token)
            if rec is not None:
                return rec
            if self.backend.read(layout.dataset_alias(ref.name, ref.token)) is None:
                raise self._missing(ref.name, ref.token)
        target = self.alias(ref.name, ref.token or records.LATEST_ALIAS)
        rec = self.record(ref.name, str(target.get("version")))
        if rec is None:
            raise NotFoundError(
                f"alias {ref.name}:{target.get('alias')} points at missing version "
                f'"{target.get("version")}"'
            )
        return rec

    def _missing(self, name: str, token: str) -> NotFoundError:
        known = self.versions(name)
        if not known:
            return NotFoundError(
                f'dataset "{name}" is not registered',
                hint="list datasets with: tau data dataset list",
            )
        return NotFoundError(
            f'dataset {name} has no version or alias "{token}"',
            hint=f"versions: {', '.join(known)}",
        )

    # --- writing -----------------------------------------------------------------------------

    def register(self, ref_text: str, source_dir: Path, reg: Registration) -> dict[str, Any]:
        """Hash every file under `source_dir` and store an immutable, verified record.

        Raises:
            ConflictError: the version exists already (records are immutable).
            RegistryError: bad name, empty directory, or an invalid record.
        """
        ref = records.parse_dataset_version(ref_text)
        name, version = ref.name, str(ref.token)
        path = layout.dataset_record(name, version)
        if self.backend.read(path) is not None:
            raise self._exists(name, version)
        facts = digest.scan(source_dir)
        if not facts:
            raise RegistryError(f'"{source_dir}" holds no files to register')
        files = [{"path": f.path, "bytes": f.bytes, "sha256": f.sha256} for f in facts]
        location = dict(reg.location) or {"prefix": str(source_dir.absolute())}
        rec = records.build_dataset_record(
            name=name,
            version=version,
            purpose=reg.purpose,
            section=reg.section,
            files=files,
            digest=digest.dataset_digest(facts),
            created_at=rfc3339(self.clock()),
            tags=reg.tags,
            source=reg.source,
            location=location,
        )
        if not self.backend.write(path, to_json(rec).encode(), overwrite=False):
            raise self._exists(name, version)  # lost a race with another register
        return rec

    @staticmethod
    def _exists(name: str, version: str) -> ConflictError:
        return ConflictError(
            f"dataset {name}@{version} already registered "
            "(versions are immutable; register a new version)",
            hint=f"pick a new version, e.g. {name}@{version}.1",
        )

    def set_alias(
        self,
        name: str,
        alias: str,
        version: str,
        *,
        expect: str | None = None,
        expect_absent: bool = False,
    ) -> dict[str, Any]:
        """Point `alias` at an existing version, optionally compare-and-swap.

        Args:
            name: dataset name.
            alias: alias to move.
            version: target version; must be registered.
            expect: only move the alias if it currently points at this version.
            expect_absent: only create the alias if it does not exist yet.

        Raises:
            ConflictError: the expectation does not hold.
            NotFoundError: the target version is not registered.
        """
        records.check_slug("dataset name", name)
        records.check_slug("alias", alias)
        records.check_slug("version", version, dots=True)
        if expect is not None and expect_absent:
            raise RegistryError("--expect and --expect-absent cannot be used together")
        rec = self.record(name, version)
        if rec is None:
            raise self._missing(name, version)
        path = layout.dataset_alias(name, alias)
        doc = records.dataset_alias_record(
            rec,
            alias,
            self.backend.display(layout.dataset_record(name, version)),
            rfc3339(self.clock()),
        )
        return cas_alias(
            self.backend,
            path,
            doc,
            "version",
            f"{name}:{alias}",
            expect=expect,
            expect_absent=expect_absent,
        )

    # --- ref and verify ----------------------------------------------------------------------

    def ref(
        self, text: str, *, staged_root: str | None = None, base_url: str | None = None
    ) -> dict[str, Any]:
        """The resolved reference document a run consumes (``ref -o json``)."""
        rec = self.resolve(text)
        files = []
        for f in rec.get("files", []):
            entry = {k: f[k] for k in ("path", "bytes", "sha256", "token_count") if k in f}
            if staged_root:
                entry["uri"] = f"{staged_root.rstrip('/')}/{f['path']}"
            elif base_url:
                entry["uri"] = f"{base_url.rstrip('/')}/{f['path']}"
            files.append(entry)
        return {
            "name": rec["name"],
            "version": rec["version"],
            "purpose": rec["purpose"],
            "digest": rec["digest"],
            "assurance": rec.get("assurance"),
            "total_bytes": rec.get("total_bytes"),
            "record_path": self.backend.display(layout.dataset_record(rec["name"], rec["version"])),
            "files": files,
        }

    def verify(self, text: str, from_dir: Path | None = None) -> dict[str, Any]:
        """Re-hash the real files and compare them with the record.

        Returns:
            ``{name, version, ok, record_digest, actual_digest, source, mismatches[]}``.
        """
        rec = self.resolve(text)
        root = from_dir if from_dir is not None else record_source(rec)
        expected = {f["path"]: f for f in rec.get("files", [])}
        present = set(digest.list_files(root))
        facts = digest.scan(root, sorted(present))
        mismatches = [f"missing file: {p}" for p in sorted(set(expected) - present)]
        mismatches += [f"extra file: {p}" for p in sorted(present - set(expected))]
        for fact in facts:
            want = expected.get(fact.path)
            if want is None:
                continue
            if int(want.get("bytes", -1)) != fact.bytes:
                mismatches.append(
                    f"size mismatch: {fact.path}: record {want.get('bytes')} bytes, "
                    f"actual {fact.bytes} bytes"
                )
            if str(want.get("sha256", "")).lower() != fact.sha256:
                mismatches.append(
                    f"sha256 mismatch: {fact.path}: record {want.get('sha256')}, "
                    f"actual {fact.sha256}"
                )
        actual = digest.dataset_digest(facts)
        if digest.dataset_digest(rec.get("files", [])) != rec.get("digest"):
            mismatches.append("record digest does not match the record's own file list")
        if actual != rec.get("digest") and not mismatches:
            mismatches.append("digest mismatch")
        return {
            "name": rec["name"],
            "version": rec["version"],
            "ok": not mismatches,
            "record_digest": rec.get("digest"),
            "actual_digest": actual,
            "source": str(root),
            "mismatches": mismatches,
        }


def record_source(rec: Mapping[str, Any]) -> Path:
    """The local directory a record points at; az:// pointers need ``--from``."""
    if rec.get("account"):
        raise RegistryError(
            f"{rec['name']}@{rec['version']} points at az://{rec['account']}/{rec.get('container')}"
            " and this build cannot read az://",
            hint="pass --from DIR with a local copy of the files",
        )
    if not rec.get("prefix"):
        raise RegistryError(
            f"{rec['name']}@{rec['version']} records no location", hint="pass --from DIR"
        )
    return Path(str(rec["prefix"]))


def cas_alias(
    backend: Backend,
    path: str,
    doc: dict[str, Any],
    field: str,
    label: str,
    *,
    expect: str | None,
    expect_absent: bool,
) -> dict[str, Any]:
    """Move an alias document with an optional expectation on its current `field`.

    The expectation is checked against a snapshot, and the write is a backend compare-and-swap
    against that same snapshot, so a concurrent writer makes the swap fail instead of being
    overwritten. An unconditional set retries on such a race; a conditional one re-checks.
    """
    for _ in range(1000):
        current = backend.read(path)
        target = None
        if current is not None:
            try:
                target = json.loads(current).get(field)
            except (ValueError, AttributeError):
                target = None  # a corrupt pointer can still be replaced
        if expect_absent and current is not None:
            raise ConflictError(
                f"alias {label} already exists (points at {target})",
                hint="drop --expect-absent, or pass --expect " + str(target),
            )
        if expect is not None and target != expect:
            shown = "is absent" if current is None else f"points at {target}"
            raise ConflictError(
                f"alias {label} {shown}, not {expect}", hint="re-read it with alias get and retry"
            )
        if backend.cas(path, current, to_json(doc).encode()):
            return doc
    raise ConflictError(f"alias {label} kept changing under concurrent writers; retry")


def env_lines(refdoc: Mapping[str, Any], prefix: str) -> str:
    """``ref -o env``: ``<PREFIX>_URIS``, ``_SHA256S`` and ``_TOKEN_COUNTS``, comma-separated."""
    if not re.fullmatch(r"[A-Z_][A-Z0-9_]*", prefix):
        raise RegistryError(
            f'invalid --env-prefix "{prefix}"',
            hint="use uppercase letters, digits and underscores, e.g. WEB_DATA",
        )
    files = refdoc["files"]
    if any("uri" not in f for f in files):
        raise RegistryError(
            "-o env needs --staged-root or --base-url (the registry never mints SAS URLs)"
        )
    values = {
        "URIS": ",".join(f["uri"] for f in files),
        "SHA256S": ",".join(f["sha256"] for f in files),
        "TOKEN_COUNTS": ",".join(str(f.get("token_count", "")) for f in files),
    }
    return "".join(f"{prefix}_{k}={shlex.quote(v)}\n" for k, v in values.items())
