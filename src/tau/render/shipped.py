"""What a run ships beside its workload: script and manifest payloads, its Secret, Key Vault.

Pure. Files travel inside the workload object (an init container decodes them into an
emptyDir), never as ConfigMaps: the workload is then the whole run, and a queue that mirrors
only the workload object (MultiKueue) still carries them.
"""

from __future__ import annotations

from typing import Any

from tau.k8s import meta
from tau.plan.model import Plan
from tau.render import payload, pod, secrets


def script_files(plan: Plan) -> dict[str, bytes]:
    """The /script bundle: the entrypoint under its file name, then the extra scripts."""
    files = {plan.script.filename: plan.script.content} if plan.script else {}
    files.update(plan.files.extra)
    return files


class Payloads:
    """The payload init containers, volumes and mounts of one run, encoded once."""

    def __init__(self, plan: Plan, files: dict[str, bytes]) -> None:
        restricted = plan.security_restricted
        self.script, self.script_digest = payload.init_container(
            payload.SCRIPT_INIT, plan.image, files, volume="script", target=payload.TARGET_DIR
        )
        self.manifest: dict[str, Any] | None = None
        self.manifest_digest = ""
        if plan.files.manifest:
            self.manifest, self.manifest_digest = payload.init_container(
                payload.MANIFEST_INIT,
                plan.image,
                dict(plan.files.manifest),
                volume="manifest",
                target=payload.MANIFEST_DIR,
            )
        if restricted:
            for init in (self.script, self.manifest):
                if init is not None:
                    init["securityContext"] = pod.restricted_security()

    def inits(self, *, manifest: bool) -> list[dict[str, Any]]:
        """The script payload, then the manifest payload where the pod reads it."""
        out = [self.script]
        if manifest and self.manifest is not None:
            out.append(self.manifest)
        return out

    def annotations(self) -> dict[str, str]:
        notes = {meta.ANNOTATION_PAYLOAD_DIGEST: self.script_digest}
        if self.manifest_digest:
            notes[meta.ANNOTATION_MANIFEST_PAYLOAD_DIGEST] = self.manifest_digest
        return notes


def manifest_volume(plan: Plan) -> list[dict[str, Any]]:
    return [{"name": "manifest", "emptyDir": {}}] if plan.files.manifest else []


def manifest_mount(plan: Plan) -> list[dict[str, Any]]:
    if not plan.files.manifest:
        return []
    return [{"name": "manifest", "mountPath": payload.MANIFEST_DIR, "readOnly": True}]


def extra_volumes(plan: Plan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) of the PVCs beyond /data and of the Key Vault CSI volume."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for vol in plan.storage.volumes:
        if vol.name == "data":
            continue
        volumes.append({"name": vol.name, "persistentVolumeClaim": {"claimName": vol.claim}})
        mount: dict[str, Any] = {"name": vol.name, "mountPath": vol.path}
        if vol.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    kv_volumes, kv_mounts = key_vault_volume(plan)
    return volumes + kv_volumes, mounts + kv_mounts


def key_vault_volume(plan: Plan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(volumes, mounts) of the Key Vault CSI volume; empty without Key Vault.

    The sync happens only while a pod mounts the volume, so every container that reads the
    Secret's env also mounts it.
    """
    if plan.key_vault is None:
        return [], []
    return [secrets.key_vault_volume(plan.key_vault)], [secrets.key_vault_mount()]


def pod_labels(plan: Plan) -> dict[str, str]:
    """Labels every pod of a Key Vault run needs: Azure workload identity injects its token."""
    return dict(secrets.KEY_VAULT_POD_LABELS) if plan.key_vault else {}


def around(plan: Plan, workload: list[dict[str, Any]], *, redact: bool) -> list[dict[str, Any]]:
    """The run's documents in apply order: its Secret, the workload objects, its Key Vault class."""
    if plan.secret is None and plan.key_vault is None:
        return workload
    kind = next(d["kind"] for d in workload if d["kind"] in ("Job", "RayJob"))
    out: list[dict[str, Any]] = []
    if plan.secret is not None:
        out.append(
            secrets.secret_document(plan.secret, plan.namespace, plan.name, kind, redact=redact)
        )
    out.extend(workload)
    kv = plan.key_vault
    if kv is not None:
        out.append(secrets.secret_provider_class(kv, kv.provider_class, plan.namespace))
    return out
