"""The hot path of the CLI: `tau run [TARGET] --dry-run=client`, parsed by hand.

Performs I/O (terminal, files). A client dry run is the command users and CI run most, and
its cost was mostly start-up: building the cyclopts app and importing its dependencies took
as long as reading, validating and rendering the config. This module reads exactly one
shape of command line without cyclopts:

    run [TARGET] --dry-run=client [--config|-c PATH] [--output|-o yaml|json]
        [--project P] [--service-account S]

Anything else (another flag, a repeated one, --help, a `tau run` subcommand name anywhere,
a value that looks like a flag) gets None from `parse`, and tau.cli.main hands the command
line to the full cyclopts app unchanged. What it accepts it runs through the same steps as
the `tau run` command of tau.cli.run, in the same order, so stdout, stderr and the exit code
are the same (tests/test_cli_fast_path.py runs both on a matrix of command lines).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from tau.cli.verbs import SUBCOMMANDS

if TYPE_CHECKING:
    from collections.abc import Sequence


#: Long options taking a value, and the field of `Request` each sets.
_LONG = {
    "--dry-run": "dry_run",
    "--config": "config",
    "--output": "output",
    "--project": "project",
    "--service-account": "service_account",
}
#: Short options taking a value (as a separate token only: `-o yaml`).
_SHORT = {"-c": "config", "-o": "output"}
#: Values of --output this path prints; another value goes to the full app, which refuses it.
_FORMATS = ("yaml", "json")


class Request(NamedTuple):
    """A `tau run --dry-run=client` command line the hot path understood."""

    target: str | None
    config: Path | None
    output: str
    project: str | None
    service_account: str | None


def parse(args: Sequence[str]) -> Request | None:
    """The request `args` (the arguments after `tau`) make, or None when the full app must
    read them: any token this grammar does not cover sends the whole line there.
    """
    if len(args) < 2 or args[0] != "run":
        return None
    values: dict[str, str] = {}
    target: str | None = None
    tokens = iter(args[1:])
    for token in tokens:
        if token in SUBCOMMANDS:
            return None
        if not token.startswith("-"):
            if target is not None:
                return None
            target = token
            continue
        name, eq, value = token.partition("=")
        if eq and name in _LONG:
            field = _LONG[name]
        elif not eq and (token in _LONG or token in _SHORT):
            field = _LONG.get(token) or _SHORT[token]
            value = next(tokens, "")
        else:
            return None
        if field in values or not value or value.startswith("-") or value in SUBCOMMANDS:
            return None
        values[field] = value
    if values.get("dry_run") != "client" or values.get("output", "yaml") not in _FORMATS:
        return None
    config = values.get("config")
    return Request(
        target=target,
        config=Path(config) if config is not None else None,
        output=values.get("output", "yaml"),
        project=values.get("project"),
        service_account=values.get("service_account"),
    )


def client_dry_run(request: Request, argv: Sequence[str]) -> int:
    """Print the run's objects as `tau run ... --dry-run=client` does; `argv` is the command
    line (after `tau`) that the workload's tau-command annotation records.

    The steps are those of tau.cli.run's `run` for a client dry run without the Key Vault
    flags (which this grammar leaves to the full app): without them no run has a Key Vault,
    so its ServiceAccount check has nothing to check.

    Raises:
        TauError: the config, the target or the project is invalid (tau.errors.run_command
            prints it and picks the exit code, as for every command).
    """
    from tau.cli.loading import load_valid, print_preview
    from tau.intent.workflow.probe import Options

    valid, _ = load_valid(request.target, request.config, request.project, managed=Options())
    return print_preview(
        valid, argv, output=request.output, service_account=request.service_account
    )
