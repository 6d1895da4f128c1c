"""`$TAU_CONTEXT`, the default of every --context flag: the one place that reads it. Pure."""

from __future__ import annotations

from collections.abc import Mapping

#: The environment variable that defaults every --context flag.
CONTEXT_ENV = "TAU_CONTEXT"


def env_context(env: Mapping[str, str]) -> str | None:
    """The context `$TAU_CONTEXT` names, or None when it is unset or empty."""
    return env.get(CONTEXT_ENV) or None
