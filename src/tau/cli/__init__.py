"""The `tau` command line: exactly seven roots, each in its own module and loaded lazily.

Performs I/O (terminal). This module only wires the roots and maps errors to exit codes;
the work happens in the core modules each root calls. cyclopts is imported only when the
full app is built: `tau run TARGET --dry-run=client`, the hot path, is read by tau.cli.fast.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Literal

from tau.errors import run_command

if TYPE_CHECKING:
    from cyclopts import App

#: The public roots, in help order. A test asserts this set.
ROOTS = ("cluster", "workspace", "run", "serve", "data", "python", "version")

_HELP = {
    "cluster": "Platform operator commands: install, validate and uninstall TauGrid on a cluster "
    "(needs cluster-admin-level access; not for researchers).",
    "workspace": "Inspect TauWorkspaces and this repository's workspace connection.",
    "run": "Validate, render, submit and follow runs described by tau.yaml.",
    "serve": "Deploy and manage model services (RayService or Deployment).",
    "data": "The dataset and model registry.",
    "python": "Author decorator-based train/eval workflows with the Python SDK: inspect, build, "
    "submit, submit-build, doctor.",
    "version": "Print the tau version.",
}


#: Where each root's App lives. `tau python` is the Python SDK's own command group: the SDK
#: is the layer above this one (a client of the `tau run` path), so it is named, never imported.
_MODULES = {root: f"tau.cli.{root}:app" for root in ROOTS} | {"python": "tau.sdk.cli:app"}


def build_app() -> App:
    """The root App; roots are import paths so `tau --help` imports none of them."""
    from cyclopts import App

    app = App(
        name="tau",
        help="Repository-first AI workloads on Kubernetes.",
        # `tau --version` prints what `tau version` prints.
        version_flags=["--version"],
        version=_version_text,
        result_action="return_value",
        # Parse errors are raised to main(), which prints them in the error:/hint: form
        # (tau.usage) and exits 1 for bad usage like any bad input.
        exit_on_error=False,
        print_error=False,
        # Docstrings are plain text. The default Markdown rendering imports markdown-it (~60 ms
        # on every --help), swallows `<run>` as HTML and pads lines with trailing spaces.
        help_format="plaintext",
        # Ctrl-C reaches main(), which says "interrupted" and exits 130 (cyclopts would exit 130
        # silently).
        suppress_keyboard_interrupt=False,
    )
    for root in ROOTS:
        app.command(_MODULES[root], name=root, help=_HELP[root])
    # A flag, not an eighth root: the seven roots are the contract.
    app.command(print_completion, name="--completion")
    return app


def _version_text() -> str:
    from tau.build_info import text

    return text()


def print_completion(shell: Literal["bash", "zsh", "fish"], /) -> int:
    """Print the shell completion script of tau for SHELL (bash, zsh or fish).

    Write it once where the shell loads completions (see README, "Shell completion"); it
    takes seconds to generate, too long for every new shell.
    """
    script = build_app().generate_completion(prog_name="tau", shell=shell)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0


#: The arguments of the running command (after `tau`); a run records them as tau-command.
_INVOCATION: list[str] = []


def invocation() -> list[str]:
    """The arguments the current `tau` command was called with."""
    return list(_INVOCATION)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return the process exit code; TauError never becomes a traceback.

    A client dry run that tau.cli.fast understands runs without building the cyclopts app;
    every other command line goes to the full app.
    """
    args = sys.argv[1:] if argv is None else argv
    _INVOCATION[:] = args
    # A read-only lifecycle verb has a hot path of its own (tau.cli.fast_reads).
    if args[:1] == ["run"] and args[1:2] in (["status"], ["list"], ["get"], ["logs"]):
        from tau.cli import fast_reads

        read = fast_reads.parse(args)
        if read is not None:
            return run_command(lambda: fast_reads.run(read))
    # Only a dry run can take the hot path; any other line does not even load its parser.
    if args[:1] == ["run"] and any(arg.startswith("--dry-run") for arg in args):
        from tau.cli import fast

        request = fast.parse(args)
        if request is not None:
            return run_command(lambda: fast.client_dry_run(request, args))
    return run_command(lambda: build_app()(args))
