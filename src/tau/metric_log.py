"""`tau.log`: training code's metric rows, written to the history file the run names.

    import tau
    tau.log({"loss": 0.3, "acc": 0.9}, step=100)

Each call is one row of the reference's `metrics.history` format (portal-contract §4.5), one
JSON object per line: `{"_step":100,"_timestamp":1760000000.125,"loss":0.3,"acc":0.9}`. Where
the rows go: `$TAU_METRICS_HISTORY` (the render sets it in the pod to the first
`metrics.history` entry), else `metrics.jsonl` in the working directory, so the same script
runs on a laptop and `taugrid-portal experiment import jsonl` reads what it wrote.

- A plain path is appended to: each flush is one write() of whole lines.
- A glob (`/data/out/metrics/*.jsonl`) gets one chunk file per flush, named to match the glob,
  written as a dotfile and then renamed, so a reader of the glob never sees a partial file.

The call only checks the values and queues them with the time: a daemon thread formats the
queue (float repr is most of a row's cost; it yields the GIL every _YIELD_ROWS rows) and writes
it every FLUSH_SECONDS or as soon as FLUSH_ROWS rows wait, and the rest is written at
interpreter exit and on SIGTERM (any handler installed before is still called). The loop never
waits for the disk. `log_flush()` writes the queue now. Rows the fast path cannot take as they
are (bools, numpy scalars, NaN and ±inf) are encoded in the call.

Under a distributed launcher (RANK set, as torchrun, Ray Train, DeepSpeed and Accelerate do)
only rank 0 writes; `all_ranks=True` (or TAU_LOG_ALL_RANKS=1) makes every rank write, each row
then carries `"_rank"`, and each rank writes its own file (`metrics.rank-N.jsonl` beside a plain
path; its own chunks under a glob), so writers never interleave.

This file is self-contained on purpose: the standard library only, no tau import, valid on
Python 3.10. The render ships it with the payload (as `_tau_metric_log.py`, beside a `tau.py`
shim) so a pod whose image has no tau installed still runs `import tau; tau.log(...)`.
"""

from __future__ import annotations

import _thread
import atexit
import os
import sys
import time

# Importing tau.log stays a fraction of a millisecond beyond the interpreter: not typing (mypy
# reads any TYPE_CHECKING as True), not signal or threading (enum, functools, weakref...), not
# json (re): their C cores do the work.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
    from collections import deque
    from collections.abc import Mapping
    from typing import Any
else:
    from _collections import deque

    try:
        import _signal
    except ImportError:  # pragma: no cover - CPython has it
        import signal as _signal


def _quote_py(text: str) -> str:
    """A JSON string of `text`, ASCII only, as json's C escaper writes it (with u-escapes)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            code -= 0x10000
            out.append(f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}")
    return '"' + "".join(out) + '"'


try:  # the json module's own C escaper, without importing json (which imports re)
    from _json import encode_basestring_ascii as _quote
except ImportError:  # pragma: no cover - CPython always has _json
    _quote = _quote_py

__all__ = ["log", "log_flush"]

HISTORY_ENV = "TAU_METRICS_HISTORY"
ALL_RANKS_ENV = "TAU_LOG_ALL_RANKS"
DEFAULT_FILE = "metrics.jsonl"
#: The thread writes the queue every FLUSH_SECONDS, and early when this many rows wait.
FLUSH_ROWS = 1000
#: Short enough that a sidecar polling every 10 s sees rows within one of its intervals.
FLUSH_SECONDS = 2.0
#: Rows kept while the history cannot be written (a full or missing disk); older ones drop.
MAX_PENDING = 1_000_000

_MAGIC = frozenset("*?[")
#: Metric name → its encoded `,"name":` (names repeat every step; at most _MAX_KEYS kept).
_keys: dict[str, str] = {}
_MAX_KEYS = 10_000
#: (metric names, rank or None) → the row's format string (tau.metric_log._template).
_templates: dict[tuple[Any, ...], str] = {}
_MAX_TEMPLATES = 1_000
_PLAIN = frozenset((float, int))
#: The flush thread formats this many rows at a time, then yields the GIL.
_YIELD_ROWS = 100


class _Appender:
    """A plain history file: each flush appends whole lines with one write()."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.where = path

    def write(self, data: bytes) -> None:
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)


