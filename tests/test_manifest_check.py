"""Tests for tests/manifest_check.py and the project CRD schemas under spec/crds/.

Samples live in tests/samples/manifests/ (one realistic document per kind tau emits or reads).
Each validator gets valid samples and broken copies (unknown field, wrong type) whose error
must name the field. Upstream checks skip when ../shared/upstream-crds is absent.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
import urllib.parse
from pathlib import Path

import jsonschema
import manifest_check as mc
import pytest
import yaml
from referencing import Registry, Resource

SAMPLES = Path(__file__).resolve().parent / "samples" / "manifests"
ROOT = Path(__file__).resolve().parents[1]


def _load_samples() -> dict[str, dict]:
    docs = {}
    for path in sorted(SAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            docs[doc["kind"]] = doc
    return docs


DOCS = _load_samples()
CORE_KINDS = ["Service", "Job", "Deployment", "Secret"]
CRD_KINDS = [
    "RayJob",
    "RayCluster",
    "RayService",
    "Workload",
    "LocalQueue",
    "ClusterQueue",
    "ResourceFlavor",
    "WorkloadPriorityClass",
    "TauWorkspace",
    "SecretProviderClass",
]
#: Kinds whose upstream CRD comes from the Go module cache rather than ../shared/upstream-crds.
MODULE_KINDS = ["SecretProviderClass"]
# Tau's own CRD has no upstream.
UPSTREAM_KINDS = [k for k in CRD_KINDS if k not in ("TauWorkspace", *MODULE_KINDS)]

needs_upstream = pytest.mark.skipif(
    not mc.upstream_available(), reason=f"upstream CRDs not found at {mc.UPSTREAM_DIR}"
)
SPC_GROUP = "secrets-store.csi.x-k8s.io"
needs_spc_crd = pytest.mark.skipif(
    mc.module_crd(SPC_GROUP, "SecretProviderClass") is None,
    reason="the Secrets Store CSI driver module (pins.toml) is not in the Go module cache",
)


def sample(kind: str) -> dict:
    """A deep copy of the sample, safe to break."""
    return copy.deepcopy(DOCS[kind])


def test_every_kind_has_a_sample():
    assert set(DOCS) == set(CORE_KINDS) | set(CRD_KINDS)


def test_every_crd_kind_has_a_project_model():
    for kind in CRD_KINDS:
        api_version = DOCS[kind]["apiVersion"]
        assert mc.crd_model(api_version, kind) is not None, kind


# --- valid samples ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CORE_KINDS)
def test_core_samples_pass(kind):
    assert mc.validate_core(sample(kind)) == []


@pytest.mark.parametrize("kind", CORE_KINDS)
def test_core_agrees_with_kubernetes_validate_entry_point(kind):
    # The cached validator must accept exactly what the library's own validate() accepts.
    mc.kubernetes_validate_validate(sample(kind), mc.K8S_VERSION, strict=True)


@pytest.mark.parametrize("kind", CRD_KINDS)
def test_crd_samples_pass_project_models(kind):
    assert mc.validate_crd(sample(kind)) == []


@needs_upstream
@pytest.mark.parametrize("kind", UPSTREAM_KINDS)
def test_crd_samples_pass_upstream(kind):
    # Project schemas must not accept anything the real CRDs reject: every valid sample passes both.
    assert mc.validate_upstream(sample(kind)) == []


@pytest.mark.parametrize("kind", CORE_KINDS + CRD_KINDS)
def test_validate_document_dispatches(kind):
    assert mc.validate_document(sample(kind)) == []


def test_validate_yaml_multi_document_stream():
    assert mc.validate_yaml((SAMPLES / "job.yaml").read_text()) == []


# --- core: unknown field and wrong type -------------------------------------------------------


def test_core_unknown_field_in_container():
    job = sample("Job")
    job["spec"]["template"]["spec"]["containers"][0]["bogusField"] = 1
    errors = mc.validate_core(job)
    assert any("spec.template.spec.containers[0]" in e and "bogusField" in e for e in errors)


def test_core_wrong_type():
    job = sample("Job")
    job["spec"]["backoffLimit"] = "zero"
    assert any(e.startswith("spec.backoffLimit:") for e in mc.validate_core(job))


def test_core_reports_every_error():
    svc = sample("Service")
    svc["spec"]["clusterIp"] = "None"  # wrong case: clusterIP
    svc["spec"]["ports"][0]["port"] = "c10d"
    errors = mc.validate_core(svc)
    assert any("clusterIp" in e for e in errors)
    assert any(e.startswith("spec.ports[0].port:") for e in errors)


def test_core_rejects_non_core_api():
    assert mc.validate_core(sample("RayJob"))


# --- project models: unknown field and wrong type ---------------------------------------------


def test_crd_unknown_field_in_spec():
    job = sample("RayJob")
    job["spec"]["shutdownAfterJobFinish"] = True  # typo of shutdownAfterJobFinishes
    errors = mc.validate_crd(job)
    assert errors == ["spec.shutdownAfterJobFinish: Extra inputs are not permitted"]


def test_a_status_field_from_a_newer_operator_is_accepted_where_tau_only_reads():
    job = sample("RayJob")
    job["status"] = {"jobStatus": "RUNNING", "fieldAddedInKubeRay2": {"x": 1}}
    assert mc.validate_crd(job) == []


def test_crd_unknown_field_in_pod_template():
    job = sample("RayJob")
    worker = job["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]
    worker["template"]["spec"]["containers"][0]["resource"] = {}
    errors = mc.validate_crd(job)
    path = "spec.rayClusterSpec.workerGroupSpecs[0].template.spec.containers[0].resource"
    assert any(e.startswith(path) for e in errors)


def test_crd_wrong_type_is_strict():
    job = sample("RayJob")
    job["spec"]["suspend"] = "true"  # a string, not a boolean: the API server rejects it
    assert any(e.startswith("spec.suspend:") for e in mc.validate_crd(job))


def test_crd_ray_start_params_must_be_strings():
    job = sample("RayJob")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["rayStartParams"]["num-cpus"] = 0
    errors = mc.validate_crd(job)
    assert any("headGroupSpec.rayStartParams.num-cpus" in e for e in errors)


def test_crd_quantity_is_int_or_string():
    cq = sample("ClusterQueue")
    quota = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["nominalQuota"] = 1.5
    errors = mc.validate_crd(cq)
    assert any("resources[0].nominalQuota" in e for e in errors)


def test_crd_workspace_enum():
    ws = sample("TauWorkspace")
    ws["spec"]["defaults"]["priority"] = "urgent"
    assert any(e.startswith("spec.defaults.priority:") for e in mc.validate_crd(ws))


def test_crd_workload_condition_status_enum():
    wl = sample("Workload")
    wl["status"]["conditions"][0]["status"] = "Yes"
    assert any(e.startswith("status.conditions[0].status:") for e in mc.validate_crd(wl))


def test_crd_unknown_kind():
    doc = {"apiVersion": "ray.io/v1", "kind": "RayCronJob", "metadata": {"name": "x"}}
    assert mc.validate_crd(doc)


# --- upstream: unknown field, wrong type, conversion ------------------------------------------


@needs_upstream
def test_upstream_unknown_field():
    job = sample("RayJob")
    job["spec"]["bogus"] = 1
    errors = mc.validate_upstream(job)
    assert any(e.startswith("spec:") and "'bogus'" in e for e in errors)


@needs_upstream
def test_upstream_unknown_field_in_template_metadata():
    job = sample("RayJob")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["metadata"]["uid"] = "x"
    errors = mc.validate_upstream(job)
    assert any("headGroupSpec.template.metadata" in e and "'uid'" in e for e in errors)


@needs_upstream
def test_upstream_wrong_type():
    wl = sample("Workload")
    wl["status"]["admission"]["podSetAssignments"][0]["count"] = "two"
    errors = mc.validate_upstream(wl)
    assert any(e.startswith("status.admission.podSetAssignments[0].count:") for e in errors)


@needs_upstream
def test_upstream_int_or_string_rejects_float():
    lq = sample("LocalQueue")
    lq["status"]["flavorsUsage"][0]["resources"][0]["total"] = 0.5
    errors = mc.validate_upstream(lq)
    assert any(e.startswith("status.flavorsUsage[0].resources[0].total:") for e in errors)


@needs_upstream
def test_upstream_enum():
    wl = sample("Workload")
    wl["status"]["admissionChecks"][0]["state"] = "Done"
    assert any("admissionChecks[0].state" in e for e in mc.validate_upstream(wl))


@needs_upstream
def test_upstream_nullable_accepts_null():
    rc = sample("RayCluster")
    rc["status"]["lastUpdateTime"] = None  # nullable: true upstream
    assert mc.validate_upstream(rc) == []


@needs_upstream
def test_upstream_version_not_served():
    wpc = sample("WorkloadPriorityClass")
    wpc["apiVersion"] = "kueue.x-k8s.io/v9"
    assert mc.validate_upstream(wpc)


@needs_upstream
def test_validate_document_prefixes_upstream_errors():
    job = sample("RayJob")
    job["spec"]["bogus"] = 1
    errors = mc.validate_document(job)
    assert any(e.startswith("spec.bogus") for e in errors)  # project model
    assert any(e.startswith("upstream: spec:") for e in errors)


def test_convert_openapi_dialect():
    schema = {
        "type": "object",
        "properties": {
            "q": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "p": {"x-kubernetes-int-or-string": True},
            "n": {"type": "string", "nullable": True},
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"a": {"type": "string"}},
            },
            "d": {"type": "integer", "default": 1},
        },
        "required": ["d"],
    }
    out = mc.convert_openapi(schema)
    assert out["additionalProperties"] is False
    assert "required" not in out  # defaulted by the server before validation
    assert out["properties"]["p"] == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert out["properties"]["n"] == {"anyOf": [{"type": "null"}, {"type": "string"}]}
    assert "additionalProperties" not in out["properties"]["free"]


def test_upstream_dir_is_relative_to_repo_root():
    assert mc.UPSTREAM_DIR.resolve() == (ROOT.parent / "shared" / "upstream-crds").resolve()


# --- generated models -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def codegen_check() -> subprocess.CompletedProcess:
    """One `codegen.py --check` run (it regenerates every model in memory: ~6 s)."""
    return subprocess.run(
        [sys.executable, "codegen.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def test_codegen_crd_models_are_current(codegen_check):
    # Scoped to this part's outputs, so a colleague's in-flight run_config edit does not mask it.
    assert "tau_models/crd_" not in codegen_check.stdout, codegen_check.stdout


def test_codegen_check_is_clean(codegen_check):
    assert codegen_check.returncode == 0, codegen_check.stdout + codegen_check.stderr


# --- structural agreement: every project-schema field exists upstream with a compatible type ---


def _resolve(node: dict, base: Path) -> tuple[dict, Path]:
    """Follow a $ref (relative file and/or #/$defs pointer) in the project schemas."""
    while "$ref" in node:
        file_part, _, pointer = node["$ref"].partition("#")
        if file_part:
            base = (base.parent / file_part).resolve()
        target = _json(base)
        for part in pointer.strip("/").split("/") if pointer else []:
            target = target[part]
        node = target
    return node, base


@functools.cache
def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _kinds_of(node: dict, base: Path) -> set[str]:
    """The JSON types a schema node allows; int-or-string and const/enum included."""
    node, base = _resolve(node, base)
    if "anyOf" in node:
        return set().union(*(_kinds_of(sub, base) for sub in node["anyOf"]))
    if "const" in node:
        return {"string"} if isinstance(node["const"], str) else {"integer"}
    types = node.get("type", [])
    return set(types if isinstance(types, list) else [types]) - {"null"}


def _up_kinds(node: dict) -> set[str]:
    if node.get("x-kubernetes-int-or-string"):
        return {"integer", "string"}
    return {node["type"]} if "type" in node else set()


def _compare(project: dict, base: Path, upstream: dict, path: str, problems: list[str]) -> None:
    project, base = _resolve(project, base)
    mine, theirs = _kinds_of(project, base), _up_kinds(upstream)
    if mine and theirs and not mine <= theirs:
        problems.append(f"{path}: project allows {sorted(mine)}, upstream {sorted(theirs)}")
    enum, up_enum = set(project.get("enum", [])), set(upstream.get("enum", []))
    if enum and up_enum and not enum <= up_enum:
        problems.append(f"{path}: enum {project['enum']} not within upstream {upstream['enum']}")
    if "properties" in project:
        up_props = upstream.get("properties", {})
        # Upstream-required fields without a server default must be required here too.
        needed = {r for r in upstream.get("required", []) if "default" not in up_props.get(r, {})}
        for name in sorted(needed - set(project.get("required", []))):
            problems.append(f"{path}.{name}: required upstream, optional in the project schema")
    for name, sub in project.get("properties", {}).items():
        if upstream.get("x-kubernetes-preserve-unknown-fields") and "properties" not in upstream:
            continue
        if name not in upstream.get("properties", {}):
            # Upstream types metadata as a bare object; the API server validates ObjectMeta itself.
            if path != "metadata" and "properties" in upstream:
                problems.append(f"{path}.{name}: not an upstream field")
            continue
        _compare(sub, base, upstream["properties"][name], f"{path}.{name}", problems)
    if isinstance(project.get("items"), dict) and isinstance(upstream.get("items"), dict):
        _compare(project["items"], base, upstream["items"], f"{path}[]", problems)
    extra, up_extra = project.get("additionalProperties"), upstream.get("additionalProperties")
    if isinstance(extra, dict) and isinstance(up_extra, dict):
        _compare(extra, base, up_extra, f"{path}.*", problems)


def _schema_problems(kind: str, crd_file: Path) -> list[str]:
    api_version = DOCS[kind]["apiVersion"]
    group, _, version = api_version.rpartition("/")
    path = next(ROOT.glob(f"spec/crds/{group}_{version}_{kind}.schema.json")).resolve()
    crd = mc._yaml_load(crd_file)
    upstream = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    problems: list[str] = []
    _compare(_json(path), path, upstream["schema"]["openAPIV3Schema"], "", problems)
    return [p.removeprefix(".") for p in problems]


@needs_upstream
@pytest.mark.parametrize("kind", UPSTREAM_KINDS)
def test_project_schema_fields_exist_upstream(kind):
    group = DOCS[kind]["apiVersion"].rpartition("/")[0]
    assert _schema_problems(kind, mc._upstream_index()[(group, kind)]) == []


# --- SecretProviderClass: the upstream CRD from the Go module cache ---------------------------


@needs_spc_crd
def test_spc_project_schema_fields_exist_upstream():
    crd_file = mc.module_crd(SPC_GROUP, "SecretProviderClass")
    assert _schema_problems("SecretProviderClass", crd_file) == []


@needs_spc_crd
def test_spc_sample_passes_upstream_and_validate_document_checks_it():
    assert (SPC_GROUP, "SecretProviderClass") in mc.upstream_kinds()
    assert mc.validate_upstream(sample("SecretProviderClass")) == []
    spc = sample("SecretProviderClass")
    spc["spec"]["secretObjects"][0]["data"][0]["objectname"] = "hf-token"
    errors = mc.validate_document(spc)
    assert any(e.startswith("spec.secretObjects[0].data[0].objectname") for e in errors)
    assert any(e.startswith("upstream: spec.secretObjects[0].data[0]") for e in errors)


@needs_spc_crd
def test_spc_upstream_rejects_a_non_string_parameter():
    spc = sample("SecretProviderClass")
    spc["spec"]["parameters"]["usePodIdentity"] = False  # the provider reads strings only
    errors = mc.validate_upstream(spc)
    assert any(e.startswith("spec.parameters.usePodIdentity:") for e in errors)


def test_spc_project_model_rejects_a_non_string_parameter_and_a_missing_provider():
    spc = sample("SecretProviderClass")
    spc["spec"]["parameters"]["usePodIdentity"] = False
    del spc["spec"]["provider"]
    errors = mc.validate_crd(spc)
    assert any(e.startswith("spec.parameters.usePodIdentity") for e in errors)
    assert any(e.startswith("spec.provider") for e in errors)


def test_module_crd_is_none_for_kinds_it_does_not_serve():
    assert mc.module_crd("ray.io", "RayJob") is None


# --- the project JSON Schemas themselves -------------------------------------------------------


def _project_validator(path: Path) -> jsonschema.protocols.Validator:
    """A Draft 2020-12 validator for one spec/crds file, resolving its relative $refs from disk."""

    def retrieve(uri: str) -> Resource:
        return Resource.from_contents(_json(Path(urllib.parse.urlparse(uri).path)))

    schema = {**_json(path), "$id": path.as_uri()}
    return jsonschema.Draft202012Validator(schema, registry=Registry(retrieve=retrieve))


SCHEMA_FILES = sorted((ROOT / "spec" / "crds").rglob("*.schema.json"))


@pytest.mark.parametrize("path", SCHEMA_FILES, ids=lambda p: p.name)
def test_project_schemas_are_valid_2020_12(path):
    jsonschema.Draft202012Validator.check_schema(_json(path))


@pytest.mark.parametrize("kind", CRD_KINDS)
def test_samples_pass_project_json_schema(kind):
    # The JSON Schema and the model generated from it must agree on the samples.
    api_version = DOCS[kind]["apiVersion"]
    group, _, version = api_version.rpartition("/")
    path = (ROOT / "spec" / "crds" / f"{group}_{version}_{kind}.schema.json").resolve()
    errors = [e.message for e in _project_validator(path).iter_errors(sample(kind))]
    assert errors == []


def test_project_json_schema_rejects_unknown_spec_field():
    path = (ROOT / "spec" / "crds" / "ray.io_v1_RayJob.schema.json").resolve()
    job = sample("RayJob")
    job["spec"]["rayClusterSpec"]["headGroupSpec"]["bogus"] = 1
    assert any("'bogus'" in e.message for e in _project_validator(path).iter_errors(job))


def test_yaml_timestamps_are_normalised():
    # PyYAML turns unquoted timestamps into datetimes; validators must see the API's strings.
    wl = sample("Workload")
    wl["status"]["requeueState"]["requeueAt"] = yaml.safe_load("t: 2026-12-02T14:55:00Z")["t"]
    assert mc.validate_crd(wl) == []
    if mc.upstream_available():
        assert mc.validate_upstream(wl) == []
