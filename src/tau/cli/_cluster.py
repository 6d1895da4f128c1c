"""How lifecycle commands reach a cluster: the context, the namespace, an ApiClient.

Performs I/O (reads a kubeconfig; never writes one). There is deliberately no default
namespace: submitting and observing must agree on it, and a silent default once made runs
invisible to `status`.
"""

from __future__ import annotations

import os
from typing import Any

from tau.errors import ClusterError, UsageError

NO_NAMESPACE = ("no namespace resolved for this workload: connect a workspace (see "
                "`tau workspace list`) or pass --namespace")


def context_name(explicit: str | None) -> str | None:
    """--context, else $TAU_CONTEXT, else None (the kubeconfig's current context)."""
    return explicit or os.environ.get("TAU_CONTEXT") or None


def require_namespace(namespace: str | None) -> str:
    if not namespace:
        raise UsageError(NO_NAMESPACE)
    return namespace


def api_client(context: str | None) -> Any:
    """An official ApiClient for the context, from $KUBECONFIG or ~/.kube/config (read only)."""
    from kubernetes import config

    try:
        return config.new_client_from_config(config_file=os.environ.get("KUBECONFIG"),
                                             context=context_name(context))
    except Exception as exc:  # ConfigException, missing file, bad YAML: all a usage problem
        raise ClusterError(f"cannot load the kubeconfig context "
                           f"{context_name(context) or '(current)'}: {exc}",
                           hint="pass --context NAME, set $TAU_CONTEXT, or connect the "
                                "repository's workspace") from None


def transport_errors(fn):
    """Turn connection failures and timeouts into ClusterErrors (no traceback)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OSError as exc:
            from tau.kube_errors import translate_transport

            raise translate_transport(exc, "the configured server") from None
        except Exception as exc:
            if type(exc).__module__.startswith("urllib3"):
                from tau.kube_errors import translate_transport

                raise translate_transport(exc, "the configured server") from None
            raise

    return wrapper
