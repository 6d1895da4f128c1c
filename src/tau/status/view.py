"""What the human view of `tau run status` shows, as plain data: blocks of styled text. Pure.

The view is a column of blocks: text, text indented under a heading, the phase tree and
tables. This module decides their content (wording, order, markers, styles, truncation);
`tau.status.text` turns the blocks into rich renderables for any console, and
`tau.status.plain` lays them out itself for a console without colour, without importing rich.
Both read the same blocks, so the two can only differ in layout, which tests compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

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
_NO_WORKLOADS = "Kueue Workloads: (none — Kueue did not see this workload; check the queue label)"
#: Phases whose hint is shown under them.
_HINTED = (PhaseStatus.WARNING, PhaseStatus.ACTIVE, PhaseStatus.PENDING, PhaseStatus.DONE)

#: Styled text: (text, style) pieces, in order; "" is no style of its own. The first piece's
#: style is the whole paragraph's (rich's `Text(text, style=...)`), each later piece is
#: appended with its own.
Spans = tuple[tuple[str, str], ...]


class Text:
    """A paragraph (it may hold newlines), indented by `indent` cells (0: none)."""

    __slots__ = ("indent", "spans")

    def __init__(self, spans: Spans, indent: int = 0) -> None:
        self.spans = spans
        self.indent = indent


class Tree:
    """A root label and its nodes, each with the labels of its own children."""

    __slots__ = ("guide_style", "label", "nodes")

    def __init__(self, label: Spans, nodes: list[tuple[Spans, list[Spans]]]) -> None:
        self.label = label
        self.nodes = nodes
        self.guide_style = "dim"


class Table:
    """A titled table without borders; only the last column may wrap (folding long words)."""

    __slots__ = ("columns", "rows", "title")

    def __init__(
        self, title: str, columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]
    ) -> None:
        self.title = title
        self.columns = columns
        self.rows = rows


Block = Text | Tree | Table


def age(since: str | None, now: str) -> str:
    """Elapsed time in one truncated unit (``30s``, ``45m``, ``2h``, ``3d``), or ""."""
    return timefmt.age(since, now, missing="")


def blocks(status: RunStatus, *, run_profile: bool = False) -> list[Block]:
    """The whole view, top to bottom (with the Run profile section when asked)."""
    blank = Text((("", ""),))
    parts: list[Block] = [_header(status), blank, _phase_tree(status), blank]
    if status.kind is not None:
        parts += [_resources(status), blank, _workloads(status), blank, _pods(status.pods), blank]
        containers = _containers(status.pods)
        if containers is not None:
            parts += [containers, blank]
        if run_profile:
            parts += [*_profile(status), blank]
    return [*parts, *_attention(status), blank, *_next(status)]


def _header(status: RunStatus) -> Text:
    kind = status.kind or "Run"
    text = f"State: {status.state.value}"
    open_phase = status.first_open_phase
    if status.failure_reason:
        text += f" (failure: {status.failure_reason})"
    elif open_phase is not None and status.kind is not None:
        text += f" (first open phase: {open_phase.name.value})"
    return Text(((f"{kind} {status.namespace}/{status.name}\n", "bold"), (text, "")))


def _phase_tree(status: RunStatus) -> Tree:
    nodes: list[tuple[Spans, list[Spans]]] = []
    for phase in status.phases:
        marker, style = MARKERS[phase.status]
        line = [
            (f"{marker} ", style),
            (phase.name.value.ljust(_NAME_WIDTH), ""),
            (phase.detail, ""),
        ]
        shown = phase.status not in (PhaseStatus.PENDING, PhaseStatus.SKIPPED)
        elapsed = age(phase.started_at, status.observed_at) if shown else ""
        if elapsed:
            line.append((f" ({elapsed})", "dim"))
        hints: list[Spans] = []
        if phase.hint and phase.status in _HINTED:
            hints.append(((f"hint: {phase.hint}", "italic"),))
        nodes.append((tuple(line), hints))
    return Tree((("Progress", "bold"),), nodes)


def _workloads(status: RunStatus) -> Block:
    if not status.workloads:
        return Text(((_NO_WORKLOADS, ""),))
    rows = [
        (
            w.name,
            w.queue or "-",
            w.cluster_queue or "-",
            w.phase,
            "yes" if w.admitted else "no",
            w.reason or "-",
        )
        for w in status.workloads
    ]
    columns = ("NAME", "QUEUE", "CLUSTERQUEUE", "PHASE", "ADMITTED", "REASON")
    return Table("Kueue Workloads", columns, rows)


def _pods(pods: tuple[PodRow, ...]) -> Block:
    if not pods:
        return Text((("Pods: (none observed)", ""),))
    rows = [
        (p.name, p.phase, "yes" if p.ready else "no", str(p.restarts), p.node or "-")
        for p in pods[:MAX_ROWS]
    ]
    if len(pods) > MAX_ROWS:
        rows.append((f"+{len(pods) - MAX_ROWS} more", "", "", "", ""))
    return Table("Pods", ("NAME", "PHASE", "READY", "RESTARTS", "NODE"), rows)


def _containers(pods: tuple[PodRow, ...]) -> Table | None:
    found = [c for p in pods for c in p.containers]
    # Healthy containers of big runs add nothing; show problems first, then the rest.
    found.sort(key=lambda c: (c.reason in ("", "Completed") and c.exit_code in (None, 0),))
    if not found:
        return None
    rows = [
        (
            c.pod,
            f"{c.kind}/{c.name}",
            "yes" if c.ready else "no",
            str(c.restarts),
            "-" if c.exit_code is None else str(c.exit_code),
            f"{c.state} {c.reason}".strip(),
        )
        for c in found[:MAX_ROWS]
    ]
    if len(found) > MAX_ROWS:
        rows.append((f"+{len(found) - MAX_ROWS} more", "", "", "", "", ""))
    columns = ("POD", "CONTAINER", "READY", "RESTARTS", "EXIT", "STATE")
    return Table("Containers", columns, rows)


def _attention(status: RunStatus) -> list[Text]:
    parts = [Text((("Attention", "bold"),))]
    if not status.diagnostics:
        parts.append(Text((("No current issues.", ""),), 2))
    for d in status.diagnostics:
        spans = (
            (f"{d.severity.value}: ", _SEVERITY_STYLE[d.severity]),
            (f"{d.code} — {d.message}", ""),
        )
        parts.append(Text(spans, 2))
        parts.append(Text(((f"fix: {d.owner.value} — {d.suggestion}", "dim"),), 4))
    return parts


def _next(status: RunStatus) -> list[Text]:
    parts = [Text((("Next", "bold"),))]
    if not status.actions:
        parts.append(Text((("No action required.", ""),), 2))
    for a in status.actions:
        spans: Spans = ((f"{a.owner.value}: {a.description}", ""),)
        if a.command:
            spans += ((": ", ""), (a.command, "bold"))
        parts.append(Text(spans, 2))
    return parts


def _resources(status: RunStatus) -> Text:
    admitted = sum(1 for w in status.workloads if w.admitted or w.phase == "Finished")
    queues = ",".join(sorted({w.queue for w in status.workloads if w.queue})) or "-"
    ready = sum(1 for p in status.pods if p.ready)
    restarts = sum(p.restarts for p in status.pods)
    nodes = len({p.node for p in status.pods if p.node})
    kueue = f"{admitted}/{len(status.workloads)} workloads admitted (queue {queues})"
    return Text(
        (
            ("Resources\n", "bold"),
            (f"  Kueue: {kueue}\n", ""),
            (f"  Pods:  {ready}/{len(status.pods)} ready, {restarts} restarts, {nodes} nodes", ""),
        )
    )


def _profile(status: RunStatus) -> list[Text]:
    from tau.status.profile import lines

    return [
        Text((("Run profile", "bold"),)),
        *(Text(((f"  {line}", ""),)) for line in lines(status)),
    ]
