"""Where the experiment store lives: `--store`, `TAU_EXP_STORE`, then `TAU_EXP_STORE_ROOT`.

Pure apart from reading the environment mapping it is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from tau.portal.errors import UsageError

MISSING = (
    "--store is required (or set TAU_EXP_STORE, or set TAU_EXP_STORE_ROOT with TAU_CONTEXT, "
    "TAU_TEAM, and TAU_PROJECT)"
)
_PARTS = ("TAU_CONTEXT", "TAU_TEAM", "TAU_PROJECT")


def _component(name: str, value: str) -> str:
    """One path component of the store root; nothing that could climb or split the path."""
    if not value or value != value.strip() or "/" in value or "\\" in value or value in (".", ".."):
        raise UsageError(
            f"{name}={value!r} must be a single path component "
            "(no '/' or '\\', not '.' or '..', no surrounding whitespace)"
        )
    return value


def resolve_root(store: str | None, env: Mapping[str, str] | None = None) -> Path:
    """The absolute, cleaned store root; the first of the contract's sources that is set."""
    environ = os.environ if env is None else env
    if store:
        chosen = store
    elif environ.get("TAU_EXP_STORE"):
        chosen = environ["TAU_EXP_STORE"]
    elif environ.get("TAU_EXP_STORE_ROOT") and all(environ.get(p) for p in _PARTS):
        parts = [_component(p, environ[p]) for p in _PARTS]
        chosen = os.path.join(environ["TAU_EXP_STORE_ROOT"], *parts)
    else:
        raise UsageError(MISSING)
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(chosen))))
