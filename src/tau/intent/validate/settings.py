"""Rules for scalar settings: durations, quantities, retry, profiler and policy values. Pure."""

from __future__ import annotations

from tau.intent.duration import DurationError, parse_duration
from tau.intent.validate.context import Context
from tau.k8s.names import DNS_1123_SUBDOMAIN, LABEL_NAME, LABEL_VALUE
from tau.k8s.quantity import parse_quantity

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"

RETRY_REASONS = ("Preempted", "Evicted", "OOMKilled")
_DURATIONS = (
    "resilience.backoff_initial",
    "resilience.backoff_max",
    "profiler.warmup",
    "profiler.duration",
)


def check(ctx: Context) -> None:
    seconds = _durations(ctx)
    low, high = seconds.get("resilience.backoff_initial"), seconds.get("resilience.backoff_max")
    if low is not None and high is not None and low > high:
        ctx.error(
            "resilience.backoff_initial",
            "resilience.backoff_initial "
            f'"{ctx.get("resilience.backoff_initial")}" exceeds resilience.backoff_max '
            f'"{ctx.get("resilience.backoff_max")}"',
        )
    _retry(ctx)
    _profiler(ctx)
    _policy(ctx)
    _quantities(ctx)


def _durations(ctx: Context) -> dict[str, float]:
    out: dict[str, float] = {}
    for path in _DURATIONS:
        value = ctx.get(path)
        if not isinstance(value, str):
            continue
        try:
            out[path] = parse_duration(value)
        except DurationError as exc:
            # The reference: `invalid duration %q: %w` for the backoffs, `%s: %w` for the profiler.
            lead = f"{path}: " if path.startswith("profiler.") else f'invalid duration "{value}": '
            ctx.error(path, f"{lead}{exc}")
            continue
        if out[path] < 0:
            ctx.error(path, f'{path} "{value}" must not be negative')
    return out


def _retry(ctx: Context) -> None:
    by_lower = {r.lower(): r for r in RETRY_REASONS}
    for i, reason in enumerate(ctx.get("resilience.retry_on") or []):
        path = f"resilience.retry_on[{i}]"
        if reason.lower() == "unknown":
            ctx.error(
                path,
                "resilience.retry_on cannot include Unknown: a failure tau cannot "
                "classify is never retried",
                "find the cause with `tau run status`, then "
                "resume deliberately with `tau run resume`",
            )
        elif reason.lower() not in by_lower:
            ctx.error(
                path,
                f'resilience.retry_on value "{reason}" is not a failure reason; use '
                f"one of: {', '.join(RETRY_REASONS)}",
            )
    if ctx.get("resilience.retry_on") and not ctx.get("resilience.max_retries"):
        ctx.warn(
            "resilience.retry_on",
            "resilience.retry_on has no effect while resilience.max_retries is 0",
            "set resilience.max_retries to enable retries",
        )


def _profiler(ctx: Context) -> None:
    mode = ctx.get("profiler.mode")
    for field in ("rank", "warmup", "duration"):
        path = f"profiler.{field}"
        if not ctx.has(path):
            continue
        if field in ("warmup", "duration") and mode != "nsys":
            got = f" (got profiler.mode {mode})" if mode else " (profiler.mode is not set)"
            ctx.error(path, f"{path} currently applies only to profiler.mode=nsys{got}")
        elif mode is None:
            ctx.error(path, f"{path} requires profiler.mode (nsys or ncu)")

    if mode is None or ctx.engine != "job":
        return  # a RayJob profiler is refused at render, with its own message
    if ctx.get("execution.launcher") == "torchrun":
        ctx.error(
            "profiler.mode",
            "profiler.mode and execution.launcher: torchrun cannot be combined: the profiler "
            "wraps one process, torchrun starts one per GPU",
            "profile a single-process run (launcher python), or use torch.profiler in the code",
        )
    # validate-time: the profile is written to the data PVC, or it dies with the pod.
    durable = ctx.get("storage.data_pvc") or ctx.get("storage.result_pvc")
    if not durable and not (ctx.get("storage.output") and ctx.get("storage.volumes")):
        ctx.error(
            "profiler.mode",
            "profiler requires durable PVC output; configure storage.data_pvc, "
            "storage.volumes/mounts, or storage.result_pvc",
            "without a PVC the profile dies with the pod; it is written under "
            "storage.output/profile",
        )


def _policy(ctx: Context) -> None:
    if ctx.get("policy.queue") == "auto":
        ctx.error(
            "policy.queue",
            "policy.queue: auto requires live queue discovery and is not "
            "supported by this focused run --config slice",
            "name the LocalQueue, or let the workspace or preset supply it",
        )
    priority, tier = ctx.get("policy.priority"), ctx.get("policy.priority_tier")
    if priority and tier and priority != tier:
        ctx.error(
            "policy.priority",
            f'policy.priority "{priority}" conflicts with '
            f'policy.priority_tier "{tier}"; policy.priority is an alias, set one',
        )
    # The tier picks the priority classes; it CAN be combined with
    # disable_default_priorities (the tier is applied first, run-config contract §3.4).
    explicit = [
        f"policy.{k}"
        for k in ("workload_priority_class", "pod_priority_class")
        if ctx.get(f"policy.{k}")
    ]
    if (tier or priority) and explicit:
        ctx.error(
            "policy.priority_tier" if tier else "policy.priority",
            f"policy.priority_tier cannot be combined with explicit priority classes "
            f"({', '.join(explicit)}); set one or the other",
        )
    for key, value in (ctx.get("policy.node_selector") or {}).items():
        where = ("policy", "node_selector", key)
        if not _label_key(key):
            ctx.error(where, f'policy.node_selector key "{key}" is not a valid label key')
        if len(value) > 63 or not LABEL_VALUE.match(value):
            ctx.error(
                where,
                f'policy.node_selector value "{value}" for "{key}" is not a valid '
                "label value (at most 63 characters: letters, digits, '-', '_', '.')",
            )


def _label_key(key: str) -> bool:
    prefix, sep, name = key.rpartition("/")
    if sep and (not prefix or len(prefix) > 253 or not DNS_1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(LABEL_NAME.match(name))


def _quantities(ctx: Context) -> None:
    for who in ("", "head_", "worker_"):
        values = {}
        for what in ("cpu_request", "memory_request", "cpu_limit", "memory_limit"):
            path = f"compute.{who}{what}"
            text = ctx.get(path)
            if not isinstance(text, str):
                continue
            amount = parse_quantity(text)
            if amount is None or amount < 0:
                ctx.error(
                    path,
                    f'{path} "{text}" is not a Kubernetes quantity',
                    'use forms like "4", "500m" for CPU or "16Gi" for memory',
                )
            else:
                values[what] = amount
        for res in ("cpu", "memory"):
            req, lim = values.get(f"{res}_request"), values.get(f"{res}_limit")
            if req is not None and lim is not None and req > lim:
                ctx.error(
                    f"compute.{who}{res}_request",
                    f"compute.{who}{res}_request "
                    f'"{ctx.get(f"compute.{who}{res}_request")}" exceeds compute.{who}'
                    f'{res}_limit "{ctx.get(f"compute.{who}{res}_limit")}"',
                )
