"""Environment rules: Tau-managed keys, names, size limits, Secret references, Key Vault.

Pure. Tau owns the distributed-training variables so rendezvous always matches the
rendered topology; users may set only the four retry keys of the TAU_ namespace.
"""

from __future__ import annotations

from tau.intent.validate.context import Context
from tau.k8s.names import DNS_1123_SUBDOMAIN, ENV_NAME, SECRET_KEY

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

#: The only TAU_ keys a user may set (exact case), all about resuming after a retry.
SETTABLE_TAU_KEYS = ("TAU_RESUME_FROM", "TAU_RETRY_ATTEMPT", "TAU_RETRY_MAX", "TAU_RETRY_REASON")
ENV_KV_DIRECT = (
    "runtime.env_kv is only supported for workflow.file managed configs; direct job/ray "
    "configs must remove runtime.env_kv or use workflow.file"
)
#: Why literal env is bounded, and what to do instead (the reference's remedy).
SIZE_REMEDY = (
    "publish source or artifacts once and reference a digest-pinned OCI image with run.source "
    "instead of embedding content in environment variables"
)
MAX_VALUE_BYTES = 64 * 1024
MAX_TOTAL_BYTES = 128 * 1024


def is_reserved(name: str, allow_nccl: bool) -> bool:
    """Whether `name` is a Tau-managed variable a config may not set."""
    upper = name.upper()
    if upper in ("MASTER_ADDR", "MASTER_PORT"):
        return True
    if upper.startswith("TAU_") and name not in SETTABLE_TAU_KEYS:
        return True
    return upper.startswith("NCCL_") and not allow_nccl


def parse_secret_ref(value: str) -> tuple[str, str] | None:
    """`secret-name:key` → (name, key); None when malformed."""
    name, sep, key = value.partition(":")
    if (
        not sep
        or not name
        or not key
        or value != value.strip()
        or name != name.strip()
        or key != key.strip()
    ):
        return None
    return name, key


def check(ctx: Context) -> None:
    env = ctx.get("runtime.env") or {}
    secrets = ctx.get("runtime.env_secret") or {}
    kv = ctx.get("runtime.env_kv") or {}
    allow_nccl = bool(ctx.get("execution.allow_nccl_override"))
    _reserved(ctx, env, secrets, allow_nccl)
    for group, table in (
        ("runtime.env", env),
        ("runtime.env_secret", secrets),
        ("runtime.env_kv", kv),
    ):
        for name in table:
            if not ENV_NAME.match(name):
                ctx.error(
                    (*group.split("."), name),
                    f'env var name "{name}" is invalid (use C_IDENTIFIER format)',
                    "letters, digits and '_', not starting with a digit",
                )
    _sizes(ctx, env)
    _secret_refs(ctx, env, secrets)
    for name in kv:
        for group, table in (("runtime.env", env), ("runtime.env_secret", secrets)):
            if name in table:
                ctx.error(
                    ("runtime", "env_kv", name),
                    f"runtime.env_kv.{name} conflicts with {group}.{name}; set each env var in "
                    "only one place",
                )
    if kv and not ctx.get("workflow.file"):
        ctx.error(
            "runtime.env_kv",
            ENV_KV_DIRECT,
            "read the value from a Kubernetes Secret with runtime.env_secret instead",
        )


def _reserved(ctx: Context, env: dict[str, str], secrets: dict[str, str], allow_nccl: bool) -> None:
    """All conflicts in one message (as the reference does), placed at the first one."""
    found = sorted({n for n in (*env, *secrets) if is_reserved(n, allow_nccl)})
    if not found:
        return
    where = "runtime.env" if found[0] in env else "runtime.env_secret"
    hint = None
    if any(n.upper().startswith("NCCL_") for n in found):
        hint = "set execution.allow_nccl_override: true to tune NCCL_* deliberately"
    ctx.error(
        (*where.split("."), found[0]),
        "runtime.env contains Tau-managed keys that cannot be "
        f"overridden: {', '.join(found)}; remove them from runtime.env (settable TAU_ keys: "
        f"{', '.join(SETTABLE_TAU_KEYS)})",
        hint,
        # The message names its group; the location still points at the first key.
        shown="runtime.env" if where == "runtime.env" else None,
    )


def _sizes(ctx: Context, env: dict[str, str]) -> None:
    total = 0
    for name, value in env.items():
        size = len(str(value).encode())
        total += len(name.encode()) + 1 + size + 1
        if size > MAX_VALUE_BYTES:
            ctx.error(
                ("runtime", "env", name),
                f'literal environment variable "{name}" is {size} bytes; maximum is '
                f"{MAX_VALUE_BYTES} bytes: {SIZE_REMEDY}",
                "or put large inputs on the data PVC",
            )
    if total > MAX_TOTAL_BYTES:
        ctx.error(
            "runtime.env",
            f"literal environment payload is {total} bytes; maximum is {MAX_TOTAL_BYTES} "
            f"bytes: {SIZE_REMEDY}",
            "or put large inputs on the data PVC",
        )


def _secret_refs(ctx: Context, env: dict[str, str], secrets: dict[str, str]) -> None:
    for name, value in secrets.items():
        path = ("runtime", "env_secret", name)
        if name in env:
            ctx.error(
                path,
                f"runtime.env_secret.{name} conflicts with runtime.env.{name}; set "
                "each env var in only one place",
            )
        ref = parse_secret_ref(value)
        if ref is None:
            # The value is only a reference, but quote it anyway: it is never the secret itself.
            ctx.error(
                path,
                f'runtime.env_secret.{name}: expected SECRET:KEY, got "{value}"',
                'write `NAME: "secret-name:key"`',
            )
            continue
        secret, key = ref
        if not DNS_1123_SUBDOMAIN.match(secret) or len(secret) > 253:
            ctx.error(
                path,
                f'runtime.env_secret.{name}: secret name "{secret}" is not a valid '
                "Kubernetes name (lowercase letters, digits, '-' and '.')",
            )
        if not SECRET_KEY.match(key):
            ctx.error(
                path,
                f'runtime.env_secret.{name}: secret key "{key}" is not a valid '
                "Secret data key (letters, digits, '-', '_' and '.')",
            )
