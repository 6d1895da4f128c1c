"""`tau workspace`: TauWorkspace inspection and the repository's connection. Performs I/O."""

from __future__ import annotations

from cyclopts import App

from tau.cli._common import not_built

app = App(name="workspace", help="Inspect TauWorkspaces and this repository's connection.")
not_built(app, "list", "List TauWorkspaces", "tau workspace list")
not_built(app, "status", "Show one TauWorkspace", "tau workspace status")
not_built(app, "check", "Exit non-zero unless the workspace is Ready", "tau workspace check")
not_built(app, "connection", "Inspect tau/workspace.connection.yaml", "tau workspace connection")
