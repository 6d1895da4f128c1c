"""`offload metrics`' flags, their environment fallbacks and tau.yaml's defaults, resolved.

Performs I/O (reads the environment it is given, the working directory's tau.yaml, and a
folder store's manifest for its project). Order: a flag, then (with `--watch`, contract
`offload metrics`) its `TAU_METRICS_OFFLOAD_*` variable (`TAU_METRICS_HISTORY` for `--history`),
then tau.yaml's run and experiment (contract §4.2), then the default. Every bad value is a
located error naming the flag or variable it came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.portal.errors import NotBuilt, UsageError
from tau.portal.offload.collector import Settings
from tau.portal.offload.delivery import Identity
from tau.portal.store.ids import validate_id

ENV = "TAU_METRICS_OFFLOAD_"
SOURCE = "stellar-online"
INTERVAL = "1m"
_SESSION = re.compile(r"^[a-z0-9-]+$")
CMD = "taugrid-portal experiment offload metrics"


@dataclass
class Flags:
    """The command's flags as given (None: not given)."""

    store: str | None = None
    out: str | None = None
    history: Sequence[str] | None = None
    run: str | None = None
    project: str | None = None
    experiment: str | None = None
    group: str | None = None
    source: str | None = None
    tag: Sequence[str] | None = None
    completion_file: str | None = None
    baseline_existing_history: bool = False
    ready_file: str | None = None
    done_file: str | None = None
    status_artifact_uri: str | None = None
    status_checkpoint_uri: str | None = None
    watch: bool = False
    interval: str | None = None
    max_iterations: int = 0
    remote_write_endpoint: str | None = None
    remote_write_batch_size: int | None = None
    remote_write_max_attempts: int | None = None
    remote_write_retry_backoff: str | None = None


def resolve(flags: Flags, env: Mapping[str, str], cwd: Path) -> Settings:
    from tau.portal.capture.defaults import discover
    from tau.portal.store.location import TeamURL, resolve_store

    _refuse_remote_write(flags, env)

    def pick(value: Any, name: str) -> tuple[Any, str]:
        """The flag's value, else (with --watch) its variable's; and where it came from."""
        if value not in (None, "", [], ()):
            return value, f"--{name}"
        var = ENV + name.upper().replace("-", "_")
        if flags.watch and env.get(var):
            return env[var], var
        return None, f"--{name}"

    found = discover(cwd)
    where = resolve_store(flags.store, env)

    run, run_from = pick(flags.run, "run")
    run = run or found.run
    if not run:
        raise UsageError(
            "--run is required (no tau.yaml with run.name or name in this directory)",
            hint=f"pass --run RUN (with --watch, or set {ENV}RUN)",
        )
    project, project_from = pick(flags.project, "project")
    project = project or found.project or _folder_project(where, TeamURL) or "default"
    experiment, experiment_from = pick(flags.experiment, "experiment")
    experiment = experiment or found.experiment or ""
    group, group_from = pick(flags.group, "group")
    group = group or found.group or "default"
    for kind, value, origin in (
        ("run", run, run_from),
        ("project", project, project_from),
        ("group", group, group_from),
        ("experiment", experiment, experiment_from),
    ):
        if value:
            _valid(kind, value, origin)
    source, _ = pick(flags.source, "source")
    source = source or SOURCE

    history = list(flags.history or [])
    if not history and flags.watch and env.get("TAU_METRICS_HISTORY"):
        history = [env["TAU_METRICS_HISTORY"]]
    if not history:
        raise UsageError(
            "--history is required",
            hint="pass --history PATH (repeatable, globs ok), or set TAU_METRICS_HISTORY "
            "with --watch",
        )
    history = [str(Path(h).expanduser()) if Path(h).expanduser().is_absolute()
               else str(cwd / h) for h in history]  # fmt: skip

    out, out_from = pick(flags.out, "out")
    if not out:
        raise UsageError(
            "--out is required: the folder that keeps the spool and the checkpoint",
            hint=f"pass --out DIR (with --watch, or set {ENV}OUT); it must outlive restarts",
        )
    out_path = _folder(out, out_from, cwd)

    tags = dict(_tags(flags.tag, "--tag"))
    if not flags.tag and flags.watch and env.get(ENV + "TAGS"):
        tags = dict(_tags(env[ENV + "TAGS"].split(","), ENV + "TAGS"))

    interval_text, interval_from = pick(flags.interval, "interval")
    interval = _interval(interval_text or INTERVAL, interval_from)
    if flags.max_iterations < 0:
        raise UsageError(
            f"--max-iterations {flags.max_iterations}: must be 0 (no limit) or more",
            hint="e.g. --max-iterations 3",
        )
    completion, _ = pick(flags.completion_file, "completion-file")
    artifact, _ = pick(flags.status_artifact_uri, "artifact-uri")
    checkpoint_uri, _ = pick(flags.status_checkpoint_uri, "checkpoint-uri")

    def opener() -> Any:
        from tau.portal.store.opener import open_location

        return open_location(where)

    return Settings(
        who=Identity(run, project, experiment, group, source, _session(env), tags),
        out=out_path,
        history=history,
        attempt=_attempt(env),
        completion_file=_path(completion, cwd),
        ready_file=_path(flags.ready_file, cwd),
        done_file=_path(flags.done_file, cwd),
        artifact_uri=artifact or "",
        checkpoint_uri=checkpoint_uri or "",
        watch=flags.watch,
        interval=interval,
        max_iterations=flags.max_iterations,
        baseline=flags.baseline_existing_history,
        open_store=opener,
    )


