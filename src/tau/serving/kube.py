"""The namespace rule of `tau serve`: always explicit, so deploy and status agree. Pure.

Serving does not activate tau/workspace.connection.yaml; the cluster comes from the session
(`tau.session.connect(..., descriptor=False)`): --context, else $TAU_CONTEXT, else the current
context, through tau's own copy of that context.
"""

from __future__ import annotations

from tau.errors import UsageError


def require_namespace(namespace: str | None, verb: str) -> str:
    """The namespace of a cluster verb; there is no default, so deploy and status agree."""
    if not namespace:
        raise UsageError(
            f"tau serve {verb} needs --namespace (-n)",
            hint="serving does not read tau/workspace.connection.yaml: pass "
            "-n NAMESPACE (and --context or $TAU_CONTEXT for the cluster)",
        )
    from tau.session import check_namespace

    check_namespace(namespace)
    return namespace
