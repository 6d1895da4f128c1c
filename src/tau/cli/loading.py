"""How `tau run` finds and validates the config a command line means: one loader for the full
app (tau.cli.run) and its hot path (tau.cli.fast).

Performs I/O (files, stderr). Light on purpose: the hot path imports it without cyclopts.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from tau.intent.target import Target
    from tau.intent.validate import ValidConfig


def load_valid(
    target: str | None, config: Path | None, project: str | None, *, managed: Any = None
) -> tuple[ValidConfig, Target]:
    """The validated config the command line means, and where it was found (its project).

    The one loader of `tau run` and its hot path. `managed` (the Key Vault flags, as
    `tau.intent.workflow.probe.Options`) lets a managed workflow through: a manifest, or a
    direct config naming one in workflow.file, is then translated onto the run config.
    Without it (`tau run validate`) both are validated as direct configs, which refuses a
    manifest. Warnings and the translation's notes go to stderr.
    """
    from tau.intent import load, validate
    from tau.intent import target as targets

    found = targets.resolve(target, config, Path.cwd(), project)
    doc = load.load(display(found.path))
    valid = None
    if managed is not None:
        from tau.intent.workflow import probe

        if probe.applies(doc.data):
            from tau.intent.workflow import dispatch

            valid = dispatch.load_run(doc, managed._replace(name=found.name))
        elif managed.key_vault_flags:
            from tau.errors import UsageError
            from tau.intent.validate.env import ENV_KV_DIRECT

            flags = "--key-vault, --tenant-id and --workload-identity-client-id"
            raise UsageError(f"{flags}: {ENV_KV_DIRECT}", hint="remove the flags")
    if valid is None:
        valid = validate.validate(doc, name=found.name)
    for warning in valid.warnings:
        print(warning.format(), file=sys.stderr)
    for note in valid.managed.notes if valid.managed else ():
        print(note, file=sys.stderr)
    return valid, found


def display(path: Path) -> Path:
    """The path as the user would write it: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def print_preview(
    valid: ValidConfig, argv: Sequence[str], *, output: str, service_account: str | None
) -> int:
    """`--dry-run=client`: the run's objects on stdout, the render's warnings on stderr.

    `argv` is the command line (after `tau`) the tau-command annotation records.
    """
    import os

    from tau import pipeline
    from tau.provenance import collect

    result = pipeline.client_preview(
        valid, os.environ, collect(valid.config_dir, argv), service_account=service_account
    )
    for line in result.warnings:
        print(line, file=sys.stderr)
    sys.stdout.write(pipeline.dump(result.documents, output))
    return 0
