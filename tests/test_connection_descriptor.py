"""The descriptor is strict, located, and discovered from cwd up to the Git root only."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.connection.descriptor import RELATIVE_PATH, discover, parse
from tau.errors import ConfigError

VALID = """\
schema: tau.workspace.connection.v1
workspace: sample
cluster:
  contextName: aks-flex
access:
  method: kubeconfig
authorization:
  mode: cluster-wide
requirements:
  minTauVersion: 0.3.0
network:
  privateCluster: false
"""

AKS = """\
schema: tau.workspace.connection.v1
workspace: sample
cluster:
  contextName: aks-flex
  systemNamespace: tau-platform
access:
  method: aks
  aks:
    resourceID: RESOURCE_ID
    tenantID: 11111111-1111-1111-1111-111111111111
authorization:
  mode: workspace-rbac
  requiredRole: tau-researcher-v1
requirements:
  minTauVersion: 0.3.0
"""
AKS = AKS.replace(
    "RESOURCE_ID",
    "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg"
    "/providers/Microsoft.ContainerService/managedClusters/flex",
)


def errors_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse(text, "tau/workspace.connection.yaml")
    return [d.format() for d in info.value.diagnostics]


def test_valid_kubeconfig_descriptor_has_defaults() -> None:
    desc = parse(VALID, "f")
    assert desc.workspace == "sample"
    assert desc.context_name == "aks-flex"
    assert desc.system_namespace == "tau-system"
    assert desc.aks is None
    assert desc.digest.startswith("sha256:")


def test_valid_aks_descriptor_splits_the_resource_id() -> None:
    desc = parse(AKS, "f")
    assert desc.aks is not None
    assert (desc.aks.subscription_id, desc.aks.resource_group, desc.aks.cluster_name) == (
        "00000000-0000-0000-0000-000000000000",
        "rg",
        "flex",
    )
    assert desc.system_namespace == "tau-platform"
    assert desc.access_identity.startswith("aks:/subscriptions/")


def test_unknown_key_names_file_line_col_and_key_with_a_suggestion() -> None:
    text = VALID.replace("  contextName: aks-flex", "  contextName: aks-flex\n  contextNme: x")
    (message,) = errors_of(text)
    assert message.startswith(
        'tau/workspace.connection.yaml:5:3: error: cluster.contextNme: unknown key "contextNme"'
    )
    assert "did you mean `contextName`?" in message


def test_every_problem_is_reported_at_once() -> None:
    text = AKS.replace("tenantID: 1111", "tenantID: x1111") + "extra: 1\n"
    messages = errors_of(text)
    assert any('unknown key "extra"' in m for m in messages)
    assert any("access.aks.tenantID" in m and "must be a UUID" in m for m in messages)


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            ("tau.workspace.connection.v1", "tau.workspace.connection.v9"),
            'unsupported schema "tau.workspace.connection.v9"',
        ),
        (("method: kubeconfig", "method: ssh"), "must be one of: kubeconfig, aks"),
        (
            ("mode: cluster-wide", "mode: workspace-rbac"),
            "`authorization.requiredRole` is required",
        ),
        (("minTauVersion: 0.3.0", "minTauVersion: three"), '"three" must be major.minor.patch'),
        (("privateCluster: false", "privateCluster: true"), "`network.instructions` is required"),
        (("privateCluster: false", "privateCluster: nope"), 'must be true or false (got "nope")'),
        (("workspace: sample", "workspace: Sample_1"), "is not a DNS-1123 subdomain"),
        (("  contextName: aks-flex\n", ""), "`cluster.contextName` is required"),
    ],
)
def test_bad_values_name_the_value_and_the_rule(edit: tuple[str, str], expected: str) -> None:
    messages = errors_of(VALID.replace(*edit))
    assert any(expected in m for m in messages), messages


def test_aks_resource_id_must_name_a_managed_cluster() -> None:
    bad = AKS.replace("Microsoft.ContainerService/managedClusters", "Microsoft.Compute/vm")
    assert any("must identify an AKS managed cluster" in m for m in errors_of(bad))


def test_kubeconfig_method_rejects_aks_block() -> None:
    text = VALID.replace("method: kubeconfig", "method: kubeconfig\n  aks:\n    tenantID: x")
    assert any("must be omitted for method kubeconfig" in m for m in errors_of(text))


def test_one_document_only() -> None:
    (message,) = errors_of(VALID + "---\nworkspace: other\n")
    assert "exactly one YAML document" in message


def test_invalid_yaml_is_located() -> None:
    (message,) = errors_of("schema: [unclosed\n")
    assert message.startswith("tau/workspace.connection.yaml:")


def write_repo(root: Path, text: str = VALID) -> Path:
    (root / ".git").mkdir(parents=True)
    path = root / RELATIVE_PATH
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_discovery_walks_up_to_the_git_root(tmp_path: Path) -> None:
    path = write_repo(tmp_path / "repo")
    nested = tmp_path / "repo" / "src" / "pkg"
    nested.mkdir(parents=True)
    found = discover(nested)
    assert found is not None
    assert found.path == path.resolve()
    assert found.repository_root == (tmp_path / "repo").resolve()


def test_discovery_stops_at_the_git_root(tmp_path: Path) -> None:
    # A descriptor above the repository belongs to something else.
    (tmp_path / RELATIVE_PATH).parent.mkdir(parents=True)
    (tmp_path / RELATIVE_PATH).write_text(VALID)
    inner = tmp_path / "inner"
    (inner / ".git").mkdir(parents=True)
    assert discover(inner) is None


def test_invalid_descriptor_fails_discovery_with_its_location(tmp_path: Path) -> None:
    write_repo(tmp_path, VALID + "bogus: 1\n")
    with pytest.raises(ConfigError) as info:
        discover(tmp_path)
    assert "workspace.connection.yaml:13:1" in info.value.format()


def test_the_example_descriptor_is_valid() -> None:
    from tau.connection.descriptor import load

    example = Path(__file__).resolve().parents[1] / "examples" / RELATIVE_PATH
    desc = load(example)
    assert (desc.workspace, desc.access_method, desc.required_role) == (
        "team-a",
        "aks",
        "tau-researcher-v1",
    )


def test_the_descriptor_schema_is_checked_in_and_names_every_key_the_example_uses() -> None:
    import json

    import yaml

    from tau.intent.spec import CONNECTION_SCHEMA, spec_path

    schema = json.loads(spec_path(CONNECTION_SCHEMA).read_text())
    example = Path(__file__).resolve().parents[1] / "examples" / RELATIVE_PATH
    data = yaml.safe_load(example.read_text())

    def keys(node: dict, value: dict, prefix: str = "") -> list[str]:
        out = []
        for key, child in value.items():
            assert key in node["properties"], prefix + key
            if isinstance(child, dict):
                out += keys(node["properties"][key], child, f"{prefix}{key}.")
            out.append(prefix + key)
        return out

    assert "access.aks.tenantID" in keys(schema, data)


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("network: &n\n  <<: *n\n", "merges a mapping into itself"),
        ("cluster:\n  contextName: a\n", "duplicate key 'cluster'"),
        ("bogus: " + "[" * 200 + "]" * 200 + "\n", "deeper than"),
        ("network:\n  privateCluster: [true]\n", 'must be true or false (got "array")'),
    ],
)
def test_hostile_descriptors_are_located_errors(extra: str, expected: str) -> None:
    messages = errors_of(VALID.replace("network:\n  privateCluster: false\n", "") + extra)
    assert any(expected in m for m in messages), messages
    assert all(m.startswith("tau/workspace.connection.yaml:") for m in messages), messages
