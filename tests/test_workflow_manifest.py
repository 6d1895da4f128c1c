"""The schema_version: 1 manifest parser: every rule with the reference's message, all at once.

Ports the reference's manifest_test.go cases and the contract's "Manifest validation" rules:
each problem is a located Diagnostic (file:line:col) with its path and value, all problems of
a file come out in one ConfigError, CPU-only manifests get their defaults, and no input, however
mangled, raises anything but ConfigError.
"""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.errors import ConfigError, Diagnostic
from tau.intent.load import parse as parse_yaml
from tau.intent.workflow.manifest import parse, rayjob_name_problem
from tau.intent.workflow.model import EnvVar, Manifest, ManifestCompute, Mount

BASE = "schema_version: 1\nname: x\ncompute: {gpus: 1}\nruntime:\n  pip:\n    - torch==2.4.0\n"
PIP_REQUIRED = (
    "runtime.pip: required (declare the per-pod Python environment your trainer needs; tau "
    'ships no default). Example: runtime: {pip: ["torch==2.4.0", "transformers"]}'
)
SIZE_REMEDY = (
    "publish source or artifacts once and reference a digest-pinned OCI image with run.source "
    "instead of embedding content in environment variables"
)
NAME_RULE = "use lowercase alphanumerics with internal hyphens"


def run_parse(text: str, file: str = "m.yaml") -> tuple[Manifest, tuple[Diagnostic, ...]]:
    parsed, warnings = parse(parse_yaml(text, Path(file)), text.encode())
    assert parsed.text == text.encode()
    return parsed.manifest, warnings


def ok(text: str) -> Manifest:
    manifest, warnings = run_parse(text)
    assert [w for w in warnings if w.severity == "error"] == []
    return manifest


def problems(text: str, file: str = "m.yaml") -> list[Diagnostic]:
    with pytest.raises(ConfigError) as caught:
        parse(parse_yaml(text, Path(file)), text.encode())
    return [d for d in caught.value.diagnostics if d.severity == "error"]


def messages(text: str) -> list[str]:
    return [d.message for d in problems(text)]


def with_runtime(extra: str) -> str:
    """BASE with more runtime fields (indented two spaces under runtime)."""
    return BASE + extra


def with_compute(fields: str) -> str:
    return BASE.replace("compute: {gpus: 1}", f"compute: {{{fields}}}")


# schema_version, name, prefix, resource name


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("schema_version: 2\n", "schema_version: want 1, got 2"),
        ("schema_version: 0\n", "schema_version: want 1, got 0"),
        ('schema_version: "1"\n', 'schema_version: want 1, got string "1"'),
        ("schema_version: true\n", "schema_version: want 1, got boolean true"),
        ("", "schema_version: want 1, got nothing (the key is missing)"),
    ],
)
def test_schema_version_must_be_1(line: str, message: str) -> None:
    assert messages(BASE.replace("schema_version: 1\n", line)) == [message]


def test_name_is_required_and_kebab_case() -> None:
    assert messages(BASE.replace("name: x\n", "")) == ["name: required (kebab-case)"]
    assert messages(BASE.replace("name: x", 'name: ""')) == ["name: required (kebab-case)"]
    assert messages(BASE.replace("name: x", "name: Bad_Name")) == [
        f'name: "Bad_Name" is invalid ({NAME_RULE})'
    ]
    assert messages(BASE.replace("name: x", "name: -x")) == [f'name: "-x" is invalid ({NAME_RULE})']


def test_a_name_with_a_trailing_newline_is_invalid_and_quoted_escaped() -> None:
    # Python's `$` matches before a final newline; the whole value must match.
    assert messages(BASE.replace("name: x", 'name: "abc\\n"')) == [
        f'name: "abc\\n" is invalid ({NAME_RULE})'
    ]


def test_resource_naming_default_and_override() -> None:
    assert ok(BASE.replace("name: x", "name: train-smoke")).resource_name == "tau-train-smoke"
    text = BASE.replace("name: x", "name: train-smoke\nresource_naming:\n  prefix: diffusion")
    manifest = ok(text)
    assert (manifest.prefix, manifest.resource_name) == ("diffusion", "diffusion-train-smoke")


def test_resource_naming_rejects_an_invalid_prefix() -> None:
    text = BASE + "resource_naming:\n  prefix: Bad_Prefix\n"
    assert messages(text) == [f'resource_naming.prefix: "Bad_Prefix" is invalid ({NAME_RULE})']


def test_a_blank_prefix_means_the_default() -> None:
    assert ok(BASE + "resource_naming:\n  prefix: '  '\n").prefix == "tau"


def test_the_resource_name_is_at_most_63_characters() -> None:
    name = "a" * 60
    assert messages(BASE.replace("name: x", f"name: {name}")) == [
        f'resource name "tau-{name}" is too long (64 chars; Kubernetes name limit is 63)'
    ]
    assert ok(BASE.replace("name: x", f"name: {'a' * 59}")).resource_name == f"tau-{'a' * 59}"


# the RayJob name limit (kind-dependent, asked by the caller)


