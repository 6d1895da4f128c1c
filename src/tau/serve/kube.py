"""How `tau serve` reaches a cluster: the kubeconfig, the context, the namespace, a client.

Performs I/O (reads the user's kubeconfig; never writes one). Serving does not activate
tau/workspace.connection.yaml: the kubeconfig is $KUBECONFIG or ~/.kube/config, the context
is --context, else $TAU_CONTEXT, else the kubeconfig's current one, and the namespace is
always explicit. The client itself comes from the shared factory `tau.kube.client`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tau.errors import ClusterError, UsageError


def context_name(explicit: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """--context, else $TAU_CONTEXT, else None (the kubeconfig's current context)."""
    env = os.environ if environ is None else environ
    return explicit or env.get("TAU_CONTEXT") or None


def kubeconfig_path(environ: Mapping[str, str] | None = None) -> Path:
    """$KUBECONFIG (kept whole: the client merges a path list), else ~/.kube/config."""
    env = os.environ if environ is None else environ
    return Path(env.get("KUBECONFIG") or Path.home() / ".kube" / "config")


def require_namespace(namespace: str | None, verb: str) -> str:
    """The namespace of a cluster verb; there is no default, so deploy and status agree."""
    if not namespace:
        raise UsageError(
            f"tau serve {verb} needs --namespace (-n)",
            hint="serving does not read tau/workspace.connection.yaml: pass "
            "-n NAMESPACE (and --context or $TAU_CONTEXT for the cluster)",
        )
    return namespace


def _contexts(kubeconfig: Path) -> tuple[list[str], str]:
    """The context names of the kubeconfig and its current context ("" when unset)."""
    from kubernetes import config

    try:
        contexts, active = config.list_kube_config_contexts(config_file=str(kubeconfig))
    except Exception as exc:  # ConfigException, a missing file, bad YAML: all the same fix
        raise ClusterError(
            f"cannot read the kubeconfig {kubeconfig}: {exc}",
            hint="check $KUBECONFIG, or pass --context NAME",
        ) from None
    return [str(c["name"]) for c in contexts or []], str((active or {}).get("name") or "")


def connect(context: str | None) -> tuple[Any, str]:
    """An official ApiClient and the context name it uses.

    Raises:
        ClusterError: the kubeconfig cannot be read or has no such context.
    """
    from tau.kube.client import api_client

    kubeconfig = kubeconfig_path()
    names, current = _contexts(kubeconfig)
    name = context_name(context) or current
    if name not in names:
        origin = (
            "--context"
            if context
            else "$TAU_CONTEXT"
            if context_name(None)
            else "the current context"
        )
        raise ClusterError(
            f'kubeconfig context "{name}" ({origin}) is not in {kubeconfig}',
            hint=f"available contexts: {', '.join(names) or 'none'}",
        )
    return api_client(kubeconfig, name), name
