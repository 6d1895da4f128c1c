"""`tau version`: print the version, commit and build date. Performs I/O (terminal)."""

from __future__ import annotations

from cyclopts import App

from tau import __version__

app = App(name="version", help="Print the tau version.")


@app.default
def version(*, short: bool = False) -> int:
    """Print the tau version, the commit it was built from and when (as `tau --version`).

    Args:
        short: Print only the bare version.
    """
    from tau.build_info import text

    print(__version__ if short else text())
    return 0
