"""`experiment import jsonl`: `metrics.history` JSONL files into one Parquet metric file.

Performs I/O. The row format is one JSON object per line, `{"_step":0,"_timestamp":
1760000000.125,"loss":1.0}`: numeric fields are metrics, `_`-prefixed fields are metadata.
Files are parsed with pyarrow's multithreaded JSON reader; any file it cannot take as it is
(a blank line, a non-number, a non-finite value) is re-read line by line, which also finds
the line to name in the error.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tau.portal.errors import UsageError
from tau.portal.store import schema
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


@dataclass
class _History:
    path: Path
    given: str
    data: bytes
    sha256: str


def expand(patterns: Sequence[str]) -> list[_History]:
    """Each `--history` value is a path or a glob; every one must name at least one file."""
    if not patterns:
        raise UsageError("--history is required", hint="pass --history PATH (repeatable, globs ok)")
    seen: dict[Path, _History] = {}
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = sorted(glob.glob(os.path.expanduser(pattern), recursive=True))
            if not matches:
                raise UsageError(f"--history {pattern!r}: no files match")
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

    tables: list[pa.Table] = []
    summaries: dict[str, Summary] = {}
    for f in files:
        wide = parse_history(f, req)
        for name, part in _long_tables(wide, f, req):
            tables.append(part)
            new = _summary(part)
            summaries[name] = summaries[name].merge(new) if name in summaries else new
    if not summaries:
        raise UsageError(
            "JSONL history files contain no scalar metrics",
            hint="each line needs at least one numeric field not starting with '_': "
            + ", ".join(names),
        )
    rows = sum(t.num_rows for t in tables)
    metric_names = sorted(summaries)
    if req.dry_run:
        return ImportResult("planned", req.run, rows, names, rel, key, metric_names)

    with store.writer() as w:
        if idempotent_reuse(w, key, digest) is not None:  # a concurrent importer won
            return ImportResult("reused", req.run, rows, names, rel, key, metric_names)
        tmp = w.tmp_path(f"{file_id}.parquet")
        file_digest, min_step, max_step = _write(tables, tmp)
        w.publish(tmp, store.root / rel)
        ensure_experiment(
            w,
            experiment,
            project=req.project,
            source="explicit" if req.experiment or store.experiment_id else "run_group",
        )
        ensure_group(w, req.group, project=req.project)
        put_run(
            w,
            {
                "run_id": req.run,
                "project": req.project,
                "experiment_id": experiment,
                "run_group_id": req.group,
                "state": req.state,
                "owner": req.owner,
                "created_at": w.stamp,
            },
            defaulted=("created_at", "owner") + (() if req.state_given else ("state",)),
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
                "min_step": min_step,
                "max_step": max_step,
                "created_at": w.stamp,
            },
            summaries,
        )
        record_idempotency(w, key, "import jsonl", "run", req.run, digest)
    return ImportResult("imported", req.run, rows, names, rel, key, metric_names)


def _copy_history(w: Any, store: Store, run: str, f: _History) -> None:
    rel = f"{schema.ARTIFACTS}/{run}/jsonl/{f.sha256[:12]}-{f.path.name}"
    final = store.root / rel
    if not final.exists():
        tmp = w.tmp_path(f.path.name)
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


def parse_history(f: _History, req: ImportRequest) -> pa.Table:
    """The file as a wide table: step, time, line and one float64 column per metric."""
    fast = _parse_fast(f, req)
    return fast if fast is not None else _parse_slow(f, req)


def _parse_fast(f: _History, req: ImportRequest) -> pa.Table | None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    data = f.data
    if not data.strip() or b"\n\n" in data or data.startswith(b"\n") or b"\r" in data:
        return None
    if b"NaN" in data or b"Infinity" in data:
        return None
    try:
        raw = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(block_size=1 << 22))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    columns: dict[str, pa.Array] = {}
    for name in raw.column_names:
        col = raw[name]
        kind = col.type
        if name == req.step_field:
            if pa.types.is_integer(kind):
                columns["__step"] = pc.cast(col, pa.int64())
                continue
            return None  # a non-integer step is an error the slow path can name
        if name == req.time_field:
            if pa.types.is_integer(kind) or pa.types.is_floating(kind):
                columns["__time"] = pc.cast(
                    pc.round(pc.multiply(pc.cast(col, pa.float64()), 1e6)), pa.int64()
                )
                continue
            return None
        if name.startswith("_"):
            continue
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            values = pc.cast(col, pa.float64())
            if pc.all(pc.is_finite(pc.drop_null(values))).as_py() is False:
                return None  # the slow path names the line of the non-finite value
            columns[name] = values
        elif pa.types.is_null(kind) or pa.types.is_boolean(kind) or pa.types.is_string(kind):
            continue
        else:
            continue  # nested values carry no scalar metric
    n = raw.num_rows
    columns.setdefault("__step", pa.nulls(n, pa.int64()))
    columns.setdefault("__time", pa.nulls(n, pa.int64()))
    columns["__line"] = pa.array(range(1, n + 1), pa.int64())
    return pa.table(columns)


def _parse_slow(f: _History, req: ImportRequest) -> pa.Table:
    import pyarrow as pa

    where = f.given
    steps: list[int | None] = []
    times: list[int | None] = []
    lines: list[int] = []
    metrics: dict[str, list[float | None]] = {}
    text = f.data.decode("utf-8", errors="strict") if f.data else ""
    row = 0
    for number, line in enumerate(text.splitlines(), start=1):
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
        for key, value in obj.items():
            if key.startswith("_") or key in (req.step_field, req.time_field):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            number_value = float(value)
            if not math.isfinite(number_value):
                raise UsageError(
                    f"{where}:{number}: {key}: non-finite value {value!r}",
                    hint="metrics must be finite numbers; drop or fix the row",
                )
            column = metrics.get(key)
            if column is None:
                column = metrics[key] = [None] * row
            column.append(number_value)
        row += 1
        for column in metrics.values():
            if len(column) < row:
                column.append(None)
    columns: dict[str, Any] = {
        "__step": pa.array(steps, pa.int64()),
        "__time": pa.array(times, pa.int64()),
        "__line": pa.array(lines, pa.int64()),
    }
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
    return int(value)


def _micros(value: Any, where: str, line: int, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(
            f"{where}:{line}: {name} must be epoch seconds (a finite number), got {value!r}"
        )
    return round(float(value) * 1_000_000)


# -- the long metric rows ---------------------------------------------------------------


def _long_tables(wide: pa.Table, f: _History, req: ImportRequest) -> list[tuple[str, pa.Table]]:
    """One `MetricRow` table per metric column (rows where the metric is present)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    base = {
        "jsonl.history_file": f.path.name,
        "jsonl.history_path": f.given,
        "jsonl.importer": IMPORTER,
    }
    for raw_key in sorted(c for c in wide.column_names if not c.startswith("__")):
        values = wide[raw_key]
        mask = pc.is_valid(values)
        part = wide.select(["__step", "__time", "__line", raw_key]).filter(mask)
        n = part.num_rows
        if n == 0:
            continue
        name = req.metric_prefix + raw_key
        head = json.dumps(base | {"jsonl.raw_key": raw_key}, sort_keys=True)
        # Tags are a JSON object per row that differs only in the line number: build them
        # from two constant halves instead of serializing millions of dicts.
        prefix = head[:-1] + ', "jsonl.history_line": "'
        tags = pc.binary_join_element_wise(
            pa.scalar(prefix), pc.cast(part["__line"], pa.string()), pa.scalar('"}'), ""
        )
        table = pa.table(
            {
                "project": _const(req.project, n),
                "run_group_id": _const(req.group, n),
                "run_id": _const(req.run, n),
                "metric_name": _const(name, n),
                "step": part["__step"],
                "wall_time": part["__time"],
                "value": part[raw_key],
                "unit": pa.nulls(n, pa.string()),
                "source": _const(req.source, n),
                "split": pa.nulls(n, pa.string()),
                "tags": tags,
            },
            schema=arrow_schema(),
        )
        out.append((name, table))
    return out


