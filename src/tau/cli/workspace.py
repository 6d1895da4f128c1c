"""`tau workspace`: TauWorkspace inspection and the repository's connection. Performs I/O.

The commands only parse flags, call `tau.connection` / `tau.kube` / `tau.workspaces`, print,
and return an exit code. `kubernetes` is imported inside the live commands only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

from cyclopts import App, Parameter

from tau.cli._common import ContextFlag, check_output
from tau.errors import ExitCode, UsageError

app = App(name="workspace", help="Inspect TauWorkspaces and this repository's connection.")

_TABLE_JSON = ("table", "json")


def _connect(context: str | None) -> Any:
    from tau.session import connect

    return connect(context, lookup=False)


def _system_namespace(session: Any, namespace: str | None) -> str:
    return namespace or session.system_namespace


@app.command(name="list")
def list_(
    *,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    context: ContextFlag = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "table",
) -> int:
    """List the TauWorkspaces of the cluster.

    Args:
        namespace: The system namespace holding TauWorkspaces (default: the descriptor's, else
            tau-system).
        output: table or json.
    """
    from tau.kube.workspaces import list_workspaces
    from tau.workspaces import report

    check_output(output, _TABLE_JSON)
    session = _connect(context)
    objs = list_workspaces(
        session.api, _system_namespace(session, namespace), context=session.context
    )
    print(report.list_json(objs) if output == "json" else report.list_text(objs))
    return int(ExitCode.OK)


def _fetch(name: str | None, namespace: str | None, context: str | None) -> tuple[Any, Any, Any]:
    from tau.kube.workspaces import get_workspace

    session = _connect(context)
    name = name or session.connection.workspace
    if not name:
        raise UsageError(
            "name a workspace: tau workspace status NAME", hint="see `tau workspace list`"
        )
    obj = get_workspace(
        session.api, name, _system_namespace(session, namespace), context=session.context
    )
    return session.connection, session.api, obj


@app.command
def status(
    name: str | None = None,
    *,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    context: ContextFlag = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "table",
) -> int:
    """Show one TauWorkspace: phase, namespace, queue, conditions.

    Args:
        name: Workspace name (default: the repository descriptor's workspace).
        namespace: The system namespace holding TauWorkspaces.
        output: table or json.
    """
    from tau.workspaces import report

    check_output(output, _TABLE_JSON)
    _, _, obj = _fetch(name, namespace, context)
    print(report.status_json(obj) if output == "json" else report.status_text(obj))
    return int(ExitCode.OK)


@app.command
def check(
    name: str | None = None,
    *,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    context: ContextFlag = None,
    data_pvc: str | None = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "table",
) -> int:
    """Exit non-zero unless the workspace is Ready and your identity holds the permissions its
    authorization mode requires (the checks `tau run` makes before it submits).

    Args:
        name: Workspace name (default: the repository descriptor's workspace).
        namespace: The system namespace holding TauWorkspaces.
        data_pvc: Also check that this PVC exists and is Bound in the workspace namespace (warning
            only).
        output: table or json.
    """
    from tau.kube.workspaces import get_pvc
    from tau.workspaces import permissions
    from tau.workspaces.readiness import not_ready_reason, readiness_hint, view

    check_output(output, _TABLE_JSON)
    conn, api, obj = _fetch(name, namespace, context)
    ws = view(obj)
    reason = not_ready_reason(ws)
    hint = readiness_hint(ws)
    if reason is None:
        # Ready for its subject is not usable by this caller: a Ready workspace whose role is
        # not bound to the caller would pass here and then refuse every `tau run`.
        try:
            permissions.check_workspace(api, ws, context=conn.context)
        except permissions.PermissionsMissing as exc:
            reason, hint = exc.message, exc.hint or ""
    warnings: list[str] = []
    pvc_phase = None
    if reason is None and data_pvc:
        pvc = get_pvc(api, data_pvc, ws.namespace, context=conn.context)
        pvc_phase = ((pvc or {}).get("status") or {}).get("phase") if pvc else None
        if pvc is None:
            warnings.append(
                f'PVC "{data_pvc}" not found in namespace "{ws.namespace}"; '
                "TauWorkspace readiness does not cover storage: ask your platform "
                "operator to create it"
            )
        elif pvc_phase != "Bound":
            warnings.append(
                f'PVC "{data_pvc}" in namespace "{ws.namespace}" is '
                f"{pvc_phase or 'not Bound'}, not Bound"
            )
    if output == "json":
        doc = {
            "workspace": ws.name,
            "ready": reason is None,
            "phase": ws.phase,
            "namespace": ws.namespace,
            "queue": ws.queue,
            "reason": reason,
            "warnings": warnings,
        }
        if data_pvc:
            doc["dataPVC"] = {"name": data_pvc, "phase": pvc_phase}
        print(json.dumps(doc, indent=2, sort_keys=True))
    elif reason is None:
        print(f'workspace "{ws.name}" is Ready (namespace={ws.namespace}, queue={ws.queue})')
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if reason is not None:
        print(f"error: {reason}\n  hint: {hint}", file=sys.stderr)
        return int(ExitCode.INVALID)
    return int(ExitCode.OK)


@app.command
def connection(
    path: Path | None = None,
    *,
    trust: bool = False,
    live: bool = False,
    context: ContextFlag = None,
    output: Annotated[str, Parameter(name=["--output", "-o"])] = "table",
) -> int:
    """Inspect tau/workspace.connection.yaml (offline unless --trust or --live).

    Args:
        path: The descriptor file, or a directory to discover it from (default: cwd).
        trust: Confirm this repository's connection without a prompt (for CI and scripts), writing
            the
            dedicated kubeconfig and the local trust record.
        live: Also activate the connection and read the workspace from the cluster.
        output: table, json or yaml.
    """
    from tau.connection.descriptor import Discovery, discover, find_repository_root, load
    from tau.connection.files import config_dir
    from tau.connection.state import load_state, state_path
    from tau.workspaces import connection_report

    check_output(output, ("table", "json", "yaml"))
    start = path or Path.cwd()
    if start.is_file():
        root = find_repository_root(start.parent) or start.parent.resolve()
        found: Discovery | None = Discovery(start.resolve(), root, load(start))
        start = start.parent
    else:
        found = discover(start)
    if found is None:
        raise UsageError(
            f"no tau/workspace.connection.yaml between {start} and the Git root",
            hint="ask your platform operator for the repository's descriptor",
        )
    # Offline too: a descriptor this tau is too old for fails at every submit, so it is not
    # "valid" here either.
    import tau
    from tau.connection import version

    version.check(found.descriptor.min_tau_version, tau.__version__, str(found.path))
    info = connection_report.offline(found, load_state(state_path(config_dir(), found)))
    if trust or live:
        from tau.session import connect

        session = connect(context, lookup=live, trust=trust, start=start)
        info = connection_report.connected(info, session.connection, session.target)
    print(connection_report.render(info, output, live=live), end="")
    return int(ExitCode.OK)
