"""Start a Python process the way a script's background job starts it: with SIGINT ignored.

A shell runs `cmd &` in a script with SIGINT ignored, Python keeps an ignored SIGINT ignored,
and a suite run that way once saw Ctrl-C do nothing (a watch that never ended, probe pods left
until their timeout). Tests of Ctrl-C start tau through this, so they prove tau takes the
signal back whatever the caller's disposition, and they pass the same alone or under load.
"""

from __future__ import annotations

import sys

#: Ignore SIGINT, then become the real command (exec keeps an ignored signal ignored).
_LAUNCHER = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def python_ignoring_sigint(*args: str) -> list[str]:
    """The argv of `python ARGS...` started with SIGINT ignored."""
    return [sys.executable, "-c", _LAUNCHER, *args]