def test_rayjob_name_problem_names_the_budget_the_prefix_leaves() -> None:
    assert rayjob_name_problem(Manifest(name="a" * 43)) is None
    assert rayjob_name_problem(Manifest(name="a" * 44)) == (
        f'RayJob name "tau-{"a" * 44}" is too long (48 chars; KubeRay limit is 47). With '
        'resource_naming.prefix="tau", manifest name must be at most 43 chars; shorten name or '
        "prefix"
    )


def test_rayjob_name_problem_when_the_prefix_alone_is_too_long() -> None:
    manifest = Manifest(name="x", prefix="p" * 46)
    assert rayjob_name_problem(manifest) == (
        f'RayJob name "{"p" * 46}-x" is too long (48 chars; KubeRay limit is 47). '
        f'resource_naming.prefix="{"p" * 46}" leaves no room for manifest.name; shorten the '
        "prefix"
    )


# compute


@pytest.mark.parametrize("gpus", [16, 9, -1])
def test_gpus_must_be_0_to_8(gpus: int) -> None:
    assert messages(with_compute(f"gpus: {gpus}")) == [
        f"compute.gpus: want 0..8 (per-worker; 0 = CPU-only), got {gpus}"
    ]


def test_gpus_default_to_1_and_workers_to_1() -> None:
    manifest = ok(BASE.replace("compute: {gpus: 1}\n", ""))
    assert (manifest.compute.gpus, manifest.compute.workers) == (1, 1)


def test_workers_zero_reads_as_one_and_negative_is_an_error() -> None:
    assert ok(with_compute("gpus: 2, workers: 0")).compute.workers == 1
    assert ok(with_compute("gpus: 8, workers: 2")).compute.workers == 2
    assert messages(with_compute("gpus: 1, workers: -1")) == ["compute.workers: want ≥ 1, got -1"]


@pytest.mark.parametrize("field", ["cpus", "cpu_limit", "worker_cpus", "worker_cpu_limit"])
def test_negative_cpu_fields_want_at_least_1(field: str) -> None:
    assert messages(with_compute(f"gpus: 1, {field}: -2")) == [
        f"compute.{field}: want ≥ 1 when set, got -2"
    ]


@pytest.mark.parametrize(
    ("written", "stored"),
    [("4", "4"), ('"500m"', "500m"), ("0.5", "0.5"), ("2.0", "2"), ('"1.5"', "1.5"), ("0", None)],
)
def test_cpu_fields_take_counts_and_quantities_and_store_strings(
    written: str, stored: str | None
) -> None:
    assert ok(with_compute(f"gpus: 1, cpus: {written}")).compute.cpus == stored


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ('"abc"', 'compute.cpus: must be a Kubernetes CPU quantity like 4 or 500m (got "abc")'),
        (
            '"4 cores"',
            'compute.cpus: must be a Kubernetes CPU quantity like 4 or 500m (got "4 cores")',
        ),
        ('" 4"', "compute.cpus: must not have surrounding whitespace"),
        ('"0"', 'compute.cpus: must be greater than zero (got "0")'),
        ('"-1"', 'compute.cpus: must be greater than zero (got "-1")'),
        ("[4]", "compute.cpus: want a CPU count or quantity such as 4 or 500m, got a list"),
        ("true", "compute.cpus: want a CPU count or quantity such as 4 or 500m, got boolean true"),
        (".inf", "compute.cpus: must be a Kubernetes CPU quantity like 4 or 500m (got inf)"),
    ],
)
def test_bad_cpu_values(written: str, message: str) -> None:
    assert messages(with_compute(f"gpus: 1, cpus: {written}")) == [message]


@pytest.mark.parametrize(
    "field", ["memory", "memory_limit", "worker_memory", "worker_memory_limit"]
)
def test_memory_fields_reject_whitespace_and_non_quantities(field: str) -> None:
    assert messages(with_compute(f'gpus: 1, {field}: " 32Gi"')) == [
        f"compute.{field}: must not have surrounding whitespace"
    ]
    assert messages(with_compute(f"gpus: 1, {field}: 32GB")) == [
        f'compute.{field}: must be a Kubernetes memory quantity like 512Mi or 32Gi (got "32GB")'
    ]


@pytest.mark.parametrize("written", ["32gi", "512K", "512m", "1.5Gi", "-1Gi", "Gi"])
def test_memory_takes_only_quantities_kubernetes_accepts(written: str) -> None:
    (message,) = messages(with_compute(f"gpus: 1, memory: {written}"))
    assert message.startswith("compute.memory: must be a Kubernetes memory quantity like 512Mi")


def test_memory_must_be_greater_than_zero_and_a_bare_number_is_bytes() -> None:
    assert messages(with_compute("gpus: 1, memory: 0Gi")) == [
        'compute.memory: must be greater than zero (got "0Gi")'
    ]
    manifest = ok(with_compute("gpus: 1, memory: 536870912, memory_limit: 1Gi"))
    assert (manifest.compute.memory, manifest.compute.memory_limit) == ("536870912", "1Gi")


