"""The preset catalog as `tau run explain-config --presets` prints it: what `policy.preset` takes.

Pure. One row per preset of the catalog tau resolves against (`$TAU_TOPOLOGY_POLICY`, else the
built-in one): its GPU shape, workers, lane, the LocalQueue and ClusterQueue it routes to, and
its description; a disabled preset says why.
"""

from __future__ import annotations

import json
from typing import Any

from tau.intent.presets import Catalog, Preset

_COLUMNS = ("preset", "gpus", "workers", "lane", "queue", "clusterqueue", "description")


def _gpus(preset: Preset) -> str:
    shape = preset.shape or "-"
    return f"{shape} ({preset.gpu_class})" if preset.gpu_class else shape


def _description(preset: Preset) -> str:
    text = preset.description or ""
    return f"disabled: {preset.disabled_reason}" if preset.disabled else text


def markdown(catalog: Catalog) -> str:
    """A heading line, then a table sorted by preset name."""
    lines = [
        f"Presets of {catalog.source} (the values of policy.preset; $TAU_TOPOLOGY_POLICY names "
        "another catalog)",
        "",
        "| " + " | ".join(_COLUMNS) + " |",
        "|" + "---|" * len(_COLUMNS),
    ]
    for name in sorted(catalog.presets):
        p = catalog.presets[name]
        cells = (
            p.name,
            _gpus(p),
            str(p.workers),
            p.lane,
            p.queue,
            p.cluster_queue,
            _description(p).replace("|", "\\|"),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def as_json(catalog: Catalog) -> str:
    """`{"source", "presets": [...]}`, each preset with its routing and shape fields."""
    presets: list[dict[str, Any]] = [
        {
            "name": p.name,
            "description": p.description,
            "shape": p.shape,
            "gpuClass": p.gpu_class,
            "workers": p.workers,
            "team": p.team,
            "lane": p.lane,
            "mode": p.mode,
            "placement": p.placement,
            "queue": p.queue,
            "clusterQueue": p.cluster_queue,
            "disabled": p.disabled,
            "disabledReason": p.disabled_reason,
        }
        for p in (catalog.presets[n] for n in sorted(catalog.presets))
    ]
    return json.dumps({"source": catalog.source, "presets": presets}, indent=2) + "\n"
