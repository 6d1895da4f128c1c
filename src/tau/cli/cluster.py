"""`tau cluster`: platform operator commands (Helm install/uninstall, validation). Not built yet."""

from __future__ import annotations

from cyclopts import App

from tau.cli._common import not_built

app = App(name="cluster", help="Platform operator commands.")
not_built(app, "install", "Install or upgrade TauGrid with Helm", "tau cluster install")
not_built(app, "uninstall", "Uninstall the Helm-owned TauGrid resources", "tau cluster uninstall")
not_built(app, "explain-values", "Explain the Helm values", "tau cluster explain-values")

validate = App(name="validate", help="Read-only cluster checks.")
not_built(
    validate,
    "installation",
    "Re-run the install readiness report",
    "tau cluster validate installation",
)
not_built(validate, "nodes", "Probe GPU node health", "tau cluster validate nodes")
not_built(
    validate,
    "topology",
    "Check queues and flavors against a preset",
    "tau cluster validate topology",
)
app.command(validate)
