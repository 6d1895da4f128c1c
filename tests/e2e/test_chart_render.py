"""The taugrid test chart (tests/e2e/chart/taugrid), rendered by the real helm binary: every
document parses and validates, the CRDs are structural and match what tau reads, the values tau
knows gate what they say, the priority tiers tau names exist, the baseline flavor is
topology-aware on the e2e nodes, and `helm lint` passes.

Fast and offline: helm runs `template` and `lint` with an empty kubeconfig; no cluster starts.
The helm binary is the one the e2e control plane builds (`python -m tests.e2e.controlplane.build`);
without it the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tau.cli import main
from tau.cluster.options import (
    BASELINE_QUEUE_OBJECTS,
    BASELINE_QUEUE_VALUE,
    DEFAULT_VERSION,
    Target,
)
from tau.cluster.readiness import BASELINE_CLUSTER_QUEUE, RELEASE_LABEL, TAU_CLUSTER_NAME
from tau.cluster.values import VALUES
from tau.k8s.kinds import (
    PRIORITY_CLASS,
    QUOTA_REQUEST,
    TAU_CLUSTER,
    TAU_WORKSPACE,
    WORKLOAD_PRIORITY_CLASS,
    ResourceType,
)
from tau.plan.resolve import DEFAULT_PRIORITY, HIGH_PRIORITY
from tau.workspaces.permissions import WORKSPACE_PERMISSIONS
from tests import manifest_check as mc
from tests.e2e.controlplane.build import cache_root, components
from tests.e2e.controlplane.objects import gpu_nodes
from tests.e2e.controlplane.tau_core import WORKSPACE_READER
from tests.test_manifest_check import _resolve  # the project schemas' $ref walk

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "tests" / "e2e" / "chart" / "taugrid"
PROJECT_WORKSPACE_SCHEMA = (
    ROOT / "spec" / "crds" / "tau.azure.com_v1alpha1_TauWorkspace.schema.json"
)
WORKSPACE_SAMPLE = ROOT / "tests" / "samples" / "manifests" / "tauworkspace.yaml"
# Not tau's defaults, so a name or namespace the chart hardcodes instead of templating shows up.
RELEASE, NAMESPACE = "tg-e2e", "tau-e2e-system"
BASELINE_OFF = f"{BASELINE_QUEUE_VALUE}=false"
TOPOLOGY = "default-node-topology"
# The chart's own Topology off: the flavor must then name none (or another, existing one).
TOPOLOGY_OFF = ("baselineQueue.topology.enabled=false", "baselineQueue.flavor.topologyName=")

Doc = dict[str, Any]
Key = tuple[str, str, str | None]  # kind, name, namespace


def _pin(name: str) -> tuple[str, str]:
    """(module, version) of one component of tests/e2e/controlplane/pins.toml."""
    component = next(c for c in components() if c.name == name)
    return component.module, component.version


HELM_VERSION = _pin("helm")[1]


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1")


def helm_binary() -> Path | None:
    """The newest helm the control-plane build left in its cache, or None."""
    found = [
        p
        for p in cache_root().glob(f"bin/helm-{HELM_VERSION}-*/helm")
        if p.is_file() and os.access(p, os.X_OK)
    ]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


@pytest.fixture(scope="module")
def helm() -> Path:
    binary = helm_binary()
    if binary is None:
        where = cache_root() / "bin" / f"helm-{HELM_VERSION}-*" / "helm"
        message = (
            f"no helm {HELM_VERSION} binary at {where} yet; build it with "
            "`python -m tests.e2e.controlplane.build`"
        )
        if _ci():
            pytest.fail(f"CI=true: {message}", pytrace=False)
        pytest.skip(message)
    return binary


@pytest.fixture(scope="module")
def helm_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Offline: no kubeconfig, and helm's own folders kept out of the user's home."""
    home = tmp_path_factory.mktemp("helm-home")
    return {
        **os.environ,
        "KUBECONFIG": os.devnull,
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
    }


