"""Human output of `tau run status`: a phase tree, tables, `Attention` and `Next` sections.

Pure apart from writing to the `Console` it is given. Every string goes in as `rich.text.Text`
(never markup), so brackets in Kubernetes messages cannot be mistaken for styles, and output
to a fixed-width, colourless console is byte-for-byte deterministic.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from types import MappingProxyType

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tau.k8s import timefmt
from tau.status.model import PhaseStatus, PodRow, RunStatus, Severity

#: Text marker and style per phase status (cli-contract 2.2).
MARKERS: Mapping[PhaseStatus, tuple[str, str]] = MappingProxyType(
    {
        PhaseStatus.PENDING: ("[ ]", "dim"),
        PhaseStatus.ACTIVE: ("[>]", "cyan"),
        PhaseStatus.DONE: ("[x]", "green"),
        PhaseStatus.WARNING: ("[!]", "bold yellow"),
        PhaseStatus.SKIPPED: ("[-]", "dim"),
    }
)
_SEVERITY_STYLE = MappingProxyType(
    {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "blue"}
)
#: Rows shown per table before a "+N more" line; a 1,000-pod run must stay readable.
MAX_ROWS = 20
_NAME_WIDTH = 21


def age(since: str | None, now: str) -> str:
    """Elapsed time in one truncated unit (``30s``, ``45m``, ``2h``, ``3d``), or ""."""
    return timefmt.age(since, now, missing="")


def _header(status: RunStatus) -> Text:
    kind = status.kind or "Run"
    text = Text(f"{kind} {status.namespace}/{status.name}\n", style="bold")
    text.append(f"State: {status.state.value}")
    open_phase = status.first_open_phase
    if status.failure_reason:
        text.append(f" (failure: {status.failure_reason})")
    elif open_phase is not None and status.kind is not None:
        text.append(f" (first open phase: {open_phase.name.value})")
    return text


def _phase_tree(status: RunStatus) -> Tree:
    tree = Tree(Text("Progress", style="bold"), guide_style="dim")
    for phase in status.phases:
        marker, style = MARKERS[phase.status]
        line = Text(f"{marker} ", style=style)
        line.append(phase.name.value.ljust(_NAME_WIDTH))
        line.append(phase.detail)
        shown = phase.status not in (PhaseStatus.PENDING, PhaseStatus.SKIPPED)
        elapsed = age(phase.started_at, status.observed_at) if shown else ""
        if elapsed:
            line.append(f" ({elapsed})", style="dim")
        node = tree.add(line)
        if phase.hint and phase.status in (
            PhaseStatus.WARNING,
            PhaseStatus.ACTIVE,
            PhaseStatus.PENDING,
            PhaseStatus.DONE,
        ):
            node.add(Text(f"hint: {phase.hint}", style="italic"))
    return tree


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(
        title=Text(title, style="bold"),
        title_justify="left",
        box=None,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
    )
    for index, column in enumerate(columns):
        # Names stay whole (they get copied into commands); only the last, free-text column folds.
        table.add_column(column, no_wrap=index < len(columns) - 1, overflow="fold")
    return table


def _workloads(status: RunStatus) -> RenderableType:
    if not status.workloads:
        return Text(
            "Kueue Workloads: (none — Kueue did not see this workload; check the queue label)"
        )
    table = _table(
        "Kueue Workloads", ("NAME", "QUEUE", "CLUSTERQUEUE", "PHASE", "ADMITTED", "REASON")
    )
    for w in status.workloads:
        table.add_row(
            w.name,
            w.queue or "-",
            w.cluster_queue or "-",
            w.phase,
            "yes" if w.admitted else "no",
            w.reason or "-",
        )
    return table


def _pods(pods: tuple[PodRow, ...]) -> RenderableType:
    if not pods:
        return Text("Pods: (none observed)")
    table = _table("Pods", ("NAME", "PHASE", "READY", "RESTARTS", "NODE"))
    for p in pods[:MAX_ROWS]:
        table.add_row(p.name, p.phase, "yes" if p.ready else "no", str(p.restarts), p.node or "-")
    if len(pods) > MAX_ROWS:
        table.add_row(f"+{len(pods) - MAX_ROWS} more", "", "", "", "")
    return table


def _containers(pods: tuple[PodRow, ...]) -> RenderableType | None:
    rows = [c for p in pods for c in p.containers]
    # Healthy containers of big runs add nothing; show problems first, then the rest.
    rows.sort(key=lambda c: (c.reason in ("", "Completed") and c.exit_code in (None, 0),))
    if not rows:
        return None
    table = _table("Containers", ("POD", "CONTAINER", "READY", "RESTARTS", "EXIT", "STATE"))
    for c in rows[:MAX_ROWS]:
        table.add_row(
            c.pod,
            f"{c.kind}/{c.name}",
            "yes" if c.ready else "no",
            str(c.restarts),
            "-" if c.exit_code is None else str(c.exit_code),
            f"{c.state} {c.reason}".strip(),
        )
    if len(rows) > MAX_ROWS:
        table.add_row(f"+{len(rows) - MAX_ROWS} more", "", "", "", "", "")
    return table


def _indented(text: Text, level: int) -> Padding:
    # Padding (not leading spaces) keeps wrapped continuation lines under their first line.
    return Padding(text, (0, 0, 0, level))


def _attention(status: RunStatus) -> Group:
    parts: list[RenderableType] = [Text("Attention", style="bold")]
    if not status.diagnostics:
        parts.append(_indented(Text("No current issues."), 2))
    for d in status.diagnostics:
        line = Text(f"{d.severity.value}: ", style=_SEVERITY_STYLE[d.severity])
        line.append(f"{d.code} — {d.message}")
        parts.append(_indented(line, 2))
        parts.append(_indented(Text(f"fix: {d.owner.value} — {d.suggestion}", style="dim"), 4))
    return Group(*parts)


def _next(status: RunStatus) -> Group:
    parts: list[RenderableType] = [Text("Next", style="bold")]
    if not status.actions:
        parts.append(_indented(Text("No action required."), 2))
    for a in status.actions:
        line = Text(f"{a.owner.value}: {a.description}")
        if a.command:
            line.append(": ")
            line.append(a.command, style="bold")
        parts.append(_indented(line, 2))
    return Group(*parts)


def _resources(status: RunStatus) -> Text:
    admitted = sum(1 for w in status.workloads if w.admitted or w.phase == "Finished")
    queues = ",".join(sorted({w.queue for w in status.workloads if w.queue})) or "-"
    ready = sum(1 for p in status.pods if p.ready)
    restarts = sum(p.restarts for p in status.pods)
    nodes = len({p.node for p in status.pods if p.node})
    text = Text("Resources\n", style="bold")
    text.append(
        f"  Kueue: {admitted}/{len(status.workloads)} workloads admitted (queue {queues})\n"
    )
    text.append(f"  Pods:  {ready}/{len(status.pods)} ready, {restarts} restarts, {nodes} nodes")
    return text


def _profile(status: RunStatus) -> Group:
    from tau.status.profile import lines

    return Group(Text("Run profile", style="bold"), *(Text(f"  {line}") for line in lines(status)))


def renderable(status: RunStatus, *, run_profile: bool = False) -> Group:
    """The whole view as one rich renderable (with the Run profile section when asked)."""
    parts: list[RenderableType] = [_header(status), Text(""), _phase_tree(status), Text("")]
    if status.kind is not None:
        parts.extend(
            (
                _resources(status),
                Text(""),
                _workloads(status),
                Text(""),
                _pods(status.pods),
                Text(""),
            )
        )
        containers = _containers(status.pods)
        if containers is not None:
            parts.extend((containers, Text("")))
        if run_profile:
            parts.extend((_profile(status), Text("")))
    parts.extend((_attention(status), Text(""), _next(status)))
    return Group(*parts)


def render(status: RunStatus, console: Console, *, run_profile: bool = False) -> None:
    """Print the view to `console` (the CLI's, or a recording one in tests)."""
    console.print(renderable(status, run_profile=run_profile))


def to_text(status: RunStatus, width: int = 100, *, run_profile: bool = False) -> str:
    """The view as plain text for a fixed-width, colourless console (tests, snapshots)."""
    console = Console(
        width=width,
        record=True,
        color_system=None,
        file=io.StringIO(),
        force_terminal=False,
        legacy_windows=False,
    )
    render(status, console, run_profile=run_profile)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"