def test_limits_below_requests_are_errors_compared_by_value() -> None:
    assert messages(with_compute("gpus: 1, cpus: 4, cpu_limit: 2")) == [
        "compute.cpu_limit=2 must be >= compute.cpus=4"
    ]
    assert messages(with_compute('gpus: 1, cpus: 2, cpu_limit: "1500m"')) == [
        "compute.cpu_limit=1500m must be >= compute.cpus=2"
    ]
    assert messages(with_compute("gpus: 1, worker_cpus: 8, worker_cpu_limit: 4")) == [
        "compute.worker_cpu_limit=4 must be >= compute.worker_cpus=8"
    ]
    assert messages(with_compute("gpus: 1, memory: 2Gi, memory_limit: 1Gi")) == [
        "compute.memory_limit=1Gi must be >= compute.memory=2Gi"
    ]
    assert messages(with_compute("gpus: 1, worker_memory: 2G, worker_memory_limit: 1900M")) == [
        "compute.worker_memory_limit=1900M must be >= compute.worker_memory=2G"
    ]
    # Equal by value, whatever the suffix.
    ok(with_compute('gpus: 1, cpus: 2, cpu_limit: "2000m", memory: 1Gi, memory_limit: 1024Mi'))


def test_gpu_manifests_leave_unset_sizing_to_the_renderer() -> None:
    assert ok(BASE).compute == ManifestCompute(gpus=1, workers=1)


def test_cpu_only_manifest_gets_the_contract_defaults() -> None:
    manifest = ok(with_compute("gpus: 0, workers: 4"))
    assert manifest.compute == ManifestCompute(
        gpus=0,
        workers=4,
        cpus="1",
        cpu_limit="1",
        worker_cpus="1",
        worker_cpu_limit="1",
        memory="2Gi",
        memory_limit="2Gi",
        worker_memory="4Gi",
        worker_memory_limit="4Gi",
    )


def test_cpu_only_defaults_follow_the_values_written() -> None:
    compute = ok(with_compute("gpus: 0, cpus: 4, memory: 8Gi")).compute
    assert compute == ManifestCompute(
        gpus=0,
        workers=1,
        cpus="4",
        cpu_limit="4",
        worker_cpus="4",
        worker_cpu_limit="4",
        memory="8Gi",
        memory_limit="8Gi",
        worker_memory="8Gi",  # memory was given, so workers get it too (not 4Gi)
        worker_memory_limit="8Gi",
    )
    compute = ok(with_compute("gpus: 0, worker_cpus: 2, worker_memory: 16Gi")).compute
    assert (compute.cpus, compute.worker_cpus, compute.worker_cpu_limit) == ("1", "2", "2")
    assert (compute.memory, compute.worker_memory, compute.worker_memory_limit) == (
        "2Gi",
        "16Gi",
        "16Gi",
    )


def test_reference_cpu_only_manifest() -> None:
    text = (
        "schema_version: 1\nname: cpu-ray\ncompute:\n  gpus: 0\n  cpus: 1\n  worker_cpus: 2\n"
        "  workers: 5\n  memory: 2Gi\n  worker_memory: 4Gi\nruntime:\n  pip:\n    - pyyaml\n"
    )
    compute = ok(text).compute
    assert (compute.gpus, compute.workers, compute.memory, compute.worker_memory) == (
        0,
        5,
        "2Gi",
        "4Gi",
    )


def test_a_limit_below_a_defaulted_request_points_at_the_written_limit() -> None:
    text = with_compute("gpus: 0, cpus: 4, worker_cpu_limit: 2")
    (found,) = problems(text)
    assert found.message == "compute.worker_cpu_limit=2 must be >= compute.worker_cpus=4"
    assert found.hint is not None and "compute.worker_cpus is not set and defaults" in found.hint
    assert str(found.location) == "m.yaml:3:47"
    assert messages(with_compute('gpus: 0, cpu_limit: "500m"')) == [
        "compute.cpu_limit=500m must be >= compute.cpus=1"
    ]


# eval


def test_eval_cpu_workers_must_not_be_negative() -> None:
    assert messages(BASE + "eval:\n  cpu_workers: -1\n") == ["eval.cpu_workers: want ≥ 0, got -1"]


@pytest.mark.parametrize("evaluation", ["{cpu_workers: 1}", "{upstream: prev-train}"])
def test_cpu_only_cannot_be_an_eval_manifest(evaluation: str) -> None:
    text = with_compute("gpus: 0") + f"eval: {evaluation}\n"
    (found,) = problems(text)
    assert found.message == (
        "compute.gpus=0 is CPU-only training and cannot be combined with eval.cpu_workers or "
        "eval.upstream; use compute.gpus > 0 for rayjob-eval"
    )
    assert str(found.location) == "m.yaml:3:17"


@pytest.mark.parametrize(
    ("evaluation", "expected"),
    [
        ("", False),
        ("eval: {}\n", False),
        ("eval: {harness: tc_score, cpu_workers: 4}\n", True),
        ("eval: {harness: tc_score, upstream: prev-train}\n", True),
    ],
)
def test_is_eval(evaluation: str, expected: bool) -> None:
    manifest, warnings = run_parse(BASE + evaluation)
    assert manifest.eval.is_eval is expected
    # eval.harness is not a manifest field: a warning, not an error (the parse is lenient).
    assert [w.path for w in warnings] == (["eval.harness"] if "harness" in evaluation else [])


