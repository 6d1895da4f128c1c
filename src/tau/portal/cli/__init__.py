"""The `taugrid-portal` command line: roots `experiment` (hidden alias `exp`), `portal`, `version`.

Performs I/O (terminal). Like `tau`, each root is imported only when it runs, and every
TauError becomes `error: <message>` and its exit code, never a traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Literal

from cyclopts import App

from tau.errors import run_command

ROOTS = ("experiment", "portal", "version")
#: `exp` is a hidden alias of `experiment`, rewritten before parsing so help never lists it.


def build_app() -> App:
    app = App(
        name="taugrid-portal",
        help="Tau experiment tracking and observability portal",
        result_action="return_value",
        exit_on_error=False,
        # Parse errors are printed by tau.errors.run_command in the error:/hint: form.
        print_error=False,
        version_flags=["--version"],
        version=_version,
        # Plain-text docstrings, as for `tau` (see tau.cli.build_app).
        help_format="plaintext",
        # Ctrl-C reaches main(), which says "interrupted" and exits 130 (cyclopts would exit 130
        # silently).
        suppress_keyboard_interrupt=False,
    )
    app.command("tau.portal.cli.experiment:app", name="experiment")
    app.command("tau.portal.cli.portal:app", name="portal")
    app.command("tau.portal.cli.version:app", name="version")
    app.command(print_completion, name="--completion")
    return app


def print_completion(shell: Literal["bash", "zsh", "fish"], /) -> int:
    """Print the shell completion script of taugrid-portal for SHELL (bash, zsh or fish).

    Write it once where the shell loads completions (README, "Shell completion").
    """
    script = build_app().generate_completion(prog_name="taugrid-portal", shell=shell)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0


def _version() -> str:
    from tau import __version__

    return __version__


def hoist_store(args: list[str]) -> list[str]:
    """Accept `experiment --store PATH VERB ...` (the reference's persistent flag) too.

    The flag is moved behind the verb, where every experiment command declares it.
    """
    if len(args) < 3 or args[0] not in ("experiment", "portal"):
        return args
    rest = args[1:]
    if rest[0] == "--store" and len(rest) >= 3:
        return [args[0], *rest[2:], "--store", rest[1]]
    if rest[0].startswith("--store=") and len(rest) >= 2:
        return [args[0], *rest[1:], rest[0]]
    return args


def main(argv: list[str] | None = None) -> int:
    """Run `taugrid-portal` and return the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "exp":  # the hidden legacy alias of `experiment`
        args[0] = "experiment"
    args = hoist_store(args)
    return run_command(lambda: _needs_extra(args), prog="taugrid-portal")


def _needs_extra(args: list[str]) -> Any:
    """Run the command once the portal extra is known to be installed (help and the version
    work without it); `tau` alone never needs it.
    """
    from importlib.util import find_spec

    from tau.errors import PORTAL_MODULES, portal_extra_missing

    if args[:1] not in ([], ["version"], ["--version"], ["--help"], ["-h"], ["--completion"]):
        missing = [m for m in PORTAL_MODULES if find_spec(m) is None]
        if missing:
            raise portal_extra_missing(missing)
    return _located(lambda: build_app()(args))


def _located(command: Callable[[], Any]) -> Any:
    """Run `command`; a damaged index met anywhere becomes the store's one located line."""
    try:
        return command()
    except Exception as exc:
        if type(exc).__module__ != "sqlite3":
            raise
        from tau.portal.store.core import damaged, is_damage

        if not is_damage(exc):
            raise
        raise damaged(exc) from None
