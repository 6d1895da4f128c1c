"""`tau python doctor`: can this machine submit `tau python` workloads, and if not, why.

Performs I/O (the kubeconfig, the TauWorkspace, SelfSubjectAccessReviews). The reference
checked that a separate tau binary matched the SDK and that kubectl could create Jobs. Here the
SDK and the CLI are one package, so the version check always holds; what can go wrong is the
cluster: the connection `tau run` would use, the workspace it would submit to, and the
permissions submit itself needs (RayJobs, Jobs, the run's Secret, then watching and deleting
the RayJobs of a chain). Each line says ok or fail, and what to do about a failure.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from tau.errors import ClusterError, ExitCode, TauError
from tau.kube.access import Permission

PREFIX = "tau python doctor"
PORTAL = "taugrid-portal"
PORTAL_ENV = "TAUGRID_PORTAL_BINARY"
FIX_RBAC = (
    "ask your platform operator to grant it in this namespace (the workspace role bound to "
    "your identity), then run `tau workspace check`"
)


def submit_permissions(namespace: str) -> list[Permission]:
    """What `tau python submit` does in `namespace`, as RBAC checks."""
    rayjobs = ("rayjobs", "ray.io")
    return [
        Permission("create", *rayjobs, namespace=namespace),
        Permission("create", "jobs", "batch", namespace=namespace),
        Permission("create", "secrets", namespace=namespace),
        Permission("get", *rayjobs, namespace=namespace),
        Permission("watch", *rayjobs, namespace=namespace),
        Permission("delete", *rayjobs, namespace=namespace),
    ]


def find_portal(env: Mapping[str, str] | None = None) -> tuple[Path | None, str]:
    """The taugrid-portal binary and where it was found, or (None, why not).

    Order: $TAUGRID_PORTAL_BINARY, the one installed beside this Python, then PATH.
    """
    env = os.environ if env is None else env
    named = env.get(PORTAL_ENV, "")
    if named:
        path = Path(named)
        return (path, "") if path.is_file() else (None, f"{PORTAL_ENV}={named} does not exist")
    beside = Path(sys.executable).parent / PORTAL
    if beside.is_file():
        return beside, ""
    found = shutil.which(PORTAL)
    return (Path(found), "") if found else (None, f"{PORTAL} not found")


class _Report:
    """The doctor's lines: ok and advisories to `out`, failures (with their fix) to `err`."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self.failed = False

    def info(self, text: str) -> None:
        self.out.write(f"{PREFIX}: {text}\n")

    def ok(self, what: str) -> None:
        self.info(f"{what}: ok")

    def fail(self, what: str, fix: str | None) -> None:
        self.failed = True
        self.err.write(f"{PREFIX}: {what}: fail\n")
        if fix:
            self.err.write(f"{PREFIX}:   hint: {fix}\n")


def run(*, namespace: str | None, context: str | None, out: TextIO, err: TextIO) -> int:
    """Check everything submit needs and return the exit code: 0 all ok, 1 a check failed or
    the connection or workspace cannot be used, 3 the cluster cannot be reached.
    """
    import tau

    report = _Report(out, err)
    report.info(f"Tau Python SDK {tau.__version__}")
    report.info(f"python {platform.python_version()} ({sys.executable})")
    # The reference compared a separate CLI's version with the SDK's: here they are one package.
    report.info(f"tau {tau.__version__} (same package: ok)")
    portal, why = find_portal()
    if portal is not None:
        report.info(f"{PORTAL} ({portal})")
    else:
        report.info(
            f"{why} (advisory: `{PORTAL} experiment` and the portal need it); reinstall tau, "
            f"which ships it, or set {PORTAL_ENV}=/path/to/{PORTAL}"
        )
    try:
        return _cluster_checks(report, namespace, context)
    except ClusterError as exc:
        report.fail(f"cluster: {exc.message}", exc.hint)
        return int(ExitCode.CLUSTER)


def _cluster_checks(report: _Report, namespace: str | None, context: str | None) -> int:
    from tau.connection.activate import require_explicit_outside_repo
    from tau.kube.access import allowed
    from tau.session import connect, context_name

    try:
        require_explicit_outside_repo(Path.cwd(), context_name(context), namespace, os.environ)
        session = connect(context, namespace, lookup=False)
    except ClusterError:
        raise
    except TauError as exc:
        report.fail(
            f"connection: {exc.message}",
            exc.hint
            or "run it from the repository whose tau/workspace.connection.yaml names your "
            "workspace, or pass --context and -n",
        )
        return int(ExitCode.INVALID)
    # Building the client reads the kubeconfig and its credentials; the cluster is first asked
    # below, and a failure there is the `cluster:` line.
    report.ok(f'kubeconfig context "{session.context}" ({session.connection.source})')
    resolved = _workspace_checks(report, session, namespace)
    if resolved is None:
        return int(ExitCode.INVALID)
    for permission in submit_permissions(resolved):
        what = f'{permission.describe()} in namespace "{resolved}"'
        if allowed(session.api, permission, context=session.context):
            report.ok(what)
        else:
            report.fail(what, FIX_RBAC)
    if report.failed:
        return int(ExitCode.INVALID)
    report.info("ok")
    return int(ExitCode.OK)


def _workspace_checks(report: _Report, session: Any, namespace: str | None) -> str | None:
    """The namespace submit would use, after the checks `tau workspace check` makes on its
    workspace (Ready, and the caller's permissions for its authorization mode); None (with a
    fail line) when they do not pass.
    """
    from tau.kube.workspaces import get_workspace
    from tau.workspaces import permissions
    from tau.workspaces.readiness import view

    fix = "run `tau workspace check` for the details, or pass -n/--namespace"
    try:
        target = session.resolve(namespace).target
    except ClusterError:
        raise
    except TauError as exc:
        report.fail(f"workspace: {exc.message}", exc.hint or fix)
        return None
    if target.workspace is None:
        report.ok(f'namespace "{target.namespace}" (no workspace: --namespace)')
        return str(target.namespace)
    report.ok(
        f'workspace "{target.workspace}" Ready (namespace={target.namespace}, queue={target.queue})'
    )
    ws = view(
        get_workspace(
            session.api, target.workspace, session.system_namespace, context=session.context
        )
    )
    what = f'workspace "{ws.name}" permissions ({ws.authorization_mode})'
    try:
        permissions.check_workspace(session.api, ws, context=session.context)
    except permissions.PermissionsMissing as exc:
        report.fail(f"{what}: {exc.message}", exc.hint)
    else:
        report.ok(what)
    return str(target.namespace)
