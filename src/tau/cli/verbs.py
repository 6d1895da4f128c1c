"""The subcommand names of `tau run`, in a module that imports nothing.

`tau run NAME` means the subcommand NAME when NAME is one of these and the run target NAME
otherwise, so both the full command line (tau.cli.run) and the hand-parsed hot path
(tau.cli.fast) read the names from here: the hot path must never take a verb for a target.
"""

from __future__ import annotations

#: The real subcommands of `tau run`, exactly the seed's ten; a test asserts this set. Review
#: is the run root's --render and --diff, so a target may be named `render` or `diff`.
SUBCOMMANDS = (
    "validate",
    "schema",
    "explain-config",
    "list",
    "status",
    "logs",
    "get",
    "cancel",
    "resume",
    "history",
)
