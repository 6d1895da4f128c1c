"""Build a `kubernetes` ApiClient from tau's dedicated kubeconfig and one context.

Performs I/O (reads the dedicated kubeconfig; may run its exec plugin). `kubernetes` is imported
here, inside the functions, so `import tau.cli` and offline commands never load it. The client
reads only the file it is given: never `~/.kube/config`, never `$KUBECONFIG`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.errors import ClusterError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = ["DEFAULT_TIMEOUT", "ApiClient", "api_client"]

#: Seconds a single API request may take (connect, read); callers pass it as `_request_timeout`.
DEFAULT_TIMEOUT = 30.0


def api_client(kubeconfig: Path, context: str) -> ApiClient:
    """A client for `context` of `kubeconfig`: tau's lean session when the context's user holds
    a static credential (`tau.kube.direct`), else the official ApiClient, which runs exec
    plugins and auth providers. Both serve every call of `tau.kube`.

    Raises:
        ClusterError: the kubeconfig cannot be loaded or its exec credential plugin failed.
    """
    config = _load(kubeconfig)
    lean = _direct(config, context)
    if lean is not None:
        return lean  # the same calls as an ApiClient, answered alike
    from kubernetes.client import Configuration
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import new_client_from_config

    configuration = Configuration()
    # One quick retry only: a refused connection should fail in seconds, not after backoff.
    configuration.retries = 1
    _proxy(configuration, config, context)
    try:
        # persist_config=False: the client must not write refreshed tokens back to disk.
        return new_client_from_config(
            config_file=str(kubeconfig),
            context=context,
            persist_config=False,
            client_configuration=configuration,
        )
    except ConfigException as exc:
        raise ClusterError(
            f'cannot use kubeconfig context "{context}" from {kubeconfig}: {_first_line(exc)}',
            hint="if it signs in through kubelogin, run a tau command on a terminal once "
            "(or `az login`), then retry",
        ) from exc
    except OSError as exc:
        raise ClusterError(f"cannot read kubeconfig {kubeconfig}: {exc.strerror}") from exc
    except Exception as exc:
        # Credential plugins and auth providers (OIDC refresh through oauthlib, say) raise
        # their own exception types while the client is built; none may leave as a traceback.
        raise ClusterError(
            f'cannot sign in with kubeconfig context "{context}": '
            f"{type(exc).__name__}: {_first_line(exc)[:200]}",
            hint="refresh your credentials the way your cluster expects (for OIDC: sign in "
            "again with your identity provider's kubectl plugin), then retry",
        ) from exc


def _load(kubeconfig: Path) -> dict[str, Any] | None:
    """The kubeconfig as a mapping, or None (the official client then reports the problem with
    the file the way it always has).
    """
    import yaml

    try:
        config = yaml.load(
            kubeconfig.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        )
    except (OSError, ValueError, yaml.YAMLError):
        return None
    return config if isinstance(config, dict) else None


def _direct(config: dict[str, Any] | None, context: str) -> Any:
    """Tau's lean session for `context`, or None (then the official client decides)."""
    from tau.kube.direct import DirectClient, entries

    found = entries(config, context) if config is not None else None
    try:
        return DirectClient(*found) if found is not None else None
    except (OSError, ValueError):
        return None


def _proxy(configuration: Any, config: dict[str, Any] | None, context: str) -> None:
    """Point the official client at the proxy kubectl would use for this context's server
    (urllib3 reads no proxy variable by itself).
    """
    from tau.kube import proxy
    from tau.kube.direct import named

    ctx = named(config, "contexts", context) if config is not None else None
    cluster = named(config, "clusters", ctx.get("cluster")) if config and ctx else None
    if not cluster or not cluster.get("server"):
        return
    import os

    via = proxy.for_server(str(cluster["server"]), os.environ, str(cluster.get("proxy-url") or ""))
    if via is not None:
        configuration.proxy = str(via)
        configuration.proxy_headers = via.headers() or None


def _first_line(exc: Any) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
