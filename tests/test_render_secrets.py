"""The payload Secret, the Key Vault SecretProviderClass and the pod parts (tau.render.secrets).

Contract tests 37, 40, 42 and 43 (the Secret's owner metadata and redaction), the
SecretProviderClass exactly as the reference renders it (kvspec render_test.go), and every
document validated: the Secret against Kubernetes' own schema, the SecretProviderClass against
the project schema and, when the Go module cache has it, the upstream CRD.
"""

from __future__ import annotations

import pytest
import yaml

from tau.intent.workflow import keyvault as kv
from tau.k8s import meta
from tau.plan.managed import key_vault_env
from tau.plan.model import KeyVault, SecretData, SecretRef
from tau.render import secrets
from tau.render.manifests import dump_yaml
from tests.manifest_check import module_crd, validate_document, validate_upstream

SECRET = SecretData("tau-secret-job-secrets", (("HF_TOKEN", "fake-token-value"),))


def _key_vault(resource: str = "tau-my-job", **refs: str) -> KeyVault:
    """A plan KeyVault built the way the config layer's spec maps onto it."""
    entries = kv.parse_entries(refs or {"HF_TOKEN": "hf-token"}, "my-vault")
    spec = kv.new_spec(entries, "tenant-123", "client-456")
    assert spec is not None
    return KeyVault(
        spec.vault,
        spec.tenant,
        spec.client,
        tuple((e.env, e.secret) for e in spec.entries),
        kv.spc_name(resource),
        kv.synced_secret_name(resource),
    )


# --- the payload Secret -----------------------------------------------------------------------


def test_37_the_secret_carries_managed_by_and_its_owner():
    doc = secrets.secret_document(
        SecretData("tau-sec-test-secrets", (("HF_TOKEN", "v"),)),
        "test-workspace",
        "tau-sec-test",
        "Job",
        redact=True,
    )
    assert doc["metadata"]["labels"] == {meta.LABEL_MANAGED_BY: "tau"}
    assert doc["metadata"]["annotations"] == {
        meta.ANNOTATION_OWNER_NAME: "tau-sec-test",
        meta.ANNOTATION_OWNER_KIND: "Job",
    }
    assert meta.ANNOTATION_OWNER_NAME == "tau.azure.com/owner-name"
    assert meta.ANNOTATION_OWNER_KIND == "tau.azure.com/owner-kind"


def test_40_client_dry_run_redacts_every_value():
    doc = secrets.secret_document(SECRET, "e2e-stack", "tau-secret-job", "Job", redact=True)
    text = dump_yaml([doc])
    assert "kind: Secret" in text
    assert "name: tau-secret-job-secrets" in text
    assert "namespace: e2e-stack" in text
    assert "HF_TOKEN: <redacted>" in text
    assert "fake-token-value" not in text
    assert yaml.safe_load(text)["stringData"] == {"HF_TOKEN": "<redacted>"}


def test_the_submitted_secret_keeps_its_values():
    doc = secrets.secret_document(SECRET, "ns", "tau-secret-job", "Job", redact=False)
    assert doc["stringData"] == {"HF_TOKEN": "fake-token-value"}


def test_42_owner_labels_and_annotations():
    doc = secrets.secret_document(SECRET, "ns", "finetune-owner-job", "Job", redact=False)
    text = dump_yaml([doc])
    assert "tau.azure.com/managed-by: tau" in text
    assert "tau.azure.com/owner-name: finetune-owner-job" in text
    assert "tau.azure.com/owner-kind: Job" in text


def test_43_no_owner_no_owner_annotations():
    doc = secrets.secret_document(SECRET, "ns", redact=False)
    assert doc["metadata"]["labels"] == {meta.LABEL_MANAGED_BY: "tau"}
    assert "annotations" not in doc["metadata"]
    assert "owner-name" not in dump_yaml([doc])


def test_an_owner_kind_without_a_name_adds_nothing():
    doc = secrets.secret_document(SECRET, "ns", "", "RayJob", redact=False)
    assert "annotations" not in doc["metadata"]


def test_the_secret_shape():
    payload = SecretData("s", (("Z_KEY", "z"), ("A_KEY", "a")))
    doc = secrets.secret_document(payload, "ray", "tau-x", "RayJob", redact=False)
    assert doc == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "namespace": "ray",
            "labels": {meta.LABEL_MANAGED_BY: "tau"},
            "annotations": {
                meta.ANNOTATION_OWNER_NAME: "tau-x",
                meta.ANNOTATION_OWNER_KIND: "RayJob",
            },
        },
        "type": "Opaque",
        "stringData": {"A_KEY": "a", "Z_KEY": "z"},
    }
    assert list(doc["stringData"]) == ["A_KEY", "Z_KEY"]


def test_caller_labels_ride_along_but_managed_by_is_taus():
    doc = secrets.secret_document(
        SECRET, "ns", redact=False, labels={meta.LABEL_MANAGED_BY: "researcher", "team": "a"}
    )
    assert doc["metadata"]["labels"] == {meta.LABEL_MANAGED_BY: "tau", "team": "a"}


@pytest.mark.parametrize("redact", [True, False])
def test_the_secret_is_a_valid_kubernetes_secret(redact):
    doc = secrets.secret_document(SECRET, "ns", "tau-secret-job", "Job", redact=redact)
    assert validate_document(doc) == []


# --- the SecretProviderClass ------------------------------------------------------------------