class _Chunks:
    """A history glob: each flush is a new file matching it, written as a dotfile then renamed."""

    def __init__(self, pattern: str, rank: int) -> None:
        self.folder, self.prefix, self.suffix = _chunk_parts(pattern)
        self.where = pattern
        # Milliseconds first: chunk names sort in write order, across restarts of the process.
        self.session = f"tau-{int(time.time() * 1000):013d}-{os.getpid()}-r{rank}"
        self.seq = 0

    def write(self, data: bytes) -> None:
        os.makedirs(self.folder, exist_ok=True)
        self.seq += 1
        name = f"{self.prefix}{self.session}-{self.seq:06d}{self.suffix}"
        final = os.path.join(self.folder, name)
        temp = os.path.join(self.folder, f".{name}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temp, final)


def _chunk_parts(pattern: str) -> tuple[str, str, str]:
    """(folder, name prefix, name suffix): a chunk is prefix + unique token + suffix.

    Wildcards belong in the file name; a `**` folder may match none, so chunks go above it.
    """
    folder, name = os.path.split(pattern)
    parts = [p for p in folder.split("/") if p != "**"]
    folder = "/".join(parts) if parts != [""] else "/"
    if any(c in _MAGIC for c in folder) or "*" not in name:
        raise ValueError(
            f"{HISTORY_ENV}={pattern!r}: tau.log writes a glob's chunks into one folder, so the "
            "glob needs a '*' in its file name and no wildcard in its folders; "
            "name a glob such as /data/out/metrics/*.jsonl, or a plain file"
        )
    prefix, _, rest = name.partition("*")
    suffix = rest.replace("*", "")
    if any(c in _MAGIC for c in prefix + suffix):
        raise ValueError(
            f"{HISTORY_ENV}={pattern!r}: tau.log can name chunks only for '*' wildcards; "
            "use a glob such as /data/out/metrics/*.jsonl"
        )
    return folder, prefix, suffix


def _rank() -> int:
    text = os.environ.get("RANK", "").strip()
    if not text:
        return 0
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            f"tau.log: RANK={text!r} is not an integer; the launcher sets it (torchrun: 0 is "
            "the first process), so unset it or set a number"
        ) from None


def _sink(rank: int) -> _Appender | _Chunks:
    given = os.environ.get(HISTORY_ENV, "").strip()
    # Absolute from the first call on, so a later chdir does not split the history.
    path = os.path.abspath(given or DEFAULT_FILE)
    if any(c in _MAGIC for c in path):
        return _Chunks(path, rank)
    if given.endswith("/") or os.path.isdir(path):
        raise ValueError(
            f"tau.log: {HISTORY_ENV}={given!r} is a folder; name a file "
            "(metrics.jsonl) or a glob of chunk files (metrics/*.jsonl)"
        )
    if rank:
        root, ext = os.path.splitext(path)
        path = f"{root}.rank-{rank}{ext}"
    return _Appender(path)


class _Writer:
    """The process's queue of rows and the thread that formats and writes it."""

    def __init__(self) -> None:
        self.rank = _rank()
        self.all_ranks = os.environ.get(ALL_RANKS_ENV, "").strip().lower() in ("1", "true", "yes")
        self.sink = _sink(self.rank)
        self.pending: deque[str | tuple[str, tuple[Any, ...]]] = deque()
        self.next_step = 0
        # Held while no wake-up is due; the call releases it to wake the thread early.
        self.wake = _thread.allocate_lock()
        self.wake.acquire()
        # Reentrant: a SIGTERM that lands while the main thread flushes flushes again.
        self.lock = _thread.RLock()
        self.running = False
        self.closed = False
        self.warned: set[str] = set()

    def start(self) -> None:
        self.running = True
        # The kernel gives a process signal to any thread that does not block it. One that
        # landed on the writer would not wake the main thread from a blocking call (a sleep, a
        # read): its SIGTERM handler, ours or the run's, would wait for that call to end. The
        # thread is born with SIGTERM and SIGINT blocked (it inherits the mask it starts with).
        masked = hasattr(_signal, "pthread_sigmask")
        if masked:
            before = _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGTERM, _signal.SIGINT))
        try:
            _thread.start_new_thread(self._loop, ())
        except RuntimeError:
            # No new thread at interpreter shutdown: the exit flush still writes the rows.
            pass
        finally:
            if masked:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, before)

    def nudge(self) -> None:
        try:  # noqa: SIM105 - contextlib would cost its import on every `import tau`
            self.wake.release()
        except RuntimeError:
            pass  # a wake-up is already due

    def _loop(self) -> None:
        while not self.closed:
            self.wake.acquire(True, FLUSH_SECONDS)
            try:
                self.flush()
            except Exception as exc:  # a bug here must not end the writes, nor the run
                self._warn(f"cannot write metrics to {self.sink.where}: {exc!r}")

    def flush(self, *, final: bool = False) -> None:
        with self.lock:
            count = len(self.pending)
            if not count:
                return
            # popleft is atomic, so a row queued meanwhile is never lost between take and clear.
            take = self.pending.popleft
            rows = [take() for _ in range(count)]
            lines: list[str] = []
            for start in range(0, count, _YIELD_ROWS):
                if start:
                    time.sleep(0)  # lets a training loop waiting for the GIL take it
                lines.extend(_text(row) for row in rows[start : start + _YIELD_ROWS])
            data = ("\n".join(lines) + "\n").encode()
            try:
                self.sink.write(data)
            except OSError as exc:
                self._failed(lines, exc, final=final)

    def _failed(self, lines: list[str], exc: OSError, *, final: bool) -> None:
        reason = exc.strerror or str(exc)
        if final:
            _say(f"{len(lines)} metric rows not written to {self.sink.where}: {reason}")
            return
        self.pending.extendleft(reversed(lines))
        over = len(self.pending) - MAX_PENDING
        for _ in range(max(over, 0)):
            self.pending.popleft()
        self._warn(
            f"cannot write metrics to {self.sink.where}: {reason}; keeping the rows and "
            f"retrying every {FLUSH_SECONDS:g}s"
        )
        if over > 0:
            self._warn(f"more than {MAX_PENDING} rows wait; dropping the oldest")

    def _warn(self, text: str) -> None:
        """Say `text` once: a failing disk retried every interval must not flood the log."""
        if text not in self.warned:
            self.warned.add(text)
            _say(text)


