"""`tau cluster validate topology`: check a ClusterQueue's ResourceFlavors against the nodes,
and with `--preset` the queue and priority objects the preset routes to.

`evaluate` is pure (facts in, report out); `gather` reads the facts with a constant number of
list calls whatever the size of the cluster (nodes, flavors, topologies and ResourceSlices once
each; the preset objects once each).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau.cluster.checks import ERROR, OK, WARN, Check
from tau.cluster.nodes import DEVICE_PLUGIN_GPU, DRA_GPU_DRIVER, MIG_PREFIX, dra_devices
from tau.intent.presets import Preset
from tau.k8s import meta
from tau.k8s.dra import SHARED_CLUSTER_QUEUE
from tau.k8s.meta import ANNOTATION_GPU_CONTRACT

#: The ClusterQueue checked without --cluster-queue or --preset: the chart's baseline queue.
DEFAULT_CLUSTER_QUEUE = SHARED_CLUSTER_QUEUE
ZONE_LABEL = meta.NODE_ZONE
RDMA_PREFIX = "rdma/"


@dataclass
class Facts:
    """Everything the topology checks look at."""

    cluster_queue: dict[str, Any] | None
    flavors: dict[str, dict[str, Any]]
    nodes: list[dict[str, Any]]
    topologies: dict[str, dict[str, Any]]
    slices: list[dict[str, Any]] | None
    local_queues: list[dict[str, Any]] = field(default_factory=list)
    workload_priority_classes: set[str] = field(default_factory=set)
    priority_classes: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Section:
    """A heading line and the checks under it."""

    heading: str
    checks: tuple[Check, ...]


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def _allocatable(node: dict[str, Any]) -> dict[str, Any]:
    return (node.get("status") or {}).get("allocatable") or {}


def _count(value: Any) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0


def _is_gpu(resource: str) -> bool:
    return resource == DEVICE_PLUGIN_GPU or resource.startswith(MIG_PREFIX)


def flavor_quotas(cluster_queue: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Flavor name → {resource: nominalQuota} from the ClusterQueue's resource groups. Pure."""
    quotas: dict[str, dict[str, str]] = {}
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            entry = quotas.setdefault(str(flavor.get("name")), {})
            for res in flavor.get("resources") or []:
                entry[str(res.get("name"))] = str(res.get("nominalQuota", "0"))
    return quotas


def _selector_text(selector: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))


def check_flavor(
    name: str,
    flavor: dict[str, Any] | None,
    quotas: dict[str, str],
    facts: Facts,
    dra_nodes: dict[str, int],
    *,
    needs_ib: bool = False,
) -> list[Check]:
    """Every check of one ResourceFlavor. Pure."""
    if flavor is None:
        return [Check(ERROR, "node-match", f'ResourceFlavor "{name}" does not exist')]
    spec = flavor.get("spec") or {}
    selector = {str(k): str(v) for k, v in (spec.get("nodeLabels") or {}).items()}
    matched = [n for n in facts.nodes if all(_labels(n).get(k) == v for k, v in selector.items())]
    checks = [_node_match(selector, matched, len(facts.nodes))]
    gpu_resources = sorted(r for r in quotas if _is_gpu(r))
    for resource in gpu_resources:
        checks.append(_gpu_resource(resource, quotas[resource], matched))
    if not matched:
        return checks  # zone, InfiniBand and GPU contract say nothing about zero nodes
    checks.append(_topology_zone(spec.get("topologyName"), matched, facts.topologies))
    checks.append(_ib(matched, needs_ib))
    contract = _contract(flavor, gpu_resources, matched, dra_nodes)
    checks.append(contract[1])
    checks.append(_slices(contract[0], matched, dra_nodes, facts.slices is not None))
    return checks


def _node_match(selector: dict[str, str], matched: list[dict[str, Any]], total: int) -> Check:
    if not selector:
        return Check(WARN, "node-match", f"no nodeLabels: the flavor matches all {total} nodes")
    if not matched:
        return Check(ERROR, "node-match", f"no node matches {_selector_text(selector)}")
    return Check(OK, "node-match", f"{len(matched)} nodes match {_selector_text(selector)}")


def _gpu_resource(resource: str, quota: str, matched: list[dict[str, Any]]) -> Check:
    exposed = sum(_count(_allocatable(n).get(resource, 0)) for n in matched)
    quota_n = _count(quota)
    if exposed == 0:
        return Check(ERROR, resource, f"quota {quota} but the matched nodes expose none")
    if exposed < quota_n:
        return Check(
            WARN,
            resource,
            f"quota {quota} exceeds the {exposed} allocatable on {len(matched)} nodes",
        )
    return Check(OK, resource, f"quota {quota}, {exposed} allocatable on {len(matched)} nodes")


