"""`experiment import jsonl --run-per-file`: a sweep's histories, one run per file, in one call.

Performs I/O. A sweep leaves one `metrics.history` file per run; importing them one process at
a time pays the interpreter and the store's opening per run (50 runs: about a minute). Here
every file is imported by `jsonl.import_jsonl` in this process, one run each, so each run is
the same record a single import of that file writes (re-imports are recognised the same way).

A run's id comes from its file's name (`lr-0.1-seed-3.jsonl` → `lr-0.1-seed-3`) or, with
`--run-field NAME`, from that field of the file's first row that has it (for sweeps that write
`<run>/metrics.history.jsonl`, where every file has the same name).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tau.portal.capture.jsonl import ImportRequest, ImportResult, expand, import_jsonl
from tau.portal.errors import UsageError
from tau.portal.store.core import Store
from tau.portal.store.ids import validate_id


def run_from_name(path: Path) -> str:
    """The run id a history file's name gives: the name without its `.jsonl` suffix."""
    name = path.name
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else name


def run_from_field(path: Path, data: bytes, field: str) -> str:
    """The `field` of the first row that has it (a string or an integer), or a usage error."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except ValueError:
            continue  # the import names a malformed line with its reason
        if isinstance(row, dict) and row.get(field) not in (None, ""):
            value = row[field]
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise UsageError(
                    f"{path}:{number}: {field} must be a run id (a string), got {value!r}"
                )
            return str(value)
    raise UsageError(
        f"{path}: no row has the field {field!r} that names the run",
        hint=f"write {field} into the history's rows, or drop --run-field to take the run id "
        "from the file name",
    )


def import_per_file(
    store: Store, base: ImportRequest, patterns: Sequence[str], run_field: str | None = None
) -> list[ImportResult]:
    """Import every history file matched by `patterns` as a run of its own.

    Every run id is worked out and checked before anything is written, so a sweep with one
    badly named file imports nothing; two files naming the same run are refused too.

    Raises:
        UsageError: a file gives no valid run id, two files give the same one, or a history
            is malformed (as a single import reports it).
    """
    files = expand(patterns)
    runs: dict[str, Path] = {}
    plan: list[tuple[str, Path]] = []
    for f in files:
        run = run_from_field(f.path, f.data, run_field) if run_field else run_from_name(f.path)
        try:
            validate_id("run", run)
        except UsageError as exc:
            source = f"field {run_field}" if run_field else "file name"
            raise UsageError(
                f"{f.given}: {exc.message} (the run id comes from its {source})",
                hint="rename the file to a run id (lowercase letters, digits, '-', '_', '.'), "
                "or name the run in a field of the rows with --run-field",
            ) from None
        if run in runs:
            raise UsageError(
                f"{f.given} and {runs[run]} both name run {run!r}",
                hint="one file per run: rename one of them, or use --run-field",
            )
        runs[run] = f.path
        plan.append((run, f.path))
    return [import_jsonl(store, replace(base, run=run, history=[str(path)])) for run, path in plan]
