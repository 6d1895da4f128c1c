"""Unknown-key warnings of the managed parse path: located, deduplicated, with did-you-mean.

Ports the reference's core/runconfig/unknown_test.go: nested typos, the misspelled scheduling
directive it exists for, free-form maps left alone, structured manifest subtrees checked one
level down, a list typo reported once, and no misleading suggestion for unrelated keys.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.errors import Diagnostic
from tau.intent.load import parse as parse_yaml
from tau.intent.workflow import unknown
from tau.intent.workflow.manifest import parse

ROOT = Path(__file__).resolve().parents[1]
HEAD = "schema_version: 1\nname: x\nrun:\n  entrypoint: train.py\n"


def warnings_for(text: str, file: str = "tau.yaml") -> tuple[Diagnostic, ...]:
    return unknown.unknown_keys(parse_yaml(text, Path(file)))


def paths(text: str) -> list[str]:
    return [w.message.split('"')[1] for w in warnings_for(text)]


@pytest.mark.parametrize("typo", ["nodeSelector", "node_selecter"])
def test_a_nested_typo_warns_with_the_field_it_meant(typo: str) -> None:
    text = HEAD + f"policy:\n  {typo}:\n    example.invalid/gpu-series: nd-h200-v5\n"
    (warning,) = warnings_for(text)
    assert warning.message == (
        f'unknown config key "policy.{typo}" in tau.yaml (ignored); did you mean '
        '"policy.node_selector"?'
    )
    assert warning.severity == "warning"
    assert str(warning.location) == "tau.yaml:6:3"
    assert warning.path == f"policy.{typo}"


def test_the_misspelled_scheduling_directive_suggests_its_parent() -> None:
    text = HEAD + "compute:\n  gpus: 8\nscheduling:\n  node_selector:\n    a: b\n"
    (warning,) = warnings_for(text)
    assert warning.message == (
        'unknown config key "scheduling" in tau.yaml (ignored); did you mean "policy"?'
    )
    assert str(warning.location) == "tau.yaml:7:1"
    assert warning.format() == (
        'tau.yaml:7:1: warning: scheduling: unknown config key "scheduling" in tau.yaml '
        '(ignored); did you mean "policy"?'
    )


def test_children_that_disagree_suggest_nothing() -> None:
    text = HEAD + "scheduling:\n  node_selector: {a: b}\n  data_pvc: x\n"
    (warning,) = warnings_for(text)
    assert warning.message == 'unknown config key "scheduling" in tau.yaml (ignored)'
    assert warning.hint is not None and "explain-config" in warning.hint


def test_an_unrelated_key_gets_no_misleading_suggestion() -> None:
    assert unknown.suggest_path("quantum_entanglement_settings") is None
    (warning,) = warnings_for(HEAD + "quantum_entanglement_settings: true\n")
    assert "did you mean" not in warning.message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("runtime.imag", "runtime.image"),
        ("comptue", "compute"),
        ("eval.cpu_wrokers", "eval.cpu_workers"),
        ("artifacts.checkpiont", "artifacts.checkpoint"),
        ("model.primary_metirc", "model.primary_metric"),
        ("resource_naming.prefx", "resource_naming.prefix"),
        ("compute.worker_memroy", "compute.worker_memory"),
        ("storage.data_pcv", "storage.data_pvc"),
    ],
)
def test_suggestions_cover_run_config_and_manifest_fields(typo: str, meant: str) -> None:
    assert unknown.suggest_path(typo) == meant


def test_a_config_with_only_known_keys_warns_nothing() -> None:
    text = (
        HEAD.replace(
            "  entrypoint: train.py\n", "  entrypoint: train.py\n  workload_kind: rayjob\n"
        )
        + "compute:\n  gpus: 8\n  workers: 2\n  cpus: 4\n  worker_memory_limit: 96Gi\n"
        "runtime:\n  image: example.invalid/ray:latest\n  pip: [torch]\n"
        "policy:\n  profile: research-training\n  node_selector:\n"
        "    example.invalid/gpu-series: nd-h200-v5\n"
        "storage:\n  data_pvc: blob-training\n"
        "eval: {cpu_workers: 2, upstream: u}\nartifacts: {checkpoint: c}\n"
        "research: {experiment: e}\nresource_naming: {prefix: p}\n"
        "model: {name: m, base: b, task: t, tags: {any-key: v}, primary_metric: loss, "
        "metric_direction: lower}\n"
        "workflow:\n  extra_scripts: [a.py]\n  secret_payload: s.json\n  smoke_pairs: 2\n"
    )
    assert warnings_for(text) == ()


def test_free_form_map_keys_are_never_checked() -> None:
    text = HEAD + (
        "policy:\n  node_selector:\n    definitely-not-a-config-field: value\n"
        "    another.weird/label: value\n"
        "runtime:\n  env_secret:\n    HF_TOKEN: my-secret:token\n  env_kv:\n    ANY_NAME: v/s\n"
        "  env:\n    FREE: form\n"
        "execution:\n  configs:\n    torch_config: {anything: 1}\n"
        "model:\n  tags:\n    whatever: x\n"
    )
    assert warnings_for(text) == ()


def test_the_sdk_entrypoint_block_is_not_checked() -> None:
    # The SDK may write `entrypoint:` as a mapping; the run config models it as a leaf.
    text = HEAD + "entrypoint:\n  script: /script/tau_entrypoint_x.py\n  function: f\n"
    assert warnings_for(text) == ()


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        ("runtime:\n  rdma:\n    enabeld: true\n", "runtime.rdma.enabeld"),
        (
            "runtime:\n  rdma:\n    enabled: true\n    resource_nmae: rdma/x\n",
            "runtime.rdma.resource_nmae",
        ),
        (
            "storage:\n  mounts:\n    - name: a\n      mountPath: /a\n      pvc: p\n"
            "      readOlny: true\n",
            "storage.mounts.readOlny",
        ),
        ("runtime:\n  env:\n    - {name: A, valeu: x}\n", "runtime.env.valeu"),
        (
            "runtime:\n  env:\n    - name: A\n      valueFrom:\n        secretKeyRef: "
            "{name: s, key: k, optinal: true}\n",
            "runtime.env.valueFrom.secretKeyRef.optinal",
        ),
    ],
)
def test_a_typo_inside_a_structured_manifest_subtree_warns(block: str, expected: str) -> None:
    assert paths(HEAD + block) == [expected]


def test_valid_nested_manifest_subtrees_are_silent() -> None:
    text = HEAD + (
        "runtime:\n  rdma:\n    enabled: true\n    resource_name: rdma/rdma_shared_device_a\n"
        "    count: 1\n    shm_size: 16Gi\n"
        "storage:\n  data_pvc: blob-training\n  mounts:\n"
        "    - name: a\n      mountPath: /a\n      pvc: p\n      readOnly: true\n"
        "    - name: b\n      mountPath: /b\n      pvc: q\n"
    )
    assert warnings_for(text) == ()


def test_a_typo_repeated_across_list_items_is_one_warning_at_its_first_place() -> None:
    text = HEAD + (
        "storage:\n  mounts:\n"
        "    - name: a\n      mountPath: /a\n      pvc: p\n      readOlny: true\n"
        "    - name: b\n      mountPath: /b\n      pvc: q\n      readOlny: true\n"
    )
    (warning,) = warnings_for(text)
    assert warning.message == (
        'unknown config key "storage.mounts.readOlny" in tau.yaml (ignored); did you mean '
        '"storage.mounts.readOnly"?'
    )
    assert (warning.path, str(warning.location)) == ("storage.mounts[0].readOlny", "tau.yaml:10:7")


def test_warnings_are_sorted_by_place() -> None:
    text = HEAD + "zzz: 1\ncompute:\n  gpuz: 1\naaa: 2\n"
    assert [w.path for w in warnings_for(text)] == ["zzz", "compute.gpuz", "aaa"]


def test_the_reference_pass_through_paths_are_known() -> None:
    # runconfig.managedPassthroughPaths of the reference: legitimate in a managed manifest.
    passthrough = [
        "eval",
        "artifacts",
        "research",
        "model",
        "resource_naming",
        "compute.cpus",
        "compute.cpu_limit",
        "compute.memory",
        "compute.memory_limit",
        "compute.worker_cpus",
        "compute.worker_cpu_limit",
        "compute.worker_memory",
        "compute.worker_memory_limit",
        "runtime.rdma",
        "runtime.rdma.enabled",
        "runtime.rdma.resource_name",
        "runtime.rdma.count",
        "runtime.rdma.shm_size",
        "storage.mounts",
        "storage.mounts.name",
        "storage.mounts.mountPath",
        "storage.mounts.pvc",
        "storage.mounts.readOnly",
    ]
    assert set(passthrough) <= set(unknown.known_paths())


def test_the_direct_run_config_fields_are_known() -> None:
    from tau.intent.validate.structure import known_paths

    assert {".".join(p) for p in known_paths()} <= set(unknown.known_paths())


#: The example run configs (tau/workspace.connection.yaml is not a run config).
EXAMPLES = sorted(
    p for p in (ROOT / "examples" / "tau").glob("*.yaml") if not p.name.endswith(".connection.yaml")
)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_shipped_example_configs_warn_nothing(example: Path) -> None:
    assert unknown.unknown_keys(parse_yaml(example.read_text(), example)) == ()


def test_the_warning_names_the_file_as_given() -> None:
    (warning,) = warnings_for(HEAD + "bogus: 1\n", "workloads/train/tau.yaml")
    assert warning.message.startswith('unknown config key "bogus" in workloads/train/tau.yaml')
    assert str(warning.location) == "workloads/train/tau.yaml:5:1"


def test_manifest_parse_returns_the_warnings_once() -> None:
    text = HEAD + "compute: {gpus: 1, gpuz: 2}\nruntime:\n  pip: [torch]\n"
    _, warnings = parse(parse_yaml(text, Path("tau.yaml")), text.encode())
    assert [w.path for w in warnings] == ["compute.gpuz"]
    assert warnings[0].message.endswith('did you mean "compute.gpus"?')