def _text(row: str | tuple[str, tuple[Any, ...]]) -> str:
    """A queued row as its line: encoded already, or (template, arguments) to format."""
    if isinstance(row, str):
        return row
    template, args = row
    return template.format(*args)


def _say(text: str) -> None:
    try:
        sys.stderr.write(f"tau.log: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


_writer: _Writer | None = None
_create = _thread.allocate_lock()


def _open() -> _Writer:
    global _writer
    with _create:
        if _writer is None:
            writer = _Writer()
            _install_sigterm()
            _writer = writer
        return _writer


def _number(key: object, value: object) -> int | float:
    """`value` as an int or float, or a TypeError naming the key."""
    if type(key) is not str:
        raise TypeError(f"tau.log: metric names must be strings, got {key!r}")
    if isinstance(value, bool):
        return int(value)  # the store keeps numbers; a JSON true would carry no metric
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    kind = type(value)
    module = kind.__module__ or ""
    if module == "numpy" and getattr(value, "ndim", 1) == 0:
        item = value.item()  # type: ignore[attr-defined]
        if isinstance(item, bool):
            return int(item)
        if isinstance(item, int | float):
            return item
    hint = " (log value.item())" if module.split(".")[0] in ("torch", "numpy", "jax") else ""
    name = kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"
    raise TypeError(
        f"tau.log: {key!r} is a {name} ({value!r:.60}), not a number; "
        f"log ints, floats, bools or numpy scalars{hint}"
    )


def _key(key: object) -> str:
    """The encoded `,"key":` of a metric name, or the error that names it."""
    if type(key) is not str:
        raise TypeError(f"tau.log: metric names must be strings, got {key!r}")
    if key[:1] == "_":
        raise ValueError(
            f"tau.log: {key!r} starts with '_', which the history format keeps for metadata "
            "(_step, _timestamp, _rank); rename the metric"
        )
    encoded = f",{_quote(key)}:"
    if len(_keys) < _MAX_KEYS:
        _keys[key] = encoded
    return encoded


def _step(step: object) -> int:
    if isinstance(step, bool):
        raise TypeError(f"tau.log: step must be an integer, got {step!r}")
    try:
        value = int(step.__index__())  # type: ignore[attr-defined]
    except (AttributeError, TypeError):
        raise TypeError(
            f"tau.log: step must be an integer, got {type(step).__name__} {step!r:.60}"
        ) from None
    if value < 0:
        raise ValueError(f"tau.log: step must be 0 or more, got {value}")
    return value


def _template(names: tuple[Any, ...], rank: int | None) -> str:
    """The row's format string for these metric names: one str.format encodes the row."""
    head = '{{"_step":{},"_timestamp":{!r}' + ("" if rank is None else f',"_rank":{rank}')
    body = "".join(
        (_keys.get(name) or _key(name)).replace("{", "{{").replace("}", "}}") + "{!r}"
        for name in names
    )
    template = head + body + "}}"
    if len(_templates) < _MAX_TEMPLATES:
        _templates[(names, rank)] = template
    return template


def _line(step: int, rank: int | None, names: tuple[Any, ...], values: tuple[Any, ...]) -> str:
    """The row, value by value: numpy scalars, bools, NaN and ±inf (or an error naming the key)."""
    parts = [f'{{"_step":{step},"_timestamp":{time.time()!r}']
    if rank is not None:
        parts.append(f',"_rank":{rank}')
    for name, value in zip(names, values, strict=True):
        kind = type(value)
        if kind is not float and kind is not int:
            value = _number(name, value)
            kind = type(value)
        if kind is int or value - value == 0.0:  # an int, or a finite float
            text = repr(value)
        else:
            text = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
        parts.append(f"{_keys.get(name) or _key(name)}{text}")
    parts.append("}")
    return "".join(parts)


def log(data: Mapping[str, Any], step: int | None = None, *, all_ranks: bool = False) -> None:
    """Queue one row of metrics at `step` (default: the step after the last one, from 0).

    Values are ints, floats, bools (written as 1 and 0) or numpy scalars; NaN and ±inf are
    kept (written as NaN, Infinity, -Infinity, as Python's json writes them). Only rank 0
    writes unless `all_ranks` (rows then carry `_rank`). Never waits for the disk: rows are
    written by a background thread, at exit and on SIGTERM.
    """
    writer = _writer or _open()
    ranked = all_ranks or writer.all_ranks
    if writer.rank and not ranked:
        return
    if step is None:
        step = writer.next_step
    elif type(step) is not int or step < 0:
        step = _step(step)
    try:
        names = tuple(data)
        values = tuple(data.values())
    except (AttributeError, TypeError):
        raise TypeError(
            f"tau.log: pass a mapping of metric name to number, got {type(data).__name__}"
        ) from None
    if not names:
        return  # nothing to log; the step does not advance
    rank = writer.rank if ranked else None
    template = _templates.get((names, rank)) or _template(names, rank)
    if set(map(type, values)) <= _PLAIN and (total := sum(values)) - total == 0:
        # Plain finite numbers (a NaN or inf makes the sum not finite): the flush thread
        # formats them with the names' template, so the call only checks and queues.
        row: str | tuple[str, tuple[Any, ...]] = (template, (step, time.time(), *values))
    else:
        row = _line(step, rank, names, values)
    writer.next_step = step + 1
    pending = writer.pending
    pending.append(row)
    if not writer.running:
        writer.start()
    if len(pending) % FLUSH_ROWS == 0:
        writer.nudge()


def log_flush() -> None:
    """Write every queued row now (blocks until written); the exit and SIGTERM paths call it."""
    writer = _writer
    if writer is not None:
        writer.flush()


def _close() -> None:
    """Write what waits and stop the thread; the next call starts afresh from the environment.

    For tests, which change TAU_METRICS_HISTORY and RANK between cases.
    """
    global _writer
    with _create:
        writer, _writer = _writer, None
    if writer is not None:
        writer.closed = True
        writer.nudge()
        writer.flush(final=True)


def _flush_at_exit() -> None:
    writer = _writer
    if writer is not None:
        writer.flush(final=True)


def _install_sigterm() -> None:
    """Flush on SIGTERM, then do what the handler before ours would have done.

    Only the main thread may install a handler (elsewhere signal() raises ValueError, and the
    exit flush alone remains); a handler set outside Python (getsignal None) cannot be chained,
    so it is left alone.
    """
    previous = _signal.getsignal(_signal.SIGTERM)
    if previous is None:
        return

    def on_sigterm(signum: int, frame: Any) -> None:
        _flush_at_exit()
        if callable(previous):
            previous(signum, frame)
        elif previous != _signal.SIG_IGN:
            # The default: die by the signal, as the process would have without tau.log.
            _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
            os.kill(os.getpid(), _signal.SIGTERM)

    try:  # noqa: SIM105 - contextlib would cost its import on every `import tau`
        _signal.signal(_signal.SIGTERM, on_sigterm)
    except ValueError:
        pass


def _forget_in_child() -> None:
    """A forked child (a DataLoader worker) starts with no queue: the parent writes its rows."""
    global _writer, _create
    _writer = None
    _create = _thread.allocate_lock()


atexit.register(_flush_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
