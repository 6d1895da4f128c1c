"""The collector's passes: read, spool, deliver, and the end of the run.

Performs I/O (the history files, `--out`, the store, signals). One pass:

1. reads the new whole lines of every history file (`tail`) and turns them into metric rows with
   the importer's own parser (`tau.portal.capture.jsonl.metric_rows`), tagged with the attempt;
   with `--watch` it adds the pod's `system/...` and GPU rows;
2. appends them to the spool and records the history offsets and the spool's size;
3. delivers what the spool holds past the last delivery into the store, a delivery at a time
   (see `checkpoint` and `delivery`: a kill anywhere loses nothing and stores nothing twice).

With `--watch` passes repeat every interval. The store being unreachable is one stderr line per
interval: rows keep being spooled and are all delivered once it answers again. When the
completion sentinel appears (or on SIGTERM, as `cancelled`/`sidecar-shutdown`), the collector
reads the last lines, spools and delivers the terminal `tau/run_status` marker, writes the
status file and `--done-file`, and returns.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tau.portal.errors import UsageError
from tau.portal.offload import checkpoint as checkpoints
from tau.portal.offload import gpu, marker, tail
from tau.portal.offload.checkpoint import Checkpoint, Pending
from tau.portal.offload.delivery import SHUTDOWN_REASON, Identity, Terminal, deliver
from tau.portal.offload.spool import Spool
from tau.portal.offload.system import SystemSampler
from tau.portal.store.cards import CARD_TAG, STANDARD_TAG, card_of

IMPORTER = "tau.offload.metrics.v1"
#: Spool bytes one delivery takes at most (a backlog after an outage goes in several files).
MAX_DELIVERY = 16 << 20
#: Spool bytes past which a wholly delivered spool starts afresh (its rows are in the store).
ROTATE = 256 << 20
#: How often the wait between passes looks for the sentinel and for a signal.
POLL = 0.2
#: The message of the marker a SIGTERM before the sentinel records.
SHUTDOWN = "the metrics collector was stopped before the workload wrote its completion"


@dataclass
class Settings:
    """Everything a collector run needs, resolved from flags, environment and tau.yaml."""

    who: Identity
    out: Path
    history: list[str]
    attempt: str = "0"
    completion_file: Path | None = None
    ready_file: Path | None = None
    done_file: Path | None = None
    artifact_uri: str = ""
    checkpoint_uri: str = ""
    watch: bool = False
    interval: float = 60.0
    max_iterations: int = 0
    baseline: bool = False
    #: Opens the store (raises when it cannot); called again after a failure.
    open_store: Callable[[], Any] | None = None


@dataclass
class PassReport:
    number: int
    rows_read: int = 0
    system_rows: int = 0
    delivered_rows: int = 0
    deliveries: int = 0
    pending_rows: int = 0
    marker: str = ""
    store: str = "ok"

    @property
    def changed(self) -> bool:
        return bool(self.rows_read or self.delivered_rows or self.marker)


@dataclass
class Collector:
    settings: Settings
    err: TextIO
    report: Callable[[PassReport], None] = lambda r: None
    sampler: SystemSampler | None = None
    gpu_sample: Callable[[], tuple[dict[str, float], str | None]] = gpu.sample
    stop: threading.Event = field(default_factory=threading.Event)
    _store: Any = None
    _lock: int = -1
    _noted: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        try:
            self._start()
        except OSError as exc:
            raise _local_error(exc) from None

    def _start(self) -> None:
        s = self.settings
        s.out.mkdir(parents=True, exist_ok=True)
        self._lock = checkpoints.hold(s.out)
        self.spool = Spool(s.out)
        self.point: Checkpoint = checkpoints.load(s.out, s.who.session or None)
        # Spooled past the last checkpoint by a process killed before recording it: those
        # history lines are read again, so their rows must not stay in the spool twice.
        self.spool.cut(self.point.spool_size)
        if not self.point.files and not self.point.spool_size and s.baseline:
            self.point.files = tail.baseline(s.history)
        self.who = Identity(
            s.who.run,
            s.who.project,
            s.who.experiment,
            s.who.group,
            s.who.source,
            self.point.session,
            {**s.who.tags, "source": s.who.source, "tau.metrics.session_id": self.point.session},
        )
        checkpoints.save(s.out, self.point)

    # -- the run ------------------------------------------------------------------------
    def run(self) -> int:
        s = self.settings
        previous = self._trap()
        try:
            if s.ready_file is not None:
                _touch(s.ready_file)
            number = 0
            while True:
                number += 1
                done = self._completion()
                if done is not None or self.stop.is_set():
                    return self._finish(number, done)
                self.report(self.one_pass(number, final=False))
                if not s.watch:
                    return self._after_single(number)
                if s.max_iterations and number >= s.max_iterations:
                    return 0
                self._wait(s.interval)
        except OSError as exc:
            raise _local_error(exc) from None
        finally:
            self._untrap(previous)
            self._close()
            os.close(self._lock)

    def _after_single(self, number: int) -> int:
        """Without --watch: one pass; rows it could not deliver make it fail (exit 1)."""
        if self.point.delivered < self.point.spool_size:
            self._raise_store()
        return 0

    def _raise_store(self) -> None:
        from tau.portal.errors import StoreError

        raise StoreError(
            f"offload metrics: rows not delivered ({self._last_error or 'store unreachable'})",
            hint=f"they are kept in {self.spool.path}; run the command again once the store "
            "answers",
        )

    _last_error: str = ""

    def _completion(self) -> marker.Completion | None:
        path = self.settings.completion_file
        if path is None:
            return None
        done, note = marker.read_sentinel(path)
        if note:
            self._note(note)
        return done

    def _finish(self, number: int, done: marker.Completion | None) -> int:
        """Drain, spool the marker once per attempt, deliver it, write the status and done files."""
        s = self.settings
        signalled = done is None
        if done is None:
            # A SIGTERM: the wrapper may have written the sentinel just before the pod stops.
            done = self._completion() or marker.Completion(
                "cancelled", SHUTDOWN_REASON, SHUTDOWN, marker.now()
            )
        report = self.one_pass(number, final=True, deliver_now=False)
        for pattern in s.history:
            if next(tail.files([pattern]), None) is None:
                # An empty record is layer 7's first question: say which history never appeared.
                self._note(f"offload metrics: --history {pattern}: no file matched; no rows read")
        # One marker per completion: a restart after it was spooled (the same sentinel is still
        # there) must not add another; a later completion of the same attempt (the collector
        # was stopped and restarted, then the workload ended) adds its own.
        key = f"{self.point.session}/{s.attempt}/{done.reason}/{done.completed_at}"
        recorded = self.point.markers.get(key)
        if recorded is None:
            row = self._marker_row(done)
            start = self.point.spool_size
            self.point.spool_size = self.spool.append([row])
            self.point.spool_rows += 1
            self.point.markers[key] = {
                "attempt": s.attempt,
                "state": done.state,
                "reason": done.reason,
                "message": done.message,
                "completed_at": done.completed_at,
                "start": start,
                "end": self.point.spool_size,
                "row": row,
            }
            checkpoints.save(s.out, self.point)
            recorded = self.point.markers[key]
        status = marker.status_path(s.out, s.who.run, self.point.session, s.attempt)
        marker.write_status(status, recorded["row"])
        report.marker = recorded["state"]
        while True:
            self._deliver_all(report)
            if self.point.delivered >= self.point.spool_size:
                break
            if signalled or self.stop.is_set() or not s.watch:
                left = self.point.spool_rows - self.point.delivered_rows
                self._note(
                    f"offload metrics: stopping with {left} rows not delivered; they stay in "
                    f"{self.spool.path} (run the command again without --watch, same --out, to "
                    "deliver them)"
                )
                break
            self._wait(s.interval, sentinel=False)
        self.report(report)
        if s.done_file is not None:
            _touch(s.done_file)
        if not s.watch and self.point.delivered < self.point.spool_size:
            self._raise_store()
        return 0

    # -- one pass -----------------------------------------------------------------------
    def one_pass(self, number: int, *, final: bool, deliver_now: bool = True) -> PassReport:
        """Read, spool and deliver what is new; a backlog is read `tail.MAX_READ` bytes of a
        file at a time (memory stays bounded) until the pass has caught up.
        """
        s = self.settings
        report = PassReport(number)
        system: list[dict[str, Any]] = []
        if s.watch and not final:
            system = self._system_rows()
            report.system_rows = len(system)
        while True:
            more = self._read(report, final, system)
            system = []
            if deliver_now:
                self._deliver_all(report)
            if not more or self.stop.is_set():
                return report

    def _read(self, report: PassReport, final: bool, extra: list[dict[str, Any]]) -> bool:
        """One read of every history into the spool; True when a file holds more already."""
        s = self.settings
        notes: list[str] = []
        tables: list[Any] = []
        pieces = tail.read_new(s.history, self.point.files, final=final, notes=notes)
        for piece in pieces:
            lines = piece.data.split(b"\n") if piece.data else []
            if lines and not lines[-1]:
                lines.pop()
            found = self._parse(piece, lines, 0)
            report.rows_read += sum(t.num_rows for t in found)
            tables.extend(found)
        for note in notes:
            self._note(note)
        if tables or extra or pieces:
            self.point.spool_size = self.spool.append(itertools.chain(_row_dicts(tables), extra))
            self.point.spool_rows += sum(t.num_rows for t in tables) + len(extra)
            for piece in pieces:
                self.point.files[piece.path] = {
                    "offset": piece.offset,
                    "lines": piece.lines,
                    "inode": piece.inode,
                }
            checkpoints.save(s.out, self.point)
        return any(piece.more for piece in pieces)

    def _parse(self, piece: tail.Piece, lines: list[bytes], first: int) -> list[Any]:
        """The metric rows of `lines` (lines [first, ...) of the piece) as tables.

        A line the importer's parser refuses is skipped with a note naming it; the lines around
        it are kept: a refused range is halved until the refused line stands alone.
        """
        from tau.portal.capture.jsonl import metric_rows

        if not lines:
            return []
        data = b"\n".join(lines) + b"\n"
        try:
            table = metric_rows(
                data, Path(piece.path), piece.given, self._request(),
                first_line=piece.first_line + first,
            )  # fmt: skip
            return [table] if table.num_rows else []
        except UsageError as exc:
            if len(lines) == 1:
                self._note(f"offload metrics: skipped {exc.message}", once=False)
                return []
        half = len(lines) // 2
        return self._parse(piece, lines[:half], first) + self._parse(
            piece, lines[half:], first + half
        )

    def _request(self) -> Any:
        from tau.portal.capture.jsonl import ImportRequest

        who = self.settings.who
        return ImportRequest(
            run=who.run,
            history=[],
            project=who.project,
            experiment=who.experiment,
            group=who.group,
            source=who.source,
            row_tags={"jsonl.importer": IMPORTER, "tau.attempt": self.settings.attempt},
        )

    def _system_rows(self) -> list[dict[str, Any]]:
        if self.sampler is None:
            self.sampler = SystemSampler()
        values = self.sampler.sample()
        if not values:
            self._note(
                "offload metrics: system/cpu_cores and system/memory_bytes not recorded: no "
                "other process of the pod in /proc and no cgroup v2 cpu.stat/memory.current"
            )
        found, note = self.gpu_sample()
        if note:
            self._note(note)
        values.update(found)
        stamp = round(time.time() * 1_000_000)
        return [self._row(name, value, stamp) for name, value in sorted(values.items())]

    def _row(self, name: str, value: float, stamp: int) -> dict[str, Any]:
        """A `system/...` metric row (no step: it is placed by its time)."""
        who = self.settings.who
        row_tags = {
            "tau.attempt": self.settings.attempt,
            CARD_TAG: card_of(name),
            STANDARD_TAG: "false",
        }
        return {
            "project": who.project,
            "run_group_id": who.group,
            "run_id": who.run,
            "metric_name": name,
            "step": None,
            "wall_time": stamp,
            "value": float(value),
            "unit": _unit(name),
            "source": who.source,
            "split": None,
            "tags": json.dumps(row_tags, sort_keys=True),
        }

    def _marker_row(self, done: marker.Completion) -> dict[str, Any]:
        s = self.settings
        return marker.marker_row(
            done,
            self._status_tags(done),
            project=s.who.project,
            group=s.who.group,
            run=s.who.run,
            source=s.who.source,
        )

    def _status_tags(self, done: marker.Completion) -> dict[str, str]:
        s = self.settings
        return marker.status_tags(
            done,
            attempt=s.attempt,
            artifact_uri=s.artifact_uri,
            checkpoint_uri=s.checkpoint_uri,
        )

    # -- delivery -----------------------------------------------------------------------
    def _deliver_all(self, report: PassReport) -> None:
        """Deliver until the spool is delivered or the store fails (one note, then next time)."""
        s = self.settings
        point = self.point
        while point.pending is not None or point.delivered < point.spool_size:
            if point.pending is None:
                end = self.spool.boundary(point.delivered, point.spool_size, MAX_DELIVERY)
                rows_in = self.spool.count(point.delivered, end)
                point.pending = Pending(
                    point.seq, point.delivered, end, point.session, s.attempt, rows_in
                )
                checkpoints.save(s.out, point)
            pending = point.pending
            rows = self.spool.table(pending.start, pending.end)
            try:
                store = self._opened()
                stored = deliver(
                    store,
                    self._who(pending.session),
                    rows,
                    seq=pending.seq,
                    attempt=pending.attempt,
                    terminal=self._terminal(pending),
                    scratch=s.out,
                )
            except Exception as exc:  # any store failure: keep spooling, retry next interval
                self._failed(exc, report)
                break
            self._last_error = ""
            point.delivered = pending.end
            point.delivered_rows += pending.rows
            point.seq = pending.seq + 1
            point.pending = None
            for found in point.markers.values():
                if pending.start <= int(found["start"]) < pending.end:
                    found["delivered"] = True  # its offsets mean nothing once the spool turns
            checkpoints.save(s.out, point)
            if stored:  # a re-delivery the store already held adds nothing
                report.deliveries += 1
                report.delivered_rows += rows.num_rows
        report.pending_rows = point.spool_rows - point.delivered_rows
        if point.delivered == point.spool_size >= ROTATE:
            self._rotate()

    def _rotate(self) -> None:
        """Start the spool afresh once everything in it is delivered and it has grown past
        `ROTATE`: its rows are in the store, and a long run's spool would fill the claim.
        The checkpoint says so first; a kill before the cut is finished by the restart's cut.
        """
        point = self.point
        point.spool_size = point.delivered = 0
        point.spool_rows = point.delivered_rows = 0
        checkpoints.save(self.settings.out, point)
        self.spool.cut(0)

    def _who(self, session: str) -> Identity:
        who = self.who
        if session == who.session:
            return who
        return Identity(who.run, who.project, who.experiment, who.group, who.source, session,
                        {**who.tags, "tau.metrics.session_id": session})  # fmt: skip

    def _terminal(self, pending: Pending) -> Terminal | None:
        """The marker's effect when the marker row lies in this delivery's range."""
        for found in self.point.markers.values():
            if found.get("delivered"):
                continue
            attempt = str(found["attempt"])
            if pending.start <= int(found["start"]) < pending.end:
                done = marker.Completion(
                    found["state"], found["reason"], found["message"], found["completed_at"]
                )
                from tau.portal.capture.jsonl import micros_to_store_time

                tags = json.loads(found["row"]["tags"])
                return Terminal(
                    done.state,
                    micros_to_store_time(marker.micros(done.completed_at)) or marker.now(),
                    {k: str(tags.get(k, "")) for k in marker.TAG_KEYS} | {"tau.attempt": attempt},
                )
        return None

    def _opened(self) -> Any:
        if self._store is None:
            opener = self.settings.open_store
            if opener is None:
                raise RuntimeError("no store to deliver to")
            self._store = opener()
        return self._store

    def _failed(self, exc: BaseException, report: PassReport) -> None:
        """One stderr line per failed interval (without --watch the command's error says it)."""
        from tau.errors import TauError

        text = exc.message if isinstance(exc, TauError) else f"{type(exc).__name__}: {exc}"
        text = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
        self._last_error = text
        report.store = "not-written"
        self._close()
        if self.settings.watch:
            kept = self.point.spool_rows - self.point.delivered_rows
            self._note(
                f"offload metrics: store not written ({text}); {kept} rows kept in "
                f"{self.spool.path}, retrying in {self.settings.interval:g}s",
                once=False,
            )

    def _close(self) -> None:
        if self._store is not None:
            # A broken connection is being dropped anyway.
            with contextlib.suppress(Exception):
                self._store.close()
            self._store = None

    # -- waiting and signals ------------------------------------------------------------
    def _wait(self, seconds: float, *, sentinel: bool = True) -> None:
        """Until the interval has passed, a signal came, or the sentinel appeared."""
        deadline = time.monotonic() + seconds
        path = self.settings.completion_file
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if sentinel and path is not None and path.exists():
                return
            self.stop.wait(min(POLL, left))

    def _trap(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda *_: self.stop.set())
        return previous

    def _untrap(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _note(self, text: str, *, once: bool = True) -> None:
        if once and text in self._noted:
            return
        self._noted.add(text)
        self.err.write(text + "\n")
        self.err.flush()


def _unit(name: str) -> str | None:
    """The unit a `system/...` metric's name ends with (cores, bytes, percent)."""
    for suffix, unit in (("_cores", "cores"), ("_bytes", "bytes"), ("_percent", "percent")):
        if name.endswith(suffix):
            return unit
    return None


def _row_dicts(tables: list[Any]) -> Iterator[dict[str, Any]]:
    """The tables' rows as dicts a batch at a time (a backlog's rows never all at once)."""
    for table in tables:
        for batch in table.to_batches(max_chunksize=4096):
            yield from batch.to_pylist()


def _local_error(exc: OSError) -> UsageError:
    """A file of the collector's own (--out, the ready or done file) that cannot be written."""
    where = exc.filename or "a file under --out"
    return UsageError(
        f"offload metrics: {where}: {exc.strerror or exc}",
        hint="--out, --ready-file and --done-file must be on writable storage with free space",
    )


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    checkpoints.write_atomic(path, marker.now() + "\n")
