"""`experiment stellar|plot|open|serve` and `portal serve`: Stellar and the web servers.

Performs I/O. Not built yet: each command says so and exits 2.
"""

from __future__ import annotations

from typing import Annotated

from cyclopts import Parameter

from tau.portal.errors import NotBuilt

#: Any flags: the stubs take the real commands' arguments and refuse them all the same.
Rest = Annotated[str, Parameter(allow_leading_hyphen=True)]


def stellar(name: str, /, *tokens: Rest) -> int:
    """Render the Stellar dashboard of NAME (-o html|json|tui). Not built yet."""
    raise NotBuilt("taugrid-portal experiment stellar")


def plot(target: str, /, *tokens: Rest) -> int:
    """Write a deterministic SVG chart of one metric. Not built yet."""
    raise NotBuilt("taugrid-portal experiment plot")


def open_(target: str, /, *tokens: Rest) -> int:
    """Serve Stellar and open the browser. Not built yet."""
    raise NotBuilt("taugrid-portal experiment open")


def serve(*tokens: Rest) -> int:
    """Serve Stellar over HTTP. Not built yet."""
    raise NotBuilt("taugrid-portal experiment serve")


def portal_serve(*tokens: Rest) -> int:
    """Serve the unified observability portal. Not built yet."""
    raise NotBuilt("taugrid-portal portal serve")
