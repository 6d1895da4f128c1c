"""`tau data`: the dataset and model registry. Performs I/O."""

from __future__ import annotations

from cyclopts import App

from tau.cli._common import not_built

app = App(name="data", help="The dataset and model registry.")
dataset = App(name="dataset", help="The curated dataset registry.")
model = App(name="model", help="Durable checkpoints and their aliases.")
for _sub in ("list", "show", "register", "ref", "alias", "verify"):
    not_built(dataset, _sub, f"dataset {_sub}", f"tau data dataset {_sub}")
for _sub in ("list", "show", "best", "alias", "index"):
    not_built(model, _sub, f"model {_sub}", f"tau data model {_sub}")
app.command(dataset)
app.command(model)