# runtime


@pytest.mark.parametrize("pip", ["", "  pip: []\n", "  pip:\n"])
def test_runtime_pip_is_required_with_an_example(pip: str) -> None:
    text = BASE.replace("  pip:\n    - torch==2.4.0\n", pip or "  image: x\n")
    (found,) = problems(text)
    assert found.message == PIP_REQUIRED
    assert found.path == "runtime.pip"


def test_runtime_pip_is_required_when_runtime_is_missing() -> None:
    (found,) = problems("schema_version: 1\nname: x\n")
    assert found.message == PIP_REQUIRED
    assert str(found.location) == "m.yaml:1:1"


def test_runtime_pip_entries_must_not_be_blank() -> None:
    text = BASE + "    - '  '\n    - numpy\n    - ''\n"
    assert messages(text) == ["runtime.pip[1]: blank entry", "runtime.pip[3]: blank entry"]


def test_runtime_pip_must_be_a_list_of_strings() -> None:
    assert messages(BASE.replace("  pip:\n    - torch==2.4.0\n", "  pip: torch\n")) == [
        'runtime.pip: want a list of pip requirements, got string "torch"'
    ]
    assert messages(BASE + "    - 3\n") == ["runtime.pip[1]: want a string, got integer 3"]


def test_runtime_image_is_kept_trimmed() -> None:
    assert (
        ok(BASE + "  image: ' example.invalid/ray:2 '\n").runtime.image == "example.invalid/ray:2"
    )
    assert ok(BASE).runtime.image is None


def test_runtime_env_literals_and_secret_refs() -> None:
    text = BASE + (
        "  env:\n"
        "    - name: HF_TOKEN\n"
        "      valueFrom:\n"
        "        secretKeyRef: {name: hf-token, key: token, optional: true}\n"
        "    - {name: WANDB_MODE, value: offline}\n"
        "    - {name: EPOCHS, value: 3}\n"
        "    - {name: EMPTY, value: ''}\n"
    )
    assert ok(text).runtime.env == (
        EnvVar("HF_TOKEN", secret=("hf-token", "token"), optional=True),
        EnvVar("WANDB_MODE", "offline"),
        EnvVar("EPOCHS", "3"),
        EnvVar("EMPTY", ""),
    )


ENV_CASES = [
    (
        "{name: 1BAD, value: x}",
        'runtime.env[0]: env var name "1BAD" is invalid (use C_IDENTIFIER format)',
    ),
    ("{value: x}", 'runtime.env[0]: env var name "" is invalid (use C_IDENTIFIER format)'),
    (
        "{name: A, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}",
        "runtime.env[0]: env var A must set either value or valueFrom.secretKeyRef, not both",
    ),
    ("{name: A}", "runtime.env[0]: env var A must set value or valueFrom.secretKeyRef"),
    (
        "{name: A, valueFrom: {configMapKeyRef: {name: c, key: k}}}",
        "runtime.env[0]: env var A has unsupported valueFrom; only secretKeyRef is supported",
    ),
    (
        "{name: A, valueFrom: {secretKeyRef: {name: s}}}",
        "runtime.env[0]: env var A secretKeyRef requires name and key",
    ),
    (
        "{name: A, valueFrom: {secretKeyRef: {name: Bad_Secret, key: k}}}",
        'runtime.env[0]: secret name "Bad_Secret" is not a valid Kubernetes name (lowercase '
        "letters, digits, '-' and '.')",
    ),
    (
        "{name: A, valueFrom: {secretKeyRef: {name: s, key: 'a key'}}}",
        'runtime.env[0]: secret key "a key" is not a valid Secret data key (letters, digits, '
        "'-', '_' and '.')",
    ),
    ("{name: A, value: [1]}", "runtime.env[0].value: want a string, got a list"),
    ("{name: A, value: true}", "runtime.env[0].value: want a string, got boolean true"),
    ("{name: 7, value: x}", "runtime.env[0].name: want a string, got integer 7"),
    (
        "just-a-string",
        "runtime.env[0]: want a mapping with name and value or valueFrom, got string "
        '"just-a-string"',
    ),
]


@pytest.mark.parametrize(("entry", "message"), ENV_CASES)
def test_runtime_env_entry_rules(entry: str, message: str) -> None:
    assert messages(BASE + f"  env:\n    - {entry}\n") == [message]


def test_runtime_env_names_are_unique() -> None:
    text = (
        BASE
        + "  env:\n    - {name: A, value: x}\n    - {name: B, value: y}\n"
        + "    - {name: A, value: z}\n"
    )
    (found,) = problems(text)
    assert found.message == 'runtime.env[2]: duplicate env var name "A" (also runtime.env[0])'
    assert str(found.location) == "m.yaml:10:14"


def test_runtime_env_is_a_list_not_a_map() -> None:
    assert messages(BASE + "  env:\n    A: x\n") == [
        "runtime.env: want a list of {name, value} or {name, valueFrom: {secretKeyRef: "
        "{name, key}}} entries, got a mapping"
    ]


