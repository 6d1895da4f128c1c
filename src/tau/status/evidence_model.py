"""What status knows of an offloading run's sidecar and of what its store held. Pure data.

A leaf of `tau.status`: the snapshot and the model carry these values, `tau.status.offload`
finds and words them, and `tau.cli.evidence_read` fills `StoreEvidence` from the store.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Metrics the collector records about the pod itself, not the training loop's.
SYSTEM_PREFIX = "system/"


@dataclass(frozen=True)
class Offload:
    """An offloading run's sidecar, as rendered.

    Attributes:
        session_id: the metrics session id annotation.
        run_id: the run id in the store (the sidecar's `--run`; else the run's name).
        store: the store the sidecar delivers to ("" when it names none).
        sidecar: whether the pod template has the `metrics-offload` container at all.
    """

    session_id: str
    run_id: str
    store: str
    sidecar: bool


@dataclass(frozen=True)
class StoreEvidence:
    """What the store held for the run when status read it.

    Attributes:
        store: the store read (a folder path or a team store URL; never holds a secret).
        run_id: the run looked up.
        error: one line when the store could not be read; the rest is then empty.
        metrics: (metric name, rows) of each metric of the run, the marker left out.
        marker: the terminal marker's state (succeeded, failed, cancelled), "" when none.
        reason: the marker's reason tag.
        message: the marker's message tag.
        checkpoint_uri: the marker's checkpoint URI tag.
        artifact_uri: the marker's artifact URI tag.
        attempt: the attempt the marker was written by (0 = the first), None when untold.
    """

    store: str
    run_id: str
    error: str = ""
    metrics: tuple[tuple[str, int], ...] = ()
    marker: str = ""
    reason: str = ""
    message: str = ""
    checkpoint_uri: str = ""
    artifact_uri: str = ""
    attempt: int | None = None

    @property
    def rows(self) -> bool:
        """Some row the training code logged landed (not only the marker, nor only the
        collector's own system/... metrics of the pod).
        """
        return any(count for name, count in self.metrics if not name.startswith(SYSTEM_PREFIX))
