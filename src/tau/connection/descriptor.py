"""Find, parse and validate the repository descriptor `tau/workspace.connection.yaml`.

Performs I/O (reads the descriptor file and walks directories). Parsing is strict: every unknown
key, wrong type and bad value is reported at once, each with its file:line:col.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tau.errors import ConfigError, Diagnostic, Location
from tau.intent.load import PathKey, dotted
from tau.intent.validate.findings import Findings
from tau.intent.validate.structure import FileWalker, show, type_name

SCHEMA = "tau.workspace.connection.v1"
RELATIVE_PATH = Path("tau") / "workspace.connection.yaml"
DEFAULT_SYSTEM_NAMESPACE = "tau-system"
ACCESS_METHODS = ("kubeconfig", "aks")
AUTHORIZATION_MODES = ("cluster-wide", "workspace-rbac")

_UUID = re.compile(r"^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_AKS_ID = re.compile(
    r"^/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)"
    r"/providers/Microsoft\.ContainerService/managedClusters/(?P<name>[^/]+)$",
    re.IGNORECASE,
)

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
    from tau.intent.gitroot import git_root

    return git_root(start)


def at(path: Path) -> Discovery:
    """The descriptor file `path` itself, with no discovery walk: a monorepo project names its
    connection in tau.projects.yaml.

    Raises:
        ConfigError: the descriptor is invalid.
    """
    here = path.resolve()
    return Discovery(here, find_repository_root(here.parent) or here.parent, load(path))


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

    The descriptor is read by the run config's loader (located values, duplicate keys,
    bounded nesting) and walked against spec/tau-workspace-connection.schema.json by the
    same walker, into the same findings; the cross-field rules follow.

    Raises:
        ConfigError: with every problem found.
    """
    from tau.intent import load
    from tau.intent.spec import connection_schema
    from tau.intent.validate.findings import Findings

    doc = load.parse(text, Path(filename), kind="descriptor")
    findings = Findings(doc.source, list(doc.problems))
    data = _Walker(findings, connection_schema()).walk(connection_schema(), doc.data, ())
    values = _flatten(data if isinstance(data, dict) else {})
    _check_values(values, findings)
    findings.raise_errors()
    return _build(values)


class _Walker(FileWalker):
    """The schema walker, worded as the descriptor always was."""

    def unknown(self, node: dict[str, Any], key: str, path: PathKey) -> None:
        keys = list(node.get("properties", {}))
        self.error(path, f'unknown key "{key}"', _unknown_hint(key, keys), key=True)

    def wrong_type(self, path: PathKey, options: list[str], value: Any) -> None:
        if "object" in options:
            self.error(path, f"{dotted(path) or 'the descriptor'} must be a mapping")
            return
        kind = "true or false" if "boolean" in options else "a string"
        got = value if isinstance(value, str | int | float | bool) else type_name(value)
        self.error(path, f'must be {kind} (got "{show(got).strip(chr(34))}")')


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"cluster": {"contextName": x}} → {"cluster.contextName": x}."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, path + "."))
        else:
            out[path] = value
    return out


def _unknown_hint(key: str, keys: list[str]) -> str:
    known = ", ".join(f"`{k}`" for k in keys)
    close = difflib.get_close_matches(key, keys, n=1)
    if close:
        return f"did you mean `{close[0]}`? known keys here: {known}"
    return f"known keys here: {known}"


def _check_values(values: dict[str, Any], findings: Findings) -> None:
    """The rules a schema does not express: required fields and the cross-field checks."""

    def bad(path: str, message: str, hint: str | None = None) -> None:
        findings.error(path, message, hint, key=True)

    for path in _REQUIRED:
        if not str(values.get(path, "")).strip():
            bad(path.rsplit(".", 1)[0] if "." in path else "", f"`{path}` is required")
    schema = values.get("schema")
    if schema is not None and schema != SCHEMA:
        bad("schema", f'unsupported schema "{schema}"', f"use `schema: {SCHEMA}`")
    _check_access(values, bad)
    mode = values.get("authorization.mode")
    role = values.get("authorization.requiredRole")
    if mode == "cluster-wide" and role:
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
    if values.get("network.privateCluster") and not values.get("network.instructions"):
        bad(
            "network",
            "`network.instructions` is required when `privateCluster` is true",
            "say how researchers reach the private API server (VPN, jump host)",
        )


def _check_access(values: dict[str, Any], bad: Any) -> None:
    method = values.get("access.method")
    has_aks = any(k.startswith("access.aks.") for k in values)
    if method == "kubeconfig" and has_aks:
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
