"""Helpers shared by the CLI roots: stubs for commands not built yet, output-format checks.

Performs I/O (terminal).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated

from cyclopts import App, Parameter

from tau.errors import NotImplementedYet, UsageError
from tau.session import CONTEXT_HELP

#: The --context flag of every cluster command: one name, one help text.
ContextFlag = Annotated[str | None, Parameter(help=CONTEXT_HELP)]


def not_built(app: App, name: str, help_text: str, full_name: str) -> None:
    """Register `name` on `app` as a command that says it is not built yet and exits 2."""

    def command(*tokens: str) -> int:
        raise NotImplementedYet(full_name)

    command.__doc__ = f"{help_text} (not implemented yet)"
    app.command(command, name=name)


def check_output(value: str, allowed: Iterable[str]) -> str:
    """Return `value` when it is one of `allowed`, else a usage error listing the choices."""
    choices = tuple(allowed)
    if value in choices:
        return value
    if len(choices) == 1:
        raise UsageError(f"--output must be {choices[0]}")
    raise UsageError(f"--output must be one of: {', '.join(choices)}")
