"""The value types `tau run status` produces: phases, rows, diagnostics, actions, RunStatus.

Pure. Everything here is frozen data; `interpret` builds it and `document`/`text` present it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tau.status.evidence_model import Offload, StoreEvidence


class PhaseStatus(enum.StrEnum):
    """How far one startup phase got (cli-contract 2.2)."""

    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    WARNING = "warning"
    SKIPPED = "skipped"


class State(enum.StrEnum):
    """The canonical run state of the RunStatus document (cli-contract 2.4)."""

    NOT_FOUND = "not_found"
    QUEUED = "queued"
    STARTING = "starting"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Owner(enum.StrEnum):
    """Who can fix a problem (cli-contract 5): tau names them, it does not fix for them."""

    RESEARCHER = "researcher"
    QUEUE_OWNER = "queue owner"
    PLATFORM = "platform"


class Severity(enum.StrEnum):
    """How loudly a diagnostic is shown: errors and warnings go to `Attention`."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Phase(enum.StrEnum):
    """Phase names, in the order the tree shows them; optional ones appear only when relevant."""

    SUBMITTED = "Submitted"
    KUEUE_ADMISSION = "Kueue admission"
    MULTIKUEUE_PLACEMENT = "MultiKueue placement"
    RAYCLUSTER = "RayCluster"
    POD_SCHEDULING = "Pod scheduling"
    DRA_ALLOCATION = "DRA allocation"
    IMAGE_PULL = "Image pull"
    INIT_CONTAINERS = "Init containers"
    CONTAINER_START = "Container start"
    READY = "Ready"
    RAYJOB_STATUS = "RayJob status"
    COMPUTE_RELEASE = "Compute release"
    #: Layer 7 of a run that offloads its metrics: what reached the experiment store.
    EVIDENCE = "Evidence"


#: The six phases that happen on pods; skipped together in a MultiKueue manager-only view.
POD_PHASES: tuple[Phase, ...] = (
    Phase.POD_SCHEDULING,
    Phase.DRA_ALLOCATION,
    Phase.IMAGE_PULL,
    Phase.INIT_CONTAINERS,
    Phase.CONTAINER_START,
    Phase.READY,
)


@dataclass(frozen=True)
class PhaseResult:
    """One row of the phase tree.

    Attributes:
        name: the phase.
        status: how far it got.
        detail: a short fact line, e.g. ``1/1 admitted queue=jobqueue``.
        hint: what the reader should do or know, or None.
        started_at: RFC 3339 time the phase began, when the objects tell.
    """

    name: Phase
    status: PhaseStatus
    detail: str
    hint: str | None = None
    started_at: str | None = None


@dataclass(frozen=True)
class WorkloadRow:
    """One Kueue Workload as the status shows it."""

    name: str
    queue: str
    cluster_queue: str
    phase: str
    admitted: bool
    reason: str
    message: str


@dataclass(frozen=True)
class ContainerRow:
    """One init or app container of a pod."""

    pod: str
    kind: str
    name: str
    state: str
    ready: bool
    restarts: int
    exit_code: int | None
    reason: str


@dataclass(frozen=True)
class PodRow:
    """One pod of the run."""

    name: str
    phase: str
    ready: bool
    restarts: int
    node: str
    containers: tuple[ContainerRow, ...]


@dataclass(frozen=True)
class Diagnostic:
    """A problem (or a caveat) worth the reader's attention, with a stable code.

    Attributes:
        code: stable identifier, e.g. ``QuotaPending``; scripts may match on it.
        severity: error, warning or info.
        owner: who can fix it.
        message: what was observed, naming the object.
        suggestion: what the owner should do.
    """

    code: str
    severity: Severity
    owner: Owner
    message: str
    suggestion: str


@dataclass(frozen=True)
class Action:
    """A next step for someone, with the command to run when there is one."""

    name: str
    owner: Owner
    description: str
    command: str | None = None


@dataclass(frozen=True)
class Evidence:
    """Where the run said its results go (tau records the place, it has not checked the bytes),
    and for a run that offloads its metrics, its sidecar and what its store held.
    """

    result_path: str | None
    result_pvc: str | None
    checkpoint_artifact: str | None
    offload: Offload | None = None
    store: StoreEvidence | None = None

    @property
    def verified(self) -> bool:
        """The store was read and holds the run's rows and a `succeeded` marker."""
        ev = self.store
        return ev is not None and not ev.error and ev.rows and ev.marker == "succeeded"


@dataclass(frozen=True)
class RunStatus:
    """The whole interpreted view of one run.

    Attributes:
        name: run (Job or RayJob) name.
        namespace: its namespace.
        kind: ``Job``, ``RayJob`` or None when nothing was found.
        state: canonical state.
        phases: the ordered phase tree.
        workloads: Kueue Workloads of the run.
        pods: pods of the run, sorted by name.
        diagnostics: what needs attention, most important first.
        actions: next steps, each naming its owner.
        evidence: result locations recorded on the workload, or None when not found.
        failure_reason: the failure classification when state is failed, else None.
        startup_failed: a startup phase failed in a way that will not heal by waiting.
        observed_at: the `now` the snapshot was interpreted at (RFC 3339).
    """

    name: str
    namespace: str
    kind: str | None
    state: State
    phases: tuple[PhaseResult, ...]
    workloads: tuple[WorkloadRow, ...]
    pods: tuple[PodRow, ...]
    diagnostics: tuple[Diagnostic, ...]
    actions: tuple[Action, ...]
    evidence: Evidence | None
    failure_reason: str | None
    startup_failed: bool
    observed_at: str

    @property
    def startup_complete(self) -> bool:
        """Every startup phase is done or skipped (the Evidence phase, layer 7 of a run that
        ended, is no part of its startup).
        """
        return all(
            p.status in (PhaseStatus.DONE, PhaseStatus.SKIPPED)
            for p in self.phases
            if p.name is not Phase.EVIDENCE
        )

    @property
    def first_open_phase(self) -> PhaseResult | None:
        """The first phase that is not done or skipped: the layer to investigate."""
        for phase in self.phases:
            if phase.status not in (PhaseStatus.DONE, PhaseStatus.SKIPPED):
                return phase
        return None
