"""Turn the repository descriptor (or an explicit context) into a dedicated kubeconfig + context.

Performs I/O. This is the one place that decides which cluster a command talks to:

- `--context` typed explicitly wins and is used directly (no descriptor activation), unless it
  names the descriptor's own context;
- `$TAU_CONTEXT` that disagrees with the descriptor is an error (contract §0);
- otherwise the descriptor is activated: trust is checked (first use and changes need the
  user's confirmation), and only the named context is copied into a 0600 kubeconfig under
  `$TAU_CONFIG_DIR/kubeconfigs/`. The user's own kubeconfig is read, never written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.connection import aks as aks_access
from tau.connection import kubeconfig as kc
from tau.connection.context import env_context
from tau.connection.descriptor import DEFAULT_SYSTEM_NAMESPACE, Discovery, at, discover
from tau.connection.files import config_dir, safe_name, short_hash, write_private
from tau.connection.state import (
    ConnectionState,
    carry_contract,
    load_state,
    new_state,
    review_reasons,
    save_state,
    state_path,
)
from tau.errors import TauError, UsageError

#: How a user confirms a connection without a terminal; quoted in the error below.
TRUST_COMMAND = "tau workspace connection --trust"

Confirm = Callable[[str], bool]


class TrustRequired(TauError):
    """The connection needs the user's review and no terminal is there to ask."""


@dataclass(frozen=True)
class Connection:
    """Which cluster a command talks to, through which dedicated kubeconfig.

    Attributes:
        context: the context name inside `kubeconfig`.
        kubeconfig: the dedicated kubeconfig file (never the user's own).
        source: `flag`, `env`, `descriptor` or `current` — where the context came from.
        system_namespace: where TauWorkspaces live.
        discovery: the descriptor that was activated, or None for a direct context.
        state: the confirmed local state (descriptor activations only).
    """

    context: str
    kubeconfig: Path
    source: str
    system_namespace: str
    discovery: Discovery | None = None
    state: ConnectionState | None = None
    state_file: Path | None = None

    @property
    def workspace(self) -> str | None:
        return self.discovery.descriptor.workspace if self.discovery else None


def choose_context(
    flag: str | None, env_context: str | None, discovery: Discovery | None
) -> tuple[str | None, str]:
    """Apply the context precedence rule; returns (context or None, source). Pure.

    Raises:
        UsageError: `$TAU_CONTEXT` names a different context than the descriptor and no
            `--context` was typed.
    """
    described = discovery.descriptor.context_name if discovery else None
    if flag:
        return flag, "descriptor" if flag == described else "flag"
    if env_context and described and env_context != described:
        raise UsageError(
            f'$TAU_CONTEXT names context "{env_context}" but {discovery.path} '  # type: ignore[union-attr]
            f'names "{described}"; pass --context to choose one'
        )
    if described:
        return described, "descriptor"
    if env_context:
        return env_context, "env"
    return None, "current"


def activate(
    start: Path | None = None,
    *,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    confirm: Confirm | None = None,
    trust: bool = False,
    refresh: bool = False,
    aks_options: Mapping[str, Any] | None = None,
    tau_version: str | None = None,
    descriptor_file: Path | None = None,
) -> Connection:
    """Resolve the cluster for a command run in `start` (default cwd).

    Args:
        start: the directory descriptor discovery starts from.
        descriptor_file: the descriptor to use instead of discovering one (a monorepo
            project's `connection` in tau.projects.yaml).
        context: the `--context` flag value, when typed.
        env: the environment (default os.environ): TAU_CONTEXT, TAU_CONFIG_DIR, KUBECONFIG...
        confirm: asks the user a yes/no question; None when there is no terminal.
        trust: the user already confirmed (`tau workspace connection --trust`).
        refresh: fetch AKS credentials again even when a dedicated kubeconfig exists.
        aks_options: keyword arguments for `aks.fetch_kubeconfig` (credential, transport).
        tau_version: this tau's version, checked against the descriptor's
            requirements.minTauVersion before anything else (None: not checked).

    Returns:
        The connection; its kubeconfig file exists and holds exactly one context.

    Raises:
        TrustRequired: review is needed and neither `confirm` nor `trust` was given.
        UsageError: context conflicts, unknown contexts, declined confirmation, or this tau
            is older than the descriptor's requirements.minTauVersion.
        ClusterError: AKS credential retrieval failed.
    """
    env = os.environ if env is None else env
    discovery = at(descriptor_file) if descriptor_file is not None else discover(start)
    name, source = choose_context(context, env_context(env), discovery)
    if source == "descriptor" and discovery is not None:
        if tau_version is not None:
            from tau.connection import version

            version.check(discovery.descriptor.min_tau_version, tau_version, str(discovery.path))
        return _activate_descriptor(discovery, env, confirm, trust, refresh, aks_options or {})
    return direct(name, source, env)


