"""`taugrid-portal experiment`: write and read the experiment store from the terminal.

Performs I/O (terminal, files). The v0 experiment store is path backed: a portable packet
with manifest.json, index.sqlite, JSONL mirrors, metrics/, and artifacts/.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

from cyclopts import App, Parameter

from tau.portal.cli.output import choose, emit_rows, json_text, pairs_text
from tau.portal.errors import NotBuilt, UsageError
from tau.portal.store.records import as_row

app = App(
    name="experiment",
    help="Experiment store: runs, metrics, artifacts and their lifecycle.\n\n"
    "The v0 experiment store is path backed: a portable packet with manifest.json, "
    "index.sqlite, JSONL mirrors, metrics/, and artifacts/.",
)

Store = Annotated[str | None, Parameter(name="--store", help="experiment store root")]
Output = Annotated[str, Parameter(name=["--output", "-o"])]
Json = Annotated[bool, Parameter(name="--json", negative="", help="Same as -o json.")]
Many = Annotated[list[str] | None, Parameter(negative="")]
Flag = Annotated[bool, Parameter(negative="")]

CMD = "taugrid-portal experiment"


def _open(store: str | None) -> Any:
    """The folder store, for commands that write it (a team store URL is refused)."""
    from tau.portal.store.core import Store as _Store
    from tau.portal.store.resolve import resolve_root

    return _Store.open(resolve_root(store))


def _read(store: str | None) -> Any:
    """The store to read: a folder or a team store URL (`interface.Store` either way)."""
    from tau.portal.store.opener import open_store

    return open_store(store)


def _tags(values: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f'--tag: expected key=value, got "{value}"')
        out.append((key, val))
    return out


def _filters(values: list[str] | None) -> list[Any]:
    from tau.portal.store.lifecycle import parse_metric_filter

    return [parse_metric_filter(v) for v in values or []]


# -- init ---------------------------------------------------------------------------------


@app.command(name="init")
def init(
    name: str | None = None,
    /,
    *,
    store: Store = None,
    project: str | None = None,
    description: str = "",
    group: str = "default",
    idempotency_key: str | None = None,
    output: Output = "table",
) -> int:
    """Create a store, or attach to an existing one; create or migrate a team store's schema.

    Args:
        name: The store's default experiment id (a folder store only).
        project: Project of the store (default: NAME).
        description: Description of the experiment.
        group: The first run group.
        idempotency_key: Reuse the earlier result when the same request is repeated.
        output: table or json.
    """
    from tau.portal.store.core import Store as _Store
    from tau.portal.store.ids import validate_id
    from tau.portal.store.location import TeamURL, resolve_store
    from tau.portal.store.resolve import resolve_root
    from tau.portal.store.write import (
        ensure_experiment,
        ensure_group,
        idempotent_reuse,
        record_idempotency,
        request_hash,
    )

    fmt = choose(output, ("table", "json"))
    where = resolve_store(store)
    if isinstance(where, TeamURL):
        return _init_team(where, name, fmt)
    if not name:
        raise UsageError("init: NAME is required for a folder store (its default experiment)")
    validate_id("experiment", name)
    proj = project or name
    validate_id("project", proj)
    validate_id("group", group)
    root = resolve_root(store)
    opened, created = _Store.init(root, project=proj, experiment_id=name)
    digest = request_hash(
        {"command": "init", "name": name, "project": proj, "group": group, "desc": description}
    )
    reused = idempotent_reuse(opened, idempotency_key, digest) is not None
    if not reused:
        with opened.writer() as w:
            ensure_experiment(w, name, project=proj, description=description, source="explicit")
            ensure_group(w, group, project=proj)
            record_idempotency(w, idempotency_key, "init", "experiment", name, digest)
    result = {
        "action": "initialized" if created else "attached",
        "store_path": str(root),
        "experiment_id": name,
        "project": proj,
        "run_group_id": group,
        "reused": reused,
        "status_command": f"{CMD} status {name} --store {root} -o json",
    }
    if idempotency_key:
        result["idempotency_key"] = idempotency_key
    if fmt == "json":
        sys.stdout.write(json_text(result))
    else:
        sys.stdout.write(
            f"{result['action']} experiment store {root}\n"
            f"experiment: {name}\n"
            f"group:      {group}\n"
            f"status:     {result['status_command']}\n"
        )
    return 0


def _init_team(url: Any, name: str | None, fmt: str) -> int:
    """`init --store postgresql://...`: create the team store's schema or migrate it."""
    from tau.portal.store import teamschema
    from tau.portal.store.team import TeamStore

    if name:
        raise UsageError(
            f"init {name}: a team store holds every experiment pushed to it and takes no NAME",
            hint=f"run `{CMD} init --store {url}`, then push runs with `{CMD} push`",
        )
    opened, before = TeamStore.init(url)
    opened.close()
    if before == 0:
        action = "initialized"
    elif before < teamschema.VERSION:
        action = "migrated"
    else:
        action = "attached"
    result = {
        "action": action,
        "store_path": str(url),
        "schema_version": teamschema.VERSION_NAME,
        "from_schema_version": before,
        "push_command": f"{CMD} push --all --store DIR --to {url}",
    }
    if fmt == "json":
        sys.stdout.write(json_text(result))
    else:
        sys.stdout.write(
            f"{action} team store {url}\n"
            f"schema:     {teamschema.VERSION_NAME}"
            + (f" (from v{before})" if action == "migrated" else "")
            + f"\npush:       {result['push_command']}\n"
        )
    return 0


