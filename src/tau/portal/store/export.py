"""`experiment export`: a portable copy of the packet, and `export adx`: offline ADX files.

Performs I/O. Both hold the writer lock while they read so the copy is one consistent
state; `export adx` writes files only (no credentials, no network): ADX is a downstream
projection and the store stays authoritative.
"""

from __future__ import annotations

import csv
import json
import shutil
import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.portal import jsonsafe
from tau.portal.errors import UsageError
from tau.portal.store import schema
from tau.portal.store.core import Store
from tau.portal.store.lock import WriterLock

EXPORT_KIND = "tau.exp.export"
EXPORT_SCHEMA = "tau.exp.export.v0"
PROJECTION_VERSION = "tau.exp.adx.v1"
CMD = "taugrid-portal experiment"


def _check_out(store: Store, out: Path, force: bool) -> None:
    src = store.root.resolve()
    dst = out.resolve()
    if dst == src:
        raise UsageError("--out must differ from --store")
    if src in dst.parents:
        raise UsageError("--out must not be inside --store")
    if dst.exists() and not dst.is_dir():
        raise UsageError(f"--out {out} is not a directory")
    if dst.exists() and any(dst.iterdir()) and not force:
        raise UsageError(f"--out {out} is not empty; pass --force to overwrite packet files")


@dataclass(frozen=True)
class Exported:
    source: str
    destination: str
    files: int
    dirs: int


def _make_out(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f'--out "{out}": cannot create the directory ({exc.strerror or exc})',
            hint="choose a directory you can write to",
        ) from None


def export_packet(store: Store, out: Path, *, force: bool) -> Exported:
    _check_out(store, out, force)
    _make_out(out)
    with WriterLock(store.lock_path, timeout=store.lock_timeout):
        shutil.copy2(store.root / schema.MANIFEST, out / schema.MANIFEST)
        # The SQLite backup API copies a consistent index even if a reader holds it open.
        target = sqlite3.connect(out / schema.INDEX)
        store.conn.backup(target)
        target.close()
        for sub in (schema.APPEND_LOG, schema.METRICS, schema.ARTIFACTS):
            if (store.root / sub).exists():
                shutil.copytree(store.root / sub, out / sub, dirs_exist_ok=True)
    readme = {
        "kind": EXPORT_KIND,
        "schema_version": EXPORT_SCHEMA,
        "source": str(store.root),
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "local_usage": [
            f"{CMD} search --store {out}",
            f"{CMD} status <target> --store {out}",
            f"{CMD} stellar <target> --store {out} -o html > stellar.html",
            f"{CMD} sql 'select * from runs' --store {out}",
        ],
    }
    (out / "README.json").write_text(json.dumps(readme, indent=2) + "\n", encoding="utf-8")
    files = sum(1 for p in out.rglob("*") if p.is_file())
    dirs = sum(1 for p in out.rglob("*") if p.is_dir())
    return Exported(str(store.root), str(out), files, dirs)


# -- ADX projection ---------------------------------------------------------------------------

_META = (
    ("exported_at", "datetime"),
    ("source_store_id", "string"),
    ("source_store_path", "string"),
    ("source_schema_version", "string"),
    ("projection_version", "string"),
)
_DATETIME = {"created_at", "started_at", "completed_at", "time", "wall_time"}
_LONG = {"gpu_count", "step", "size_bytes", "rank", "row_count", "min_step", "max_step"}
_REAL = {"queue_wait_seconds", "gpu_hours", "estimated_cost", "value"}
_ARTIFACT_CORE = tuple(
    c
    for c in schema.TABLES["artifacts"][1]
    if c not in ("durable_ref", "content_type", "step", "tags", "rank")
)
_TABLES: dict[str, tuple[str, tuple[str, ...]]] = {
    "TauExpRuns": ("runs", schema.TABLES["runs"][1]),
    "TauExpRunContext": ("run_context", schema.TABLES["run_context"][1]),
    "TauExpMetricFiles": ("metric_files", schema.TABLES["metric_files"][1]),
    "TauExpArtifacts": ("artifacts", _ARTIFACT_CORE),
    "TauExpEvents": ("events", schema.TABLES["events"][1]),
    "TauExpObservations": ("observations", schema.TABLES["observations"][1]),
    "TauExpConfigs": ("configs", schema.TABLES["configs"][1]),
}
# The ADX metric table is the metric row with the file it came from and its experiment.
_METRIC_COLUMNS = (
    "metric_file_id",
    "metric_file_path",
    "project",
    "experiment_id",
    *schema.METRIC_COLUMNS[1:],
)
_QUOTED = {"project", "time", "type"}


def _kql_type(table: str, column: str) -> str:
    if column in _DATETIME and table in ("TauExpRuns", "TauExpEvents", "TauExpMetrics"):
        return "datetime"
    if table == "TauExpRunContext" and column == "gpu_count":
        return "long"
    if column in _REAL and table in ("TauExpRunContext", "TauExpMetrics"):
        return "real"
    if table == "TauExpMetrics" and column == "step":
        return "long"
    return "string"


