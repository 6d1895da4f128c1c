"""`tau serve`: model services as a RayService or a Deployment. Performs I/O."""

from __future__ import annotations

from cyclopts import App

from tau.cli._common import not_built

app = App(name="serve", help="Deploy and manage model services.")
not_built(app, "deploy", "Render and apply a service", "tau serve deploy")
not_built(app, "status", "Show a service", "tau serve status")
not_built(app, "scale", "Scale a Deployment service", "tau serve scale")
not_built(app, "delete", "Delete a service (idempotent)", "tau serve delete")
