"""`tau python`: the proxy to the optional Tau Python SDK. Not built yet."""

from __future__ import annotations

from cyclopts import App

from tau.cli._common import not_built

app = App(name="python", help="Proxy to the optional Tau Python SDK.")
for _sub in ("inspect", "build", "submit", "submit-build", "bootstrap", "doctor"):
    not_built(app, _sub, f"Tau Python SDK `{_sub}`", f"tau python {_sub}")
