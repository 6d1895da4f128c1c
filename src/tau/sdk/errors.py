"""The one error the Python SDK raises, so `tau python` reports every problem as one line.

Pure. The reference SDK raised ValueError, RuntimeError and its own BuildArtifactError, and some
of them reached the user as tracebacks; here each is an SdkError (a TauError, exit 1) carrying
the reference's one-line text and, when the problem is in the user's own file, where.
"""

from __future__ import annotations

from tau.errors import Location, TauError


class SdkError(TauError):
    """A decorator argument, a module, a build or a submission the SDK cannot use."""

    def __init__(
        self, message: str, *, hint: str | None = None, location: Location | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.location = location

    def format(self) -> str:
        head = f"{self.location}: " if self.location else ""
        text = f"{head}error: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class BuildArtifactError(SdkError):
    """A build artifact that cannot be written, or read back unchanged."""
