"""`taugrid-portal portal`: the unified observability portal (`serve`, from cli/web.py)."""

from __future__ import annotations

from cyclopts import App

app = App(name="portal", help="The unified observability portal.")
app.command(
    "tau.portal.cli.web:portal_serve",
    name="serve",
    help="Serve the portal: live cluster boards, plus Stellar when a store is given.",
)
