"""The chart values tau reads or sets, with meaning and default; which components are on. Pure
(except `load_values_files`, which reads the `-f` files an operator passes).

`tau cluster explain-values` prints this catalog; the install plan block uses the component
toggles to say what is installed by default and what was opted in.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tau.cluster.options import BASELINE_QUEUE_VALUE
from tau.errors import UsageError


@dataclass(frozen=True)
class ChartValue:
    """One chart value: its key, type, default, what it means and how tau uses it.

    Attributes:
        use: `sets` (tau passes it itself), `reads` (tau's checks depend on it) or `component`
            (turns a component on or off; listed in the install plan).
    """

    key: str
    type: str
    default: str
    use: str
    meaning: str


VALUES: tuple[ChartValue, ...] = (
    ChartValue(
        BASELINE_QUEUE_VALUE,
        "bool",
        "true",
        "sets",
        "Creates the baseline queue objects (clusterqueue/taugrid-cq, "
        "resourceflavor/taugrid-default, topology/default-node-topology). tau sets it to false "
        "for the bootstrap pass of a first install and for the drain before uninstall.",
    ),
    ChartValue(
        "kueue.enabled", "bool", "true", "component", "Installs the bundled Kueue controller."
    ),
    ChartValue(
        "kuberay.enabled", "bool", "true", "component", "Installs the bundled KubeRay operator."
    ),
    ChartValue(
        "tauCore.enabled",
        "bool",
        "true",
        "component",
        "Installs the tau-core controller that reconciles TauCluster and TauWorkspace.",
    ),
    ChartValue(
        "quotaGuard.enabled",
        "bool",
        "true",
        "component",
        "Serves TauQuotaRequest (mutationMode ReportOnly); `validate installation` checks it.",
    ),
    ChartValue(
        "nodeHealth.enabled",
        "bool",
        "false",
        "component",
        "Opt-in node-level GPU health monitoring (NVLink, ECC, InfiniBand).",
    ),
    ChartValue(
        "observability.enabled",
        "bool",
        "false",
        "component",
        "Opt-in cluster and workload observability (metrics scraping and dashboards).",
    ),
    ChartValue(
        "multiKueue.enabled",
        "bool",
        "false",
        "component",
        "Opt-in MultiKueue: dispatch admitted workloads to worker clusters.",
    ),
    ChartValue(
        "tauCluster.managementMode",
        "Observe|Reconcile",
        "Observe",
        "reads",
        "TauCluster spec.managementMode: Observe reports drift, Reconcile corrects it.",
    ),
    ChartValue(
        "tauCluster.deletionPolicy",
        "Retain|DeleteManaged",
        "Retain",
        "reads",
        "TauCluster spec.deletionPolicy: what happens to managed objects when TauCluster goes.",
    ),
    ChartValue(
        "tauCluster.queues.ownership",
        "External|Adopt|Manage",
        "External",
        "reads",
        "TauCluster spec.queues.ownership: whether tau-core owns the Kueue objects.",
    ),
    ChartValue(
        "tauCluster.workspaceDefaults.defaultQueue",
        "string",
        "jobqueue",
        "reads",
        "The LocalQueue a TauWorkspace gets when it names none.",
    ),
    ChartValue(
        "tauCluster.nodes.selector",
        "map",
        "{}",
        "reads",
        "TauCluster spec.nodes.selector: the nodes TauGrid considers (GPU node pools).",
    ),
)


def components() -> list[ChartValue]:
    return [v for v in VALUES if v.use == "component"]


def load_values_files(paths: Sequence[str]) -> list[dict[str, Any]]:
    """The `-f` files as mappings, in order.

    Raises:
        UsageError: a file cannot be read or is not a YAML mapping (names the file).
    """
    import yaml

    docs: list[dict[str, Any]] = []
    for path in paths:
        try:
            doc = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f'--values "{path}": cannot read it ({exc.strerror})') from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
            raise UsageError(f"{where}: --values file is not valid YAML") from None
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise UsageError(f'--values "{path}": the file must be a YAML mapping of chart values')
        docs.append(doc)
    return docs


def final_bool(
    documents: Sequence[dict[str, Any]], sets: Sequence[str], key: str, default: bool
) -> bool:
    """A boolean chart value after the values files, then the `--set` items (helm's order)."""
    value = default
    for doc in documents:
        found = _dig(doc, key.split("."))
        if isinstance(found, bool):
            value = found
    for item in sets:
        for part in _split_set(item):
            name, _, text = part.partition("=")
            if name.strip() == key:
                value = text.strip().lower() == "true"
    return value


def enabled_components(documents: Sequence[dict[str, Any]], sets: Sequence[str]) -> dict[str, bool]:
    """Which components end up on, and whether the baseline queue is created."""
    keys = [(v.key, v.default == "true") for v in components()] + [(BASELINE_QUEUE_VALUE, True)]
    return {key: final_bool(documents, sets, key, default) for key, default in keys}


def _dig(doc: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(doc, dict) or part not in doc:
            return None
        doc = doc[part]
    return doc


def _split_set(item: str) -> list[str]:
    # `--set a=1,b=2` sets two keys; an escaped comma (\,) stays inside a value.
    parts, current, escaped = [], "", False
    for ch in item:
        if escaped:
            current += ch
            escaped = False
        elif ch == "\\":
            current += ch
            escaped = True
        elif ch == ",":
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


def explain_table() -> str:
    """The catalog as an aligned table."""
    headers = ("KEY", "TYPE", "DEFAULT", "TAU", "MEANING")
    rows = [(v.key, v.type, v.default, v.use, v.meaning) for v in VALUES]
    widths = [max(len(r[i]) for r in (headers, *rows)) for i in range(4)]
    lines = []
    for row in (headers, *rows):
        lines.append(
            "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4]
        )
    return "\n".join(lines) + "\n"


def explain_json() -> str:
    return json.dumps({"values": [asdict(v) for v in VALUES]}, indent=2) + "\n"
