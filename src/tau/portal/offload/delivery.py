"""Deliver a slice of the spool into the store as one metric file, idempotently.

Performs I/O (the folder store or the team store). A delivery's file id is a function of
(run, session, attempt, sequence number) only, and the checkpoint fixes the spool range of each
sequence number before the store is written (see `checkpoint`), so delivering again after a
crash finds the file already recorded and changes nothing: no row is ever stored twice.

One delivery, in one store transaction (the folder store's writer, or PostgreSQL's):
the metric file (Parquet, contract §3.4 rows), the experiment and run group when new, the run
(created `running` with the project, experiment and group, as `import jsonl` creates it; an
existing run keeps what it holds), the run's tags, the metric file's row and the merged
summaries; with the terminal marker, the run's state, completion time and `tau.status.*` tags.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.portal.capture.record import RANK
from tau.portal.store import schema
from tau.portal.store.metrics import rows_table, summarize, write_parquet
from tau.portal.store.write import ensure_experiment, ensure_group, put_run, record_metric_file

if TYPE_CHECKING:
    import pyarrow as pa

OWNER = "metrics-offload"
#: The reason of the marker a SIGTERM before the sentinel writes.
SHUTDOWN_REASON = "sidecar-shutdown"
#: What an existing run keeps when the collector delivers to it.
_IDENTITY = (
    "project",
    "experiment_id",
    "run_group_id",
    "owner",
    "state",
    "created_at",
    "started_at",
    "completed_at",
)
PREFIX = "offload"


@dataclass(frozen=True)
class Identity:
    """Where the rows belong: the run and its project, experiment and group."""

    run: str
    project: str
    experiment: str
    group: str
    source: str
    session: str
    #: Run tags written with every delivery (`--tag`, the source, the session).
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Terminal:
    """The marker's effect on the run: its state, completion time and status tags."""

    state: str
    completed_at: str
    tags: Mapping[str, str]


def file_id(run: str, session: str, attempt: str, seq: int) -> str:
    digest = hashlib.sha256(f"{run}\0{session}\0{attempt}\0{seq}".encode()).hexdigest()
    return f"{PREFIX}-{run}-{digest[:12]}"


def deliver(
    store: Any,
    who: Identity,
    rows: Sequence[Mapping[str, Any]] | pa.Table,
    *,
    seq: int,
    attempt: str,
    terminal: Terminal | None = None,
    scratch: Path,
) -> bool:
    """Write `rows` as delivery `seq`; False when the store already holds it (re-delivery)."""
    fid = file_id(who.run, who.session, attempt, seq)
    experiment = who.experiment or store.experiment_id or who.group
    rel = (
        f"{schema.METRICS}/project={who.project}/experiment={experiment}"
        f"/group={who.group}/run={who.run}/{fid}.parquet"
    )
    table = rows if not isinstance(rows, Sequence) else rows_table(list(rows))
    if _is_team(store):
        return _deliver_team(store, who, table, fid, rel, experiment, terminal, scratch)
    return _deliver_folder(store, who, table, fid, rel, experiment, terminal)


def _is_team(store: Any) -> bool:
    from tau.portal.store.core import Store as FolderStore

    return not isinstance(store, FolderStore)


def _deliver_folder(
    store: Any,
    who: Identity,
    table: Any,
    fid: str,
    rel: str,
    experiment: str,
    terminal: Terminal | None,
) -> bool:
    with store.writer() as w:
        if w.get("metric_files", {"file_id": fid}) is not None:
            return False
        final = store.root / rel
        tmp = w.tmp_path(f"{fid}.parquet", target=final)
        digest = write_parquet(table, tmp) if table.num_rows else None
        if digest is not None:
            w.publish(tmp, final)
        _records(w, store, who, table, fid, rel, experiment, digest, terminal)
    return True


