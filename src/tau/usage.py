"""The CLI framework's (cyclopts') usage errors in the project's `error:` / `hint:` form. Pure.

cyclopts draws its parse errors in a boxed panel, and some of its words mislead: a missing
positional NAME is "parameter --name requires an argument", a flag never typed "requires an
argument", an extra word "Unused Tokens: ['y']". Both CLIs print this module's text instead:
the command line as typed, what is wrong with it in the user's terms, and where the usage is.
The exception is read by its attributes and class name, never by importing cyclopts, which the
hot paths do not load.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

#: How a required flag's value is named in the hint, by the parameter's type.
_METAVARS = {"Path": "PATH", "int": "N", "float": "N"}


def usage_error_text(exc: Any, prog: str) -> str:
    """`error: PROG ARGS...: what is wrong` and a `hint:` line for cyclopts' error `exc`."""
    typed = shlex.join([prog, *(exc.root_input_tokens or [])])
    chain = " ".join([prog, *(exc.command_chain or [])])
    message, hint = _message(exc, chain)
    return f"error: {typed}: {message}\n  hint: {hint or f'see `{chain} --help`'}"


def _message(exc: Any, chain: str) -> tuple[str, str | None]:
    kind = type(exc).__name__
    unused = list(exc.unused_tokens or [])
    if kind == "MissingArgumentError" and exc.argument is not None:
        argument = exc.argument
        flag = exc.keyword or next((t.keyword for t in argument.tokens if t.keyword), None)
        if flag:
            return f"{flag} needs a value", None
        if argument.field_info.is_positional:
            return f"missing {argument.name.lstrip('-').upper()}", None
        value = _METAVARS.get(getattr(argument.hint, "__name__", ""), "VALUE")
        return f"{argument.name} is required", f"pass {argument.name} {value}; see `{chain} --help`"
    if kind == "UnusedCliTokensError" and unused:
        words = " ".join(f'"{t}"' for t in unused)
        return (
            f"unexpected {'argument' if len(unused) == 1 else 'arguments'} {words}: "
            f"`{chain}` takes no more",
            None,
        )
    text = _plain(str(exc))
    suggestion = _after(text, "Did you mean ").split("?")[0]
    if kind == "UnknownCommandError" and unused:
        what = "option" if unused[0].startswith("-") else "command"
        known = _after(text, "Available commands: ")
        known = "" if str(exc).rstrip().endswith("...") else known  # cyclopts cut it short
        hints = [f"did you mean {suggestion}?"] if suggestion else []
        hints += [f"commands: {known}; see `{chain} --help`"] if known else []
        return f'unknown {what} "{unused[0]}"', " ".join(hints) or None
    if kind == "UnknownOptionError":
        token = text.removeprefix("Unknown option: ").split(". Did you mean")[0]
        hint = f"did you mean {suggestion}? see `{chain} --help`" if suggestion else None
        return f'unknown option "{token}"', hint
    return text[:1].lower() + text[1:], None


def _after(text: str, marker: str) -> str:
    """What follows `marker` in `text` up to its sentence's end ('' when absent)."""
    _, found, rest = text.partition(marker)
    return re.split(r"(?<=[^.])\.(?:\s|$)", rest, maxsplit=1)[0].strip() if found else ""


def _plain(text: str) -> str:
    """One line without the closing period (cyclopts ends each sentence with one)."""
    return re.sub(r"\s+", " ", text).strip().rstrip(".")