def _const(value: str, n: int) -> pa.Array:
    """A string column of one value, built in C rather than from a Python list."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.fill_null(pa.nulls(n, pa.string()), value)


def _summary(part: pa.Table) -> Summary:
    import pyarrow.compute as pc

    steps = part["step"]
    values = part["value"]
    n = part.num_rows
    min_step = pc.min(steps).as_py()
    max_step = pc.max(steps).as_py()
    if max_step is None:
        last = n - 1
    else:
        hits = pc.indices_nonzero(pc.fill_null(pc.equal(steps, max_step), False))
        last = hits[len(hits) - 1].as_py()
    minmax = pc.min_max(values).as_py()
    return Summary(
        count=n,
        finite_count=n,
        non_finite_count=0,
        min_step=min_step,
        max_step=max_step,
        latest_step=max_step,
        latest_wall_time=part["wall_time"][last].as_py(),
        latest_value=values[last].as_py(),
        min_value=minmax["min"],
        max_value=minmax["max"],
    )


def _write(tables: list[pa.Table], path: Path) -> tuple[str, int | None, int | None]:
    """Stream the metric tables (one row group each) to Parquet; digest and step range."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    min_step: int | None = None
    max_step: int | None = None
    with pq.ParquetWriter(
        path,
        arrow_schema(),
        compression="zstd",
        use_dictionary=["project", "run_group_id", "run_id", "metric_name", "source"],
    ) as out:
        for table in tables:
            out.write_table(table, row_group_size=max(table.num_rows, 1))
            lo, hi = pc.min_max(table["step"]).as_py().values()
            if lo is not None:
                min_step = lo if min_step is None else min(min_step, lo)
                max_step = hi if max_step is None else max(max_step, hi)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest(), min_step, max_step
