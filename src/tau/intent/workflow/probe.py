"""Which path a run config takes: direct, or a managed workflow (and the flags it reads).

Pure and light: `tau run` asks this of every config, so it imports nothing heavy; the managed
path itself (tau.intent.workflow.dispatch) is imported only when a config takes it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from tau.intent.validate.context import canonical, lookup


class Options(NamedTuple):
    """The command line's part of a managed run: a run name, and the Key Vault flags."""

    #: A positional NAME given with --config (refused: the manifest names the run).
    name: str | None = None
    key_vault: str | None = None
    tenant_id: str | None = None
    client_id: str | None = None

    @property
    def key_vault_flags(self) -> bool:
        return bool(self.key_vault or self.tenant_id or self.client_id)


def is_managed(data: dict[str, Any]) -> bool:
    """The reference's probe: `schema_version` present and no engine (blank counts as none)."""
    return "schema_version" in data and not canonical(data, "engine")[1]


def delegates(data: dict[str, Any]) -> bool:
    """A direct config whose `workflow.file` names a manifest."""
    file = lookup(data, "workflow.file")
    return isinstance(file, str) and bool(file.strip())


def applies(data: dict[str, Any]) -> bool:
    """Whether the config runs as a managed workflow."""
    return is_managed(data) or delegates(data)