def run_helm(helm: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(helm), *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def template_args(*sets: str, set_strings: tuple[str, ...] = ()) -> list[str]:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--include-crds"]
    for item in sets:
        args += ["--set", item]
    for item in set_strings:
        args += ["--set-string", item]
    return args


Render = Callable[..., list[Doc]]


@pytest.fixture(scope="module")
def render(helm: Path, helm_env: dict[str, str]) -> Render:
    """`helm template --include-crds` with some `--set` items, as parsed documents (cached)."""
    cache: dict[tuple[str, ...], list[Doc]] = {}

    def rendered(*sets: str) -> list[Doc]:
        if sets not in cache:
            proc = run_helm(helm, helm_env, *template_args(*sets))
            assert proc.returncode == 0, f"helm template {' '.join(sets)}:\n{proc.stderr}"
            docs = list(yaml.safe_load_all(proc.stdout))
            assert all(d is None or isinstance(d, dict) for d in docs), "a non-mapping document"
            cache[sets] = [d for d in docs if d]
        return cache[sets]

    return rendered


def key(doc: Doc) -> Key:
    meta = doc["metadata"]
    return doc["kind"], meta["name"], meta.get("namespace")


def keys(docs: list[Doc]) -> set[Key]:
    return {key(d) for d in docs}


def one(docs: list[Doc], kind: str, name: str) -> Doc:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


def crd_name(resource: ResourceType) -> str:
    return f"{resource.plural}.{resource.group}"


CRD = "CustomResourceDefinition"
#: Each tier tau's plans name: a pod PriorityClass and a Kueue WorkloadPriorityClass.
TIERS = (DEFAULT_PRIORITY, HIGH_PRIORITY)
PRIORITIES: set[Key] = {
    (kind, tier, None)
    for tier in TIERS
    for kind in (PRIORITY_CLASS.kind, WORKLOAD_PRIORITY_CLASS.kind)
}
DEFAULT_OBJECTS: set[Key] = PRIORITIES | {
    (CRD, crd_name(TAU_WORKSPACE), None),
    (CRD, crd_name(TAU_CLUSTER), None),
    (CRD, crd_name(QUOTA_REQUEST), None),
    ("TauCluster", TAU_CLUSTER_NAME, None),
    ("ResourceFlavor", "taugrid-default", None),
    ("ClusterQueue", BASELINE_CLUSTER_QUEUE, None),
    ("Topology", TOPOLOGY, None),
    ("ClusterRole", "tau-researcher-v1", None),
    ("ClusterRole", "tau-workspace-reader", None),
    ("ClusterRole", "tau-core", None),
    ("ClusterRoleBinding", "tau-core", None),
    ("ServiceAccount", "tau-core", NAMESPACE),
    ("Deployment", "tau-core-controller", NAMESPACE),
    ("Deployment", "kueue-controller-manager", NAMESPACE),
    ("Deployment", "kuberay-operator", NAMESPACE),
}
BASELINE: set[Key] = {
    ("ResourceFlavor", "taugrid-default", None),
    ("ClusterQueue", BASELINE_CLUSTER_QUEUE, None),
    ("Topology", TOPOLOGY, None),
}


# ---------------------------------------------------------------------------------- the chart


def test_chart_is_the_one_tau_installs_by_default() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    assert chart["version"] == DEFAULT_VERSION, "tau passes --version 0.3.2 by default"
    # The uninstall drain runs only when the deployed chart's name equals the --chart folder's.
    assert chart["name"] == Target(chart=str(CHART)).chart_name == "taugrid"
    assert (CHART / "README.md").read_text().lower().count("test chart") >= 1


@pytest.mark.parametrize(
    "sets", [(), (BASELINE_OFF,), TOPOLOGY_OFF], ids=["defaults", "baseline-off", "topology-off"]
)
def test_helm_lint_passes(helm: Path, helm_env: dict[str, str], sets: tuple[str, ...]) -> None:
    args = ["lint", "--strict", str(CHART), "--namespace", NAMESPACE]
    for item in sets:
        args += ["--set", item]
    proc = run_helm(helm, helm_env, *args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 chart(s) failed" in proc.stdout
    assert "[WARNING]" not in proc.stdout and "[ERROR]" not in proc.stdout, proc.stdout


def test_default_render_installs_the_expected_objects(render: Render) -> None:
    docs = render()
    assert keys(docs) == DEFAULT_OBJECTS
    assert len(docs) == len(DEFAULT_OBJECTS), "an object is rendered twice"
    assert {(kind.lower(), name) for kind, name, _ in BASELINE} == set(BASELINE_QUEUE_OBJECTS)
    assert not [d for d in docs if d["kind"] == "Secret"]


def test_baseline_queue_off_removes_exactly_the_queue_objects(render: Render) -> None:
    default, off = render(), render(BASELINE_OFF)
    assert keys(off) == DEFAULT_OBJECTS - BASELINE
    # Everything else is the same object, so the bootstrap pass and the main pass agree on it.
    rest = [d for d in default if key(d) not in BASELINE]
    assert sorted(map(json.dumps, rest)) == sorted(map(json.dumps, off))


@pytest.mark.parametrize(
    ("sets", "removed", "added"),
    [
        (("kueue.enabled=false",), {("Deployment", "kueue-controller-manager", NAMESPACE)}, set()),
        (("kuberay.enabled=false",), {("Deployment", "kuberay-operator", NAMESPACE)}, set()),
        (
            ("tauCore.enabled=false",),
            {
                ("Deployment", "tau-core-controller", NAMESPACE),
                ("ServiceAccount", "tau-core", NAMESPACE),
                ("ClusterRole", "tau-core", None),
                ("ClusterRoleBinding", "tau-core", None),
            },
            set(),
        ),
        (("quotaGuard.enabled=false",), {(CRD, crd_name(QUOTA_REQUEST), None)}, set()),
        (("tauCluster.create=false",), {("TauCluster", TAU_CLUSTER_NAME, None)}, set()),
        (TOPOLOGY_OFF, {("Topology", TOPOLOGY, None)}, set()),
        (("priorities.enabled=false",), PRIORITIES, set()),
        (("nodeHealth.enabled=true",), set(), {("DaemonSet", "tau-node-health", NAMESPACE)}),
        (
            ("observability.enabled=true",),
            set(),
            {("Deployment", "tau-observability", NAMESPACE)},
        ),
    ],
    ids=lambda v: ",".join(v) if isinstance(v, tuple) else None,
)
def test_component_values_gate_their_objects(
    render: Render, sets: tuple[str, ...], removed: set[Key], added: set[Key]
) -> None:
    assert keys(render(*sets)) == (DEFAULT_OBJECTS - removed) | added


def test_every_component_tau_lists_is_a_chart_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for entry in VALUES:
        found = _dig(values, entry.key)
        assert found is not _MISSING, f"{entry.key}: tau knows it, values.yaml lacks it"
        assert _as_tau_default(found) == entry.default, entry.key


def test_multikueue_is_refused_with_a_reason(helm: Path, helm_env: dict[str, str]) -> None:
    proc = run_helm(helm, helm_env, *template_args("multiKueue.enabled=true"))
    assert proc.returncode != 0
    assert "multiKueue.enabled=true is not modelled by the taugrid test chart" in proc.stderr


@pytest.mark.parametrize(
    ("sets", "set_strings"),
    [
        (("baselineQueue.enable=false",), ()),  # misspelt: would silently keep the queue
        ((), (f"{BASELINE_QUEUE_VALUE}=false",)),  # the string "false" is truthy in a template
        (("tauCluster.managementMode=Fix",), ()),
        (("priorities.enable=false",), ()),  # misspelt: would silently keep the priorities
        # Above 1e9 is reserved for system PriorityClasses; the apiserver refuses it.
        ((f"priorities.classes.{HIGH_PRIORITY}=2000000000",), ()),
        ((), (f"priorities.classes.{HIGH_PRIORITY}=1000",)),  # a string is not a value
    ],
)
def test_values_schema_rejects_values_that_would_be_ignored_or_misread(
    helm: Path, helm_env: dict[str, str], sets: tuple[str, ...], set_strings: tuple[str, ...]
) -> None:
    proc = run_helm(helm, helm_env, *template_args(*sets, set_strings=set_strings))
    assert proc.returncode != 0
    assert "values don't meet the specifications of the schema" in proc.stderr, proc.stderr


def test_values_yaml_documents_every_key_and_meets_its_schema() -> None:
    text = (CHART / "values.yaml").read_text()
    lines = text.splitlines()
    undocumented = []
    for number, line in enumerate(lines):
        if re.match(r"^\s*[A-Za-z][\w.-]*:", line):
            above = next((p.strip() for p in reversed(lines[:number]) if p.strip()), "")
            if not above.startswith("#"):
                undocumented.append(f"values.yaml:{number + 1}: {line.strip()}")
    assert undocumented == []
    values = yaml.safe_load(text)
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    assert list(jsonschema.Draft7Validator(schema).iter_errors(values)) == []
    assert set(values) == set(schema["properties"]), "every top-level key is typed"


# ------------------------------------------------------------------------ document validation


def _validate(doc: Doc, crds: dict[tuple[str, str], Doc]) -> list[str]:
    """Errors of one rendered document, by the project's validators where they cover it."""
    api_version, kind = doc["apiVersion"], doc["kind"]
    group = api_version.rpartition("/")[0]
    if api_version in mc.CORE_API_VERSIONS:
        return mc.validate_core(doc)
    if group in ("rbac.authorization.k8s.io", "apiextensions.k8s.io", "scheduling.k8s.io"):
        try:
            mc.kubernetes_validate_validate(doc, mc.K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            return [f"{_path(exc.absolute_path)}: {exc.message}"]
        return []
    if group == "kueue.x-k8s.io" and kind == "Topology":
        # spec/crds/ has no Topology schema; the upstream CRD (and Kueue v0.17's, below) do.
        return (
            [f"upstream: {e}" for e in mc.validate_upstream(doc)] if mc.upstream_available() else []
        )
    if group == "kueue.x-k8s.io":
        # The project schema (spec/crds/) and, when present, the upstream CRD.
        return mc.validate_document(doc)
    if (group, kind) in crds:
        return _schema_errors(_crd_validator(crds[(group, kind)], api_version), doc)
    return [f"no validator for {api_version} {kind}"]


@pytest.mark.parametrize(
    "sets",
    [(), (BASELINE_OFF,), TOPOLOGY_OFF, ("nodeHealth.enabled=true", "observability.enabled=true")],
    ids=["defaults", "baseline-off", "topology-off", "opt-ins"],
)
def test_every_rendered_document_validates(render: Render, sets: tuple[str, ...]) -> None:
    docs = render(*sets)
    crds = {(c["spec"]["group"], c["spec"]["names"]["kind"]): c for c in _crds(render())}
    errors = []
    for doc in docs:
        kind, name, _ = key(doc)
        errors += [f"{kind}/{name}: {message}" for message in _validate(doc, crds)]
    assert errors == []


def test_kueue_objects_are_served_and_valid_in_the_kueue_the_e2e_runs(render: Render) -> None:
    bases = _kueue_crd_bases()
    if bases is None:
        pytest.skip(f"Kueue {_pin('kueue')[1]} is not in the Go module cache")
    by_kind = _crd_files_by_kind(bases)
    errors = []
    kueue_docs = [d for d in render() if d["apiVersion"].startswith("kueue.x-k8s.io/")]
    assert {d["kind"] for d in kueue_docs} == {
        "ResourceFlavor",
        "ClusterQueue",
        "Topology",
        WORKLOAD_PRIORITY_CLASS.kind,
    }
    for doc in kueue_docs:
        crd = _load_yaml(by_kind[doc["kind"]])
        version = doc["apiVersion"].rpartition("/")[2]
        served = {v["name"] for v in crd["spec"]["versions"] if v.get("served")}
        assert version in served, f"{doc['kind']}: Kueue serves {sorted(served)}"
        assert crd["spec"]["scope"] == "Cluster"
        errors += [
            f"{doc['kind']}: {e}"
            for e in _schema_errors(_crd_validator(crd, doc["apiVersion"]), doc)
        ]
    assert errors == []


# ------------------------------------------------------------------------------ baseline queue


def test_cluster_queue_covers_cpu_memory_and_gpus_of_every_namespace(render: Render) -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["baselineQueue"]["quota"]
    queue = one(render(), "ClusterQueue", BASELINE_CLUSTER_QUEUE)["spec"]
    assert queue["namespaceSelector"] == {}, "a null selector admits no namespace"
    [group] = queue["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    [flavor] = group["flavors"]
    assert flavor["name"] == "taugrid-default"
    # Kueue requires each flavor to list the covered resources, in the same order.
    assert [r["name"] for r in flavor["resources"]] == group["coveredResources"]
    quotas = {r["name"]: r["nominalQuota"] for r in flavor["resources"]}
    assert quotas == {
        "cpu": str(values["cpu"]),
        "memory": str(values["memory"]),
        "nvidia.com/gpu": str(values["gpu"]),
    }
    custom = one(
        render("baselineQueue.quota.gpu=16", "baselineQueue.quota.cpu=128"),
        "ClusterQueue",
        BASELINE_CLUSTER_QUEUE,
    )["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    assert {r["name"]: r["nominalQuota"] for r in custom}["nvidia.com/gpu"] == "16"
    assert {r["name"]: r["nominalQuota"] for r in custom}["cpu"] == "128"


def test_flavor_is_topology_aware_on_every_e2e_node(render: Render) -> None:
    """tau's Jobs carry kueue.x-k8s.io/podset-*-topology annotations, which Kueue admits only on
    a flavor with a topology; such a flavor needs node labels, which every e2e node must carry.
    """
    docs = render()
    values = yaml.safe_load((CHART / "values.yaml").read_text())["baselineQueue"]
    flavor = one(docs, "ResourceFlavor", "taugrid-default")["spec"]
    assert flavor == {"nodeLabels": {"kubernetes.io/os": "linux"}, "topologyName": TOPOLOGY}
    assert flavor["nodeLabels"] == values["flavor"]["nodeLabels"]
    # The Topology the flavor names is the one the chart renders, from the levels in values.
    levels = one(docs, "Topology", flavor["topologyName"])["spec"]["levels"]
    assert levels == [{"nodeLabel": label} for label in values["topology"]["levels"]]
    assert levels[-1] == {"nodeLabel": "kubernetes.io/hostname"}, "hostname only as the last level"
    nodes = gpu_nodes()
    assert nodes
    for node in nodes:
        labels = node["metadata"]["labels"]
        name = node["metadata"]["name"]
        assert flavor["nodeLabels"].items() <= labels.items(), f"{name}: not in the flavor"
        assert all(level["nodeLabel"] in labels for level in levels), f"{name}: a level missing"


def test_topology_flavor_needs_node_labels(
    render: Render, helm: Path, helm_env: dict[str, str]
) -> None:
    # `null` deletes the default map (an empty map would merge with it and keep its label).
    proc = run_helm(helm, helm_env, *template_args("baselineQueue.flavor.nodeLabels=null"))
    assert proc.returncode != 0
    assert "topologyName needs baselineQueue.flavor.nodeLabels" in proc.stderr, proc.stderr
    flavor = one(
        render("baselineQueue.flavor.nodeLabels.pool=gpu"), "ResourceFlavor", "taugrid-default"
    )
    assert flavor["spec"] == {
        "nodeLabels": {"kubernetes.io/os": "linux", "pool": "gpu"},
        "topologyName": TOPOLOGY,
    }
    # Without a topology, node labels are optional and the flavor may be empty.
    empty = render("baselineQueue.flavor.nodeLabels=null", "baselineQueue.flavor.topologyName=")
    assert one(empty, "ResourceFlavor", "taugrid-default")["spec"] == {}


def test_topology_off_refuses_a_flavor_naming_the_missing_topology(
    render: Render, helm: Path, helm_env: dict[str, str]
) -> None:
    # The default flavor names the chart's Topology: turning that off alone would leave
    # clusterqueue/taugrid-cq inactive in Kueue (TopologyNotFound), so the render fails instead.
    proc = run_helm(helm, helm_env, *template_args("baselineQueue.topology.enabled=false"))
    assert proc.returncode != 0
    assert (
        f"baselineQueue.flavor.topologyName={TOPOLOGY} names the Topology this chart renders, "
        "which baselineQueue.topology.enabled=false turns off"
    ) in proc.stderr, proc.stderr
    assert 'Set baselineQueue.flavor.topologyName to "" (no TAS)' in proc.stderr
    # Named empty, TAS is off: the flavor keeps its node labels and names no topology.
    docs = render(*TOPOLOGY_OFF)
    assert one(docs, "ResourceFlavor", "taugrid-default")["spec"] == {
        "nodeLabels": {"kubernetes.io/os": "linux"}
    }
    assert not [d for d in docs if d["kind"] == "Topology"]
    # A Topology from elsewhere may still be named.
    elsewhere = render(
        "baselineQueue.topology.enabled=false", "baselineQueue.flavor.topologyName=racks"
    )
    assert one(elsewhere, "ResourceFlavor", "taugrid-default")["spec"]["topologyName"] == "racks"
    assert not [d for d in elsewhere if d["kind"] == "Topology"]


# ---------------------------------------------------------------------------------- priorities


def test_every_tier_tau_names_is_a_priority_class_of_both_kinds(render: Render) -> None:
    docs = render()
    classes = yaml.safe_load((CHART / "values.yaml").read_text())["priorities"]["classes"]
    assert classes == {DEFAULT_PRIORITY: 100, HIGH_PRIORITY: 1000}
    assert classes[HIGH_PRIORITY] > classes[DEFAULT_PRIORITY], "the priority tier outranks"
    for tier, value in classes.items():
        pod = one(docs, PRIORITY_CLASS.kind, tier)
        workload = one(docs, WORKLOAD_PRIORITY_CLASS.kind, tier)
        assert pod["apiVersion"] == f"{PRIORITY_CLASS.group}/{PRIORITY_CLASS.version}"
        assert workload["apiVersion"] == (
            f"{WORKLOAD_PRIORITY_CLASS.group}/{WORKLOAD_PRIORITY_CLASS.version}"
        )
        for doc in (pod, workload):
            meta = doc["metadata"]
            assert "namespace" not in meta, f"{doc['kind']}/{tier} is cluster-scoped"
            assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm"
            assert meta["labels"][RELEASE_LABEL] == RELEASE
            # An int, not 100.0 or "100": both APIs take an int32.
            assert type(doc["value"]) is int and doc["value"] == value, doc["kind"]
        # Never the cluster's default: pods that name no class keep priority 0.
        assert pod["globalDefault"] is False
        assert pod.get("preemptionPolicy", "PreemptLowerPriority") == "PreemptLowerPriority"


def test_priority_values_are_rendered_as_given(
    render: Render, helm: Path, helm_env: dict[str, str], tmp_path: Path
) -> None:
    custom = render(f"priorities.classes.{HIGH_PRIORITY}=5000", "priorities.classes.batch=10")
    assert keys(custom) == DEFAULT_OBJECTS | {
        (PRIORITY_CLASS.kind, "batch", None),
        (WORKLOAD_PRIORITY_CLASS.kind, "batch", None),
    }
    for kind in (PRIORITY_CLASS.kind, WORKLOAD_PRIORITY_CLASS.kind):
        assert one(custom, kind, HIGH_PRIORITY)["value"] == 5000
        assert one(custom, kind, DEFAULT_PRIORITY)["value"] == 100
        assert one(custom, kind, "batch")["value"] == 10
    # From a values file a number reaches the template as a float: large ones must still
    # render as integers (not 1e+09), up to the largest the schema allows.
    values = tmp_path / "priorities.yaml"
    values.write_text(f"priorities:\n  classes:\n    {HIGH_PRIORITY}: 1000000000\n")
    proc = run_helm(helm, helm_env, *template_args(), "-f", str(values))
    assert proc.returncode == 0, proc.stderr
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    for kind in (PRIORITY_CLASS.kind, WORKLOAD_PRIORITY_CLASS.kind):
        doc = one(docs, kind, HIGH_PRIORITY)
        assert type(doc["value"]) is int and doc["value"] == 1_000_000_000, doc["value"]
        assert _validate(doc, {}) == [], kind


# ---------------------------------------------------------------------------------------- CRDs


#: Where each CRD keeps unknown fields: the TauWorkspace status parts the project schema declares
#: open, and the TauCluster parts whose shape cli-contract §4.5 does not give. Nowhere else.
PRESERVED = {
    crd_name(TAU_WORKSPACE): {"status", "status.target", "status.queue", "status.quota[]"},
    crd_name(TAU_CLUSTER): {
        "spec.queues.topology",
        "spec.queues.resourceFlavors[]",
        "spec.queues.clusterQueues[]",
        "spec.queues.sharedLocalQueues[]",
        "status.nodes",
        "status.queues",
        "status.managedResources[]",
        "status.workloadProfiles",
        "status.workloadProfiles.profiles[]",
    },
    crd_name(QUOTA_REQUEST): set(),
}


@pytest.mark.parametrize(
    "resource", [TAU_WORKSPACE, TAU_CLUSTER, QUOTA_REQUEST], ids=lambda r: r.kind
)
def test_crds_serve_what_tau_reads_with_a_status_subresource(
    render: Render, resource: ResourceType
) -> None:
    crd = one(render(), CRD, crd_name(resource))["spec"]
    assert crd["group"] == resource.group
    assert crd["names"]["kind"] == resource.kind and crd["names"]["plural"] == resource.plural
    assert crd["scope"] == ("Namespaced" if resource.namespaced else "Cluster")
    [version] = crd["versions"]
    assert version["name"] == resource.version and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}


@pytest.mark.parametrize(
    "resource", [TAU_WORKSPACE, TAU_CLUSTER, QUOTA_REQUEST], ids=lambda r: r.kind
)
def test_crd_schemas_are_structural(render: Render, resource: ResourceType) -> None:
    crd = one(render(), CRD, crd_name(resource))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert _structural_problems(schema) == []
    assert set(_preserved(schema)) == PRESERVED[crd_name(resource)]


def test_workspace_crd_mirrors_the_project_schema(render: Render) -> None:
    crd = one(render(), CRD, crd_name(TAU_WORKSPACE))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    project = json.loads(PROJECT_WORKSPACE_SCHEMA.read_text())
    problems: list[str] = []
    for part in ("spec", "status"):
        _mirror(
            project["properties"][part],
            PROJECT_WORKSPACE_SCHEMA,
            schema["properties"][part],
            part,
            problems,
        )
    assert problems == []
    sample = yaml.safe_load(WORKSPACE_SAMPLE.read_text())
    validator = _crd_validator(crd, "tau.azure.com/v1alpha1")
    assert _schema_errors(validator, sample) == []
    sample["spec"]["defaults"]["priority"] = "urgent"
    assert any(e.startswith("spec.defaults.priority:") for e in _schema_errors(validator, sample))


def test_workspace_crd_carries_the_contract_authorization_rule(render: Render) -> None:
    # CEL is not evaluated offline; the apiserver compiles it when the CRD is created.
    spec = one(render(), CRD, crd_name(TAU_WORKSPACE))["spec"]["versions"][0]["schema"]
    [rule] = spec["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"]
    for field in ("principalRef", "kubernetesSubject", "role", "'cluster-wide'"):
        assert field in rule["rule"]


def test_tau_cluster_object_carries_tau_defaults(render: Render) -> None:
    docs = render()
    cluster = one(docs, "TauCluster", TAU_CLUSTER_NAME)
    assert "namespace" not in cluster["metadata"] and "status" not in cluster
    crd = one(docs, CRD, crd_name(TAU_CLUSTER))
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for entry in (v for v in VALUES if v.key.startswith("tauCluster.")):
        path = entry.key.removeprefix("tauCluster.")
        assert _as_tau_default(_dig(cluster["spec"], path)) == entry.default, entry.key
        field = _schema_at(spec_schema, path)
        if "default" in field:
            assert _as_tau_default(field["default"]) == entry.default, f"CRD default of {path}"
    custom = one(render("tauCluster.nodes.selector.pool=gpu"), "TauCluster", TAU_CLUSTER_NAME)
    assert custom["spec"]["nodes"]["selector"] == {"pool": "gpu"}


# ------------------------------------------------------------------------- controllers, RBAC


WORKLOADS = {"Deployment", "DaemonSet"}


def test_placeholder_pods_schedule_on_fake_nodes_and_pull_nothing(render: Render) -> None:
    docs = render("nodeHealth.enabled=true", "observability.enabled=true")
    workloads = [d for d in docs if d["kind"] in WORKLOADS]
    assert {d["metadata"]["name"] for d in workloads} >= {"tau-core-controller"}
    for doc in workloads:
        name, meta, spec = doc["metadata"]["name"], doc["metadata"], doc["spec"]
        assert meta["namespace"] == NAMESPACE, name
        # tau's readiness report finds the release's Deployments by this label.
        assert meta["labels"][RELEASE_LABEL] == RELEASE, name
        assert meta["labels"]["app.kubernetes.io/managed-by"] == "Helm", name
        template = spec["template"]
        selector = spec["selector"]["matchLabels"]
        assert selector.items() <= template["metadata"]["labels"].items(), name
        pod = template["spec"]
        assert {"operator": "Exists"} in pod["tolerations"], f"{name}: must tolerate KWOK's taint"
        assert not any(pod.get(f) for f in ("hostNetwork", "hostPID", "hostIPC")), name
        for container in pod["containers"]:
            assert container["imagePullPolicy"] == "Never", name
            assert container["image"].startswith("taugrid.invalid/"), name
    core = one(docs, "Deployment", "tau-core-controller")["spec"]["template"]["spec"]
    assert core["serviceAccountName"] == "tau-core"


def test_nothing_rendered_holds_secrets_or_host_paths(render: Render) -> None:
    docs = render("nodeHealth.enabled=true", "observability.enabled=true")
    assert not [d for d in docs if d["kind"] == "Secret"]
    assert "hostPath" not in set(_all_keys(docs))


def test_researcher_role_grants_what_tau_checks_and_needs(render: Render) -> None:
    docs = render()
    rules = one(docs, "ClusterRole", "tau-researcher-v1")["rules"]
    # spec.role of a TauWorkspace names this ClusterRole (TauWorkspace schema enum).
    project = json.loads(PROJECT_WORKSPACE_SCHEMA.read_text())
    assert project["$defs"]["TauWorkspaceSpec"]["properties"]["role"]["enum"] == [
        "tau-researcher-v1"
    ]
    missing = [
        f"{verb} {resource}{'/' + sub if sub else ''}.{group}"
        for verbs, resource, group, sub in WORKSPACE_PERMISSIONS
        for verb in verbs
        if not _allows(rules, verb, group, resource, sub)
    ]
    assert missing == [], "the workspace-rbac connection check would fail"
    for verb, group, resource, sub in [
        ("watch", "batch", "jobs", ""),
        ("watch", "ray.io", "rayjobs", ""),
        ("get", "ray.io", "rayclusters", ""),
        ("watch", "kueue.x-k8s.io", "workloads", ""),
        ("list", "kueue.x-k8s.io", "localqueues", ""),
        ("watch", "", "events", ""),
        ("create", "", "services", ""),
        ("delete", "", "services", ""),
        ("create", "", "configmaps", ""),
        ("create", "", "secrets", ""),
        ("get", "", "persistentvolumeclaims", ""),
    ]:
        assert _allows(rules, verb, group, resource, sub), f"{verb} {resource}.{group}"
    for verb in ("get", "list", "watch"):
        assert not _allows(rules, verb, "", "secrets", ""), "secrets are create-only"
    assert not any("*" in r.get(f, []) for r in rules for f in ("apiGroups", "resources", "verbs"))
    # The e2e stand-in for tau-core binds this one in the system namespace.
    assert WORKSPACE_READER == "tau-workspace-reader"
    reader = one(docs, "ClusterRole", WORKSPACE_READER)["rules"]
    for verb in ("get", "list"):
        assert _allows(reader, verb, TAU_WORKSPACE.group, TAU_WORKSPACE.plural, "")
    assert _allows(reader, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "")
    core = one(docs, "ClusterRole", "tau-core")["rules"]
    bind = [r for r in core if r["verbs"] == ["bind"]]
    assert bind and {"tau-researcher-v1", "tau-workspace-reader"} <= set(bind[0]["resourceNames"])


# ------------------------------------------------------------------ through tau, as operators do


def test_tau_dry_run_renders_the_chart_offline(
    helm: Path, helm_env: dict[str, str], tmp_path: Path, monkeypatch, capsys
) -> None:
    for name in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        monkeypatch.setenv(name, helm_env[name])
    monkeypatch.setenv("TAU_HELM", str(helm))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.chdir(tmp_path)
    code = main(["cluster", "install", "--dry-run", "--chart", str(CHART)])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "TauGrid render summary (nothing was applied)" in out
    assert f"  chart {CHART} version {DEFAULT_VERSION}" in out
    counts = dict(
        line.split(":") for line in out.split("(nothing was applied)\n", 1)[1].splitlines()[1:]
    )
    counts = {k.strip(): int(v) for k, v in counts.items()}
    assert counts[CRD] == 3 and counts["ClusterQueue"] == 1
    assert counts[PRIORITY_CLASS.kind] == counts[WORKLOAD_PRIORITY_CLASS.kind] == len(TIERS)
    assert counts.pop("Total") == sum(counts.values()) == len(DEFAULT_OBJECTS)


# ------------------------------------------------------------------------------------ helpers


_MISSING = object()


def _dig(doc: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(doc, dict) or part not in doc:
            return _MISSING
        doc = doc[part]
    return doc


def _as_tau_default(value: Any) -> str:
    """A chart value as tau.cluster.values spells its default ("true", "{}", "Observe")."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def _crds(docs: list[Doc]) -> list[Doc]:
    return [d for d in docs if d["kind"] == CRD]


def _crd_validator(crd: Doc, api_version: str) -> jsonschema.protocols.Validator:
    version = api_version.rpartition("/")[2]
    entry = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    return jsonschema.Draft202012Validator(mc.convert_openapi(entry["schema"]["openAPIV3Schema"]))


def _path(parts: Any) -> str:
    """`spec.resourceGroups[0].flavors` from a jsonschema error path."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def _schema_errors(validator: jsonschema.protocols.Validator, doc: Doc) -> list[str]:
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    return [f"{_path(e.absolute_path)}: {e.message}" for e in errors]


_KIND_LINE = re.compile(r"^    kind: (\S+)$", re.MULTILINE)


def _crd_files_by_kind(folder: Path) -> dict[str, Path]:
    """Kind -> CRD file, reading only each file's head (Kueue's Workload CRD is 1.4 MB)."""
    found = {}
    for path in sorted(folder.glob("*.yaml")):
        with path.open(encoding="utf-8") as fh:
            match = _KIND_LINE.search(fh.read(4096))
        if match:
            found[match.group(1)] = path
    return found


def _load_yaml(path: Path) -> Doc:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=loader)


def _kueue_crd_bases() -> Path | None:
    module, version = _pin("kueue")
    gopath = os.environ.get("GOPATH", "").split(os.pathsep)[0] or str(Path.home() / "go")
    cache = Path(os.environ.get("GOMODCACHE") or Path(gopath) / "pkg" / "mod")
    bases = cache / f"{module}@{version}" / "config" / "components" / "crd" / "bases"
    return bases if bases.is_dir() else None


def _allows(rules: list[Doc], verb: str, group: str, resource: str, sub: str) -> bool:
    wanted = f"{resource}/{sub}" if sub else resource
    return any(
        group in rule.get("apiGroups", [])
        and wanted in rule.get("resources", [])
        and verb in rule.get("verbs", [])
        and not rule.get("resourceNames")
        for rule in rules
    )


def _all_keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for name, value in node.items():
            yield name
            yield from _all_keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _all_keys(item)


def _children(node: Doc, path: str) -> Iterator[tuple[str, Doc]]:
    for name, sub in (node.get("properties") or {}).items():
        yield (f"{path}.{name}" if path else name), sub
    if isinstance(node.get("items"), dict):
        yield f"{path}[]", node["items"]
    if isinstance(node.get("additionalProperties"), dict):
        yield f"{path}.*", node["additionalProperties"]


def _preserved(node: Doc, path: str = "") -> Iterator[str]:
    if node.get("x-kubernetes-preserve-unknown-fields"):
        yield path
    for child_path, child in _children(node, path):
        yield from _preserved(child, child_path)


_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")


def _structural_problems(node: Doc, path: str = "") -> list[str]:
    """Kubernetes' structural-schema rules (apiextensions), and that defaults validate.

    Every node has a type (unless it is int-or-string or keeps unknown fields), properties and
    additionalProperties exclude each other, arrays say their items, objects say what they keep,
    metadata is not restricted, and no junctor appears (these CRDs need none).
    """
    where = path or "<root>"
    problems = []
    preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
    if not node.get("type") and not (preserve or node.get("x-kubernetes-int-or-string")):
        problems.append(f"{where}: no type")
    if "properties" in node and "additionalProperties" in node:
        problems.append(f"{where}: properties and additionalProperties together")
    if node.get("type") == "array" and not isinstance(node.get("items"), dict):
        problems.append(f"{where}: an array without items")
    if (
        node.get("type") == "object"
        and path != "metadata"
        and not (preserve or node.get("properties") or "additionalProperties" in node)
    ):
        problems.append(f"{where}: an object that keeps no field (the apiserver prunes it empty)")
    problems += [f"{where}: {j}" for j in _JUNCTORS if j in node]
    if path == "metadata" and node != {"type": "object"}:
        problems.append("metadata: only metadata.name and generateName may be restricted")
    if "default" in node:
        if not path:
            problems.append("<root>: a default at the root")
        else:
            bare = {k: v for k, v in node.items() if k != "default"}
            validator = jsonschema.Draft202012Validator(mc.convert_openapi(bare))
            problems += [
                f"{where}: default: {e.message}" for e in validator.iter_errors(node["default"])
            ]
    if "required" in node:
        absent = set(node["required"]) - set(node.get("properties") or {})
        problems += [f"{where}: required {name} is not a property" for name in sorted(absent)]
    for child_path, child in _children(node, path):
        problems += _structural_problems(child, child_path)
    return problems


def _schema_at(node: Doc, dotted: str) -> Doc:
    for part in dotted.split("."):
        node = node["properties"][part]
    return node


def _open(node: Doc) -> bool:
    """Whether a project-schema object keeps unknown fields."""
    if node.get("type") != "object":
        return False
    return node.get("additionalProperties") is True or "properties" not in node


def _mirror(project: Doc, base: Path, crd: Doc, path: str, problems: list[str]) -> None:
    """The CRD node says what the project-schema node says: type, enum, default, minimum,
    required, the same properties, and keeps unknown fields exactly where the project is open.
    """
    project, base = _resolve(project, base)
    for field in ("type", "enum", "default", "minimum", "format"):
        if field in project and project.get(field) != crd.get(field):
            problems.append(f"{path}: {field} {crd.get(field)!r}, project {project[field]!r}")
    for field in ("type", "enum", "default", "minimum"):
        if field in crd and field not in project:
            problems.append(f"{path}: {field} {crd[field]!r} is not in the project schema")
    if set(project.get("required", [])) != set(crd.get("required", [])):
        problems.append(
            f"{path}: required {crd.get('required')}, project {project.get('required')}"
        )
    if _open(project) != bool(crd.get("x-kubernetes-preserve-unknown-fields")):
        problems.append(f"{path}: keeps unknown fields only where the project schema is open")
    mine, theirs = set(project.get("properties", {})), set(crd.get("properties", {}))
    problems += [f"{path}.{n}: missing from the CRD" for n in sorted(mine - theirs)]
    problems += [f"{path}.{n}: not in the project schema" for n in sorted(theirs - mine)]
    for name in sorted(mine & theirs):
        _mirror(
            project["properties"][name], base, crd["properties"][name], f"{path}.{name}", problems
        )
    if isinstance(project.get("items"), dict):
        if not isinstance(crd.get("items"), dict):
            problems.append(f"{path}[]: the CRD does not type the items")
        else:
            _mirror(project["items"], base, crd["items"], f"{path}[]", problems)
