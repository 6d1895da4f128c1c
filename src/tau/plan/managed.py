"""The Plan parts of a managed workflow run: files, Secret, Key Vault, CPU workers, kind.

Pure. The translation already mapped the manifest onto the typed run config, so the Plan
resolve built is the run; this adds only what a direct config cannot say.
"""

from __future__ import annotations

from tau.intent.workflow.model import Managed
from tau.plan.model import Files, KeyVault, Plan, Resources, SecretData, SecretRef

UPSTREAM_CHECKPOINT_ENV = "TAU_UPSTREAM_CHECKPOINT"


def key_vault_env(kv: KeyVault) -> tuple[SecretRef, ...]:
    """Each Key Vault env var read from its key of the synced Secret, sorted by env var."""
    return tuple(SecretRef(env, kv.synced_secret, env) for env, _ in sorted(kv.objects))


def apply(plan: Plan, managed: Managed) -> Plan:
    """`plan` with the managed run's parts added."""
    script = plan.script._replace(filename="train.py") if plan.script else None
    env = plan.env
    if managed.kind == "rayjob-eval":
        # The eval reads the checkpoint it evaluates from here; empty when none was named.
        values = dict(env.values)
        values[UPSTREAM_CHECKPOINT_ENV] = managed.upstream_checkpoint or ""
        env = env._replace(values=tuple(sorted(values.items())))
    kv = managed.key_vault
    key_vault = None
    if kv is not None:
        key_vault = KeyVault(
            kv.vault, kv.tenant_id, kv.client_id, kv.objects, kv.provider_class, kv.synced_secret
        )
        refs = {r.env: r for r in (*env.secrets, *key_vault_env(key_vault))}
        env = env._replace(secrets=tuple(refs[k] for k in sorted(refs)))
    secret = SecretData(*managed.secret) if managed.secret else None
    return plan._replace(
        kind=managed.kind,
        script=script,
        env=env,
        files=Files(
            extra=tuple(sorted(managed.extra_scripts)),
            manifest=((managed.manifest_file, managed.manifest_copy),),
            args=managed.script_args,
        ),
        secret=secret,
        key_vault=key_vault,
        job=plan.job._replace(pip=plan.ray.pip) if plan.engine == "job" else plan.job,
        resources=plan.resources._replace(cpu_worker=Resources(*managed.cpu_worker)),
        storage=plan.storage._replace(finetune_run=managed.finetune_run),
    )
