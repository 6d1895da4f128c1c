"""The read-only lifecycle verbs (`tau run status|list|get|logs`), without the CLI framework.

Performs I/O (terminal, cluster). The bodies of these commands live here, cyclopts-free, so
that both the full app (tau.cli.run, which parses every flag) and the hot path
(tau.cli.fast_reads, which parses the common lines by hand) run the very same steps: a status
read is a few requests, and building the cyclopts app would cost more than all of them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from tau.runs.logs import LogOptions


class Connected(NamedTuple):
    """A verb's connection to its run's cluster."""

    api: Any
    namespace: str
    #: Where the cluster's TauWorkspaces live (the descriptor's `cluster.systemNamespace`):
    #: where the kept-logs readers find the workspace's experiment store.
    system_namespace: str


#: What connects a verb to its run's cluster.
Connect = Callable[[], Connected]


@dataclass(frozen=True)
class Place:
    """Where a run lives, as the lifecycle flags say it (--namespace, --workspace, --context,
    --project); None leaves each to the workspace connection.
    """

    namespace: str | None = None
    workspace: str | None = None
    context: str | None = None
    project: str | None = None

    def connect(self) -> Connected:
        """(client, namespace) of the run's cluster, through the project the working directory
        (or --project) selects in a monorepo.

        A connection made from local files alone is remembered until one of them changes
        (`tau.connection.memo`); then the next read skips parsing them.
        """
        import os

        from tau.connection import memo

        if self.project is not None:
            return self._connect()
        memo_key = memo.key((self.namespace, self.workspace, self.context), os.environ)
        hit = memo.recall(memo_key, os.environ)
        if hit is not None:
            from tau.kube.direct import DirectClient

            return Connected(DirectClient(hit[0], hit[1]), hit[2], hit[3])
        return self._connect(memo_key, time.time_ns())

    def _connect(self, memo_key: dict[str, Any] | None = None, started: int = 0) -> Connected:
        from tau.intent.gitroot import catalog_file
        from tau.session import connect, context_name

        explicit = context_name(self.context) is not None
        project = None
        # Without --project, an explicit context or a repository without a catalog chooses no
        # project (tau.intent.projects.for_lifecycle): then the catalog code is not loaded.
        if self.project is not None or not (explicit or catalog_file(Path.cwd()) is None):
            from tau.intent.projects import for_lifecycle

            project = for_lifecycle(self.project, Path.cwd(), explicit_context=explicit)
        session = connect(
            self.context,
            self.namespace,
            self.workspace or (project.workspace if project else None),
            start=project.root if project else None,
            descriptor_file=project.connection if project else None,
        )
        if memo_key is not None and project is None:
            _remember(memo_key, session, started)
        return Connected(session.api, session.namespace, session.system_namespace)


def _remember(memo_key: dict[str, Any], session: Any, started: int) -> None:
    """Record a connection that asked the cluster nothing (`tau.connection.memo`)."""
    import os

    from tau.connection import memo
    from tau.workspaces.verify import trusted_during

    api, connection = session.api, session.connection
    if getattr(api, "sent", None) != 0:
        return  # the official client (exec credentials), or the cluster was asked
    fresh = None
    if connection.state is not None and connection.state.verified_at:
        fresh = trusted_during(connection.state.verified_at)
        if fresh is None:
            return
    cluster, user = api.entries
    memo.remember(
        memo_key,
        os.environ,
        started_ns=started,
        files=memo.inputs(connection, cluster, os.environ, Path.cwd()),
        fresh=fresh,
        entries=(cluster, user),
        namespace=session.namespace,
        system_namespace=session.system_namespace,
    )


def status(connect: Connect, name: str, *, fmt: str, run_profile: bool = False) -> int:
    """Print one status snapshot; 1 when the run failed or is not found, else 0."""
    from datetime import UTC, datetime

    from tau.status import fetch, interpret
    from tau.status.model import State
    from tau.status.offload import store_to_read

    api, ns, _ = connect()
    snapshot = fetch.fetch(api, ns, name)
    offload = store_to_read(snapshot)
    if offload is not None:
        # Only a finished run that offloads its metrics reads its experiment store (layer 7);
        # every other status loads no store code at all.
        from tau.cli import evidence_read

        snapshot = evidence_read.attach(snapshot, offload)
    run_status = interpret.interpret(snapshot, datetime.now(UTC))
    if fmt == "json":
        from tau.status import document

        sys.stdout.write(document.to_json(run_status, run_profile=run_profile))
    else:
        _print_view(run_status, run_profile=run_profile)
    return 1 if run_status.state in (State.FAILED, State.NOT_FOUND) else 0


def _print_view(run_status: Any, *, run_profile: bool) -> None:
    """The human view, laid out without rich where no colour would show (`tau.status.plain`)."""
    import os

    from tau.status import plain

    width = plain.colourless_width(sys.stdout, os.environ)
    shown = plain.render(run_status, width, run_profile=run_profile) if width else None
    if shown is not None:
        sys.stdout.write(shown)
        sys.stdout.flush()
        return
    from rich.console import Console

    from tau.status import text

    text.render(run_status, Console(), run_profile=run_profile)


def runs(
    connect: Connect,
    *,
    fmt: str,
    queue: str | None = None,
    include_external: bool = False,
    history_limit: int = 200,
) -> int:
    """Print the namespace's runs, newest first."""
    from datetime import UTC, datetime

    from tau.runs import listing

    api, ns, _ = connect()
    found = listing.fetch_runs(api, ns, datetime.now(UTC), include_external=include_external)
    if queue:
        found = [r for r in found if r.queue == queue]
    found, note = listing.limit(found, history_limit)
    if fmt == "json":
        sys.stdout.write(listing.as_json(found, ns, diagnostic=note))
        return 0
    sys.stdout.write(listing.table(found, ns, include_external=include_external))
    if note:
        print(note, file=sys.stderr)
    return 0


def results(connect: Connect, name: str, *, fmt: str, artifact: str | None = None) -> int:
    """Print a run's durable results (or the bytes of one --artifact with -o raw)."""
    from tau.runs import results as run_results

    api, ns, _ = connect()
    found = run_results.get(api, ns, name, artifact=artifact)
    if isinstance(found, bytes):
        sys.stdout.buffer.write(found)
        sys.stdout.flush()
    else:
        sys.stdout.write(found.table() if fmt == "table" else found.as_json())
    return 0


def logs(connect: Connect, name: str, opts: LogOptions) -> int:
    """Print (or follow) a run's logs."""
    from tau.runs import logs as run_logs

    opts.check()
    api, ns, system = connect()
    for chunk in run_logs.stream(api, ns, name, opts, system_namespace=system):
        sys.stdout.write(chunk)
        sys.stdout.flush()
    return 0
