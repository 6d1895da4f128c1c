"""Read what a finished, offloading run left in its experiment store (layer 7 of status).

It lives with the CLI, above both `status` and `portal`: status interprets what it is given
(`Snapshot.store_evidence`) and never imports the store; the commands that print a status hand
this reader in (`tau run status`, and `--watch` for its last frame).

Performs I/O: opens the folder store or the team store the run's sidecar delivered to, through
the portal's opener (imported here, lazily: a run that does not offload never reaches this
module, so `tau run status` of it loads no store code, no psycopg, no pyarrow). Two index
reads, no metric file: the per-metric row counts come from the store's metric summaries, the
marker's state from the `tau/run_status` summary and its reason, message and URIs from the run
tags the collector sets with it. A store that cannot be read is one line in the evidence, never
a failed status: the cluster's half of the view is still true.
"""

from __future__ import annotations

from collections.abc import Mapping

from tau.status import offload as o
from tau.status.offload import Offload, StoreEvidence
from tau.status.snapshot import Snapshot


def _line(exc: BaseException) -> str:
    """The error as one line: its message (a TauError's own), else its type and text."""
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    first = text[0] if text else ""
    return first if getattr(exc, "message", "") else f"{type(exc).__name__}: {first}".rstrip(": ")


def _attempt(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() else None


def read(offload: Offload, env: Mapping[str, str] | None = None) -> StoreEvidence:
    """What the store named by `offload` holds for its run; `error` set when unreadable.

    A team store is reached with the reader's own credentials (PGPASSWORD or ~/.pgpass, the
    AWS variables of this process), as every portal command reaches it; `env` only stands in
    for the environment where the store is chosen (the offload always names it).
    """
    run, where = offload.run_id, o.shown(offload.store)
    try:
        from tau.portal.store import read as reads
        from tau.portal.store.opener import open_store

        store = open_store(offload.store, env)
    except Exception as exc:  # any failure to open is one line, not a failed status
        return StoreEvidence(where, run, error=_line(exc).replace(offload.store, where))
    try:
        summaries = reads.metric_summaries(store, run_ids=[run])
        tags = reads.run_tags(store, [run]).get(run, {})
    except Exception as exc:  # a damaged index or a dropped connection: the same one line
        return StoreEvidence(where, run, error=_line(exc).replace(offload.store, where))
    finally:
        store.close()
    marker = next((s for s in summaries if s.metric_name == o.MARKER_METRIC), None)
    # The run tags are the last attempt's marker (the collector replaces them); the marker
    # metric's summary says the same when the tags are missing.
    state = str(tags.get(o.STATE_TAG) or "") if marker is not None else ""
    if not state and marker is not None and marker.latest_value is not None:
        state = o.MARKER_STATES.get(float(marker.latest_value), "")
    return StoreEvidence(
        store=where,
        run_id=run,
        metrics=tuple(
            (s.metric_name, int(s.count or 0))
            for s in summaries
            if s.metric_name != o.MARKER_METRIC
        ),
        marker=state,
        reason=str(tags.get(o.REASON_TAG) or "") if state else "",
        message=str(tags.get(o.MESSAGE_TAG) or "") if state else "",
        checkpoint_uri=str(tags.get(o.CHECKPOINT_TAG) or "") if state else "",
        artifact_uri=str(tags.get(o.ARTIFACT_TAG) or "") if state else "",
        attempt=_attempt(tags.get(o.ATTEMPT_TAG)) if state else None,
    )


def attach(snapshot: Snapshot, offload: Offload, env: Mapping[str, str] | None = None) -> Snapshot:
    """The snapshot with what the run's store holds (`Snapshot.store_evidence`)."""
    from dataclasses import replace

    return replace(snapshot, store_evidence=read(offload, env))
