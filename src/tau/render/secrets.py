"""A managed run's secrets: the payload Secret, the Key Vault SecretProviderClass, the pod parts.

Pure. The payload Secret (`workflow.secret_payload`) is applied before its workload, which
names it in `secretKeyRef`s, and is adopted by it afterwards; its owner annotations say which
workload that is, since the owner's uid does not exist yet at render time. `runtime.env_kv`
becomes one SecretProviderClass that the Secrets Store CSI driver reads when a pod mounts its
volume, syncing the Key Vault objects into a Secret (`<resource>-kv-sync`) the env reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tau.k8s import meta
from tau.plan.model import REDACTED, KeyVault, SecretData

#: The Key Vault provider of the Secrets Store CSI driver.
PROVIDER = "azure"
#: What a pod of a Key Vault run carries: Azure workload identity projects its token into pods
#: with this label, and the CSI provider exchanges that token for the managed identity's.
KEY_VAULT_POD_LABELS: Mapping[str, str] = {meta.LABEL_AZURE_WORKLOAD_IDENTITY_USE: "true"}


def _labels(extra: Mapping[str, str] | None) -> dict[str, str]:
    """The caller's labels with managed-by forced to tau (the managed-workload marker)."""
    labels = dict(extra or {})
    labels[meta.LABEL_MANAGED_BY] = meta.MANAGED_BY_VALUE
    return dict(sorted(labels.items()))


def secret_document(
    payload: SecretData,
    namespace: str,
    owner_name: str = "",
    owner_kind: str = "",
    *,
    redact: bool,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The v1 Secret of a secret payload.

    Args:
        payload: its name and (key, value) pairs.
        namespace: the run's namespace.
        owner_name: the workload that adopts it after create ("" renders no owner annotations).
        owner_kind: that workload's kind (Job or RayJob).
        redact: every value becomes `<redacted>` (`--dry-run=client` output); keys stay.
        labels: further labels; managed-by is always tau's.
    """
    metadata: dict[str, Any] = {
        "name": payload.name,
        "namespace": namespace,
        "labels": _labels(labels),
    }
    if owner_name:
        metadata["annotations"] = {
            meta.ANNOTATION_OWNER_NAME: owner_name,
            meta.ANNOTATION_OWNER_KIND: owner_kind,
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "stringData": {k: REDACTED if redact else v for k, v in sorted(payload.string_data)},
    }


def _objects(objects: tuple[tuple[str, str], ...]) -> str:
    """The azure provider's `objects` parameter: a YAML string holding an `array:` of YAML
    strings, one `objectName`/`objectType: secret` per Key Vault secret (the provider parses
    each array item as its own document).
    """
    lines = ["array:"]
    for _, secret in objects:
        lines += ["  - |", f"    objectName: {secret}", "    objectType: secret"]
    return "\n".join(lines) + "\n"


def secret_provider_class(
    spec: KeyVault, name: str, namespace: str, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The secrets-store.csi.x-k8s.io/v1 SecretProviderClass of a run's Key Vault entries.

    Args:
        spec: the vault, tenant, workload-identity client and (env var, secret) objects.
        name: the SecretProviderClass's name (`<resource>-kv`).
        namespace: the run's namespace.
        labels: further labels; managed-by is always tau's.
    """
    # Neither pod identity nor the node's managed identity: workload identity only, so the
    # run reads the vault as the client its ServiceAccount federates, not as the node.
    parameters = {
        "usePodIdentity": "false",
        "useVMManagedIdentity": "false",
        "clientID": spec.client_id,
        "keyvaultName": spec.vault,
        "tenantId": spec.tenant_id,
        "objects": _objects(spec.objects),
    }
    synced = {
        "secretName": spec.synced_secret,
        "type": "Opaque",
        # Each env var's key in the synced Secret is the env var's own name.
        "data": [{"key": env, "objectName": secret} for env, secret in spec.objects],
    }
    return {
        "apiVersion": meta.SECRETS_STORE_API_VERSION,
        "kind": "SecretProviderClass",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(labels)},
        "spec": {"provider": PROVIDER, "secretObjects": [synced], "parameters": parameters},
    }


def key_vault_volume(spec: KeyVault) -> dict[str, Any]:
    """The pod's CSI volume of the SecretProviderClass.

    The driver fetches the objects and syncs the Secret only while a pod mounts this volume,
    so a pod whose env reads the synced Secret mounts it too (`key_vault_mount`).
    """
    return {
        "name": meta.SECRETS_STORE_VOLUME,
        "csi": {
            "driver": meta.SECRETS_STORE_CSI_DRIVER,
            "readOnly": True,
            "volumeAttributes": {"secretProviderClass": spec.provider_class},
        },
    }


def key_vault_mount() -> dict[str, Any]:
    """A container's read-only mount of the Key Vault CSI volume."""
    return {
        "name": meta.SECRETS_STORE_VOLUME,
        "mountPath": meta.SECRETS_STORE_MOUNT_PATH,
        "readOnly": True,
    }