def _deliver_team(
    store: Any,
    who: Identity,
    table: Any,
    fid: str,
    rel: str,
    experiment: str,
    terminal: Terminal | None,
    scratch: Path,
) -> bool:
    from tau.portal.store import teamwrite

    with teamwrite.transaction(store, who.run, f"{OWNER} {who.session}") as w:
        if w.get("metric_files", {"file_id": fid}) is not None:
            return False
        digest = None
        if table.num_rows:
            scratch.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".delivery-", suffix=".parquet", dir=scratch)
            os.close(fd)
            try:
                digest = write_parquet(table, Path(name))
                teamwrite.upload(store, rel, Path(name).read_bytes())
            finally:
                os.unlink(name)
        _records(w, store, who, table, fid, rel, experiment, digest, terminal)
    return True


def _records(
    w: Any,
    store: Any,
    who: Identity,
    table: Any,
    fid: str,
    rel: str,
    experiment: str,
    digest: str | None,
    terminal: Terminal | None,
) -> None:
    import pyarrow.compute as pc

    from tau.portal.capture.jsonl import micros_to_store_time

    ensure_experiment(
        w,
        experiment,
        project=who.project,
        source="explicit" if who.experiment or store.experiment_id else "run_group",
    )
    ensure_group(w, who.group, project=who.project)
    first = pc.min(table["wall_time"]).as_py() if table.num_rows else None
    started = micros_to_store_time(first) or w.stamp
    # An existing run (captured by the controller, imported, or an earlier attempt's) keeps
    # what it holds: the collector adds evidence to it, it does not redefine it.
    put_run(
        w,
        {
            "run_id": who.run,
            "project": who.project,
            "experiment_id": experiment,
            "run_group_id": who.group,
            "state": "running",
            "owner": OWNER,
            "created_at": started,
            "started_at": started,
        },
        defaulted=(_IDENTITY if w.get("runs", {"run_id": who.run}) is not None else ()),
    )
    tags = dict(who.tags)
    if terminal is not None:
        tags.update(terminal.tags)
        _finish(w, who.run, terminal)
    for key in sorted(tags):
        # The collector's tags are its own to update: the last delivery (attempt) wins.
        w.replace(
            "tags", {"scope_type": "run", "scope_id": who.run, "key": key, "value": tags[key]}
        )
    if digest is None:
        return
    summaries = summarize(table)
    steps = [s for s in table["step"].to_pylist() if s is not None]
    record_metric_file(
        w,
        {
            "file_id": fid,
            "path": rel,
            "format": "parquet",
            "schema_version": schema.METRIC_SCHEMA_VERSION,
            "schema_hash": schema.metric_schema_hash(),
            "project": who.project,
            "run_group_id": who.group,
            "run_id": who.run,
            "row_count": table.num_rows,
            "digest": "sha256:" + digest,
            "min_step": min(steps) if steps else None,
            "max_step": max(steps) if steps else None,
            "created_at": w.stamp,
        },
        summaries,
    )


def _finish(w: Any, run_id: str, terminal: Terminal) -> None:
    """The run's terminal state from the marker: over a state not yet terminal, over the state
    an earlier attempt's marker wrote (the last attempt wins), or over a `sidecar-shutdown`
    marker of this attempt (the collector alone was stopped and restarted, the workload went
    on); a terminal state the controller recorded for this same attempt is left as it is.
    """
    run = w.get("runs", {"run_id": run_id})
    if run is None:
        return
    old = str(run.get("state") or "")

    def tag(key: str) -> str | None:
        found = w.get("tags", {"scope_type": "run", "scope_id": run_id, "key": key})
        return None if found is None else str(found["value"])

    old_attempt = tag("tau.attempt")
    earlier = old_attempt is not None and _int(old_attempt) < _int(
        terminal.tags.get("tau.attempt", "0")
    )
    shutdown = tag("tau.status.reason") == SHUTDOWN_REASON
    if RANK.get(old, 0) < 3 or earlier or shutdown or old == terminal.state:
        w.replace("runs", run | {"state": terminal.state, "completed_at": terminal.completed_at})


def _int(text: Any) -> int:
    try:
        return int(str(text))
    except ValueError:
        return 0