def _topology_zone(
    topology: str | None, matched: list[dict[str, Any]], topologies: dict[str, dict[str, Any]]
) -> Check:
    if topology:
        obj = topologies.get(topology)
        if obj is None:
            return Check(ERROR, "topology-zone", f'Topology "{topology}" does not exist')
        levels = [str(lv.get("nodeLabel")) for lv in (obj.get("spec") or {}).get("levels") or []]
        missing = {lv: sum(1 for n in matched if lv not in _labels(n)) for lv in levels}
        lacking = [f"{count} nodes lack {lv}" for lv, count in missing.items() if count]
        if lacking:
            return Check(WARN, "topology-zone", f'Topology "{topology}": ' + "; ".join(lacking))
        return Check(
            OK, "topology-zone", f'Topology "{topology}" levels {", ".join(levels)} on every node'
        )
    zones = sorted({_labels(n)[ZONE_LABEL] for n in matched if ZONE_LABEL in _labels(n)})
    if not zones:
        return Check(WARN, "topology-zone", f"no {ZONE_LABEL} label on the matched nodes")
    if len(zones) > 1:
        return Check(
            WARN,
            "topology-zone",
            f"nodes span zones {', '.join(zones)}: multi-node jobs may cross zones",
        )
    return Check(OK, "topology-zone", f"all matched nodes in zone {zones[0]}")


def _ib(matched: list[dict[str, Any]], needs_ib: bool) -> Check:
    capable = sum(
        1
        for n in matched
        if any(k.startswith(RDMA_PREFIX) and _count(v) > 0 for k, v in _allocatable(n).items())
    )
    if matched and capable == len(matched):
        return Check(OK, "ib-capable", f"{capable}/{len(matched)} nodes expose RDMA (InfiniBand)")
    level = ERROR if needs_ib else WARN
    if capable:
        return Check(
            level, "ib-capable", f"only {capable}/{len(matched)} nodes expose RDMA (InfiniBand)"
        )
    why = (
        " but the preset places multi-node NCCL"
        if needs_ib
        else ": multi-node NCCL falls back to TCP"
    )
    return Check(level, "ib-capable", f"no matched node exposes RDMA (InfiniBand){why}")


def _contract(
    flavor: dict[str, Any],
    gpu_resources: list[str],
    matched: list[dict[str, Any]],
    dra_nodes: dict[str, int],
) -> tuple[str, Check]:
    declared = ((flavor.get("metadata") or {}).get("annotations") or {}).get(
        ANNOTATION_GPU_CONTRACT
    )
    names = {str((n.get("metadata") or {}).get("name")) for n in matched}
    on_dra = sum(1 for n in names if dra_nodes.get(n))
    plugin = sum(
        1 for n in matched if any(_is_gpu(k) and _count(v) > 0 for k, v in _allocatable(n).items())
    )
    contract = declared or ("device-plugin" if gpu_resources else "dra" if on_dra else "none")
    if contract not in ("device-plugin", "dra", "none"):
        return contract, Check(
            ERROR,
            "gpu-contract",
            f'{ANNOTATION_GPU_CONTRACT} "{contract}" must be device-plugin or dra',
        )
    if contract == "none":
        return contract, Check(OK, "gpu-contract", "CPU-only flavor (no GPU quota)")
    if contract == "device-plugin":
        if plugin == 0 and on_dra:
            return contract, Check(
                ERROR,
                "gpu-contract",
                "quota is in device-plugin GPUs but the nodes expose GPUs through DRA only",
            )
        if plugin < len(matched):
            return contract, Check(
                WARN,
                "gpu-contract",
                f"device-plugin: only {plugin}/{len(matched)} nodes expose GPUs",
            )
        return contract, Check(
            OK, "gpu-contract", f"device-plugin: {plugin}/{len(matched)} nodes expose GPUs"
        )
    if on_dra == 0:
        return contract, Check(
            ERROR, "gpu-contract", "DRA contract but no matched node publishes GPU devices"
        )
    return contract, Check(
        OK, "gpu-contract", f"dra: {on_dra}/{len(matched)} nodes publish GPU devices"
    )


def _slices(
    contract: str, matched: list[dict[str, Any]], dra_nodes: dict[str, int], served: bool
) -> Check:
    names = {str((n.get("metadata") or {}).get("name")) for n in matched}
    devices = sum(dra_nodes.get(n, 0) for n in names)
    if contract != "dra":
        if devices:
            return Check(
                WARN,
                "gpu-resourceslices",
                f"{devices} DRA GPU devices also published: GPUs may be requested twice",
            )
        return Check(OK, "gpu-resourceslices", f"not used ({contract} contract)")
    if not served:
        return Check(
            ERROR, "gpu-resourceslices", "the cluster does not serve resource.k8s.io ResourceSlices"
        )
    if not devices:
        return Check(
            ERROR,
            "gpu-resourceslices",
            f"no {DRA_GPU_DRIVER} devices published on the matched nodes",
        )
    return Check(
        OK, "gpu-resourceslices", f"{devices} {DRA_GPU_DRIVER} devices on {len(names)} nodes"
    )