def _kql_name(column: str) -> str:
    return f"['{column}']" if column in _QUOTED else column


def schema_kql() -> str:
    lines = []
    tables = dict(_TABLES) | {"TauExpMetrics": ("", _METRIC_COLUMNS)}
    for name, (_, columns) in tables.items():
        cols = [f"{c}:{t}" for c, t in _META] + [
            f"{_kql_name(c)}:{_kql_type(name, c)}" for c in columns
        ]
        lines.append(f".create-merge table {name} ({', '.join(cols)})")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class AdxTable:
    table: str
    rows: int
    file: str


def export_adx(
    store: Store, out: Path | None, *, fmt: str, force: bool, dry_run: bool
) -> dict[str, Any]:
    if fmt not in ("jsonl", "csv"):
        raise UsageError(f"--format must be one of: jsonl, csv; got {fmt!r}")
    if out is None and not dry_run:
        raise UsageError("--out is required (or pass --dry-run to count rows)")
    if out is not None and not dry_run:
        _check_out(store, out, force)
        _make_out(out)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {
        "exported_at": stamp,
        "source_store_id": store.experiment_id or store.root.name,
        "source_store_path": str(store.root),
        "source_schema_version": str(store.manifest.get("schema_version")),
        "projection_version": PROJECTION_VERSION,
    }
    results: list[AdxTable] = []
    for name, (source, columns) in _TABLES.items():
        cols = ", ".join(f'"{c}"' for c in columns)
        rows = store.query(f'SELECT {cols} FROM "{source}" ORDER BY 1')
        results.append(_emit(out, name, fmt, columns, (meta | r for r in rows), len(rows), dry_run))
    results.append(_emit_metrics(store, out, fmt, meta, dry_run))
    if not dry_run and out is not None:
        (out / "schema.kql").write_text(schema_kql(), encoding="utf-8")
        manifest = {
            "projection_version": PROJECTION_VERSION,
            "exported_at": stamp,
            "source_store_path": str(store.root),
            "source_schema_version": meta["source_schema_version"],
            "format": fmt,
            "tables": [{"table": r.table, "rows": r.rows, "file": r.file} for r in results],
        }
        (out / "projection_manifest.json").write_text(
            json.dumps(manifest, indent=2) + "\n", encoding="utf-8"
        )
    return {
        "projection_version": PROJECTION_VERSION,
        "source": str(store.root),
        "destination": str(out) if out is not None else "",
        "format": fmt,
        "dry_run": dry_run,
        "tables": [r.__dict__ for r in results],
        "note": "downstream projection only; expstore remains authoritative",
    }


def _emit(
    out: Path | None,
    name: str,
    fmt: str,
    columns: tuple[str, ...],
    rows: Any,
    count: int,
    dry_run: bool,
) -> AdxTable:
    if dry_run or out is None:
        return AdxTable(name, count, "(dry-run)")
    path = out / f"{name}.{fmt}"
    header = [c for c, _ in _META] + list(columns)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        if fmt == "csv":
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(header)
            for row in rows:
                writer.writerow(["" if row.get(c) is None else row.get(c) for c in header])
        else:
            for row in rows:
                # A NaN or infinite metric value is null: JSON (and Kusto's JSON ingestion) has
                # no spelling for it; the summaries count it as non-finite.
                line = jsonsafe.dumps({c: row.get(c) for c in header}, ensure_ascii=False)
                fh.write(line + "\n")
    return AdxTable(name, count, str(path))


def _emit_metrics(
    store: Store, out: Path | None, fmt: str, meta: dict[str, str], dry_run: bool
) -> AdxTable:
    files = store.query(
        "SELECT f.file_id, f.path, f.row_count, r.experiment_id FROM metric_files f "
        "LEFT JOIN runs r ON r.run_id = f.run_id ORDER BY f.file_id"
    )
    if dry_run or out is None:
        return AdxTable("TauExpMetrics", sum(int(f["row_count"] or 0) for f in files), "(dry-run)")
    import pyarrow.parquet as pq

    from tau.portal.store.metrics import micros_to_rfc3339

    def rows() -> Any:
        for f in files:
            table = pq.read_table(store.root / str(f["path"]), partitioning=None)
            for row in table.to_pylist():
                yield (
                    meta
                    | row
                    | {
                        "metric_file_id": f["file_id"],
                        "metric_file_path": f["path"],
                        "experiment_id": f["experiment_id"] or "",
                        "wall_time": micros_to_rfc3339(row.get("wall_time")),
                    }
                )

    count = 0

    def counted() -> Any:
        nonlocal count
        for row in rows():
            count += 1
            yield row

    result = _emit(out, "TauExpMetrics", fmt, _METRIC_COLUMNS, counted(), 0, False)
    return AdxTable(result.table, count, result.file)
