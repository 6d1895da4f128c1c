"""Validate a parsed run config: the schema, then every offline rule, all problems at once.

Pure apart from the local-import check, which reads the entrypoint when it exists. Preset
resolution, GPU arithmetic and reading the entrypoint for real are render-time (resolve).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.errors import ConfigError, Diagnostic, Location
from tau.intent import runconfig
from tau.intent.load import RawDocument, SourceMap
from tau.intent.runconfig import RunConfig
from tau.intent.validate import (
    engine,
    env,
    image,
    imports,
    settings,
    storage,
    structure,
    workflow,
)
from tau.intent.validate.context import Context, canonical, lookup, split_path
from tau.intent.validate.findings import Findings
from tau.intent.workflow import probe
from tau.intent.workflow.model import Managed

MANAGED_MANIFEST = (
    "managed workflow manifests are outside tau run validate; validate direct "
    "tau run --config files with this command"
)

__all__ = ["RunConfig", "ValidConfig", "lookup", "validate"]


@dataclass(frozen=True)
class ValidConfig:
    """A config that passed every offline check: the typed config, where it came from, and
    where each of its values was written (for render-time diagnostics).
    """

    path: Path
    config: RunConfig
    source: SourceMap
    #: The schema-normalized data as written (aliases kept): what the config hash covers.
    data: dict[str, Any]
    warnings: tuple[Diagnostic, ...] = ()
    #: The dotted path the entrypoint was written at (`run.script`, `entrypoint`, ...).
    entry_path: str = "entrypoint"
    #: The engine as written (`engine` / `run.engine`), None when it was inferred.
    explicit_engine: str | None = None
    #: The entrypoint's bytes when validate's import check read them (the file is read once).
    entry_bytes: bytes | None = None
    #: A managed workflow's parts beyond the run config (tau.intent.workflow); None when direct.
    managed: Managed | None = None

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def engine(self) -> str:
        return self.config.engine

    @property
    def config_dir(self) -> Path:
        return self.path.parent

    def where(self, path: str) -> Location:
        """Where the value at a dotted config path was written (its nearest ancestor if unset)."""
        return self.source.value(split_path(path))


def validate(doc: RawDocument, *, name: str | None = None) -> ValidConfig:
    """Check a document and return it validated.

    Args:
        doc: the parsed file.
        name: a run name from the command line (`tau run NAME --config PATH`), which
            overrides the config's own.

    Raises:
        ConfigError: every error found (warnings found on the way ride along).
    """
    # probe is imported as a module: it reads validate.context, so a first import of either
    # package must not find the other half-initialized.
    if probe.is_managed(doc.data):
        raise ConfigError(
            [
                *doc.problems,
                Diagnostic(
                    "schema_version",
                    MANAGED_MANIFEST,
                    "a direct config sets `engine: job` or `engine: rayjob`",
                    doc.source.key(("schema_version",)),
                ),
            ]
        )
    findings = Findings(doc.source, list(doc.problems))
    ctx = Context(structure.check(doc, findings).data, findings, doc.path.parent)
    ctx.name = name or canonical(ctx.data, "name")[1]
    ctx.entry_path, ctx.entrypoint = canonical(ctx.data, "entrypoint")
    engine.select_engine(ctx)
    delegates = bool(ctx.get("workflow.file"))
    if delegates:
        # The manifest names the run; the wrapper only places it.
        workflow.check(ctx, managed=False)
    else:
        engine.check_name(ctx)
    if ctx.engine == engine.RAYJOB:
        engine.check_ray(ctx)
    else:
        engine.check_job(ctx)
    engine.check_launcher(ctx)
    env.check(ctx)
    storage.check(ctx)
    settings.check(ctx)
    image.check(ctx)
    imports.check(ctx)
    findings.raise_errors()
    config = runconfig.build(
        ctx.data, name=ctx.name or "", engine=ctx.engine, entrypoint=ctx.entrypoint
    )
    explicit = canonical(ctx.data, "engine")[1]
    return ValidConfig(
        doc.path,
        config,
        doc.source,
        ctx.data,
        findings.warnings,
        ctx.entry_path,
        explicit or None,
        ctx.entry_bytes,
    )