def test_an_oversized_literal_env_value_names_run_source() -> None:
    # The reference's TestRenderRejectsOversizedManagedLiteralEnvironment.
    value = "x" * (64 * 1024 + 1)
    (found,) = problems(BASE + f"  env:\n    - name: BIG\n      value: {value}\n")
    assert found.message == (
        f'literal environment variable "BIG" is 65537 bytes; maximum is 65536 bytes: {SIZE_REMEDY}'
    )
    assert "run.source" in found.message
    assert found.hint is not None and "workflow.extra_scripts" in found.hint
    assert str(found.location) == "m.yaml:9:14"


def test_literal_env_may_total_at_most_128_kib_and_secret_refs_cost_nothing() -> None:
    entries = "".join(f"    - name: V{i}\n      value: {'x' * 50_000}\n" for i in range(3))
    (found,) = problems(BASE + "  env:\n" + entries)
    assert found.message == (
        f"literal environment payload is 150012 bytes; maximum is 131072 bytes: {SIZE_REMEDY}"
    )
    refs = "".join(
        f"    - {{name: S{i}, valueFrom: {{secretKeyRef: {{name: s, key: k{i}}}}}}}\n"
        for i in range(50)
    )
    ok(BASE + "  env:\n" + entries.split("    - name: V2")[0] + refs)


def test_exactly_64_kib_is_allowed() -> None:
    assert (
        ok(BASE + f"  env:\n    - {{name: A, value: {'x' * 65536}}}\n").runtime.env[0].name == "A"
    )


def test_runtime_env_kv_is_a_map_of_strings_in_written_order() -> None:
    text = BASE + "  env_kv:\n    Z_KEY: vault/z\n    A_KEY: a\n"
    assert ok(text).runtime.env_kv == (("Z_KEY", "vault/z"), ("A_KEY", "a"))
    assert messages(BASE + "  env_kv: [A]\n") == [
        "runtime.env_kv: want a mapping of strings, got a list"
    ]
    assert messages(BASE + "  env_kv:\n    A: 3\n") == [
        "runtime.env_kv.A: want a string, got integer 3"
    ]


@pytest.mark.parametrize(
    "rdma",
    [
        "{enabled: true, resource_name: rdma/rdma_shared_device_a, count: 1}",
        "{enabled: false}",
        "{count: 2}",
        "{resource_name: x}",
    ],
)
def test_runtime_rdma_is_out_of_scope_with_a_located_error(rdma: str) -> None:
    (found,) = problems(BASE + f"  rdma: {rdma}\n")
    assert found.message == (
        "runtime.rdma: RDMA devices are not rendered by this tau; remove runtime.rdma"
    )
    assert str(found.location) == "m.yaml:7:3"


def test_an_empty_rdma_block_asks_for_nothing() -> None:
    ok(BASE + "  rdma: {}\n")
    ok(BASE + "  rdma:\n")


# storage and artifacts


def test_runtime_env_and_storage_mounts_parse() -> None:
    text = BASE + (
        "  env:\n"
        "    - name: HF_TOKEN\n      valueFrom:\n        secretKeyRef:\n"
        "          name: hf-token\n          key: token\n"
        "    - name: WANDB_MODE\n      value: offline\n"
        "storage:\n  data_pvc: project-training\n  mounts:\n"
        "    - name: dataset\n      pvc: captioner-dataset\n      mountPath: /datasets/captioner\n"
        "      readOnly: true\n"
    )
    manifest = ok(text)
    assert manifest.storage.data_pvc == "project-training"
    assert len(manifest.runtime.env) == 2
    assert manifest.storage.mounts == (
        Mount("dataset", "/datasets/captioner", "captioner-dataset", read_only=True),
    )


def test_storage_data_pvc_must_not_have_surrounding_whitespace() -> None:
    assert messages(BASE + "storage:\n  data_pvc: ' data'\n") == [
        "storage.data_pvc: must not have surrounding whitespace"
    ]


def mount(entry: str) -> str:
    return BASE + f"storage:\n  mounts:\n    - {entry}\n"


MOUNT_CASES = [
    ("{name: 'a b', mountPath: /a, pvc: p}", 'storage.mounts[0].name: invalid volume name "a b"'),
    ("{name: '..', mountPath: /a, pvc: p}", 'storage.mounts[0].name: invalid volume name ".."'),
    ("{mountPath: /a, pvc: p}", 'storage.mounts[0].name: invalid volume name ""'),
    (
        "{name: Data.Set, mountPath: /a, pvc: p}",
        'storage.mounts[0].name: "Data.Set" is not a valid Kubernetes volume name',
    ),
    (
        "{name: a, mountPath: rel/path, pvc: p}",
        "storage.mounts[0].mountPath: must be an absolute pod path",
    ),
    ("{name: a, pvc: p}", "storage.mounts[0].mountPath: must be an absolute pod path"),
    ("{name: a, mountPath: /a}", "storage.mounts[0].pvc: required"),
    ("{name: a, mountPath: /a, pvc: '  '}", "storage.mounts[0].pvc: required"),
    (
        "{name: a, mountPath: /a, pvc: p, readOnly: yes please}",
        'storage.mounts[0].readOnly: want a boolean (true or false), got string "yes please"',
    ),
    (
        "dataset:/data",
        "storage.mounts[0]: want a mapping with name, mountPath and pvc, got string "
        '"dataset:/data"',
    ),
]


