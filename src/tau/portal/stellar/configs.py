"""A run's config as dotted fields, and the fields that differ between runs. Pure.

The rule is `compare --configs` (`tau.portal.store.compare.config_diff`): the store's
`indexed_fields` (the flattened `dotted.path` → scalar object the writer indexed) are the fields;
a field missing from some runs counts as different (null there). Rows written without
`indexed_fields` fall back to flattening `normalized_json` with the writer's own `flatten`, so the
page and the CLI name the same fields. The run table and the snapshot's sweep and group diffs read
`run_config` instead: `normalized_json` alone, a list kept whole as one field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tau.portal.capture.track import flatten

#: Fields and runs shown in the page's config-differences table (the API keeps the counts).
MAX_FIELDS = 60
MAX_RUNS = 24


def _parse(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return None
    return raw


def values(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One run's config fields (several config files merge; later ones win on a clash)."""
    merged: dict[str, Any] = {}
    for row in rows:
        indexed = _parse(row.get("indexed_fields"))
        if isinstance(indexed, Mapping) and indexed:
            merged.update(indexed)
            continue
        parsed = _parse(row.get("normalized_json"))
        if isinstance(parsed, Mapping):
            merged.update(flatten(parsed))
    return dict(sorted(merged.items()))


def _flatten_keeping_lists(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested config → dotted keys with scalar values; a list stays whole, as JSON text."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key in sorted(value):
            out.update(
                _flatten_keeping_lists(value[key], f"{prefix}.{key}" if prefix else str(key))
            )
        return out
    if isinstance(value, list):
        return {prefix: json.dumps(value, sort_keys=True)}
    return {prefix: value}


def run_config(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One run's `normalized_json` configs as dotted fields (later ones win on a clash): the
    run table's columns, the sweep's parameters and the group diffs' config fields.
    """
    merged: dict[str, Any] = {}
    for config in configs:
        raw = config.get("normalized_json")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            continue
        if isinstance(parsed, Mapping):
            merged.update(_flatten_keeping_lists(parsed))
    return merged


def diff(runs: Sequence[Mapping[str, Any]], configs: Mapping[str, Sequence[Any]]) -> dict[str, Any]:
    """The config fields whose values differ between `runs` (run docs with `run_id`).

    Returns `{runs, fields: [{field, values: {run_id: value}}], field_count, identical_fields,
    truncated}`: only runs that have a config take part (a run without one would make every
    field differ); `values` holds every compared run, null where the field is missing.
    """
    per_run = {str(r["run_id"]): values(configs.get(str(r["run_id"]), ())) for r in runs}
    compared = [rid for rid, fields in per_run.items() if fields]
    keys = sorted({k for rid in compared for k in per_run[rid]})
    differing = []
    for key in keys:
        seen = {json.dumps(per_run[rid].get(key), sort_keys=True) for rid in compared}
        if len(seen) > 1:
            differing.append(
                {"field": key, "values": {rid: per_run[rid].get(key) for rid in compared}}
            )
    return {
        "runs": compared,
        "fields": differing[:MAX_FIELDS],
        "field_count": len(differing),
        "identical_fields": len(keys) - len(differing),
        "truncated": len(differing) > MAX_FIELDS,
    }