def _refuse_remote_write(flags: Flags, env: Mapping[str, str]) -> None:
    given = [
        name
        for name, value in (
            ("--remote-write-endpoint", flags.remote_write_endpoint),
            ("--remote-write-batch-size", flags.remote_write_batch_size),
            ("--remote-write-max-attempts", flags.remote_write_max_attempts),
            ("--remote-write-retry-backoff", flags.remote_write_retry_backoff),
        )
        if value is not None
    ]
    if flags.watch and env.get(ENV + "REMOTE_WRITE_ENDPOINT"):
        given.append(ENV + "REMOTE_WRITE_ENDPOINT")
    if given:
        raise NotBuilt(
            f"{CMD} {given[0]} (remote write)",
            hint="the collector delivers into the experiment store (--store or TAU_EXP_STORE); "
            f"drop {given[0]}",
        )


def _valid(kind: str, value: str, origin: str) -> None:
    try:
        validate_id(kind, value)
    except UsageError as exc:
        raise UsageError(f"{origin}: {exc.message}", hint=exc.hint) from None


def _folder(value: str, origin: str, cwd: Path) -> Path:
    path = Path(value).expanduser()
    path = path if path.is_absolute() else cwd / path
    if path.exists() and not path.is_dir():
        raise UsageError(f"{origin} {value}: is a file, not a folder", hint="pass a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"{origin} {value}: cannot create the folder ({exc.strerror or exc})",
            hint="pass a writable folder on storage that outlives the collector",
        ) from None
    return path


def _path(value: str | None, cwd: Path) -> Path | None:
    if not value:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else cwd / path


def _tags(values: Sequence[str] | None, origin: str) -> list[tuple[str, str]]:
    out = []
    for value in values or []:
        if not value.strip() and origin != "--tag":
            continue
        key, sep, val = value.partition("=")
        if not sep or not key.strip():
            raise UsageError(
                f'{origin}: expected key=value, got "{value}"', hint="e.g. --tag seed=1"
            )
        out.append((key.strip(), val))
    return out


def _interval(text: str, origin: str) -> float:
    from tau.intent.duration import DurationError, parse_duration

    try:
        seconds = parse_duration(text)
    except DurationError as exc:
        raise UsageError(f"{origin}: {exc}", hint="a Go duration, e.g. 10s or 1m") from None
    if seconds <= 0:
        raise UsageError(
            f'{origin} must be a positive duration (got "{text}")', hint="e.g. 10s or 1m"
        )
    return seconds


def _attempt(env: Mapping[str, str]) -> str:
    value = env.get("TAU_RETRY_ATTEMPT", "").strip()
    if not value:
        return "0"
    if not value.isdigit():
        raise UsageError(
            f'TAU_RETRY_ATTEMPT="{value}": must be the attempt number (0, 1, 2...)',
            hint="tau sets it on a retried run's pods; unset it for a first attempt",
        )
    return str(int(value))


def _session(env: Mapping[str, str]) -> str:
    value = env.get("TAU_METRICS_SESSION_ID", "").strip()
    if not value:
        return ""
    if len(value) > 64:
        raise UsageError(
            "TAU_METRICS_SESSION_ID: a metrics offload session ID must not exceed 64 characters",
            hint="tau sets it from the run's metrics-session-id annotation",
        )
    if not _SESSION.match(value):
        raise UsageError(
            f'TAU_METRICS_SESSION_ID "{value}": a metrics offload session ID must contain only '
            "lowercase letters, digits, and '-'",
            hint="tau sets it from the run's metrics-session-id annotation",
        )
    return value


def _folder_project(where: Any, team: type) -> str | None:
    """A folder store's project (its manifest), as `import jsonl` defaults to it."""
    if isinstance(where, team):
        return None
    import json

    try:
        data = json.loads((where / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    project = data.get("project") if isinstance(data, dict) else None
    return project if isinstance(project, str) and project else None
