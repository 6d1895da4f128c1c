"""The registry's own error classes, all `TauError` subclasses so the CLI reports them plainly.

Pure.
"""

from __future__ import annotations

from tau.errors import ExitCode, TauError


class RegistryError(TauError):
    """Invalid registry input or a registry state that refuses the request (exit 1)."""


class NotFoundError(RegistryError):
    """A dataset, version, alias, model or run that does not exist."""


class ConflictError(RegistryError):
    """A write refused by immutability or by a failed compare-and-swap."""


class VerificationFailed(RegistryError):
    """`verify` found mismatches; the report has already been printed."""


class BackendNotBuilt(TauError):
    """A registry backend of the surface that this build does not provide (exit 2)."""

    exit_code = ExitCode.NOT_IMPLEMENTED
