"""Layer 7 of an offloading run: the Evidence phase and the diagnostics naming the missing piece.

Pure. "Completed is not evidence preserved": for a run that offloads its metrics, the phase tree
ends with an Evidence phase, done when the store holds the run's rows and a `succeeded`
terminal marker, else a warning naming the first missing piece and who owns it (the offload
not wired, the store unreadable, no rows, no marker, a marker that failed). The store was read
by `tau.cli.evidence_read` into `Snapshot.store_evidence`; nothing here reads anything.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator

from tau.status.facts import Facts
from tau.status.model import Phase, PhaseResult, PhaseStatus
from tau.status.offload import (
    Offload,
    StoreEvidence,
    marker_phrase,
    metrics_phrase,
    offload_of,
    summary,
)
from tau.status.state import terminal_state

P = PhaseStatus

NOT_WIRED_SIDECAR = "the pod template has no metrics-offload sidecar"
NOT_WIRED_STORE = "the metrics-offload sidecar names no store (TAU_EXP_STORE)"


def offload(f: Facts) -> Offload | None:
    """The run's offload sidecar, None when the run does not offload."""
    return offload_of(f.primary)


def _not_wired(o: Offload) -> str:
    return "" if o.sidecar and o.store else NOT_WIRED_SIDECAR if not o.sidecar else NOT_WIRED_STORE


def _piece(f: Facts, o: Offload) -> tuple[str, str] | None:
    """(code, message) of the first missing piece; None when the evidence landed whole or the
    store was not read.
    """
    wiring = _not_wired(o)
    if wiring:
        return "OffloadNotWired", f"offload not wired: {wiring}; no evidence reaches a store"
    ev = f.snapshot.store_evidence
    if ev is None:
        return None
    if ev.error:
        return "EvidenceUnreachable", f"store {ev.store} could not be read: {ev.error}"
    if not ev.rows:
        marker = f"; {marker_phrase(ev)}" if ev.marker else ""
        return "EvidenceNoRows", f"no training metric rows of run {ev.run_id} in {ev.store}{marker}"
    if not ev.marker:
        return (
            "EvidenceNoMarker",
            f"{metrics_phrase(ev.metrics)} in {ev.store}, but no terminal tau/run_status marker",
        )
    if ev.marker != "succeeded":
        return "EvidenceMarkerFailed", f"evidence: {summary(ev)}"
    return None


def phase(f: Facts) -> PhaseResult | None:
    """The Evidence phase of an offloading run that ended (None for a run that does not
    offload, or still runs: the phase tree of a running run stays its startup's, and a watch
    still stops once startup completes; an offload that is not wired is said in Attention).
    """
    o = offload(f)
    if o is None or terminal_state(f) is None:
        return None
    piece = _piece(f, o)
    if piece is not None:
        return PhaseResult(Phase.EVIDENCE, P.WARNING, piece[1], f"layer 7: {HINTS[piece[0]]}")
    ev = f.snapshot.store_evidence
    if ev is None:
        # A view that did not read the store (a --watch frame, the portal's boards) claims
        # nothing about it.
        return None
    return PhaseResult(Phase.EVIDENCE, P.DONE, summary(ev))


def findings(f: Facts) -> Iterator[tuple[str, str]]:
    """The layer-7 diagnostics of an offloading run (none for a run that does not offload):
    the missing piece, or `EvidenceLanded` with what landed.
    """
    o = offload(f)
    if o is None:
        return
    piece = _piece(f, o)
    if piece is not None and (piece[0] == "OffloadNotWired" or terminal_state(f) is not None):
        yield piece
        return
    ev = f.snapshot.store_evidence
    if piece is None and ev is not None and terminal_state(f) is not None:
        yield "EvidenceLanded", f"evidence: {summary(ev)}"


def evidence_command(ev: StoreEvidence | None) -> str | None:
    """The portal command that shows the run's record in its store."""
    if ev is None:
        return None
    return (
        f"taugrid-portal experiment status {shlex.quote(ev.run_id)} --store {shlex.quote(ev.store)}"
    )


#: Who owns each missing piece, said in the phase's hint (the diagnostics say it at length).
HINTS = {
    "OffloadNotWired": "the platform names the experiment store (TauWorkspace "
    "spec.experiments.store); the render wires the sidecar to it",
    "EvidenceUnreachable": "status reads the store with your own credentials; check them, or "
    "ask the platform team whether the store is up",
    "EvidenceNoRows": "the training code logs nothing (tau.log) or the collector did not "
    "deliver: read the metrics-offload container's log",
    "EvidenceNoMarker": "the collector stopped before it wrote the terminal marker: read the "
    "metrics-offload container's log",
    "EvidenceMarkerFailed": "the marker records how the workload ended: read the logs",
}
