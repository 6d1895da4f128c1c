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


def chosen_store(store: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store as written: the first of the contract's sources that is set."""
    environ = os.environ if env is None else env
    if store:
        return store
    if environ.get("TAU_EXP_STORE"):
        return environ["TAU_EXP_STORE"]
    if environ.get("TAU_EXP_STORE_ROOT") and all(environ.get(p) for p in _PARTS):
        parts = [_component(p, environ[p]) for p in _PARTS]
        return os.path.join(environ["TAU_EXP_STORE_ROOT"], *parts)
    raise UsageError(MISSING)


def resolve_root(store: str | None, env: Mapping[str, str] | None = None) -> Path:
    """The absolute, cleaned folder store root.

    Commands that write the store take a folder only: a team store (a `postgresql://` URL) is
    written by `experiment push` alone, so it is refused here with that fix.
    """
    chosen = chosen_store(store, env)
    if chosen.split("://", 1)[0].lower() in ("postgresql", "postgres") and "://" in chosen:
        raise UsageError(
            "this command writes a local folder store; a postgresql:// team store is written "
            "only by `taugrid-portal experiment push`",
            hint="run it on your folder store, then push: "
            "taugrid-portal experiment push --all --store DIR --to URL",
        )
    return Path(os.path.normpath(os.path.abspath(os.path.expanduser(chosen))))
