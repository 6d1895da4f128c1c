"""The preset catalog (a TopologyPolicy document): where it comes from, and its presets.

Performs I/O (reads the catalog file). Source order: `policy.topology_policy`, then
$TAU_TOPOLOGY_POLICY, then the built-in catalog in spec/. The environment is read by the
caller and passed in, so resolve stays a pure function of its inputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau.errors import ConfigError, Diagnostic, Location
from tau.intent.load import SAFE_LOADER
from tau.intent.spec import PRESET_CATALOG, spec_path

BUILTIN_SOURCE = "embedded:azure-topology-policy.yaml"
_REQUIRED = ("team", "lane", "queue", "clusterQueue", "gpuClass")
_FIELDS = {
    "description",
    "profile",
    "team",
    "lane",
    "mode",
    "placement",
    "shape",
    "gpuClass",
    "queue",
    "clusterQueue",
    "namespace",
    "resourceFlavor",
    "topologyName",
    "checkpointEvery",
    "workloadPriorityClassName",
    "podPriorityClassName",
    "reclaimable",
    "disabled",
    "disabledReason",
    "explain",
    "workers",
}


@dataclass(frozen=True)
class Preset:
    """One named workload shape and its Kueue routing."""

    name: str
    description: str = ""
    explain: str = ""
    profile: str = ""
    team: str = ""
    lane: str = ""
    mode: str = ""
    placement: str = ""
    shape: str = ""
    gpu_class: str = ""
    queue: str = ""
    cluster_queue: str = ""
    namespace: str = ""
    resource_flavor: str = ""
    topology_name: str = ""
    checkpoint_every: str = ""
    workload_priority_class: str = ""
    pod_priority_class: str = ""
    reclaimable: bool = False
    disabled: bool = False
    disabled_reason: str = ""
    workers: int = 1


@dataclass(frozen=True)
class Catalog:
    """The presets of one TopologyPolicy and the name of where it came from."""

    source: str
    presets: dict[str, Preset]

    def find(self, name: str) -> Preset | None:
        return self.presets.get(normalize_name(name))


def normalize_name(name: str) -> str:
    """Preset names compare lower-cased with surrounding dots trimmed."""
    return name.strip().strip(".").lower()


def label_normal(value: str) -> str:
    """Values compare as label values: lower-case, `_` and spaces become `-`."""
    return value.strip().lower().replace("_", "-").replace(" ", "-")


# A MIG slice (`1g.18gb`, or `2x1g.18gb` as a shape): presets place whole GPUs; MIG slices are
# requested per RayJob with compute.mig_profile.
_MIG = re.compile(r"(^|x)\d+g\.\d+gb$")


def gpu_classes() -> tuple[list[str], dict[str, str]]:
    """The supported GPU classes and their deprecated aliases, from the run-config schema."""
    from tau.intent.spec import run_config_schema

    node = run_config_schema()["properties"]["policy"]["properties"]["gpu_class"]
    return list(node["oneOf"][0]["enum"]), dict(node.get("x-tau-aliases", {}))


def _gpu_problems(raw: dict[str, Any]) -> list[str]:
    out = []
    shape = str(raw.get("shape") or "").strip().lower()
    if _MIG.search(shape):
        out.append(
            f'shape "{raw["shape"]}" is a MIG shape; presets place whole GPUs (request MIG '
            "slices with compute.mig_profile on a RayJob)"
        )
    gpu_class = raw.get("gpuClass")
    if gpu_class:
        canonical, aliases = gpu_classes()
        if label_normal(str(gpu_class)) not in (*canonical, *aliases):
            # The reference's topology enum check: `gpuClass="x" is invalid (allowed: a|b)`.
            out.append(f'gpuClass="{gpu_class}" is invalid (allowed: {"|".join(canonical)})')
    return out


def _preset(name: str, raw: dict[str, Any], where: str) -> Preset:
    unknown = sorted(set(raw) - _FIELDS)
    problems = [f"unknown field {key}" for key in unknown]
    problems += [f"{key} is required" for key in _REQUIRED if not raw.get(key)]
    workers = raw.get("workers", 1)
    if not isinstance(workers, int) or workers < 1:
        problems.append("workers must be a positive integer")
    elif workers > 1 and label_normal(str(raw.get("placement", ""))) != "multi-node-nccl":
        problems.append("workers > 1 requires placement multi-node-nccl")
    if raw.get("disabled") and not raw.get("disabledReason"):
        problems.append("a disabled preset needs a disabledReason")
    problems += _gpu_problems(raw)
    if problems:
        raise ConfigError(
            [
                Diagnostic(
                    f"spec.presets.{name}", f"preset {name!r}: {p}", location=Location(where)
                )
                for p in problems
            ]
        )

    def text(key: str, normal: bool = False) -> str:
        value = str(raw.get(key, "") or "")
        return label_normal(value) if normal else value

    return Preset(
        name=name,
        description=text("description"),
        explain=text("explain"),
        profile=text("profile"),
        team=text("team", True),
        lane=text("lane", True),
        mode=text("mode", True),
        placement=text("placement", True),
        shape=text("shape"),
        gpu_class=text("gpuClass", True),
        queue=text("queue"),
        cluster_queue=text("clusterQueue"),
        namespace=text("namespace"),
        resource_flavor=text("resourceFlavor"),
        topology_name=text("topologyName"),
        checkpoint_every=text("checkpointEvery"),
        workload_priority_class=text("workloadPriorityClassName"),
        pod_priority_class=text("podPriorityClassName"),
        reclaimable=bool(raw.get("reclaimable")),
        disabled=bool(raw.get("disabled")),
        disabled_reason=text("disabledReason"),
        workers=int(workers),
    )


def parse_catalog(text: str, source: str, where: str) -> Catalog:
    """Parse a TopologyPolicy document.

    Raises:
        ConfigError: the document is not a valid TopologyPolicy.
    """
    try:
        doc = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        raise ConfigError(
            [Diagnostic("", f"topology policy is not valid YAML: {exc}", location=Location(where))]
        ) from None
    if not isinstance(doc, dict) or doc.get("kind") != "TopologyPolicy":
        raise ConfigError(
            [
                Diagnostic(
                    "",
                    "topology policy must be a TopologyPolicy document (kind: TopologyPolicy)",
                    location=Location(where),
                )
            ]
        )
    raw = (doc.get("spec") or {}).get("presets") or {}
    if not isinstance(raw, dict):
        raise ConfigError(
            [Diagnostic("spec.presets", "spec.presets must be a mapping", location=Location(where))]
        )
    presets = {
        normalize_name(n): _preset(normalize_name(n), p or {}, where) for n, p in raw.items()
    }
    return Catalog(source, presets)


def load_catalog(explicit: Path | None, env_value: str | None) -> Catalog:
    """Load the catalog from the first source that is set.

    Args:
        explicit: `policy.topology_policy`, already resolved against the config directory.
        env_value: the value of $TAU_TOPOLOGY_POLICY, or None.
    """
    if explicit is not None or env_value:
        path = explicit if explicit is not None else Path(env_value or "")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            origin = "policy.topology_policy" if explicit is not None else "$TAU_TOPOLOGY_POLICY"
            raise ConfigError(
                [
                    Diagnostic(
                        origin,
                        f'{origin} "{path}": cannot read the topology '
                        f"policy ({exc.strerror or exc})",
                    )
                ]
            ) from None
        return parse_catalog(text, path.name, str(path))
    return _builtin()


_BUILTIN: Catalog | None = None


def _builtin() -> Catalog:
    global _BUILTIN
    if _BUILTIN is None:
        path = spec_path(PRESET_CATALOG)
        _BUILTIN = parse_catalog(path.read_text(encoding="utf-8"), BUILTIN_SOURCE, str(path))
    return _BUILTIN