# -- push ---------------------------------------------------------------------------------


@app.command(name="push")
def push(
    *targets: str,
    all: Flag = False,
    to: str | None = None,
    store: Store = None,
    batch: int = 50,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Copy runs from this folder store to a team store; a second push changes nothing.

    Args:
        targets: Run groups, runs or experiments to push.
        all: Push every run of the folder store.
        to: The team store URL (postgresql://USER@HOST:PORT/DB?objects=s3://BUCKET/PREFIX).
        batch: Runs per transaction (1-1000).
        output: table or json.
    """
    from tau.portal.store.core import Store as _Store
    from tau.portal.store.location import parse_team_url
    from tau.portal.store.push import named_scopes, select_runs
    from tau.portal.store.push import push as run_push
    from tau.portal.store.resolve import resolve_root
    from tau.portal.store.team import TeamStore

    fmt = choose(output, ("table", "json"), json_flag=json)
    if not to:
        raise UsageError(
            "push: --to is required", hint="e.g. --to postgresql://me@db:5432/tau?objects=s3://b/p"
        )
    if bool(targets) == all:
        raise UsageError("push: name TARGETs (run groups, runs, experiments) or pass --all")
    if not 1 <= batch <= 1000:
        raise UsageError(f"push: --batch must be between 1 and 1000; got {batch}")
    url = parse_team_url(to, flag="--to")
    source = _Store.open(resolve_root(store))
    run_ids = select_runs(source, targets, all_runs=all)
    scopes = named_scopes(source, targets, all_runs=all)
    team = TeamStore.open(url)
    try:
        result = run_push(source, team, run_ids, scopes=scopes, batch=batch)
    finally:
        team.close()
        source.close()
    whole = {
        "source": result.source,
        "target": result.target,
        "runs": len(run_ids),
        "pushed": len(result.pushed),
        "unchanged": len(result.unchanged),
        "files": result.files,
        "bytes": result.bytes,
        "pushed_run_ids": result.pushed,
    }
    if fmt == "json":
        sys.stdout.write(json_text(whole))
    else:
        sys.stdout.write(
            f"pushed {len(result.pushed)} runs ({result.files} files, {result.bytes} bytes) "
            f"to {result.target}\n"
            f"unchanged: {len(result.unchanged)} runs already there\n"
        )
    return 0


# -- track --------------------------------------------------------------------------------


@app.command(name="track")
def track(
    run: str,
    /,
    *,
    store: Store = None,
    project: str | None = None,
    experiment: str | None = None,
    group: str | None = None,
    parent_run: str | None = None,
    state: str | None = None,
    owner: str | None = None,
    created_at: str | None = None,
    started_at: str | None = None,
    completed_at: str | None = None,
    config_hash: str | None = None,
    code_sha: str | None = None,
    image_digest: str | None = None,
    command: str | None = None,
    result_uri: str | None = None,
    config: Annotated[list[Path] | None, Parameter(negative="")] = None,
    config_format: str | None = None,
    artifact: Many = None,
    runtime: str | None = None,
    dependencies: str | None = None,
    log_uri: str | None = None,
    tag: Many = None,
    metric: Many = None,
    step: int | None = None,
    wall_time: str | None = None,
    metric_source: str = "tau",
    split: str | None = None,
    unit: str | None = None,
    idempotency_key: str | None = None,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Record run metadata, configs, artifact pointers, tags and scalar metrics.

    Args:
        run: Run id.
        project: Project (default: tau.yaml experiment.project, the store's project, else default).
        experiment: Experiment id (default: tau.yaml experiment.name, else the store's experiment).
        group: Run group (default: tau.yaml experiment.group, else default).
        parent_run: Parent run id (retry/lineage).
        state: Run state (default succeeded).
        created_at: RFC3339.
        started_at: RFC3339.
        completed_at: RFC3339.
        config_hash: Used when no --config file is given.
        command: Stored as tau_command.
        config: Config file (repeatable); hashed and indexed.
        config_format: json, yaml or raw (default: from the file extension).
        artifact: Repeatable: a URI, type:name=URI, or a JSON object.
        runtime: JSON or text; goes into the run context.
        dependencies: JSON or text; goes into the run context.
        log_uri: Goes into the run context.
        tag: key=value (repeatable).
        metric: name=value (repeatable).
        step: Step for all --metric rows.
        wall_time: RFC3339 time of the --metric rows.
        metric_source: Source of the --metric rows.
        idempotency_key: Reuse the earlier result when the same request is repeated.
        output: table or json.
    """
    from tau.portal.capture.defaults import discover
    from tau.portal.capture.track import TrackRequest, track_run

    fmt = choose(output, ("table", "json"), json_flag=json)
    opened = _open(store)
    found = discover(Path.cwd())
    req = TrackRequest(
        run=run,
        project=project or found.project or opened.project,
        experiment=experiment or found.experiment or "",
        group=group or found.group or "default",
        parent_run=parent_run,
        state=state or "succeeded",
        state_given=state is not None,
        owner=owner,
        created_at=created_at,
        started_at=started_at,
        completed_at=completed_at,
        config_hash=config_hash,
        code_sha=code_sha,
        image_digest=image_digest,
        command=command,
        result_uri=result_uri,
        configs=list(config or []),
        config_format=config_format,
        artifacts=list(artifact or []),
        runtime=runtime,
        dependencies=dependencies,
        log_uri=log_uri,
        tags=dict(_tags(tag)),
        metrics=list(metric or []),
        step=step,
        wall_time=wall_time,
        metric_source=metric_source,
        split=split,
        unit=unit,
        idempotency_key=idempotency_key,
    )
    result = track_run(opened, req)
    if fmt == "json":
        sys.stdout.write(json_text(as_row(result)))
        return 0
    rows: list[tuple[str, Any]] = [
        ("run", result.run_id),
        ("created_run", result.created_run),
        ("configs", result.configs),
        ("artifacts", result.artifacts),
        ("tags", result.tags),
        ("metric_files", result.metric_files),
        ("metric_rows", result.metric_rows),
        ("reused", result.reused),
    ]
    if result.idempotency_key:
        rows.append(("idempotency_key", result.idempotency_key))
    sys.stdout.write(pairs_text(rows))
    return 0


# -- import jsonl -------------------------------------------------------------------------

import_app = App(name="import", help="Import scalar history into the store.")
app.command(import_app)


@import_app.command(name="jsonl")
def import_jsonl(
    *,
    store: Store = None,
    run: str | None = None,
    history: Many = None,
    project: str | None = None,
    experiment: str | None = None,
    group: str | None = None,
    owner: str = "jsonl-import",
    state: str | None = None,
    metric_prefix: str = "",
    source: str = "jsonl",
    tag: Many = None,
    step_field: str = "_step",
    time_field: str = "_timestamp",
    idempotency_key: str | None = None,
    dry_run: Flag = False,
    run_per_file: Flag = False,
    run_field: str | None = None,
    created_at: str | None = None,
    completed_at: str | None = None,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Import JSONL scalar history (metrics.history rows: _step, _timestamp, numeric metrics).

    A sweep imports in one call with --run-per-file: every matched file is a run of its own,
    named by its file name (run-01.jsonl is run run-01) or by --run-field.

    Args:
        run: Run id (default: tau.yaml run.name, else its top-level name).
        history: JSONL file or glob (repeatable, required).
        project: Project (default: tau.yaml experiment.project, the store's project, else default).
        experiment: Experiment id (default: tau.yaml experiment.name).
        group: Run group (default: tau.yaml experiment.group, else default).
        owner: Run owner.
        state: Run state (default succeeded).
        metric_prefix: Prefix added to every metric name.
        source: Metric source.
        tag: key=value run tag (repeatable).
        step_field: Field holding the step.
        time_field: Field holding the wall time in epoch seconds.
        idempotency_key: Default jsonl-<run>-<hash>.
        dry_run: Parse and plan; write nothing.
        run_per_file: One run per history file, its id from the file name (or --run-field).
        run_field: Row field naming each file's run (implies --run-per-file).
        created_at: Run creation time, RFC3339 (default: the history's first _timestamp).
        completed_at: Run completion time, RFC3339 (default: the history's last _timestamp).
        output: table or json.
    """
    from tau.portal.capture.defaults import discover
    from tau.portal.capture.jsonl import ImportRequest
    from tau.portal.capture.jsonl import import_jsonl as run_import
    from tau.portal.capture.sweep import import_per_file
    from tau.portal.capture.track import stamp

    fmt = choose(output, ("table", "json"), json_flag=json)
    per_file = run_per_file or run_field is not None
    if per_file and run:
        raise UsageError(
            "--run cannot be combined with --run-per-file or --run-field",
            hint="each history file names its own run; drop --run, or import one run at a time",
        )
    if per_file and idempotency_key:
        raise UsageError(
            "--idempotency-key cannot be combined with --run-per-file (one key per run)",
            hint="drop --idempotency-key: each run's import gets its own jsonl-<run>-<hash> key",
        )
    found = discover(Path.cwd())
    run_id = run or found.run
    if not run_id and not per_file:
        raise UsageError(
            "--run is required (no tau.yaml with run.name or name in this directory)",
            hint="or import a sweep with --run-per-file: one run per history file",
        )
    opened = _open(store)
    request = ImportRequest(
        run=run_id or "",
        history=list(history or []),
        project=project or found.project or opened.project,
        experiment=experiment or found.experiment or "",
        group=group or found.group or "default",
        owner=owner,
        state=state or "succeeded",
        state_given=state is not None,
        metric_prefix=metric_prefix,
        source=source,
        tags=dict(_tags(tag)),
        step_field=step_field,
        time_field=time_field,
        idempotency_key=idempotency_key,
        dry_run=dry_run,
        created_at=stamp("--created-at", created_at),
        completed_at=stamp("--completed-at", completed_at),
    )
    if per_file:
        results = import_per_file(opened, request, list(history or []), run_field)
    else:
        results = [run_import(opened, request)]
    if fmt == "json":
        rows_json = [as_row(r) for r in results]
        sys.stdout.write(json_text(rows_json if per_file else rows_json[0]))
        return 0
    emit_rows(
        "table",
        ["action", "run", "rows", "history_files", "metric_file", "idempotency_key"],
        [
            {
                "action": result.action,
                "run": result.run_id,
                "rows": result.rows,
                "history_files": len(result.history_files),
                "metric_file": result.metric_file,
                "idempotency_key": result.idempotency_key,
            }
            for result in results
        ],
    )
    _warn([w for r in results for w in r.warnings], False, fmt)
    return 0


# -- search -------------------------------------------------------------------------------

RUN_COLUMNS = [
    "run_id",
    "lifecycle_state",
    "successful",
    "state",
    "project",
    "run_group_id",
    "created_at",
    "completed_at",
    "metric_names",
    "tags",
    "success_reasons",
]


def _flat_run(run: dict[str, Any]) -> dict[str, Any]:
    return run | {
        "metric_names": ",".join(run["metric_names"]),
        "tags": ",".join(f"{k}={v}" for k, v in sorted(run["tags"].items())),
        "success_reasons": "; ".join(run["success_reasons"]),
    }


def _min_step(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        raise UsageError("--min-step must be an integer") from None


@app.command(name=["search", "runs"])
def search(
    *,
    store: Store = None,
    query: Annotated[str, Parameter(name=["--query", "-q"])] = "",
    target: str = "",
    project: str = "",
    group: str = "",
    state: str = "",
    lifecycle: str = "",
    tag: Many = None,
    metric_name: Many = None,
    metric_filter: Many = None,
    since: str = "",
    min_step: str | None = None,
    limit: int = 200,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Search indexed runs.

    Args:
        query: Free text over run id, project, experiment, group, tags and metric names.
        target: Limit to an experiment, run group or run id.
        group: Run group id.
        state: Raw run state.
        lifecycle: pending, running, failed, succeeded or incomplete.
        tag: key=value (repeatable).
        metric_name: The run must have this metric (repeatable).
        metric_filter: e.g. eval/score>=0.8 or loss@max<1 (repeatable).
        since: RFC3339, a Go duration such as 24h, or Nd.
        min_step: Require derived success to reach at least this max step.
        limit: At most this many runs (max 1000).
        output: table, json, jsonl or csv.
    """
    from tau.portal.store.search import RunQuery, search_runs
    from tau.portal.store.since import parse_since

    fmt = choose(output, ("table", "json", "jsonl", "csv"), json_flag=json)
    opened = _read(store)
    result = search_runs(
        opened,
        RunQuery(
            q=query,
            target=target,
            project=project,
            group=group,
            state=state,
            lifecycle=lifecycle,
            tags=_tags(tag),
            metric_names=list(metric_name or []),
            metric_filters=_filters(metric_filter),
            since=parse_since(since) if since else "",
            min_step=_min_step(min_step),
            limit=limit,
        ),
    )
    emit_rows(fmt, RUN_COLUMNS, [_flat_run(r) for r in result.runs], whole=as_row(result))
    _warn(result.warnings, result.truncated, fmt)
    return 0


def _warn(warnings: list[str], truncated: bool, fmt: str) -> None:
    if fmt == "json":
        return
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if truncated:
        print("warning: results truncated; raise --limit (max 1000) or narrow", file=sys.stderr)


# -- experiments --------------------------------------------------------------------------

experiments_app = App(name="experiments", help="Experiment groupings: search and tag-run.")
app.command(experiments_app)

EXPERIMENT_COLUMNS = [
    "experiment_id",
    "name",
    "project",
    "source",
    "runs",
    "run_groups",
    "lifecycle_counts",
    "latest_run_at",
    "metric_names",
]


def _flat_experiment(e: dict[str, Any]) -> dict[str, Any]:
    return e | {
        "runs": e["run_count"],
        "run_groups": e["run_group_count"],
        "lifecycle_counts": ",".join(f"{k}={v}" for k, v in e["lifecycle_counts"].items()),
        "state_counts": ",".join(f"{k}={v}" for k, v in e["state_counts"].items()),
        "metric_names": ",".join(e["metric_names"]),
    }


@experiments_app.command(name=["search", "list"])
def experiments_search(
    *,
    store: Store = None,
    query: Annotated[str, Parameter(name=["--query", "-q"])] = "",
    project: str = "",
    lifecycle: str = "",
    tag: Many = None,
    metric_name: Many = None,
    metric_filter: Many = None,
    since: str = "",
    limit: int = 200,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Search experiments.

    Args:
        query: Free text over experiment id, name, description, tags and metric names.
        lifecycle: Keep experiments with at least one run in this lifecycle state.
        tag: key=value run tag (repeatable).
        metric_name: Some run must have this metric (repeatable).
        metric_filter: e.g. eval/score>=0.8 (repeatable).
        since: RFC3339, a Go duration such as 24h, or Nd.
        limit: At most this many experiments (max 1000).
        output: table, json, jsonl or csv.
    """
    from tau.portal.store.search import ExperimentQuery, search_experiments
    from tau.portal.store.since import parse_since

    fmt = choose(output, ("table", "json", "jsonl", "csv"), json_flag=json)
    opened = _read(store)
    result = search_experiments(
        opened,
        ExperimentQuery(
            q=query,
            project=project,
            lifecycle=lifecycle,
            tags=_tags(tag),
            metric_names=list(metric_name or []),
            metric_filters=_filters(metric_filter),
            since=parse_since(since) if since else "",
            limit=limit,
        ),
    )
    rows = [_flat_experiment(e) for e in result["experiments"]]
    emit_rows(fmt, EXPERIMENT_COLUMNS, rows, whole=result)
    _warn(result["warnings"], result["truncated"], fmt)
    return 0


@experiments_app.command(name="tag-run")
def tag_run(
    run_id: str,
    /,
    *,
    store: Store = None,
    experiment: str | None = None,
    name: str | None = None,
    description: str = "",
) -> int:
    """Set a run's experiment (the experiment's source is explicit).

    Args:
        run_id: The run.
        experiment: Experiment id (required).
        name: Experiment name (default: the id).
        description: Experiment description.
    """
    from tau.portal.store.experiments import assign

    if not experiment:
        raise UsageError("--experiment is required")
    result = assign(_open(store), run_id, experiment, name=name, description=description)
    sys.stdout.write(json_text(result))
    return 0


# -- list and status ----------------------------------------------------------------------


@app.command(name="list")
def list_(
    *,
    store: Store = None,
    kind: str = "runs",
    project: str = "",
    group: str = "",
    state: str = "",
    tag: Many = None,
    limit: int = 200,
    output: Output = "table",
    json: Json = False,
) -> int:
    """List runs, groups or experiments.

    Args:
        kind: runs, groups or experiments.
        group: Run group id (runs only).
        state: Raw run state (runs only).
        tag: key=value (runs only; repeatable).
        limit: At most this many rows (max 1000).
        output: table or json.
    """
    from tau.portal.store import read
    from tau.portal.store.search import experiment_summary

    fmt = choose(output, ("table", "json"), json_flag=json)
    if kind not in ("runs", "groups", "experiments"):
        raise UsageError("--kind must be one of: runs, groups, experiments")
    if kind != "runs" and (tag or state):
        raise UsageError("--tag and --state are only supported with --kind runs")
    if kind == "experiments" and group:
        raise UsageError("--state and --group are not supported with --kind experiments")
    opened = _read(store)
    whole: dict[str, Any] = {"store_path": opened.location, "kind": kind}
    if kind == "runs":
        page = read.list_runs(
            opened,
            project=project or None,
            group=group or None,
            state=state or None,
            tags=_tags(tag),
            limit=limit,
        )
        rows = [as_row(r) for r in page.items]
        columns = [
            "run_id",
            "project",
            "run_group_id",
            "state",
            "owner",
            "created_at",
            "completed_at",
            "result_uri",
        ]
    elif kind == "groups":
        gpage = read.list_groups(opened, project=project or None, limit=limit)
        rows = [as_row(g) for g in gpage.items if not group or g.run_group_id == group]
        page = gpage  # type: ignore[assignment]
        columns = ["run_group_id", "project", "name", "created_at", "updated_at"]
    else:
        epage = read.list_experiments(opened, project=project or None, limit=limit)
        rows = [
            _flat_experiment(as_row(e) | experiment_summary(opened, e.experiment_id))
            for e in epage.items
        ]
        page = epage  # type: ignore[assignment]
        columns = [*EXPERIMENT_COLUMNS, "state_counts"]
    whole |= {"total": len(rows), "truncated": page.truncated, kind: rows, "warnings": []}
    emit_rows(fmt, columns, rows, whole=whole)
    _warn([], page.truncated, fmt)
    return 0


@app.command(name="status")
def status(
    name: str,
    /,
    *,
    store: Store = None,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Summarize an experiment, run group or run: the durable lifecycle record.

    Args:
        name: A run group id, run id, or experiment id or name (resolved in that order).
        output: table or json.
    """
    from tau.portal.store.status import status as build

    fmt = choose(output, ("table", "json"), json_flag=json)
    result = build(_read(store), name)
    if fmt == "json":
        sys.stdout.write(json_text(result))
        return 0
    columns = [
        "target",
        "type",
        "runs",
        "groups",
        "configs",
        "metric_files",
        "artifacts",
        "observations",
        "latest_event",
    ]
    emit_rows(
        "table",
        columns,
        [
            {
                "target": result["target"],
                "type": result["target_type"],
                "runs": result["runs"],
                "groups": result["run_groups"],
                "configs": result["configs"],
                "metric_files": result["metric_files"],
                "artifacts": result["artifacts"],
                "observations": result["observations"],
                "latest_event": result["latest_event_at"] or "-",
            }
        ],
    )
    states = ", ".join(f"{k}={v}" for k, v in result["state_counts"].items())
    print(f"states:  {states or '(none)'}")
    return 0


@app.command(name="rebuild-index")
def rebuild_index(
    *,
    store: Store = None,
    output: Output = "table",
    json: Json = False,
) -> int:
    """Rebuild a corrupt or lost index.sqlite from the store's append-log and metric files.

    The damaged index is kept beside the new one (index.sqlite.damaged-<time>).

    Args:
        output: table or json.
    """
    from tau.portal.store.rebuild import rebuild_index as run_rebuild
    from tau.portal.store.resolve import resolve_root

    fmt = choose(output, ("table", "json"), json_flag=json)
    result = run_rebuild(resolve_root(store))
    if fmt == "json":
        sys.stdout.write(json_text(result))
        return 0
    print(f"rebuilt {result['index']}")
    if result["kept"]:
        print(f"kept:             {result['kept']}")
    rows = ", ".join(f"{k}={v}" for k, v in result["rows"].items()) or "(none)"
    print(f"rows:             {rows}")
    print(f"metric_summaries: {result['metric_summaries']}")
    _warn(result["warnings"], False, fmt)
    return 0


# -- sql ----------------------------------------------------------------------------------


@app.command(name="sql")
def sql(
    query: str,
    /,
    *,
    store: Store = None,
    format: str = "table",
) -> int:
    """Read-only SQL (one SELECT/WITH statement) over index.sqlite.

    Args:
        query: One SELECT or WITH statement.
        format: table, json, jsonl or csv.
    """
    from tau.portal.store.sql import run_query

    if format not in ("table", "json", "jsonl", "csv"):
        raise UsageError("--format must be one of: table, json, jsonl, csv")
    columns, rows = run_query(_read(store), query)
    emit_rows(format, columns, rows)
    return 0


# -- compare, observe, export -------------------------------------------------------------


@app.command(name="compare")
def compare(
    target: str,
    /,
    *,
    store: Store = None,
    metric: str | None = None,
    direction: str | None = None,
    include_failed: Flag = False,
    configs: Flag = False,
    output: Output = "table",
    format: str | None = None,
    json: Json = False,
) -> int:
    """Compare run groups on one scalar metric; --configs shows only differing config fields.

    Args:
        target: An experiment, run group or run.
        metric: The metric (default: Stellar's primary outcome metric).
        direction: max or min (higher/lower too): which value is best (default: what the
            metric recorded, else by name: loss, error, perplexity, ... min; others max).
        include_failed: Count failed runs in the groups (left out by default).
        configs: Show the config fields that differ between the compared runs instead.
        output: table, json, jsonl or csv.
        format: Overrides --output.
    """
    from tau.portal.store.compare import COLUMNS, CONFIG_COLUMNS, config_diff
    from tau.portal.store.compare import compare as run_compare

    fmt = choose(format or output, ("table", "json", "jsonl", "csv"), json_flag=json)
    opened = _read(store)
    if configs:
        diff = config_diff(opened, target)
        emit_rows(fmt, CONFIG_COLUMNS, diff["rows"], whole=diff)
        if fmt == "table":
            print(
                f"{len(diff['fields'])} differing fields across {len(diff['runs'])} runs "
                f"({diff['identical_fields']} identical fields hidden)"
            )
        _warn(diff["warnings"], diff["truncated"], fmt)
        return 0
    result = run_compare(
        opened, target, metric=metric, direction=direction, include_failed=include_failed
    )
    emit_rows(fmt, COLUMNS, result["groups"], whole=result)
    _warn(result["warnings"], result["truncated"], fmt)
    return 0


def _author() -> str:
    for name in ("GITHUB_ACTOR", "USER", "USERNAME"):
        if os.environ.get(name):
            return os.environ[name]
    return "unknown"


@app.command(name="observe")
def observe(
    *,
    store: Store = None,
    scope: str = "",
    type: str = "observation",
    text: str = "",
    author: str | None = None,
    source: str = "human",
    evidence: str | None = None,
    id: str | None = None,
    idempotency_key: str | None = None,
    output: Output = "table",
) -> int:
    """Append a structured observation.

    Args:
        scope: type:id, type one of experiment, run_group, run, artifact, event, metric (required).
        type: observation, decision, blocker, next-experiment or exclusion.
        text: The observation (required).
        author: Default $GITHUB_ACTOR, else $USER, else $USERNAME, else unknown.
        source: Who records it.
        evidence: JSON or text.
        id: Observation id (default: generated).
        idempotency_key: Reuse the earlier observation when the same request is repeated.
        output: table or json.
    """
    from tau.portal.store.observe import observe as record

    fmt = choose(output, ("table", "json"))
    if not scope:
        raise UsageError("--scope is required", hint="e.g. --scope run_group:baseline")
    if not text:
        raise UsageError("--text is required")
    result = record(
        _open(store),
        scope=scope,
        type_=type,
        text=text,
        author=author or _author(),
        source=source,
        evidence=evidence,
        observation_id=id,
        idempotency_key=idempotency_key,
    )
    obs = result.observation
    if fmt == "json":
        sys.stdout.write(json_text(obs | {"reused": result.reused}))
        return 0
    rows: list[tuple[str, Any]] = [
        ("observation", obs["observation_id"]),
        ("scope", f"{obs['scope_type']}:{obs['scope_id']}"),
        ("type", obs["type"]),
        ("created", obs["created_at"]),
        ("reused", result.reused),
    ]
    if idempotency_key:
        rows.append(("idempotency_key", idempotency_key))
    sys.stdout.write(pairs_text(rows))
    return 0


export_app = App(name="export", help="Portable packet (and `export adx`: ADX projection files).")
app.command(export_app)


@export_app.default
def export(
    *,
    store: Store = None,
    out: Path | None = None,
    force: Flag = False,
    output: Output = "table",
) -> int:
    """Copy the packet (manifest, index, append-log, metrics, artifacts) and write README.json.

    Args:
        out: Destination directory (required).
        force: Overwrite packet files in a non-empty --out.
        output: table or json.
    """
    from tau.portal.store.export import export_packet

    fmt = choose(output, ("table", "json"))
    if out is None:
        raise UsageError("--out is required")
    result = export_packet(_open(store), out, force=force)
    if fmt == "json":
        sys.stdout.write(json_text(as_row(result)))
        return 0
    sys.stdout.write(
        "exported experiment packet\n"
        f"source:      {result.source}\n"
        f"destination: {result.destination}\n"
        f"files:       {result.files}\n"
        f"dirs:        {result.dirs}\n"
    )
    return 0


@export_app.command(name="adx")
def export_adx(
    *,
    store: Store = None,
    out: Path | None = None,
    format: str = "jsonl",
    force: Flag = False,
    dry_run: Flag = False,
    output: Output = "table",
) -> int:
    """Write the ADX/Kusto projection as offline files (no credentials, no network).

    Args:
        out: Destination directory.
        format: jsonl or csv.
        force: Overwrite files in a non-empty --out.
        dry_run: Only count rows.
        output: table or json.
    """
    from tau.portal.store.export import export_adx as run_export

    fmt = choose(output, ("table", "json"))
    result = run_export(_open(store), out, fmt=format, force=force, dry_run=dry_run)
    if fmt == "json":
        sys.stdout.write(json_text(result))
        return 0
    sys.stdout.write(
        ("planned" if dry_run else "exported") + " adx projection\n"
        f"source:      {result['source']}\n"
        f"destination: {result['destination'] or '-'}\n"
        f"projection:  {result['projection_version']}\n"
        f"note:        {result['note']}\n"
    )
    emit_rows("table", ["table", "rows", "file"], result["tables"])
    return 0


# -- capture from a cluster ---------------------------------------------------------------

capture_app = App(name="capture", help="Persist cluster state of a run into the store.")
app.command(capture_app)
Namespace = Annotated[str | None, Parameter(name=["--namespace", "-n"])]


def _session(
    context: str | None,
    namespace: str | None,
    workspace: str | None,
    project: str | None,
    group: str | None,
) -> Any:
    """Check the flags that need no cluster first, then connect."""
    from tau.portal.capture.where import check_namespace, connect
    from tau.portal.store.ids import validate_id

    for kind, value in (("project", project), ("group", group)):
        if value is not None:
            validate_id(kind, value)
    check_namespace(namespace)
    return connect(context, namespace, workspace)


def _scope(opened: Any, project: str | None, group: str | None, owner: str, cluster: Any) -> Any:
    from tau.portal.capture.cluster import Scope
    from tau.portal.store.ids import validate_id

    scope = Scope(
        project=project or opened.project,
        experiment=opened.experiment_id or (group or "default"),
        group=group or "default",
        owner=owner,
        cluster=cluster,
    )
    validate_id("project", scope.project)
    validate_id("group", scope.group)
    return scope


@capture_app.command(name="run-profile")
def capture_run_profile(
    run: str,
    /,
    *,
    store: Store = None,
    namespace: Namespace = None,
    context: str | None = None,
    workspace: str | None = None,
    project: str | None = None,
    group: str | None = None,
    owner: str = "tau-status",
    state: str | None = None,
    no_history: Flag = False,
    output: Output = "table",
) -> int:
    """Persist a run's profile (labels, annotations, Kueue and Pod state) and lifecycle events,
    then import its metrics.history JSONL files from its result PVC.

    Args:
        run: The Job or RayJob name.
        namespace: Namespace of the run (default: default, or the --workspace's).
        context: kubectl context (default: $TAU_CONTEXT or the repository connection).
        workspace: TauWorkspace whose namespace to read.
        project: Project (default: the store's).
        group: Run group (default: default).
        owner: Run owner.
        state: Override the state derived from the run.
        no_history: Record the profile only; skip the result PVC (read by helper pods).
        output: table or json.
    """
    from tau.portal.capture.cluster import capture_run_profile as capture
    from tau.portal.capture.history import History, pull_history

    fmt = choose(output, ("table", "json"))
    if state is not None and state not in ("pending", "running", "succeeded", "failed"):
        raise UsageError(
            f"--state must be one of: pending, running, succeeded, failed; got {state!r}"
        )
    if namespace == "*":
        raise UsageError(
            "--namespace '*' reads every namespace; capture run-profile needs the run's namespace"
        )
    opened = _open(store)
    where = _session(context, namespace, workspace, project, group)
    scope = _scope(opened, project, group, owner, where.session.context)
    record, counts, obj = capture(
        opened, where.session.api, where.namespace, run, scope, state=state
    )
    history = (
        History(warnings=["--no-history: metrics history not read"])
        if no_history
        else pull_history(opened, where.session.api, obj, record["run_id"], scope)
    )
    if fmt == "json":
        body = {"run": record, "counts": vars(counts), "history": history.as_json()}
        sys.stdout.write(json_text(body | {"warnings": history.warnings}))
        return 0
    sys.stdout.write(
        pairs_text(
            [
                ("run", record["run_id"]),
                ("state", record["state"]),
                ("created_run", bool(counts.created_runs)),
                ("updated_run", bool(counts.updated_runs)),
                ("events", counts.events),
                ("reused", bool(counts.reused)),
                ("history", history.action),
                ("history_files", len(history.files)),
                ("history_rows", history.rows),
            ]
        )
    )
    _warn(history.warnings, False, fmt)
    return 0


@app.command(name="autocapture")
def autocapture(
    *,
    store: Store = None,
    namespace: Namespace = None,
    context: str | None = None,
    workspace: str | None = None,
    cluster: str | None = None,
    project: str | None = None,
    group: str | None = None,
    owner: str = "tau-controller",
    watch: Flag = False,
    interval: str = "30s",
    output: Output = "table",
) -> int:
    """Reconcile tau-managed Jobs and RayJobs into runs and lifecycle events.

    Args:
        namespace: Namespace; '*' for all (default: default, or the --workspace's).
        context: kubectl context (default: $TAU_CONTEXT or the repository connection).
        workspace: TauWorkspace whose namespace to reconcile.
        cluster: Cluster name recorded in the run context (default: the context).
        project: Project (default: the store's).
        group: Run group (default: default).
        owner: Owner of new runs.
        watch: Keep reconciling on watch streams until interrupted (one line per change).
        interval: With --watch: the longest wait between reconciles, and each watch's timeout.
        output: table or json (with --watch: one JSON object per line).
    """
    from tau.portal.capture.cluster import reconcile
    from tau.portal.cli import watch_output as report

    fmt = choose(output, ("table", "json"))
    seconds = report.interval_seconds(interval)
    opened = _open(store)
    where = _session(context, namespace, workspace, project, group)
    scope = _scope(opened, project, group, owner, cluster or where.session.context)
    if watch:
        from tau.portal.capture.follow import follow

        printer = report.WatchPrinter(fmt, where.namespace, sys.stdout, sys.stderr)
        follow(opened, where.session.api, where.namespace, scope, interval=seconds,
               report=printer)  # fmt: skip
        return 0
    counts, warnings = reconcile(opened, where.session.api, where.namespace, scope)
    row = vars(counts)
    if fmt == "json":
        sys.stdout.write(json_text(row | {"namespace": where.label, "warnings": warnings}))
        return 0
    emit_rows("table", [k for k in row], [row])
    _warn(warnings, False, fmt)
    return 0


# -- not built here -----------------------------------------------------------------------

# Lazily imported commands show no docstring in the group's list, so each says its help here.
app.command(
    "tau.portal.cli.web:stellar",
    name=["stellar", "dashboard"],
    help="Render the Stellar dashboard of a run group, run or experiment (-o html|json|tui).",
)
app.command(
    "tau.portal.cli.web:plot",
    name="plot",
    help="Write a deterministic SVG chart of one metric.",
)
app.command(
    "tau.portal.cli.web:open_",
    name="open",
    help="Serve Stellar for a target and open it in the browser.",
)
app.command(
    "tau.portal.cli.web:serve",
    name="serve",
    help="Serve Stellar over HTTP (read-only; loopback unless --addr).",
)

kusto_app = App(name="kusto", help="Emit KQL for the ADX projection (not built yet).")
app.command(kusto_app)
offload_app = App(
    name="offload",
    help="Collect a run's metrics.history into the store (metrics); the other verbs are not "
    "built yet.",
)
app.command(offload_app)
offload_app.command(
    "tau.portal.cli.offload:metrics",
    name="metrics",
    help="Tail metrics.history files, spool them under --out and deliver them into the store.",
)


def _not_built(group: App, verb: str, full: str, hint: str) -> None:
    def command(*tokens: Annotated[str, Parameter(allow_leading_hyphen=True)]) -> int:
        raise NotBuilt(full, hint=hint)

    command.__doc__ = f"{full} (not built yet)."
    group.command(command, name=verb)


for _verb in ("metrics-query", "lifecycle-query", "schema"):
    _not_built(
        kusto_app,
        _verb,
        f"{CMD} kusto {_verb}",
        "ADX/Kusto is a downstream projection; write offline files with "
        f"`{CMD} export adx --out DIR`",
    )
for _verb in ("metrics-agent", "artifacts", "artifacts-agent"):
    _not_built(
        offload_app,
        _verb,
        f"{CMD} offload {_verb}",
        f"collect histories with `{CMD} offload metrics`, or import them with `{CMD} import jsonl`",
    )
