"""render(plan) → the manifests of a run, in apply order. Pure; dispatch only."""

from __future__ import annotations

from typing import Any

from tau.plan.model import Plan


def render(plan: Plan, *, redact: bool) -> list[dict[str, Any]]:
    """The objects of a run: a Job (with its headless Service when multi-node) or a RayJob,
    after the Secret and before the SecretProviderClass a managed workflow brings.

    Args:
        plan: the resolved run.
        redact: replace Secret names and keys with `<redacted>` (client dry-run).
    """
    if plan.engine == "rayjob":
        from tau.render.rayjob import plan_to_rayjob
        from tau.render.shipped import around

        return around(plan, [plan_to_rayjob(plan, redact=redact)], redact=redact)
    from tau.render.job import plan_to_documents

    return plan_to_documents(plan, redact=redact)
