"""Get an exec-auth kubeconfig for an AKS cluster with the user's own Azure identity.

Performs I/O (Azure Resource Manager). Uses the optional `aks` extra (azure-identity,
azure-mgmt-containerservice), imported only when AKS access is actually used. The kubeconfig
returned never holds a static credential: AKS is asked for the `exec` format (kubelogin), and
anything carrying a token, key or password is rejected before it can reach disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import yaml

from tau.connection.descriptor import AksAccess
from tau.connection.kubeconfig import static_credentials
from tau.errors import ClusterError, UsageError

#: Login modes tau passes to kubelogin; `azurecli` reuses an existing `az login` session.
LOGIN_AZURECLI = "azurecli"
LOGIN_DEVICECODE = "devicecode"


def login_mode(env: Mapping[str, str] | None = None) -> str:
    """`devicecode` when `$TAU_AUTH_MODE=devicecode` (headless shells), else `azurecli`."""
    env = os.environ if env is None else env
    return (
        LOGIN_DEVICECODE if env.get("TAU_AUTH_MODE", "").lower() == "devicecode" else LOGIN_AZURECLI
    )


def default_credential(tenant_id: str, env: Mapping[str, str] | None = None) -> Any:
    """The user's Azure identity: the `az login` session, then browser (or device code) sign-in."""
    identity = _import_azure()[0]
    if login_mode(env) == LOGIN_DEVICECODE:
        return identity.DeviceCodeCredential(tenant_id=tenant_id)
    return identity.ChainedTokenCredential(
        identity.AzureCliCredential(tenant_id=tenant_id),
        identity.InteractiveBrowserCredential(tenant_id=tenant_id),
    )


def fetch_kubeconfig(
    aks: AksAccess,
    context_name: str,
    *,
    credential: Any = None,
    env: Mapping[str, str] | None = None,
    **client_kwargs: Any,
) -> dict[str, Any]:
    """Fetch the cluster-user kubeconfig of `aks` and normalize it for tau's dedicated file.

    Args:
        aks: the descriptor's AKS cluster and tenant.
        context_name: the context name the dedicated kubeconfig must use.
        credential: an azure-core TokenCredential; default `default_credential(...)`.
        env: environment for `TAU_AUTH_MODE` (default os.environ).
        **client_kwargs: passed to `ContainerServiceClient` (tests pass `transport=`).

    Raises:
        UsageError: the `aks` extra is not installed.
        ClusterError: Azure refused or failed the request, or returned static credentials.
    """
    _, mgmt, exceptions = _import_azure()
    credential = credential or default_credential(aks.tenant_id, env)
    client = mgmt.ContainerServiceClient(credential, aks.subscription_id, **client_kwargs)
    try:
        result = client.managed_clusters.list_cluster_user_credentials(
            aks.resource_group, aks.cluster_name, format="exec"
        )
    except exceptions.ClientAuthenticationError as exc:
        raise ClusterError(
            f"Azure sign-in failed for tenant {aks.tenant_id}: {_first_line(exc)}",
            hint=f"run `az login --tenant {aks.tenant_id}` (or set TAU_AUTH_MODE=devicecode on a "
            "headless machine) and retry",
        ) from exc
    except exceptions.HttpResponseError as exc:
        raise _arm_error(exc, aks) from exc
    except exceptions.AzureError as exc:
        raise ClusterError(
            f"could not reach Azure Resource Manager for AKS cluster {aks.cluster_name}: "
            f"{_first_line(exc)}",
            hint="check your network connection and proxy settings",
        ) from exc
    kubeconfigs = result.kubeconfigs or []
    if not kubeconfigs or not kubeconfigs[0].value:
        raise ClusterError(f"AKS returned no kubeconfig for cluster {aks.cluster_name}")
    return normalize(yaml.safe_load(kubeconfigs[0].value), context_name, login_mode(env))


def normalize(config: Any, context_name: str, login: str) -> dict[str, Any]:
    """Keep one context named `context_name` and point kubelogin at `login`. Pure.

    Raises:
        ClusterError: the kubeconfig is malformed or carries a static credential (local accounts
            or a non-Entra cluster), which tau will not write to disk.
    """
    if not isinstance(config, dict) or not config.get("contexts"):
        raise ClusterError("AKS returned a kubeconfig tau cannot read (no contexts)")
    found = static_credentials(config)
    if found:
        raise ClusterError(
            "AKS returned static credentials (" + ", ".join(sorted(set(found))) + "); tau only "
            "writes exec-auth (kubelogin) kubeconfigs",
            hint="ask the cluster owner to enable Microsoft Entra ID integration and disable "
            "local accounts, or use `access.method: kubeconfig` with your own context",
        )
    context = config["contexts"][0]
    body = context.get("context") or {}
    users = {u.get("name"): u for u in config.get("users") or []}
    clusters = {c.get("name"): c for c in config.get("clusters") or []}
    user = users.get(body.get("user"))
    cluster = clusters.get(body.get("cluster"))
    if user is None or cluster is None or not (user.get("user") or {}).get("exec"):
        raise ClusterError("AKS returned a kubeconfig without an exec (kubelogin) user")
    user = {"name": user["name"], "user": dict(user["user"])}
    user["user"]["exec"] = _with_login(user["user"]["exec"], login)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [user],
        "contexts": [{"name": context_name, "context": body}],
        "current-context": context_name,
        "preferences": {},
    }


def _with_login(exec_cfg: dict[str, Any], login: str) -> dict[str, Any]:
    args = [str(a) for a in exec_cfg.get("args") or []]
    if "--login" in args:
        index = args.index("--login")
        args[index + 1 : index + 2] = [login]
    elif args[:1] == ["get-token"]:
        args += ["--login", login]
    return {**exec_cfg, "args": args}


def _arm_error(exc: Any, aks: AksAccess) -> ClusterError:
    status = getattr(exc, "status_code", None)
    name = aks.cluster_name
    if status == 403:
        return ClusterError(
            f"your Azure identity may not list user credentials of AKS cluster {name} "
            f"(403 Forbidden)",
            status=403,
            hint="ask the cluster owner for the Azure Kubernetes Service Cluster User Role on it",
        )
    if status == 404:
        return ClusterError(
            f"AKS cluster {aks.resource_id} not found (404)",
            status=404,
            hint="check `access.aks.resourceID` in tau/workspace.connection.yaml and that you "
            "are signed in to the right tenant",
        )
    return ClusterError(
        f"Azure refused credentials for AKS cluster {name} ({status}): {_first_line(exc)}",
        status=status,
    )


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "message", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _import_azure() -> tuple[Any, Any, Any]:
    try:
        import azure.core.exceptions as exceptions
        import azure.identity as identity
        import azure.mgmt.containerservice as mgmt
    except ImportError as exc:
        from tau.build_info import extra_install_hint

        raise UsageError(
            "access.method aks needs the Azure SDK, which is not installed",
            hint=extra_install_hint("aks"),
        ) from exc
    return identity, mgmt, exceptions
