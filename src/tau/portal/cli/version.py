"""`taugrid-portal version [--short]`. Performs I/O (terminal)."""

from __future__ import annotations

from cyclopts import App

from tau import __version__

app = App(name="version", help="Print the taugrid-portal version.")


@app.default
def version(*, short: bool = False) -> int:
    """Print the taugrid-portal version.

    Args:
        short: Print only the bare version.
    """
    if short:
        print(__version__)
    else:
        print(f"taugrid-portal {__version__}")
    return 0
