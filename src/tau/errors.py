"""The small set of exceptions tau raises, the Diagnostic they carry, and the exit codes.

Pure. Core modules raise these; only the CLI turns them into text and an exit code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """Process exit codes, set by the CLI only."""

    OK = 0
    #: Invalid input: a bad config, flag value or argument, or a failed check.
    INVALID = 1
    #: The command exists in the surface but is not built yet.
    NOT_IMPLEMENTED = 2
    #: The cluster or its API refused or failed the request.
    CLUSTER = 3


@dataclass(frozen=True, order=True)
class Location:
    """A place in a source file; line and column are 1-based."""

    file: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a config, pointing at its place.

    Attributes:
        path: dotted config path such as ``compute.gpus`` ("" for the whole file).
        message: what is wrong, a lower-case fragment that quotes the bad value.
        hint: what to do about it, or None.
        location: where in the file, or None when it cannot be known.
        severity: ``error`` or ``warning``.
    """

    path: str
    message: str
    hint: str | None = None
    location: Location | None = None
    severity: str = "error"

    def sort_key(self) -> tuple[str, int, int, str, str]:
        loc = self.location
        if loc is None:
            return ("", 1 << 30, 0, self.path, self.message)
        return (loc.file, loc.line, loc.col, self.path, self.message)

    def format(self) -> str:
        head = f"{self.location}: " if self.location else ""
        subject = f"{self.path}: " if self.path and not self.message.startswith(self.path) else ""
        text = f"{head}{self.severity}: {subject}{self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class TauError(Exception):
    """Base of every error tau reports to a user; carries its exit code."""

    exit_code: ExitCode = ExitCode.INVALID

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def format(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class ConfigError(TauError):
    """Every problem found while loading, validating or resolving one config."""

    def __init__(self, diagnostics: list[Diagnostic] | tuple[Diagnostic, ...]) -> None:
        ordered = tuple(sorted(diagnostics, key=Diagnostic.sort_key))
        super().__init__("; ".join(d.message for d in ordered) or "invalid config")
        self.diagnostics = ordered

    def format(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)


class UsageError(TauError):
    """A command-line usage problem (bad flag value, wrong combination of arguments)."""


class NotImplementedYet(TauError):
    """A command of the surface that is not built yet."""

    exit_code = ExitCode.NOT_IMPLEMENTED

    def __init__(self, command: str) -> None:
        super().__init__(f"{command}: not implemented yet")


class ClusterError(TauError):
    """The cluster API refused or failed a request; raised at the I/O boundary only."""

    exit_code = ExitCode.CLUSTER

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        hint: str | None = None,
        reason: str | None = None,
    ) -> None:
        """`reason` tells a 404's two meanings apart: "NotFound" (the object is missing) or
        "NotServed" (the cluster does not serve its resource type, e.g. a CRD not installed).
        """
        super().__init__(message, hint=hint)
        self.status = status
        self.reason = reason
        if reason == "NotFound":
            # A name no object has is the caller's input, as a missing run is: one rule, exit 1.
            self.exit_code = ExitCode.INVALID


def run_command(call: Callable[[], object], prog: str = "tau") -> int:
    """Run one command of either CLI (`tau`, `taugrid-portal`) and return its exit code.

    Every way a command can end becomes an exit code here, so neither CLI ever shows a
    traceback: a usage error of the CLI framework (1, printed as `error: PROG ARGS: ...` with a
    hint, `prog` being the program's name), a TauError (its code), Ctrl-C
    (130), a closed stdout pipe (0: the reader has what it wanted), and a file or directory the
    command could not use (1, one line naming it).
    """
    import sys

    _catch_ctrl_c()
    try:
        result = call()
    except TauError as exc:
        sys.stderr.write(exc.format() + "\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:
        return int(ExitCode.OK)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.split(".")[0] not in PORTAL_MODULES:
            raise
        sys.stderr.write(portal_extra_missing([exc.name.split(".")[0]]).format() + "\n")
        return int(ExitCode.INVALID)
    except OSError as exc:
        sys.stderr.write(_os_error_line(exc) + "\n")
        return int(ExitCode.INVALID)
    except Exception as exc:
        if _is_parse_error(exc):
            from tau.usage import usage_error_text

            sys.stderr.write(usage_error_text(exc, prog) + "\n")
            return int(ExitCode.INVALID)
        raise
    if isinstance(result, int) and not isinstance(result, bool):
        return result
    return int(ExitCode.OK)


#: The modules of the `portal` extra (pyproject.toml): taugrid-portal's, never tau's.
PORTAL_MODULES = ("pyarrow", "jinja2", "markupsafe", "starlette", "uvicorn", "psycopg")


def portal_extra_missing(missing: list[str]) -> UsageError:
    """The error for a portal command run where tau was installed without `tau[portal]`."""
    from tau.build_info import extra_install_hint

    return UsageError(
        f"taugrid-portal needs tau's portal extra, which is not installed here (missing: "
        f"{', '.join(missing)})",
        hint=extra_install_hint("portal"),
    )


def _catch_ctrl_c() -> None:
    """Make Ctrl-C (SIGINT) raise KeyboardInterrupt even when tau was started with it ignored.

    A shell starts a background job (`cmd &` in a script) with SIGINT ignored, and Python then
    leaves it ignored: Ctrl-C, or a SIGINT sent to the process, would do nothing, and a watch
    would never end and probe pods never be deleted. The reference (Go's signal.Notify) takes
    the signal back in that case too. Only the main thread may install a handler.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _is_parse_error(exc: Exception) -> bool:
    """Whether `exc` is cyclopts' parse error. Asked of sys.modules, not by importing cyclopts:
    a command that never built the cyclopts app (the hot path, tau.cli.fast) cannot raise one,
    and importing cyclopts would cost that path more than all its other imports.
    """
    import sys

    cyclopts = sys.modules.get("cyclopts")
    return cyclopts is not None and isinstance(exc, cyclopts.CycloptsError)


def _os_error_line(exc: OSError) -> str:
    """The one line for a filesystem failure nothing more specific caught: what and where."""
    what = exc.strerror or type(exc).__name__
    where = f": {exc.filename}" if exc.filename else ""
    return f"error: {what}{where}"