@pytest.mark.parametrize(("entry", "message"), MOUNT_CASES)
def test_storage_mount_rules(entry: str, message: str) -> None:
    assert messages(mount(entry)) == [message]


@pytest.mark.parametrize("name", ["script", "manifest", "data", "tau-hot", "dshm"])
def test_storage_mount_names_reserved_by_tau(name: str) -> None:
    assert messages(mount(f"{{name: {name}, mountPath: /a, pvc: p}}")) == [
        f'storage.mounts[0].name: "{name}" is reserved by Tau'
    ]


@pytest.mark.parametrize("path", ["/script", "/manifest", "/data", "/mnt", "/dev/shm", "/data/"])
def test_storage_mount_paths_reserved_by_tau(path: str) -> None:
    assert messages(mount(f"{{name: a, mountPath: {path}, pvc: p}}")) == [
        f'storage.mounts[0].mountPath: "{path}" is reserved by Tau'
    ]


def test_storage_mount_names_and_paths_are_unique() -> None:
    text = mount("{name: a, mountPath: /a, pvc: p}") + (
        "    - {name: a, mountPath: /b, pvc: p}\n    - {name: c, mountPath: /a/, pvc: p}\n"
    )
    assert messages(text) == [
        'storage.mounts[1].name: duplicate volume name "a"',
        'storage.mounts[2].mountPath: duplicate mount path "/a/"',
    ]


@pytest.mark.parametrize(
    "entry",
    [
        "{name: ray-tmp, pvc: data, mountPath: /datasets/data}",
        "{name: dataset, pvc: data, mountPath: /tmp/ray}",
    ],
)
def test_storage_mounts_may_use_ray_tmp_names_and_paths(entry: str) -> None:
    assert len(ok(mount(entry)).storage.mounts) == 1


def test_artifacts_checkpoint_allows_a_relative_path() -> None:
    assert ok(BASE + "artifacts:\n  checkpoint: rank0/final.safetensors\n").checkpoint == (
        "rank0/final.safetensors"
    )


@pytest.mark.parametrize(
    "checkpoint",
    [
        "/abs.safetensors",
        "../final.safetensors",
        "rank0/../final.safetensors",
        "rank0//final.safetensors",
        ".",
    ],
)
def test_artifacts_checkpoint_rejects_unsafe_paths(checkpoint: str) -> None:
    assert messages(BASE + f"artifacts:\n  checkpoint: '{checkpoint}'\n") == [
        "artifacts.checkpoint: must be a relative pod path without '.' or '..' segments "
        f'(got "{checkpoint}")'
    ]


def test_artifacts_checkpoint_must_not_be_blank() -> None:
    assert messages(BASE + "artifacts:\n  checkpoint: '  '\n") == [
        "artifacts.checkpoint: must not be empty"
    ]


def test_research_experiment() -> None:
    assert ok(BASE + "research:\n  experiment: ' sweep-1 '\n").experiment == "sweep-1"


# model


def test_model_registry_metadata() -> None:
    text = BASE + (
        "model:\n  name: sample-lora\n  base: microsoft/sample\n  task: weather\n"
        "  tags:\n    dataset: era5\n    owner: kevin\n  primary_metric: loss\n"
        "  metric_direction: lower\n"
    )
    model = ok(text).model
    assert (model.name, model.base, model.task) == ("sample-lora", "microsoft/sample", "weather")
    assert model.tags == (("dataset", "era5"), ("owner", "kevin"))
    assert (model.primary_metric, model.metric_direction) == ("loss", "lower")


def test_unsafe_model_registry_metadata() -> None:
    text = BASE + (
        "model:\n  name: Sample/LoRA\n  metric_direction: sideways\n  primary_metric: a..b\n"
        "  tags:\n    'a/b': x\n    ' k': v\n    k2: ' v'\n    'x..y': z\n"
    )
    assert messages(text) == [
        f'model.name: "Sample/LoRA" is invalid ({NAME_RULE})',
        'model.metric_direction: want lower|higher, got "sideways"',
        "model.primary_metric: must not contain '..'",
        "model.tags[\"a/b\"]: key must not contain '/' or '..'",
        'model.tags[" k"]: key must not have surrounding whitespace',
        'model.tags["k2"]: value must not have surrounding whitespace',
        "model.tags[\"x..y\"]: key must not contain '/' or '..'",
    ]


def test_model_name_follows_the_registry_rule() -> None:
    assert messages(BASE + f"model:\n  name: {'m' * 64}\n") == [
        f'model.name: "{"m" * 64}" is too long (64 chars; at most 63)'
    ]
    assert messages(BASE + "model:\n  name: ' m'\n") == [
        "model.name: must not have surrounding whitespace"
    ]


# all at once, located, typed