def direct(name: str | None, source: str, env: Mapping[str, str]) -> Connection:
    """Isolate a context the user named (or their current one); no trust prompt: it is theirs.

    `source` is `flag`, `env` or `current` (see `Connection.source`).
    """
    name = name or kc.current_context(env)
    if not name:
        raise UsageError(
            "no kubeconfig context to use",
            hint="pass --context, set $TAU_CONTEXT, or add tau/workspace.connection.yaml",
        )
    config = kc.isolate(name, env)
    path = config_dir(env) / "kubeconfigs" / f"direct-{safe_name(name)}.yaml"
    _write_if_changed(path, kc.dump(config))
    system_ns = env.get("TAU_SYSTEM_NAMESPACE") or DEFAULT_SYSTEM_NAMESPACE
    return Connection(name, path, source, system_ns)


def _activate_descriptor(
    discovery: Discovery,
    env: Mapping[str, str],
    confirm: Confirm | None,
    trust: bool,
    refresh: bool,
    aks_options: Mapping[str, Any],
) -> Connection:
    desc = discovery.descriptor
    cfg = config_dir(env)
    spath = state_path(cfg, discovery)
    state = load_state(spath)
    key = f"{desc.access_identity.lower()}\n{discovery.repository_root}"
    kpath = (
        cfg
        / "kubeconfigs"
        / f"{safe_name(desc.context_name)}-{short_hash(key, 6)}-{desc.digest[7:19]}.yaml"
    )
    config: dict[str, Any] | None
    identity: kc.ClusterIdentity | None
    if desc.aks is None:
        config = kc.isolate(desc.context_name, env, descriptor=str(discovery.path))
        identity = kc.cluster_identity(config)
    else:
        # AKS: the descriptor's resource ID is the identity, so review happens before any
        # credential is fetched; a cached exec kubeconfig is reused (kubelogin refreshes tokens).
        cached = None if refresh else _read_cached(state, kpath)
        config = cached
        identity = kc.cluster_identity(config) if config else None
    reasons = review_reasons(state, discovery, identity)
    if reasons:
        _review(discovery, identity, reasons, confirm, trust)
    if config is None:
        assert desc.aks is not None
        config = aks_access.fetch_kubeconfig(desc.aks, desc.context_name, env=env, **aks_options)
        identity = kc.cluster_identity(config)
        if state is not None and not reasons and review_reasons(state, discovery, identity):
            _review(discovery, identity, review_reasons(state, discovery, identity), confirm, trust)
            reasons = ["cluster changed"]
    assert identity is not None
    _write_if_changed(kpath, kc.dump(config))
    if reasons or state is None or state.kubeconfig_path != str(kpath):
        state = carry_contract(new_state(discovery, identity, kpath), state)
        save_state(spath, state)
    return Connection(
        desc.context_name, kpath, "descriptor", desc.system_namespace, discovery, state, spath
    )


def _review(
    discovery: Discovery,
    identity: kc.ClusterIdentity | None,
    reasons: list[str],
    confirm: Confirm | None,
    trust: bool,
) -> None:
    if trust:
        return
    desc = discovery.descriptor
    where = identity.describe() if identity else f"AKS cluster {desc.aks.resource_id}"  # type: ignore[union-attr]
    why = "; ".join(reasons)
    if confirm is None:
        raise TrustRequired(
            f"workspace connection requires interactive review: {why}",
            hint=f"run `{TRUST_COMMAND}` in this repository to confirm workspace "
            f'"{desc.workspace}" on context "{desc.context_name}" ({where}), '
            "or rerun this command on a terminal",
        )
    question = (
        f'{why}.\nPin workspace "{desc.workspace}" on context "{desc.context_name}" '
        f"({where}) for this repository? [y/N] "
    )
    if not confirm(question):
        raise UsageError("workspace connection not confirmed; nothing was changed")


def _read_cached(state: ConnectionState | None, path: Path) -> dict[str, Any] | None:
    if state is None or not path.is_file():
        return None
    import yaml

    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        config = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    except (OSError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) and config.get("clusters") else None


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data and (path.stat().st_mode & 0o777) == 0o600:
            return
    except OSError:
        pass
    write_private(path, data)


def require_explicit_outside_repo(
    start: Path | None, context: str | None, namespace: str | None, env: Mapping[str, str]
) -> None:
    """Lifecycle verbs outside a Git repository need --context or --namespace (contract §1.4)."""
    from tau.connection.descriptor import find_repository_root

    if context or namespace or env_context(env):
        return
    if find_repository_root(start or Path.cwd()) is None:
        raise UsageError(
            "lifecycle commands outside a Git repository require explicit --context or --namespace"
        )
