"""How `tau serve` reaches a cluster: the context, the namespace and one ApiClient.

Performs I/O (reads a kubeconfig; never writes one). Serving does not activate
tau/workspace.connection.yaml: the context is --context or $TAU_CONTEXT (else the
kubeconfig's current one) and the namespace is always explicit.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from tau.errors import ClusterError, UsageError


def context_name(explicit: str | None, environ: dict[str, str] | None = None) -> str | None:
    """--context, else $TAU_CONTEXT, else None (the kubeconfig's current context)."""
    env = os.environ if environ is None else environ
    return explicit or env.get("TAU_CONTEXT") or None


def require_namespace(namespace: str | None, verb: str) -> str:
    """The namespace of a cluster verb; there is no default, so deploy and status agree."""
    if not namespace:
        raise UsageError(f"tau serve {verb} needs --namespace (-n)",
                         hint="serving does not read tau/workspace.connection.yaml: pass "
                              "-n NAMESPACE (and --context or $TAU_CONTEXT for the cluster)")
    return namespace


def api_client(context: str | None) -> Any:
    """An official ApiClient for the context, from $KUBECONFIG or ~/.kube/config."""
    from kubernetes import config

    name = context_name(context)
    try:
        return config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"),
                                             context=name)
    except Exception as exc:  # ConfigException, a missing file, bad YAML: all the same fix
        raise ClusterError(f"cannot load the kubeconfig context {name or '(current)'}: {exc}",
                           hint="pass --context NAME or set $TAU_CONTEXT") from None


@contextlib.contextmanager
def transport_errors(api: Any) -> Iterator[None]:
    """Turn connection failures and timeouts into ClusterErrors naming the server."""
    from tau.kube_errors import translate_transport

    server = getattr(getattr(api, "configuration", None), "host", "") or "the configured server"
    try:
        yield
    except OSError as exc:
        raise translate_transport(exc, server) from None
    except Exception as exc:
        if type(exc).__module__.startswith("urllib3"):
            raise translate_transport(exc, server) from None
        raise