def test_every_problem_is_reported_at_once_each_at_its_value() -> None:
    text = (
        "schema_version: 1\n"  # 1
        "name: Bad_Name\n"  # 2
        "compute:\n"  # 3
        "  gpus: 9\n"  # 4
        "  workers: -2\n"  # 5
        "  memory: 32GB\n"  # 6
        "runtime:\n"  # 7
        "  pip: ['']\n"  # 8
        "storage:\n"  # 9
        "  mounts:\n"  # 10
        "    - {name: data, mountPath: /data, pvc: p}\n"  # 11
        "artifacts: {checkpoint: /abs}\n"  # 12
    )
    found = problems(text, "tau.yaml")
    assert [(str(d.location), d.path) for d in found] == [
        ("tau.yaml:2:7", "name"),
        ("tau.yaml:4:9", "compute.gpus"),
        ("tau.yaml:5:12", "compute.workers"),
        ("tau.yaml:6:11", "compute.memory"),
        ("tau.yaml:8:9", "runtime.pip[0]"),
        ("tau.yaml:11:14", "storage.mounts[0].name"),
        ("tau.yaml:11:31", "storage.mounts[0].mountPath"),
        ("tau.yaml:12:25", "artifacts.checkpoint"),
    ]
    error = ConfigError(found)
    assert error.format().splitlines()[0] == (
        'tau.yaml:2:7: error: name: "Bad_Name" is invalid (use lowercase alphanumerics with '
        "internal hyphens)"
    )


def test_yaml_problems_of_the_file_come_with_the_rest() -> None:
    text = BASE + "name: y\n" + "compute: {gpus: 12}\n"
    found = problems(text)
    assert [d.message for d in found] == [
        "duplicate key 'name' (first set at line 2)",
        "duplicate key 'compute' (first set at line 3)",
    ]


def test_warnings_ride_along_with_the_errors() -> None:
    with pytest.raises(ConfigError) as caught:
        text = BASE.replace("  pip:", "  pipp:")
        parse(parse_yaml(text, Path("m.yaml")), text.encode())
    severities = [(d.path, d.severity) for d in caught.value.diagnostics]
    assert ("runtime.pipp", "warning") in severities
    assert ("runtime.pip", "error") in severities


WRONG_TYPES = [
    ("name: [a]", "name: want a string, got a list"),
    ("name: 12", "name: want a string, got integer 12"),
    ("compute: [1]", "compute: want a mapping, got a list"),
    ("compute: {gpus: two}", 'compute.gpus: want an integer, got string "two"'),
    ("compute: {gpus: '2'}", 'compute.gpus: want an integer, got string "2"'),
    ("compute: {gpus: 1.5}", "compute.gpus: want an integer, got number 1.5"),
    ("compute: {gpus: true}", "compute.gpus: want an integer, got boolean true"),
    ("compute: {gpus: 1, workers: {}}", "compute.workers: want an integer, got a mapping"),
    (
        "compute: {gpus: 1, memory: [1]}",
        "compute.memory: want a memory quantity such as 32Gi, got a list",
    ),
    ("eval: 3", "eval: want a mapping, got integer 3"),
    ("eval: {cpu_workers: many}", 'eval.cpu_workers: want an integer, got string "many"'),
    ("eval: {upstream: 3}", "eval.upstream: want a string, got integer 3"),
    ("storage: {data_pvc: 3}", "storage.data_pvc: want a string, got integer 3"),
    (
        "storage: {mounts: {a: b}}",
        "storage.mounts: want a list of {name, mountPath, pvc} entries, got a mapping",
    ),
    ("artifacts: {checkpoint: [a]}", "artifacts.checkpoint: want a string, got a list"),
    ("research: {experiment: {}}", "research.experiment: want a string, got a mapping"),
    ("model: {tags: [a]}", "model.tags: want a mapping of strings, got a list"),
    ("model: {tags: {a: 1}}", "model.tags.a: want a string, got integer 1"),
    ("model: {metric_direction: 1}", "model.metric_direction: want a string, got integer 1"),
    ("resource_naming: {prefix: 1}", "resource_naming.prefix: want a string, got integer 1"),
    ("resource_naming: x", 'resource_naming: want a mapping, got string "x"'),
]


@pytest.mark.parametrize(("line", "message"), WRONG_TYPES)
def test_a_wrong_type_is_a_located_error_with_the_path_and_the_value(
    line: str, message: str
) -> None:
    key = line.split(":")[0]
    lines = [row for row in BASE.splitlines() if not row.startswith(f"{key}:")]
    text = "\n".join(lines) + f"\n{line}\n"
    found = problems(text)
    assert [d.message for d in found] == [message]
    assert found[0].location is not None and found[0].location.line == len(lines) + 1


def test_a_quoted_number_gets_a_hint() -> None:
    (found,) = problems(with_compute("gpus: '2'"))
    assert found.hint == "write the number without quotes"