def test_the_secret_provider_class_is_the_references():
    spec = _key_vault(HF_TOKEN="hf-token", WANDB_KEY="wandb-api-key")
    doc = secrets.secret_provider_class(spec, "tau-my-job-kv", "ray")
    assert doc == {
        "apiVersion": "secrets-store.csi.x-k8s.io/v1",
        "kind": "SecretProviderClass",
        "metadata": {
            "name": "tau-my-job-kv",
            "namespace": "ray",
            "labels": {meta.LABEL_MANAGED_BY: "tau"},
        },
        "spec": {
            "provider": "azure",
            "secretObjects": [
                {
                    "secretName": "tau-my-job-kv-sync",
                    "type": "Opaque",
                    "data": [
                        {"key": "HF_TOKEN", "objectName": "hf-token"},
                        {"key": "WANDB_KEY", "objectName": "wandb-api-key"},
                    ],
                }
            ],
            "parameters": {
                "usePodIdentity": "false",
                "useVMManagedIdentity": "false",
                "clientID": "client-456",
                "keyvaultName": "my-vault",
                "tenantId": "tenant-123",
                "objects": (
                    "array:\n"
                    "  - |\n    objectName: hf-token\n    objectType: secret\n"
                    "  - |\n    objectName: wandb-api-key\n    objectType: secret\n"
                ),
            },
        },
    }


def test_the_objects_parameter_is_a_literal_block_the_provider_can_parse():
    doc = secrets.secret_provider_class(_key_vault(A="a-secret", B="b-secret"), "x-kv", "ns")
    text = dump_yaml([doc])
    assert "    objects: |\n      array:\n        - |\n          objectName: a-secret\n" in text
    objects = yaml.safe_load(yaml.safe_load(text)["spec"]["parameters"]["objects"])
    items = [yaml.safe_load(item) for item in objects["array"]]
    assert items == [
        {"objectName": "a-secret", "objectType": "secret"},
        {"objectName": "b-secret", "objectType": "secret"},
    ]


def test_the_rendered_text_has_what_the_reference_test_looks_for():
    text = dump_yaml([secrets.secret_provider_class(_key_vault(), "tau-job-kv", "ray")])
    for want in (
        "kind: SecretProviderClass",
        "name: tau-job-kv",
        "namespace: ray",
        "provider: azure",
        "secretName: tau-my-job-kv-sync",
        "keyvaultName: my-vault",
        "tenantId: tenant-123",
        "clientID: client-456",
        "objectName: hf-token",
        "key: HF_TOKEN",
        "usePodIdentity: 'false'",
        "tau.azure.com/managed-by: tau",
    ):
        assert want in text, want


def test_the_secret_provider_class_validates_against_the_project_schema():
    doc = secrets.secret_provider_class(_key_vault(X="x", Y="y"), "tau-my-job-kv", "ns")
    assert validate_document(doc, upstream=False) == []


@pytest.mark.skipif(
    module_crd("secrets-store.csi.x-k8s.io", "SecretProviderClass") is None,
    reason="the Secrets Store CSI driver module (pins.toml) is not in the Go module cache",
)
def test_the_secret_provider_class_validates_against_the_upstream_crd():
    doc = secrets.secret_provider_class(_key_vault(X="x", Y="y"), "tau-my-job-kv", "ns")
    assert validate_upstream(doc) == []
    assert validate_document(doc) == []


def test_caller_labels_on_the_secret_provider_class():
    doc = secrets.secret_provider_class(_key_vault(), "x-kv", "ns", labels={"team": "a"})
    assert doc["metadata"]["labels"] == {meta.LABEL_MANAGED_BY: "tau", "team": "a"}


# --- the pod parts ----------------------------------------------------------------------------


def test_the_env_reads_the_synced_secret():
    spec = _key_vault(WANDB_KEY="w", HF_TOKEN="h")
    assert key_vault_env(spec) == (
        SecretRef("HF_TOKEN", "tau-my-job-kv-sync", "HF_TOKEN"),
        SecretRef("WANDB_KEY", "tau-my-job-kv-sync", "WANDB_KEY"),
    )


def test_the_csi_volume_and_its_mount():
    assert secrets.key_vault_volume(_key_vault()) == {
        "name": "kv-secrets",
        "csi": {
            "driver": "secrets-store.csi.k8s.io",
            "readOnly": True,
            "volumeAttributes": {"secretProviderClass": "tau-my-job-kv"},
        },
    }
    assert secrets.key_vault_mount() == {
        "name": "kv-secrets",
        "mountPath": "/mnt/secrets-store",
        "readOnly": True,
    }
    assert secrets.KEY_VAULT_POD_LABELS == {"azure.workload.identity/use": "true"}


def test_a_job_with_the_key_vault_pod_parts_is_a_valid_job():
    spec = _key_vault()
    env = [
        {"name": r.env, "valueFrom": {"secretKeyRef": {"name": r.secret, "key": r.key}}}
        for r in key_vault_env(spec)
    ]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "tau-my-job", "namespace": "ns"},
        "spec": {
            "suspend": True,
            "template": {
                "metadata": {"labels": dict(secrets.KEY_VAULT_POD_LABELS)},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": "tau-workload",
                    "volumes": [secrets.key_vault_volume(spec)],
                    "containers": [
                        {
                            "name": "trainer",
                            "image": "python:3.12",
                            "env": env,
                            "volumeMounts": [secrets.key_vault_mount()],
                        }
                    ],
                },
            },
        },
    }
    assert validate_document(job) == []


def test_the_documents_of_a_key_vault_run_hold_no_secret_value_when_redacted():
    secret = SecretData("tau-kv-secrets", (("HF_TOKEN", "hf_live_0123456789"),))
    docs = [
        secrets.secret_document(secret, "ns", "tau-kv", "Job", redact=True),
        secrets.secret_provider_class(_key_vault("tau-kv"), "tau-kv-kv", "ns"),
    ]
    assert "hf_live_0123456789" not in dump_yaml(docs)
