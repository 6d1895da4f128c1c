"""`experiment import jsonl`: `metrics.history` JSONL files into one Parquet metric file.

Performs I/O. The row format is one JSON object per line, `{"_step":0,"_timestamp":
1760000000.125,"loss":1.0}`: numeric fields are metrics, `_`-prefixed fields are metadata.
Files are parsed with pyarrow's multithreaded JSON reader; any file it cannot take as it is
(a blank line, an object over two lines, a fractional step...) is re-read
line by line, which is the authority on the result and finds the line to name in an error.
A re-import is recognised from the request hash (file contents included) before any parsing.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.portal.capture.jsonl_limits import check_lines
from tau.portal.capture.readable import no_match
from tau.portal.errors import UsageError
from tau.portal.store import schema
from tau.portal.store.cards import CARD_TAG, STANDARD_TAG, card_of, is_standard
from tau.portal.store.core import Store
from tau.portal.store.ids import validate_id
from tau.portal.store.metrics import Summary, arrow_schema
from tau.portal.store.write import (
    ensure_experiment,
    ensure_group,
    idempotent_reuse,
    put_run,
    put_tags,
    record_idempotency,
    record_metric_file,
    request_hash,
)

if TYPE_CHECKING:
    import pyarrow as pa

IMPORTER = "tau.jsonl.import.v1"


@dataclass(frozen=True)
class ImportRequest:
    run: str
    history: Sequence[str]
    project: str
    experiment: str
    group: str = "default"
    owner: str = "jsonl-import"
    state: str = "succeeded"
    state_given: bool = False
    metric_prefix: str = ""
    source: str = "jsonl"
    tags: Mapping[str, str] = field(default_factory=dict)
    step_field: str = "_step"
    time_field: str = "_timestamp"
    idempotency_key: str | None = None
    dry_run: bool = False
    #: RFC3339 times given by the user; unset ones come from the history's wall times.
    created_at: str | None = None
    completed_at: str | None = None
    #: Tags every metric row carries besides the importer's own (the collector's `tau.attempt`).
    row_tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportResult:
    #: `imported` | `planned` | `reused`.
    action: str
    run_id: str
    rows: int
    history_files: list[str]
    metric_file: str
    idempotency_key: str
    metric_names: list[str]
    #: Rows imported with a caveat (rows without a step), one sentence per file.
    warnings: list[str] = field(default_factory=list)


@dataclass
class _History:
    path: Path
    given: str
    data: bytes
    sha256: str
    #: The line number of `data`'s first line in its file (a tailed file is read in pieces).
    first_line: int = 1


def metric_rows(
    data: bytes, path: Path, given: str, req: ImportRequest, *, first_line: int = 1
) -> pa.Table:
    """The metric rows (contract §3.4 columns) of whole history lines `data` read from `path`.

    The parsing, tags and non-finite handling are the importer's; `first_line` numbers the
    lines as they sit in the file (tags and errors name them). No rows: an empty table.
    """
    import pyarrow as pa

    history = _History(path, given, data, hashlib.sha256(data).hexdigest(), first_line)
    wide = parse_history(history, req)
    tables = [
        _metric_table(part, req, 0, part.table.num_rows).cast(arrow_schema())
        for part in _parts(wide, history, req)
    ]
    return pa.concat_tables(tables) if tables else arrow_schema().empty_table()


def expand(patterns: Sequence[str]) -> list[_History]:
    """Each `--history` value is a path or a glob; every one must name at least one file."""
    if not patterns:
        raise UsageError("--history is required", hint="pass --history PATH (repeatable, globs ok)")
    seen: dict[Path, _History] = {}
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
            if not matches:
                no_match(pattern)
        else:
            matches = [os.path.expanduser(pattern)]
        for match in matches:
            path = Path(match)
            try:
                data = path.read_bytes()
            except IsADirectoryError:
                raise UsageError(
                    f"--history {match}: is a directory; pass files or a glob"
                ) from None
            except PermissionError:
                raise UsageError(
                    f"--history {match}: permission denied reading the file",
                    hint="make it readable by this user (chmod/chown), or copy it somewhere "
                    "readable and pass that path",
                ) from None
            except OSError as exc:
                raise UsageError(f"--history {match}: {exc.strerror or exc}") from None
            key = path.resolve()
            if key not in seen:
                seen[key] = _History(path, match, data, hashlib.sha256(data).hexdigest())
    return list(seen.values())


def import_jsonl(store: Store, req: ImportRequest) -> ImportResult:
    validate_id("run", req.run)
    validate_id("project", req.project)
    validate_id("group", req.group)
    if req.experiment:
        validate_id("experiment", req.experiment)
    files = expand(req.history)
    request = {
        "command": "import jsonl",
        "run": req.run,
        "project": req.project,
        "experiment": req.experiment,
        "group": req.group,
        "owner": req.owner,
        "state": req.state,
        "metric_prefix": req.metric_prefix,
        "source": req.source,
        "tags": dict(req.tags),
        "step_field": req.step_field,
        "time_field": req.time_field,
        "files": [[f.path.name, f.sha256] for f in files],
        **{
            k: v
            for k, v in (("created_at", req.created_at), ("completed_at", req.completed_at))
            if v
        },
    }
    digest = request_hash(request)
    key = req.idempotency_key or f"jsonl-{req.run}-{digest[:12]}"
    file_id = f"jsonl-{req.run}-{digest[:12]}"
    experiment = req.experiment or store.experiment_id or req.group
    rel = (
        f"{schema.METRICS}/project={req.project}/experiment={experiment}"
        f"/group={req.group}/run={req.run}/{file_id}.parquet"
    )
    names = [f.given for f in files]
    reused = idempotent_reuse(store, key, digest)
    if reused is not None:
        found = store.conn.execute(
            "SELECT row_count FROM metric_files WHERE file_id = ?", (file_id,)
        ).fetchone()
        rows = int(found[0]) if found else 0
        metrics = [
            r[0]
            for r in store.conn.execute(
                "SELECT metric_name FROM metric_summaries WHERE run_id = ? ORDER BY metric_name",
                (req.run,),
            )
        ]
        return ImportResult("reused", req.run, rows, names, rel, key, metrics)

    parts: list[_Part] = []
    summaries: dict[str, Summary] = {}
    warnings: list[str] = []
    for f in files:
        wide = parse_history(f, req)
        warnings.extend(_stepless(wide, f, req))
        for part in _parts(wide, f, req):
            parts.append(part)
            new = _summary(part.table)
            old = summaries.get(part.name)
            summaries[part.name] = new if old is None else old.merge(new)
    if not summaries:
        raise UsageError(
            "JSONL history files contain no scalar metrics",
            hint="each line needs at least one numeric field not starting with '_': "
            + ", ".join(names),
        )
    rows = sum(p.table.num_rows for p in parts)
    metric_names = sorted(summaries)
    first_time, last_time = _wall_range(parts)
    if req.dry_run:
        return ImportResult("planned", req.run, rows, names, rel, key, metric_names, warnings)

    with store.writer() as w:
        if idempotent_reuse(w, key, digest) is not None:  # a concurrent importer won
            return ImportResult("reused", req.run, rows, names, rel, key, metric_names, warnings)
        tmp = w.tmp_path(f"{file_id}.parquet", target=store.root / rel)
        file_digest = _write(parts, req, tmp)
        w.publish(tmp, store.root / rel)
        ensure_experiment(
            w,
            experiment,
            project=req.project,
            source="explicit" if req.experiment or store.experiment_id else "run_group",
        )
        ensure_group(w, req.group, project=req.project)
        # The run's times are the history's (its first and last `_timestamp`) unless given: the
        # import's own clock says when the evidence was copied, not when the run ran.
        created = req.created_at or micros_to_store_time(first_time) or w.stamp
        completed = req.completed_at or (
            micros_to_store_time(last_time) if req.state in _TERMINAL else None
        )
        put_run(
            w,
            {
                "run_id": req.run,
                "project": req.project,
                "experiment_id": experiment,
                "run_group_id": req.group,
                "state": req.state,
                "owner": req.owner,
                "created_at": created,
                "started_at": micros_to_store_time(first_time),
                "completed_at": completed,
            },
            defaulted=("owner",)
            + (() if req.created_at else ("created_at", "started_at"))
            + (() if req.completed_at else ("completed_at",))
            + (() if req.state_given else ("state",)),
        )
        put_tags(w, "run", req.run, {"source": req.source, "jsonl.importer": IMPORTER, **req.tags})
        for f in files:
            _copy_history(w, store, req.run, f)
        record_metric_file(
            w,
            {
                "file_id": file_id,
                "path": rel,
                "format": "parquet",
                "schema_version": schema.METRIC_SCHEMA_VERSION,
                "schema_hash": schema.metric_schema_hash(),
                "project": req.project,
                "run_group_id": req.group,
                "run_id": req.run,
                "row_count": rows,
                "digest": "sha256:" + file_digest,
                "min_step": _pick(min, (s.min_step for s in summaries.values())),
                "max_step": _pick(max, (s.max_step for s in summaries.values())),
                "created_at": w.stamp,
            },
            summaries,
        )
        record_idempotency(w, key, "import jsonl", "run", req.run, digest)
    return ImportResult("imported", req.run, rows, names, rel, key, metric_names, warnings)


#: Run states after which the run has a completion time.
_TERMINAL = frozenset({"succeeded", "completed", "failed", "cancelled", "canceled"})


def micros_to_store_time(micros: int | None) -> str | None:
    """Epoch microseconds as the store's run timestamp (RFC3339, seconds, UTC)."""
    if micros is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(micros // 1_000_000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _wall_range(parts: Sequence[_Part]) -> tuple[int | None, int | None]:
    """The earliest and latest wall time (microseconds) of the imported rows, if any."""
    import pyarrow.compute as pc

    lows, highs = [], []
    for part in parts:
        bounds = pc.min_max(part.table[_TIME]).as_py()
        if bounds["min"] is not None:
            lows.append(bounds["min"])
            highs.append(bounds["max"])
    return (min(lows), max(highs)) if lows else (None, None)


def _pick(fn: Any, steps: Iterable[int | None]) -> int | None:
    known = [s for s in steps if s is not None]
    return fn(known) if known else None


def _copy_history(w: Any, store: Store, run: str, f: _History) -> None:
    rel = f"{schema.ARTIFACTS}/{run}/jsonl/{f.sha256[:12]}-{f.path.name}"
    final = store.root / rel
    if not final.exists():
        tmp = w.tmp_path(f.path.name, target=final)
        tmp.write_bytes(f.data)
        w.publish(tmp, final)
    w.put(
        "artifacts",
        {
            "artifact_id": f"artifact-{run}-{f.sha256[:12]}",
            "run_id": run,
            "type": "metrics-history",
            "uri": rel,
            "name": f.path.name,
            "content_type": "application/x-ndjson",
            "digest": "sha256:" + f.sha256,
            "size_bytes": len(f.data),
            "created_at": w.stamp,
            "direction": "output",
        },
    )


# -- parsing ----------------------------------------------------------------------------

#: Internal columns of a parsed (wide) history; metric keys never start with `_`, so these
#: names cannot collide with a metric.
_STEP, _TIME, _LINE = "__step", "__time", "__line"
#: The writing rank of a row (`"_rank": N`, written by `tau.log` when every rank logs): kept as
#: the row's `tau.rank` tag, so two ranks' rows of one step stay apart.
_RANK, RANK_FIELD, RANK_TAG = "__rank", "_rank", "tau.rank"
#: The largest magnitude of `_timestamp` (epoch seconds) whose microseconds fit in int64.
_MAX_SECONDS = 9_223_372_036_854.0
_STEP_LIMIT = 2**63


@dataclass
class _Part:
    """One metric's rows of one history file: step, time, line and value columns."""

    history: _History
    raw_key: str
    name: str
    table: pa.Table


def _parts(wide: pa.Table, f: _History, req: ImportRequest) -> list[_Part]:
    """The rows of each metric of one file, metrics in name order (the file's layout)."""
    import pyarrow.compute as pc

    out = []
    for raw_key in sorted(c for c in wide.column_names if not c.startswith("__")):
        values = wide[raw_key]
        if values.null_count == len(values):
            continue
        meta = [_STEP, _TIME, _LINE] + ([_RANK] if _RANK in wide.column_names else [])
        part = wide.select([*meta, raw_key]).rename_columns([*meta, "value"])
        if values.null_count:
            part = part.filter(pc.is_valid(values))
        out.append(_Part(f, raw_key, req.metric_prefix + raw_key, part))
    return out


def parse_history(f: _History, req: ImportRequest) -> pa.Table:
    """The file as a wide table: step, time, line and one float64 column per metric.

    pyarrow's JSON reader takes files of one object per line (blank lines and whitespace around
    a line are trimmed first); anything else (an object over two lines, a non-integer step,
    invalid UTF-8...) is re-read line by line, which is the authority on the
    result and names the line of an error. Neither sees the file before every line is within
    the nesting and size bounds (`jsonl_limits`): both parsers recurse per level.
    """
    check_lines(f.data, f.given, f.first_line)
    fast = _parse_fast(f, req)
    return fast if fast is not None else _parse_slow(f, req)


def _stepless(wide: pa.Table, f: _History, req: ImportRequest) -> list[str]:
    """A warning when rows with metrics have no step: kept (the metric row's step is optional,
    contract §3.4, as the reference keeps them) but they cannot be placed on a step axis.
    """
    import pyarrow.compute as pc

    steps = wide[_STEP]
    if not steps.null_count:
        return []
    metrics = [wide[c] for c in wide.column_names if not c.startswith("__")]
    if not metrics:
        return []
    has_metric = pc.is_valid(metrics[0])
    for column in metrics[1:]:
        has_metric = pc.or_(has_metric, pc.is_valid(column))
    missing = pc.and_(pc.is_null(steps), has_metric)
    count = pc.sum(missing).as_py() or 0
    if not count:
        return []
    first = wide[_LINE][pc.indices_nonzero(missing)[0].as_py()].as_py()
    return [
        f"{f.given}:{first}: {count} of {wide.num_rows} rows have no {req.step_field}; their "
        f"metrics are kept without a step (add {req.step_field} to every row, or name the "
        "step's field with --step-field)"
    ]


def _one_object_per_line(data: bytes) -> bool:
    """True when every line starts with `{` and ends with `}`, with no blank lines.

    pyarrow's reader also takes an object over two lines, two objects on one line and blank
    lines, which would shift the line numbers the tags and errors name. A newline between `}`
    and `{` separates two top-level values (a raw newline cannot be inside a JSON string and
    `}{` cannot be inside a value), so when every newline sits there the reader's row count
    equals the line count exactly when each line holds one object. Three byte scans.
    """
    if not data.startswith(b"{"):
        return False
    newlines = data.count(b"\n")
    ends_with_newline = data.endswith(b"\n")
    last = data[-2:-1] if ends_with_newline else data[-1:]
    if last != b"}":
        return False
    return data.count(b"}\n{") == newlines - (1 if ends_with_newline else 0)


#: JSON's whitespace (RFC 8259), which `json.loads` ignores around a line's object.
_JSON_SPACE = b" \t\r"


def _tidy(data: bytes) -> tuple[bytes, list[int]] | None:
    """The file without blank lines and with each line's JSON whitespace trimmed (CRLF files,
    a trailing empty line), plus each remaining line's number; None when some line still does
    not start with `{` and end with `}`.

    One pass of C-level bytes methods per line (about a second for a million lines), which keeps
    a file with a stray blank line or Windows line ends off the line-by-line parse (~15 s).
    """
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    kept: list[bytes] = []
    numbers: list[int] = []
    for number, line in enumerate(lines, start=1):
        line = line.strip(_JSON_SPACE)
        if not line:
            continue  # the line-by-line parse skips it too
        if line[:1] != b"{" or line[-1:] != b"}":
            return None
        kept.append(line)
        numbers.append(number)
    if not kept:
        return None
    return b"\n".join(kept), numbers


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (0 if data.endswith(b"\n") else 1)


def _parse_fast(f: _History, req: ImportRequest) -> pa.Table | None:
    """The wide table through pyarrow, or None when the line-by-line parse must decide."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    data = f.data
    if not data.isascii():
        try:  # the line-by-line parse rejects invalid UTF-8; pyarrow does not check it
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    numbers: list[int] | None = None  # the line number of each row, when not simply 1..n
    if not _one_object_per_line(data):
        tidied = _tidy(data)
        if tidied is None:
            return None
        data, numbers = tidied
    try:
        raw = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=1 << 22))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    n = raw.num_rows
    if n != (len(numbers) if numbers is not None else _line_count(data)):
        return None
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    for name in raw.column_names:
        col = raw[name]
        kind = col.type
        numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind)
        if name == req.step_field:
            if pa.types.is_null(kind):
                columns[_STEP] = pa.nulls(n, pa.int64())
            elif pa.types.is_integer(kind) and (pc.min(col).as_py() or 0) >= 0:
                columns[_STEP] = pc.cast(col, pa.int64())
            else:
                return None  # a fractional, negative or huge step: an error the slow path names
        if name == RANK_FIELD and name not in (req.step_field, req.time_field):
            if pa.types.is_integer(kind):
                if (pc.min(col).as_py() or 0) < 0:
                    return None  # the slow path keeps no rank for a negative one
                columns[_RANK] = pc.cast(col, pa.int64())
            elif not pa.types.is_null(kind):
                return None  # a rank of mixed or other types: the slow path decides per row
            continue
        if name == req.time_field:
            if pa.types.is_null(kind):
                columns[_TIME] = pa.nulls(n, pa.int64())
                continue
            if not numeric:
                return None
            seconds = pc.cast(col, pa.float64(), safe=False)
            if pc.all(pc.less(pc.abs(seconds), _MAX_SECONDS)).as_py() is False:
                return None  # non-finite or out of range: the slow path names the line
            # Python's round() of seconds * 1e6 is what the slow path stores; pc.round is the
            # same IEEE product rounded half to even.
            columns[_TIME] = pc.cast(pc.round(pc.multiply(seconds, 1e6)), pa.int64())
            continue
        if name == req.step_field or name.startswith("_") or not numeric:
            continue  # metadata, strings, booleans, nulls and nested objects carry no metric
        # safe=False: an integer above 2**53 rounds to the nearest double, as float() does.
        # NaN and ±Infinity (a diverged run) are kept: Parquet doubles hold them.
        columns[name] = pc.cast(col, pa.float64(), safe=False)
    columns.setdefault(_STEP, pa.nulls(n, pa.int64()))
    columns.setdefault(_TIME, pa.nulls(n, pa.int64()))
    columns[_LINE] = (
        pc.cumulative_sum(pa.repeat(pa.scalar(1, pa.int64()), n))
        if numbers is None
        else pa.array(numbers, pa.int64())
    )
    if f.first_line != 1:
        columns[_LINE] = pc.add(columns[_LINE], f.first_line - 1)
    return pa.table(columns)


def _parse_slow(f: _History, req: ImportRequest) -> pa.Table:
    """Line by line with the standard library's JSON parser: the reference result and errors.

    A line ends at a newline only (as for pyarrow's reader); a trailing CR is JSON whitespace.
    """
    import pyarrow as pa

    where = f.given
    steps: list[int | None] = []
    times: list[int | None] = []
    lines: list[int] = []
    ranks: list[int | None] = []
    metrics: dict[str, list[float | None]] = {}
    row = 0
    raw_lines = f.data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()  # the newline that ends the last line
    for number, raw_line in enumerate(raw_lines, start=f.first_line):
        try:
            line = raw_line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UsageError(
                f"{where}:{number}: not valid UTF-8 (byte {raw_line[exc.start]:#04x}"
                f" at column {exc.start + 1})",
                hint="metrics.history files are UTF-8 text; re-encode or drop the line",
            ) from None
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise UsageError(
                f"{where}:{number}: malformed JSON: {exc.msg} (column {exc.colno})"
                if isinstance(exc, json.JSONDecodeError)
                else f"{where}:{number}: malformed JSON: {exc}",
                hint="each line of a metrics.history file is one JSON object",
            ) from None
        if not isinstance(obj, dict):
            raise UsageError(
                f"{where}:{number}: expected a JSON object, got {type(obj).__name__}",
                hint="each line of a metrics.history file is one JSON object",
            )
        steps.append(_step(obj.get(req.step_field), where, number, req.step_field))
        stamp = obj.get(req.time_field)
        times.append(_micros(stamp, where, number, req.time_field))
        lines.append(number)
        rank = obj.get(RANK_FIELD)
        ranks.append(
            rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None
        )
        for key, value in obj.items():
            if key.startswith("_") or key in (req.step_field, req.time_field):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            try:
                number_value = float(value)
            except OverflowError:  # an integer literal beyond the float64 range
                number_value = math.inf if value > 0 else -math.inf
            # NaN and ±Infinity are kept as such: a diverged run's history is evidence.
            column = metrics.get(key)
            if column is None:
                column = metrics[key] = [None] * row
            column.append(number_value)
        row += 1
        for column in metrics.values():
            if len(column) < row:
                column.append(None)
    columns: dict[str, Any] = {
        _STEP: pa.array(steps, pa.int64()),
        _TIME: pa.array(times, pa.int64()),
        _LINE: pa.array(lines, pa.int64()),
    }
    if any(r is not None for r in ranks) and RANK_FIELD not in (req.step_field, req.time_field):
        columns[_RANK] = pa.array(ranks, pa.int64())
    for key, values in metrics.items():
        columns[key] = pa.array(values, pa.float64())
    return pa.table(columns)


def _step(value: Any, where: str, line: int, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{where}:{line}: {name} must be an integer, got {json.dumps(value)}")
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        raise UsageError(f"{where}:{line}: {name} must be an integer, got {value!r}")
    if value < 0:
        raise UsageError(f"{where}:{line}: {name} must be >= 0, got {value!r}")
    if value >= _STEP_LIMIT:
        raise UsageError(f"{where}:{line}: {name} must be below 2^63, got {value!r}")
    return int(value)


def _micros(value: Any, where: str, line: int, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(
            f"{where}:{line}: {name} must be epoch seconds (a finite number), got {value!r}"
        )
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not abs(seconds) < _MAX_SECONDS:
        raise UsageError(
            f"{where}:{line}: {name} must be epoch seconds (a finite number), got {value!r}"
        )
    return round(seconds * 1_000_000)


# -- the long metric rows ---------------------------------------------------------------


def _tag_prefix(part: _Part, req: ImportRequest) -> str:
    """The tags JSON of a metric row up to its line number (the only per-row tag)."""
    fixed = {
        "jsonl.history_file": part.history.path.name,
        "jsonl.history_path": part.history.given,
        "jsonl.importer": IMPORTER,
        "jsonl.raw_key": part.raw_key,
        CARD_TAG: card_of(part.name),
        STANDARD_TAG: "true" if is_standard(part.name) else "false",
    }
    fixed.update(req.row_tags)
    return json.dumps(fixed, sort_keys=True)[:-1] + ', "jsonl.history_line": "'


#: Rows per written row group. The tags JSON of 262,144 rows is ~70 MB, built and freed per
#: chunk, so the memory pool reuses its pages instead of faulting in a gigabyte of fresh ones.
_CHUNK_ROWS = 1 << 18
#: Columns that hold one value per part: written as dictionary arrays of one entry, so the
#: Parquet writer need not hash a million equal strings to find that out.
_CONSTANT = ("project", "run_group_id", "run_id", "metric_name", "source")


def _write_schema() -> pa.Schema:
    """The metric-row schema with the constant columns dictionary-typed (same Parquet columns)."""
    import pyarrow as pa

    base = arrow_schema()
    return pa.schema(
        [f.with_type(pa.dictionary(pa.int32(), f.type)) if f.name in _CONSTANT else f for f in base]
    )


def _metric_table(part: _Part, req: ImportRequest, start: int, length: int) -> pa.Table:
    """`MetricRow`s (contract §3.4) of rows [start, start+length) of one part."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rows = part.table.slice(start, length)
    n = rows.num_rows
    zeros = pa.repeat(pa.scalar(0, pa.int32()), n)

    def constant(value: str) -> pa.Array:
        return pa.DictionaryArray.from_arrays(zeros, pa.array([value], pa.string()))

    # Every row's tags are the same JSON object but for the line number: two constant halves
    # around the line joined in C, instead of serializing millions of dicts.
    rank = (
        # `, "tau.rank": "N"` where the row has a rank, nothing where it has none.
        pc.fill_null(
            pc.binary_join_element_wise(
                pa.scalar(f'", "{RANK_TAG}": "'), pc.cast(rows[_RANK], pa.string()), ""
            ),
            "",
        )
        if _RANK in rows.column_names
        else pa.scalar("")
    )
    tags = pc.binary_join_element_wise(
        pa.scalar(_tag_prefix(part, req)),
        pc.cast(rows[_LINE], pa.string()),
        rank,
        pa.scalar('"}'),
        "",
    )
    return pa.table(
        {
            "project": constant(req.project),
            "run_group_id": constant(req.group),
            "run_id": constant(req.run),
            "metric_name": constant(part.name),
            "step": rows[_STEP],
            "wall_time": rows[_TIME],
            "value": rows["value"],
            "unit": pa.nulls(n, pa.string()),
            "source": constant(req.source),
            "split": pa.nulls(n, pa.string()),
            "tags": tags,
        },
        schema=_write_schema(),
    )


def _summary(part: pa.Table) -> Summary:
    """Count, step range, min/max and the latest row (highest step, last in file order).

    NaN and ±Infinity are counted apart (`non_finite_count`) and left out of min/max, as the
    summaries of `track` do; the latest value is the latest row's, whatever it holds.
    """
    import pyarrow.compute as pc

    steps = part[_STEP]
    values = part["value"]
    n = part.num_rows
    finite = pc.is_finite(values)
    finite_count = pc.sum(finite).as_py() or 0
    min_step = pc.min(steps).as_py()
    max_step = pc.max(steps).as_py()
    if max_step is None:
        last = n - 1
    else:
        hits = pc.indices_nonzero(pc.fill_null(pc.equal(steps, max_step), False))
        last = hits[len(hits) - 1].as_py()
    minmax = pc.min_max(pc.filter(values, finite)).as_py()
    return Summary(
        count=n,
        finite_count=finite_count,
        non_finite_count=n - finite_count,
        min_step=min_step,
        max_step=max_step,
        latest_step=max_step,
        latest_wall_time=part[_TIME][last].as_py(),
        latest_value=values[last].as_py(),
        min_value=minmax["min"],
        max_value=minmax["max"],
    )


def _write(parts: list[_Part], req: ImportRequest, path: Path) -> str:
    """Stream the parts to Parquet in row groups of one metric each; returns the SHA-256.

    The rows are built a chunk at a time: the tags of 5,000,000 rows held at once would be
    over a gigabyte.
    """
    import pyarrow.parquet as pq

    schema = _write_schema()
    with pq.ParquetWriter(
        path,
        schema,
        compression="zstd",
        use_dictionary=list(_CONSTANT),
        # Steps and wall times rise row by row: delta-packed they are a fraction of the
        # bytes to compress and to read back.
        column_encoding={"step": "DELTA_BINARY_PACKED", "wall_time": "DELTA_BINARY_PACKED"},
        # Statistics of the per-row tags JSON serve no reader and cost a compare per row.
        write_statistics=[name for name in schema.names if name != "tags"],
        # The file's Arrow schema stays the contract's plain strings; the dictionary types
        # above are how these rows are built, not what a reader gets back.
        store_schema=False,
    ) as out:
        for part in parts:
            for start in range(0, part.table.num_rows, _CHUNK_ROWS):
                out.write_table(_metric_table(part, req, start, _CHUNK_ROWS))
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
