"""Key Vault secrets as env vars (a manifest's `runtime.env_kv`): entries, the spec, the names.

Pure. `runtime.env_kv` maps an env var to a Key Vault secret, `"vault/secret"` or a bare
`"secret"` in the `--key-vault` vault. One SecretProviderClass per workload syncs the secrets
into one Secret (`<resource>-kv-sync`) the pods read their env from, so every entry must
resolve to the same vault, and the CSI provider needs the tenant and the workload-identity
client to authenticate. Messages are the reference's (kvspec); problems come back as
`WorkflowInputError` at `runtime.env_kv.<NAME>` for the caller to locate.
"""

# No `from __future__ import annotations`: see tau.intent.runconfig.
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from tau.intent.workflow.problems import Problem, quote, raise_any
from tau.k8s.names import ENV_NAME

ENV_KV: tuple[str, ...] = ("runtime", "env_kv")

#: The CLI's checks before a spec is built (the flags name what to pass).
TENANT_REQUIRED = "runtime.env_kv_tenant is required when runtime.env_kv is set"
CLIENT_REQUIRED = "runtime.env_kv_client is required when runtime.env_kv is set"
SERVICE_ACCOUNT_REQUIRED = (
    "a ServiceAccount is required when runtime.env_kv is set; use the ServiceAccount "
    "reconciled from TauWorkspace spec.workloadIdentity"
)


class KeyVaultEntry(NamedTuple):
    """One env var read from one Key Vault secret."""

    env: str
    vault: str
    secret: str


class KeyVaultSpec(NamedTuple):
    """Validated entries (sorted by env var) with the one vault and the identity to use."""

    vault: str
    tenant: str
    client: str
    entries: tuple[KeyVaultEntry, ...]


def _pairs(env_kv: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> list[tuple[str, str]]:
    if env_kv is None:
        return []
    if isinstance(env_kv, Mapping):
        return [(str(k), str(v)) for k, v in env_kv.items()]
    return [(str(k), str(v)) for k, v in env_kv]


def _entry(name: str, raw: str, default_vault: str) -> KeyVaultEntry | Problem:
    """`vault/secret` (both parts non-empty, split at the first '/') or a bare secret name."""
    ref = raw.strip()
    where = f"env_kv {name}={quote(raw)}"
    if not ref:
        return Problem(
            (*ENV_KV, name),
            f"{where}: empty secret reference",
            'write "VAULT/SECRET", or the secret name alone with --key-vault VAULT',
        )
    vault, sep, secret = ref.partition("/")
    if sep and vault and secret:
        return KeyVaultEntry(name, vault, secret)
    if not default_vault:
        return Problem(
            (*ENV_KV, name),
            f"{where}: bare secret name {quote(ref)} requires --key-vault or profile "
            "spec.secrets.keyVault",
            f'pass --key-vault VAULT, or name the vault in the reference ("VAULT/{ref}")',
        )
    return KeyVaultEntry(name, default_vault, ref)


def parse_entries(
    env_kv: Mapping[str, str] | Iterable[tuple[str, str]] | None, key_vault: str | None
) -> tuple[KeyVaultEntry, ...]:
    """The entries of `runtime.env_kv`, sorted by env var; () when there are none.

    Args:
        env_kv: env var → `"vault/secret"` or `"secret"`, as a mapping or as pairs.
        key_vault: the `--key-vault` vault of bare secret names ("" or None: none).

    Raises:
        WorkflowInputError: every invalid name or reference, and more than one vault.
    """
    default_vault = (key_vault or "").strip()
    problems: list[Problem] = []
    entries: list[KeyVaultEntry] = []
    for name, raw in _pairs(env_kv):
        if not ENV_NAME.match(name):
            problems.append(
                Problem(
                    (*ENV_KV, name),
                    f"env_kv key {quote(name)}: invalid env var name (use C_IDENTIFIER format)",
                    "letters, digits and '_', not starting with a digit",
                    key=True,
                )
            )
            continue
        found = _entry(name, raw, default_vault)
        if isinstance(found, Problem):
            problems.append(found)
        else:
            entries.append(found)
    vaults = sorted({e.vault for e in entries})
    if len(vaults) > 1:
        problems.append(
            Problem(
                ENV_KV,
                f"env_kv entries reference multiple vaults [{' '.join(vaults)}]; all entries "
                "must use the same vault (one SecretProviderClass per workload)",
                "move the secrets into one vault, or read the others another way "
                "(runtime.env with a Secret reference)",
            )
        )
    raise_any(problems)
    return tuple(sorted(entries, key=lambda e: e.env))


def new_spec(
    entries: tuple[KeyVaultEntry, ...], tenant_id: str | None, client_id: str | None
) -> KeyVaultSpec | None:
    """The spec a SecretProviderClass is rendered from; None without entries.

    Raises:
        WorkflowInputError: the tenant or the workload-identity client is missing.
    """
    if not entries:
        return None
    tenant, client = (tenant_id or "").strip(), (client_id or "").strip()
    problems: list[Problem] = []
    if not tenant:
        problems.append(
            Problem(
                ENV_KV,
                "env_kv requires --tenant-id or profile spec.secrets.tenantId",
                "pass --tenant-id with the Microsoft Entra tenant of the Key Vault",
            )
        )
    if not client:
        problems.append(
            Problem(
                ENV_KV,
                "env_kv requires --workload-identity-client-id or profile "
                "spec.secrets.serviceAccount with WI annotation",
                "pass --workload-identity-client-id with the managed identity's client ID",
            )
        )
    raise_any(problems)
    return KeyVaultSpec(entries[0].vault, tenant, client, entries)


def tenant_client_problems(tenant_id: str | None, client_id: str | None) -> list[Problem]:
    """The checks the command line answers before render: the tenant and the client."""
    problems: list[Problem] = []
    if not (tenant_id or "").strip():
        problems.append(Problem(ENV_KV, TENANT_REQUIRED, "pass --tenant-id TENANT"))
    if not (client_id or "").strip():
        problems.append(Problem(ENV_KV, CLIENT_REQUIRED, "pass --workload-identity-client-id ID"))
    return problems


def identity_problems(
    tenant_id: str | None, client_id: str | None, service_account: str | None
) -> list[Problem]:
    """The CLI's checks when `runtime.env_kv` has entries: tenant, client, ServiceAccount.

    The ServiceAccount is the workspace's, known only at submit; a client dry-run checks the
    tenant and client alone (`tenant_client_problems`).
    """
    problems = tenant_client_problems(tenant_id, client_id)
    if not (service_account or "").strip():
        problems.append(
            Problem(
                ENV_KV,
                SERVICE_ACCOUNT_REQUIRED,
                "pass --service-account, or run in a workspace whose ServiceAccount has "
                "workload identity",
            )
        )
    return problems


def spc_name(resource: str) -> str:
    """The SecretProviderClass of a workload: `<resource>-kv`."""
    return resource + "-kv"


def synced_secret_name(resource: str) -> str:
    """The Secret the CSI driver syncs the Key Vault objects into: `<resource>-kv-sync`."""
    return resource + "-kv-sync"


def env_vars(spec: KeyVaultSpec, synced_secret: str) -> tuple[tuple[str, str, str], ...]:
    """(env var, Secret, key) per entry: each env var reads its own key of the synced Secret."""
    return tuple((e.env, synced_secret, e.env) for e in spec.entries)