def test_parse_reads_the_bytes_from_the_file_when_not_given(tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(BASE)
    parsed, warnings = parse(parse_yaml(BASE, path))
    assert parsed.text == BASE.encode()
    assert parsed.source.file == str(path)
    assert warnings == ()


def test_an_unreadable_manifest_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read manifest"):
        parse(parse_yaml(BASE, tmp_path / "gone.yaml"))


# what the SDK writes


SDK_TRAIN = """\
artifacts:
  checkpoint: best/model.safetensors
compute:
  gpus: 2
  worker_cpus: 12
  worker_memory_limit: 96Gi
  workers: 3
eval: {}
name: train-model
policy:
  gpu_class: any
  namespace: export-ns
  queue: priority-queue
run:
  entrypoint: tau_py_wrapper.py
  workload_kind: rayjob
runtime:
  env:
  - name: MODE
    value: train
  pip:
  - torch==2.4.0
schema_version: 1
storage:
  data_pvc: durable-data
  mounts:
  - mountPath: /models
    name: model-cache
    pvc: model-cache
    readOnly: true
workflow:
  extra_scripts:
  - tau_user_module.py:tau_user_module.py
"""

SDK_EVAL = """\
compute:
  gpus: 1
  worker_cpus: 12
  worker_memory_limit: 96Gi
eval:
  cpu_workers: 7
  upstream: train-model
name: eval-model
policy:
  gpu_class: any
  namespace: export-ns
run:
  entrypoint: tau_py_wrapper.py
  workload_kind: rayjob-eval
runtime:
  env:
  - name: MODE
    value: eval
  pip:
  - torch==2.4.0
schema_version: 1
storage:
  data_pvc: durable-data
workflow:
  extra_scripts:
  - tau_user_module.py:tau_user_module.py
  upstream_checkpoint: /data/checkpoints/finetunes/train-model/artifacts/best/model.safetensors
"""


def test_the_sdk_golden_train_config_parses_without_warnings() -> None:
    manifest, warnings = run_parse(SDK_TRAIN, "tau.yaml")
    assert warnings == ()
    assert manifest.resource_name == "tau-train-model"
    assert (manifest.compute.gpus, manifest.compute.workers) == (2, 3)
    assert (manifest.compute.worker_cpus, manifest.compute.worker_memory_limit) == ("12", "96Gi")
    assert manifest.checkpoint == "best/model.safetensors"
    assert manifest.storage.mounts == (Mount("model-cache", "/models", "model-cache", True),)
    assert manifest.runtime.env == (EnvVar("MODE", "train"),)


def test_the_sdk_golden_eval_config_parses_without_warnings() -> None:
    manifest, warnings = run_parse(SDK_EVAL, "tau.yaml")
    assert warnings == ()
    assert manifest.eval.cpu_workers == 7 and manifest.eval.upstream == "train-model"
    assert manifest.eval.is_eval


# hostile input


def _junk(rng: random.Random) -> Any:
    return rng.choice(
        [
            None,
            -1,
            0,
            9,
            10**40,
            1.5,
            float("inf"),
            True,
            "",
            "  ",
            "x" * 300,
            "Bad_Name",
            "/data",
            "..",
            "32GB",
            "500m",
            [],
            [None],
            ["a", 1],
            {},
            {"a": {"b": [1, {}]}},
            [{"name": "A"}],
            {"name": 1, "value": [], "valueFrom": "x"},
        ]
    )


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _paths(value, (*prefix, i))
    return out


def _mutate(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 4)):
        paths = _paths(data)
        if not paths:
            break
        *parent_path, last = rng.choice(paths)
        parent: Any = data
        for part in parent_path:
            parent = parent[part]
        if rng.random() < 0.2 and isinstance(parent, dict):
            del parent[last]
        else:
            parent[last] = _junk(rng)
    return data


def _hostile_texts() -> list[str]:
    rng = random.Random(21)  # fixed seed: the same 50 cases on every run
    base = yaml.safe_load(SDK_TRAIN)
    base["runtime"]["env"].append(
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
    )
    texts = [yaml.safe_dump(_mutate(base, rng), sort_keys=False) for _ in range(40)]
    raw = SDK_TRAIN
    for _ in range(10):
        cut = rng.randrange(len(raw))
        texts.append(
            raw[:cut] + rng.choice(["\n  - ", ": [", "\t", "{", "&a *a", "!!int x"]) + raw[cut:]
        )
    return texts


@pytest.mark.parametrize("index", range(50))
def test_a_mangled_manifest_is_a_config_error_or_a_manifest_never_a_crash(index: int) -> None:
    text = _hostile_texts()[index]
    try:
        doc = parse_yaml(text, Path("tau.yaml"))
        parsed, warnings = parse(doc, text.encode())
    except ConfigError as exc:
        assert exc.diagnostics, text
        for d in exc.diagnostics:
            assert d.location is not None and d.location.file == "tau.yaml"
            assert d.message
    else:
        assert isinstance(parsed.manifest, Manifest)
        assert all(w.severity == "warning" for w in warnings)


def test_the_hostile_corpus_exercises_both_outcomes() -> None:
    outcomes = set()
    for text in _hostile_texts():
        try:
            parse(parse_yaml(text, Path("tau.yaml")), text.encode())
            outcomes.add("ok")
        except ConfigError:
            outcomes.add("error")
    assert outcomes == {"ok", "error"}
