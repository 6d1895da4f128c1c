"""Validate a parsed run config: the schema, then every offline rule, all problems at once.

Pure apart from the local-import check, which reads the entrypoint when it exists. Preset
resolution, GPU arithmetic and reading the entrypoint for real are render-time (resolve).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.config.load import RawDocument, SourceMap
from tau.config.validate import engine, env, imports, settings, storage, structure
from tau.config.validate.context import Context, first, lookup
from tau.errors import ConfigError, Diagnostic

MANAGED_MANIFEST = (
    "managed workflow manifests are outside tau run validate; validate direct "
    "tau run --config files with this command"
)

__all__ = ["ValidConfig", "lookup", "validate"]


@dataclass(frozen=True)
class ValidConfig:
    """A config that passed every offline check, with its chosen engine and name."""

    path: Path
    data: dict[str, Any]
    engine: str
    name: str
    source: SourceMap
    warnings: tuple[Diagnostic, ...] = ()

    @property
    def config_dir(self) -> Path:
        return self.path.parent

    def get(self, dotted_path: str, default: Any = None) -> Any:
        return lookup(self.data, dotted_path, default)


def _is_managed(data: dict[str, Any]) -> bool:
    return "schema_version" in data and not (data.get("engine") or lookup(data, "run.engine"))


def validate(doc: RawDocument, *, name: str | None = None) -> ValidConfig:
    """Check a document and return it validated.

    Args:
        doc: the parsed file.
        name: a run name from the command line (`tau run NAME --config PATH`), which
            overrides the config's own.

    Raises:
        ConfigError: every error found (warnings found on the way ride along).
    """
    if _is_managed(doc.data):
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
    checked = structure.check(doc)
    ctx = Context(checked.data, doc.source, doc.path.parent)
    ctx.name = name or first(ctx.data, "run.name", "name")[1]
    engine.select_engine(ctx)
    engine.check_name(ctx)
    if ctx.engine == engine.RAYJOB:
        engine.check_ray(ctx)
    else:
        engine.check_job(ctx)
    engine.check_launcher(ctx)
    env.check(ctx)
    storage.check(ctx)
    settings.check(ctx)
    imports.check(ctx)
    found = [*doc.problems, *checked.diagnostics, *ctx.out]
    if any(d.severity == "error" for d in found):
        raise ConfigError(found)
    warnings = tuple(sorted(found, key=Diagnostic.sort_key))
    return ValidConfig(doc.path, ctx.data, ctx.engine, ctx.name or "", doc.source, warnings)
