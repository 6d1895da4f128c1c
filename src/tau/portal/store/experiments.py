"""Experiment linking: `experiments tag-run` sets a run's experiment. Performs I/O."""

from __future__ import annotations

from typing import Any

from tau.portal.errors import NotFound
from tau.portal.store.core import Store
from tau.portal.store.ids import validate_id


def assign(
    store: Store, run_id: str, experiment_id: str, *, name: str | None, description: str = ""
) -> dict[str, Any]:
    """Point `run_id` at `experiment_id` (created with source `explicit` when new)."""
    validate_id("experiment", experiment_id)
    with store.writer() as w:
        run = w.get("runs", {"run_id": run_id})
        if run is None:
            raise NotFound(run_id)
        existing = w.get("experiments", {"experiment_id": experiment_id})
        if existing is None:
            w.put(
                "experiments",
                {
                    "experiment_id": experiment_id,
                    "project": run["project"],
                    "name": name or experiment_id,
                    "description": description,
                    "source": "explicit",
                    "created_at": w.stamp,
                    "updated_at": w.stamp,
                },
            )
        else:
            updated = dict(existing) | {"source": "explicit", "updated_at": w.stamp}
            if name:
                updated["name"] = name
            if description:
                updated["description"] = description
            w.replace("experiments", updated)
        if run["experiment_id"] != experiment_id:
            w.replace("runs", dict(run) | {"experiment_id": experiment_id})
        final = w.get("experiments", {"experiment_id": experiment_id}) or {}
    return {"run_id": run_id, "experiment_id": experiment_id, "name": final.get("name")}
