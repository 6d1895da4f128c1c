"""Find, parse and validate the repository descriptor `tau/workspace.connection.yaml`.

Performs I/O (reads the descriptor file and walks directories). Parsing is strict: every unknown
key, wrong type and bad value is reported at once, each with its file:line:col.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from tau.errors import ConfigError, Diagnostic, Location

SCHEMA = "tau.workspace.connection.v1"
RELATIVE_PATH = Path("tau") / "workspace.connection.yaml"
DEFAULT_SYSTEM_NAMESPACE = "tau-system"
ACCESS_METHODS = ("kubeconfig", "aks")
AUTHORIZATION_MODES = ("cluster-wide", "workspace-rbac")

_UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?$")
_AKS_ID = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)"
    r"/providers/Microsoft\.ContainerService/managedClusters/(?P<name>[^/]+)$",
    re.IGNORECASE,
)

# The key tree of the schema; a leaf names the scalar type it must have.
_KEYS: dict[str, Any] = {
    "schema": str,
    "workspace": str,
    "cluster": {"contextName": str, "systemNamespace": str},
    "access": {"method": str, "aks": {"resourceID": str, "tenantID": str}},
    "authorization": {"mode": str, "requiredRole": str},
    "requirements": {"minTauVersion": str},
    "network": {"privateCluster": bool, "instructions": str},
}
_REQUIRED = (
    "schema",
    "workspace",
    "cluster.contextName",
    "access.method",
    "authorization.mode",
    "requirements.minTauVersion",
)


@dataclass(frozen=True)
class AksAccess:
    """The AKS managed cluster a descriptor with `access.method: aks` points at."""

    resource_id: str
    tenant_id: str

    @property
    def subscription_id(self) -> str:
        return _aks_match(self.resource_id)["sub"]

    @property
    def resource_group(self) -> str:
        return _aks_match(self.resource_id)["rg"]

    @property
    def cluster_name(self) -> str:
        return _aks_match(self.resource_id)["name"]


@dataclass(frozen=True)
class Descriptor:
    """A validated workspace connection descriptor; never holds a secret."""

    workspace: str
    context_name: str
    system_namespace: str
    access_method: str
    aks: AksAccess | None
    authorization_mode: str
    required_role: str | None
    min_tau_version: str
    private_cluster: bool
    network_instructions: str | None

    @property
    def digest(self) -> str:
        """`sha256:` over the canonical JSON of the parsed descriptor (comments do not count)."""
        raw = json.dumps(asdict(self), sort_keys=True, separators=(",", ":")).encode()
        return "sha256:" + hashlib.sha256(raw).hexdigest()

    @property
    def access_identity(self) -> str:
        """What this descriptor says the cluster is; the key its trust is recorded under."""
        if self.aks is not None:
            return f"aks:{self.aks.resource_id.lower()}:{self.aks.tenant_id.lower()}"
        return f"kubeconfig:{self.context_name}"


@dataclass(frozen=True)
class Discovery:
    """A descriptor found on disk: where it is, the repository it belongs to, its content."""

    path: Path
    repository_root: Path
    descriptor: Descriptor


def _aks_match(resource_id: str) -> dict[str, str]:
    match = _AKS_ID.match(resource_id.strip())
    if match is None:  # validated at load; reaching this is a bug
        raise ValueError(f"not an AKS resource ID: {resource_id!r}")
    return match.groupdict()


def find_repository_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds `.git` (a dir or a worktree file)."""
    current = start.resolve()
    for candidate in (current, *current.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def discover(start: Path | None = None) -> Discovery | None:
    """Walk from `start` (default cwd) up to the Git root; load the first descriptor found.

    Outside a Git repository only `start` itself is looked at, so a stray descriptor in a parent
    directory never silently connects an unrelated checkout.

    Returns:
        The discovery, or None when no descriptor exists between `start` and the boundary.

    Raises:
        ConfigError: the descriptor exists but is invalid.
    """
    here = (start or Path.cwd()).resolve()
    root = find_repository_root(here)
    stop = root or here
    for directory in (here, *here.parents):
        path = directory / RELATIVE_PATH
        if path.is_file():
            return Discovery(path, stop, load(path))
        if directory == stop:
            break
    return None


def load(path: Path) -> Descriptor:
    """Read and validate one descriptor file.

    Raises:
        ConfigError: with every problem found, each located at file:line:col.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        where = Location(str(path))
        problem = Diagnostic("", f"cannot read descriptor: {exc.strerror}", None, where)
        raise ConfigError([problem]) from exc
    return parse(text, str(path))


def parse(text: str, filename: str) -> Descriptor:
    """Validate descriptor text; `filename` is only used to locate problems. Pure.

    Raises:
        ConfigError: with every problem found.
    """
    problems: list[Diagnostic] = []
    try:
        documents = list(yaml.compose_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        loc = _loc(filename, mark)
        reason = getattr(exc, "problem", None) or str(exc)
        raise ConfigError([Diagnostic("", f"not valid YAML: {reason}", None, loc)]) from None
    documents = [d for d in documents if d is not None]
    if len(documents) != 1:
        loc = _loc(filename, documents[1].start_mark) if len(documents) > 1 else Location(filename)
        message = "the descriptor must be exactly one YAML document"
        raise ConfigError([Diagnostic("", message, "remove the extra `---` documents", loc)])
    values: dict[str, Any] = {}
    marks: dict[str, Location] = {"": _loc(filename, documents[0].start_mark)}
    _walk(documents[0], _KEYS, "", filename, values, marks, problems)
    problems.extend(_check_values(values, marks))
    if problems:
        raise ConfigError(problems)
    return _build(values)


def _loc(filename: str, mark: Any) -> Location:
    if mark is None:
        return Location(filename)
    return Location(filename, mark.line + 1, mark.column + 1)


def _walk(
    node: yaml.Node,
    keys: Mapping[str, Any],
    prefix: str,
    filename: str,
    values: dict[str, Any],
    marks: dict[str, Location],
    problems: list[Diagnostic],
) -> None:
    """Check a mapping node against its key tree, filling dotted `values` and their `marks`."""
    if not isinstance(node, yaml.MappingNode):
        what = prefix or "the descriptor"
        problems.append(
            Diagnostic(prefix, f"{what} must be a mapping", None, _loc(filename, node.start_mark))
        )
        return
    for key_node, value_node in node.value:
        key = str(key_node.value)
        path = f"{prefix}.{key}" if prefix else key
        loc = _loc(filename, key_node.start_mark)
        if path in marks:
            problems.append(Diagnostic(path, f'duplicate key "{key}"', None, loc))
            continue
        marks[path] = loc
        if key not in keys:
            problems.append(Diagnostic(path, f'unknown key "{key}"', _unknown_hint(key, keys), loc))
            continue
        expected = keys[key]
        if isinstance(expected, dict):
            _walk(value_node, expected, path, filename, values, marks, problems)
            continue
        value = _scalar(value_node, expected)
        if value is None:
            got = value_node.value if isinstance(value_node, yaml.ScalarNode) else value_node.id
            kind = "true or false" if expected is bool else "a string"
            vloc = _loc(filename, value_node.start_mark)
            problems.append(Diagnostic(path, f'must be {kind} (got "{got}")', None, vloc))
            continue
        values[path] = value


def _unknown_hint(key: str, keys: Mapping[str, Any]) -> str:
    known = ", ".join(f"`{k}`" for k in keys)
    close = difflib.get_close_matches(key, list(keys), n=1)
    if close:
        return f"did you mean `{close[0]}`? known keys here: {known}"
    return f"known keys here: {known}"


def _scalar(node: yaml.Node, expected: type) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        return None
    if expected is bool:
        if node.tag == "tag:yaml.org,2002:bool":
            return node.value.lower() == "true"
        return None
    # A plain scalar that YAML would read as a number or bool is still accepted as text here,
    # except null: `minTauVersion: 0.3.0` must not fail because it looks numeric.
    if node.tag == "tag:yaml.org,2002:null":
        return None
    return str(node.value)


def _check_values(values: dict[str, Any], marks: dict[str, Location]) -> list[Diagnostic]:
    """Semantic checks on the typed values; every problem is returned."""
    out: list[Diagnostic] = []

    def bad(path: str, message: str, hint: str | None = None) -> None:
        out.append(Diagnostic(path, message, hint, marks.get(path) or marks[""]))

    for path in _REQUIRED:
        if not str(values.get(path, "")).strip():
            bad(path.rsplit(".", 1)[0] if "." in path else "", f"`{path}` is required")
    schema = values.get("schema")
    if schema is not None and schema != SCHEMA:
        bad("schema", f'unsupported schema "{schema}"', f"use `schema: {SCHEMA}`")
    ws = values.get("workspace", "")
    if ws and (len(ws) > 253 or not _DNS_SUBDOMAIN.match(ws)):
        bad(
            "workspace",
            f'"{ws}" is not a DNS-1123 subdomain',
            "use lower-case letters, digits, - and .",
        )
    ns = values.get("cluster.systemNamespace")
    if ns is not None and (len(ns) > 63 or not _DNS_LABEL.match(ns)):
        bad("cluster.systemNamespace", f'"{ns}" is not a DNS-1123 label')
    _check_access(values, bad)
    mode = values.get("authorization.mode")
    role = values.get("authorization.requiredRole")
    if mode and mode not in AUTHORIZATION_MODES:
        bad(
            "authorization.mode", f'must be one of: {", ".join(AUTHORIZATION_MODES)} (got "{mode}")'
        )
    elif mode == "cluster-wide" and role:
        bad(
            "authorization.requiredRole",
            "must be omitted for mode cluster-wide",
            "cluster-wide workspaces are not an authorization boundary; remove `requiredRole`",
        )
    elif mode == "workspace-rbac" and not role:
        bad(
            "authorization",
            "`authorization.requiredRole` is required for mode workspace-rbac",
            "add `requiredRole: tau-researcher-v1`",
        )
    version = values.get("requirements.minTauVersion")
    if version and not _VERSION.match(version):
        bad("requirements.minTauVersion", f'"{version}" must be major.minor.patch')
    if values.get("network.privateCluster") and not values.get("network.instructions"):
        bad(
            "network",
            "`network.instructions` is required when `privateCluster` is true",
            "say how researchers reach the private API server (VPN, jump host)",
        )
    return out


def _check_access(values: dict[str, Any], bad: Any) -> None:
    method = values.get("access.method")
    has_aks = any(k.startswith("access.aks.") for k in values)
    if method and method not in ACCESS_METHODS:
        bad("access.method", f'must be one of: {", ".join(ACCESS_METHODS)} (got "{method}")')
    elif method == "kubeconfig" and has_aks:
        bad("access.aks", "must be omitted for method kubeconfig")
    elif method == "aks":
        rid = values.get("access.aks.resourceID", "")
        tenant = values.get("access.aks.tenantID", "")
        match = _AKS_ID.match(rid.strip())
        if not rid:
            bad("access", "`access.aks.resourceID` is required for method aks")
        elif match is None:
            bad(
                "access.aks.resourceID",
                f'"{rid}" must identify an AKS managed cluster',
                "use /subscriptions/<uuid>/resourceGroups/<rg>/providers/"
                "Microsoft.ContainerService/managedClusters/<name>",
            )
        elif not _UUID.match(match["sub"]):
            bad("access.aks.resourceID", f'subscription ID "{match["sub"]}" is not a UUID')
        if not tenant:
            bad("access", "`access.aks.tenantID` is required for method aks")
        elif not _UUID.match(tenant):
            bad("access.aks.tenantID", f'"{tenant}" must be a UUID')


def _build(values: dict[str, Any]) -> Descriptor:
    aks = None
    if values["access.method"] == "aks":
        aks = AksAccess(
            values["access.aks.resourceID"].strip(), values["access.aks.tenantID"].strip()
        )
    return Descriptor(
        workspace=values["workspace"],
        context_name=values["cluster.contextName"].strip(),
        system_namespace=values.get("cluster.systemNamespace") or DEFAULT_SYSTEM_NAMESPACE,
        access_method=values["access.method"],
        aks=aks,
        authorization_mode=values["authorization.mode"],
        required_role=values.get("authorization.requiredRole"),
        min_tau_version=values["requirements.minTauVersion"],
        private_cluster=bool(values.get("network.privateCluster", False)),
        network_instructions=values.get("network.instructions"),
    )
