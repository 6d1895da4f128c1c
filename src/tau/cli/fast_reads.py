"""The hot path of the read-only lifecycle verbs: their common command lines, parsed by hand.

Performs I/O (terminal, cluster). `tau run status NAME` and its siblings are what a researcher
types over and over while a run starts; building the cyclopts app (and importing it) cost more
than the reads themselves. This module reads exactly these shapes without cyclopts:

    run status NAME [FLAGS] [--output|-o table|json]
    run list        [FLAGS] [--output|-o table|json]
    run get NAME    [FLAGS] [--output|-o table|json]
    run logs NAME   [FLAGS]

    FLAGS: --namespace|-n NS  --workspace W  --context C  --project P

Anything else (another flag, a repeated one, --help, a value that looks like a flag, a second
name) gets None from `parse`, and tau.cli.main hands the command line to the full app
unchanged. What it accepts runs through the same functions as the full app (tau.cli.reads), so
stdout, stderr and the exit code are the same (tests/test_cli_fast_path.py runs both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Long options taking a value, and the field each sets.
_LONG = {
    "--namespace": "namespace",
    "--workspace": "workspace",
    "--context": "context",
    "--project": "project",
    "--output": "output",
}
#: Short options taking a value (as a separate token only: `-n team`).
_SHORT = {"-n": "namespace", "-o": "output"}
#: The verbs, whether each takes a run name, and the --output values each prints here.
_VERBS = {
    "status": (True, ("table", "json")),
    "list": (False, ("table", "json")),
    "get": (True, ("table", "json")),
    "logs": (True, ()),
}


class Request(NamedTuple):
    """A read-only lifecycle command line the hot path understood."""

    verb: str
    name: str | None
    output: str
    namespace: str | None
    workspace: str | None
    context: str | None
    project: str | None


def parse(args: Sequence[str]) -> Request | None:
    """The request `args` (the arguments after `tau`) make, or None for the full app."""
    if len(args) < 2 or args[0] != "run" or args[1] not in _VERBS:
        return None
    named, formats = _VERBS[args[1]]
    values: dict[str, str] = {}
    name: str | None = None
    tokens = iter(args[2:])
    for token in tokens:
        if not token.startswith("-"):
            if not named or name is not None:
                return None
            name = token
            continue
        flag, eq, value = token.partition("=")
        if eq and flag in _LONG:
            field = _LONG[flag]
        elif not eq and (token in _LONG or token in _SHORT):
            field = _LONG.get(token) or _SHORT[token]
            value = next(tokens, "")
        else:
            return None
        if field in values or not value or value.startswith("-"):
            return None
        values[field] = value
    output = values.pop("output", None)
    if (named and name is None) or (output is not None and output not in formats):
        return None  # the full app names what is missing or wrong
    return Request(verb=args[1], name=name, output=output or "table", **_where(values))


def _where(values: dict[str, str]) -> dict[str, str | None]:
    return {f: values.get(f) for f in ("namespace", "workspace", "context", "project")}


def run(request: Request) -> int:
    """Run the verb as the full app would with the same flags.

    Raises:
        TauError: from the verb (tau.errors.run_command prints it and picks the exit code).
    """
    from tau.cli import reads

    place = reads.Place(request.namespace, request.workspace, request.context, request.project)
    name = request.name or ""
    if request.verb == "status":
        return reads.status(place.connect, name, fmt=request.output)
    if request.verb == "list":
        return reads.runs(place.connect, fmt=request.output)
    if request.verb == "get":
        return reads.results(place.connect, name, fmt=request.output)
    from tau.runs.logs import LogOptions

    return reads.logs(place.connect, name, LogOptions())
