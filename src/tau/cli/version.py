"""`tau version`: print the version, commit and build date. Performs I/O (terminal)."""

from __future__ import annotations

from cyclopts import App

from tau import __version__

COMMIT = "none"
BUILT = "unknown"

app = App(name="version", help="Print the tau version.")


@app.default
def version(*, short: bool = False) -> int:
    """Print the tau version.

    Args:
        short: Print only the bare version.
    """
    if short:
        print(__version__)
    else:
        print(f"tau {__version__}\n  commit: {COMMIT}\n  built:  {BUILT}")
    return 0
