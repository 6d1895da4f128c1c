"""Read the user's kubeconfig by the normal rules and cut one context out of it.

Performs I/O (reads the user's kubeconfig files; never writes them). `isolate` returns the
minimal kubeconfig for one context: that context, its cluster and its user, with relative file
references made absolute so the copy works from tau's config directory.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tau.errors import UsageError

#: libyaml's safe loader where PyYAML has it (a kubeconfig is read on every command that
#: connects, and the pure-Python loader took more time than the request), else PyYAML's own.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Fields that name files, resolved relative to the kubeconfig that defines them (kubectl rule).
_CLUSTER_FILES = ("certificate-authority",)
_USER_FILES = ("client-certificate", "client-key", "tokenFile")
# User fields that hold a credential on disk; AKS access rejects kubeconfigs that carry them.
STATIC_CREDENTIAL_FIELDS = (
    "token",
    "tokenFile",
    "client-key-data",
    "client-key",
    "password",
    "auth-provider",
)


@dataclass(frozen=True)
class ClusterIdentity:
    """What trust is pinned to: the API server URL and a fingerprint of the CA it presents."""

    server: str
    ca_fingerprint: str

    def describe(self) -> str:
        return f"server {self.server}, CA {self.ca_fingerprint}"


def user_kubeconfig_paths(env: Mapping[str, str] | None = None) -> list[Path]:
    """The files kubectl would read: `$KUBECONFIG` (path-list) or `~/.kube/config`."""
    env = os.environ if env is None else env
    raw = env.get("KUBECONFIG", "")
    if raw:
        return [Path(p).expanduser() for p in raw.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def load_merged(paths: list[Path]) -> dict[str, Any]:
    """Merge kubeconfig files the kubectl way: the first definition of each name wins.

    Each cluster and user entry remembers the directory of its file (key `_dir`) so relative
    file references can be resolved later.
    """
    merged: dict[str, Any] = {"clusters": {}, "contexts": {}, "users": {}, "current-context": ""}
    for path in paths:
        if not path.is_file():
            continue
        try:
            doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"cannot read kubeconfig {path}: {exc}") from exc
        if not isinstance(doc, dict):
            raise UsageError(f"kubeconfig {path} is not a mapping")
        if not merged["current-context"] and doc.get("current-context"):
            merged["current-context"] = str(doc["current-context"])
        for section, inner in (("clusters", "cluster"), ("contexts", "context"), ("users", "user")):
            for entry in doc.get(section) or []:
                name = entry.get("name") if isinstance(entry, dict) else None
                if name is None or name in merged[section]:
                    continue
                body = dict(entry.get(inner) or {})
                merged[section][name] = {"body": body, "dir": path.parent}
    return merged


def isolate(
    context: str, env: Mapping[str, str] | None = None, *, descriptor: str = ""
) -> dict[str, Any]:
    """The minimal kubeconfig holding only `context`, its cluster and its user.

    Args:
        descriptor: the workspace connection file that named `context` ("" when the user
            named it), so a missing context points at the right thing to fix.

    Raises:
        UsageError: the context, or the cluster or user it names, is not in the user's kubeconfig.
    """
    paths = user_kubeconfig_paths(env)
    merged = load_merged(paths)
    where = os.pathsep.join(str(p) for p in paths)
    ctx = merged["contexts"].get(context)
    if ctx is None:
        known = ", ".join(f'"{n}"' for n in sorted(merged["contexts"])) or "none"
        fix = f"fix `cluster.contextName` in {descriptor}" if descriptor else "pick one of them"
        raise UsageError(
            f'kubeconfig context "{context}" not found in {where} (contexts: {known})',
            hint="get credentials for the cluster first (for AKS: `az aks get-credentials`), "
            f"or {fix}",
        )
    body = ctx["body"]
    cluster_name, user_name = body.get("cluster"), body.get("user")
    cluster = merged["clusters"].get(cluster_name)
    user = merged["users"].get(user_name) if user_name else {"body": {}, "dir": Path.cwd()}
    if cluster is None:
        raise UsageError(
            f'kubeconfig context "{context}" names cluster "{cluster_name}", '
            f"which is not defined in {where}"
        )
    if user is None:
        raise UsageError(
            f'kubeconfig context "{context}" names user "{user_name}", '
            f"which is not defined in {where}"
        )
    context_body = {k: v for k, v in body.items() if k in ("cluster", "user", "namespace")}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": _absolute(cluster, _CLUSTER_FILES)}],
        "users": [{"name": user_name or "", "user": _absolute_user(user)}],
        "contexts": [{"name": context, "context": context_body}],
        "current-context": context,
        "preferences": {},
    }


def current_context(env: Mapping[str, str] | None = None) -> str | None:
    """The user's `current-context`, or None when no kubeconfig sets one."""
    return load_merged(user_kubeconfig_paths(env))["current-context"] or None


def _absolute(entry: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    body = dict(entry["body"])
    for field in fields:
        if isinstance(body.get(field), str) and body[field]:
            body[field] = str((entry["dir"] / Path(body[field]).expanduser()).resolve())
    return body


def _absolute_user(entry: dict[str, Any]) -> dict[str, Any]:
    body = _absolute(entry, _USER_FILES)
    exec_cfg = body.get("exec")
    if isinstance(exec_cfg, dict):
        command = exec_cfg.get("command")
        # kubectl resolves an exec command with a path separator relative to its kubeconfig;
        # a bare name is looked up on PATH and must stay bare.
        if isinstance(command, str) and os.sep in command and not Path(command).is_absolute():
            exec_cfg = {**exec_cfg, "command": str((entry["dir"] / command).resolve())}
            body["exec"] = exec_cfg
    return body


def dump(config: dict[str, Any]) -> bytes:
    """Canonical YAML bytes of a kubeconfig (sorted keys, block style)."""
    return yaml.safe_dump(config, sort_keys=True, default_flow_style=False).encode()


def cluster_identity(config: dict[str, Any]) -> ClusterIdentity:
    """Server URL and CA fingerprint of the (single) cluster of an isolated kubeconfig. Pure."""
    cluster = config["clusters"][0]["cluster"]
    server = str(cluster.get("server", ""))
    ca: bytes | None = None
    if cluster.get("certificate-authority-data"):
        try:
            ca = base64.b64decode(str(cluster["certificate-authority-data"]))
        except ValueError:
            ca = str(cluster["certificate-authority-data"]).encode()
    elif cluster.get("certificate-authority"):
        try:
            ca = Path(cluster["certificate-authority"]).read_bytes()
        except OSError:
            ca = None
    if cluster.get("insecure-skip-tls-verify"):
        fingerprint = "none (insecure-skip-tls-verify)"
    elif ca is None:
        fingerprint = "system trust store"
    else:
        fingerprint = "sha256:" + hashlib.sha256(ca).hexdigest()[:16]
    return ClusterIdentity(server, fingerprint)


def static_credentials(config: dict[str, Any]) -> list[str]:
    """The credential-bearing user fields present in a kubeconfig (empty for exec-only). Pure."""
    found: list[str] = []
    for entry in config.get("users") or []:
        user = entry.get("user") or {}
        found.extend(f for f in STATIC_CREDENTIAL_FIELDS if user.get(f))
    return found