def preset_checks(preset: Preset, facts: Facts) -> list[Check]:
    """The object checks of `--preset`. Pure."""
    checks = []
    queues = [
        q for q in facts.local_queues if (q.get("metadata") or {}).get("name") == preset.queue
    ]
    if preset.namespace:
        queues = [q for q in queues if q["metadata"].get("namespace") == preset.namespace]
    where = f' in namespace "{preset.namespace}"' if preset.namespace else ""
    if not queues:
        checks.append(Check(ERROR, "localqueue", f'LocalQueue "{preset.queue}" not found{where}'))
    else:
        wrong = [
            q for q in queues if (q.get("spec") or {}).get("clusterQueue") != preset.cluster_queue
        ]
        if wrong:
            checks.append(
                Check(
                    ERROR,
                    "localqueue",
                    f'LocalQueue "{preset.queue}"{where} points at ClusterQueue '
                    f'"{(wrong[0].get("spec") or {}).get("clusterQueue")}", '
                    f'not "{preset.cluster_queue}"',
                )
            )
        else:
            checks.append(
                Check(
                    OK,
                    "localqueue",
                    f'LocalQueue "{preset.queue}"{where} → ClusterQueue "{preset.cluster_queue}"',
                )
            )
    checks.append(
        Check(OK, "clusterqueue", f'ClusterQueue "{preset.cluster_queue}" exists')
        if facts.cluster_queue is not None
        else Check(ERROR, "clusterqueue", f'ClusterQueue "{preset.cluster_queue}" not found')
    )
    for label, wanted, present in (
        ("topology", preset.topology_name, set(facts.topologies)),
        ("workloadpriorityclass", preset.workload_priority_class, facts.workload_priority_classes),
        ("priorityclass", preset.pod_priority_class, facts.priority_classes),
    ):
        if not wanted:
            checks.append(Check(OK, label, "not required by the preset"))
        elif wanted in present:
            checks.append(Check(OK, label, f'"{wanted}" exists'))
        else:
            checks.append(Check(ERROR, label, f'"{wanted}" not found'))
    return checks


def evaluate(facts: Facts, cluster_queue: str, preset: Preset | None = None) -> list[Section]:
    """The report: preset object checks (if any), then one section per ResourceFlavor. Pure."""
    sections = []
    if preset is not None:
        sections.append(Section("objects:", tuple(preset_checks(preset, facts))))
    if facts.cluster_queue is None:
        if preset is None:
            sections.append(
                Section(
                    "", (Check(ERROR, "clusterqueue", f'ClusterQueue "{cluster_queue}" not found'),)
                )
            )
        return sections
    quotas = flavor_quotas(facts.cluster_queue)
    if preset is not None and preset.resource_flavor:
        quotas = {k: v for k, v in quotas.items() if k == preset.resource_flavor} or {
            preset.resource_flavor: {}
        }
    if not quotas:
        sections.append(
            Section(
                "",
                (Check(ERROR, "clusterqueue", f'ClusterQueue "{cluster_queue}" has no flavors'),),
            )
        )
        return sections
    dra = dra_devices(facts.slices)
    needs_ib = preset is not None and preset.placement == "multi-node-nccl"
    for name in sorted(quotas):
        checks = check_flavor(
            name, facts.flavors.get(name), quotas[name], facts, dra, needs_ib=needs_ib
        )
        sections.append(Section(f"resourceflavor: {name}", tuple(checks)))
    return sections


def gather(api: Any, cluster_queue: str, *, with_preset: bool, context: str | None) -> Facts:
    """Read every fact with one call per resource type (I/O)."""
    from tau.kube import operator as k

    def by_name(items: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
        return {str(i["metadata"]["name"]): i for i in items or []}

    facts = Facts(
        cluster_queue=k.get_object(api, k.CLUSTERQUEUE, cluster_queue, context=context),
        flavors=by_name(k.list_objects(api, k.RESOURCE_FLAVOR, context=context)),
        nodes=k.list_nodes(api, context=context),
        topologies=by_name(k.list_objects(api, k.TOPOLOGY, context=context, missing_ok=True)),
        slices=k.list_resource_slices(api, context=context),
    )
    if with_preset:
        facts.local_queues = k.list_objects(api, k.LOCALQUEUE, context=context) or []
        facts.workload_priority_classes = set(
            by_name(
                k.list_objects(api, k.WORKLOAD_PRIORITY_CLASS, context=context, missing_ok=True)
            )
        )
        facts.priority_classes = set(
            by_name(k.list_objects(api, k.PRIORITY_CLASS, context=context))
        )
    return facts


def report(header: list[str], sections: list[Section]) -> tuple[str, list[Check]]:
    """The printed report and every check in it."""
    from tau.cluster.checks import summary

    lines = list(header)
    everything: list[Check] = []
    for section in sections:
        if section.heading:
            lines.append(section.heading)
        lines += [c.line() for c in section.checks]
        everything += section.checks
    lines.append(summary(everything))
    return "\n".join(lines) + "\n", everything
