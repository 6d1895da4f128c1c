"""metrics.offload.enabled → the plan's MetricsOffload: the reference's run.go and run_job.go
rules, the platform's image and store, the session id.

Pure. What only the platform knows arrives as a `Platform`: the TauWorkspace's
`spec.experiments` (store, credentials Secret, offload image) and the tau process's
TAU_METRICS_OFFLOAD_IMAGE / TAU_METRICS_OFFLOAD_INTERVAL. A client dry-run reads no workspace
(`Platform.offline`): the store and, unless the env names one, the image are `<unresolved-...>`
placeholders, resolved at submit. The store never comes from tau.yaml, so a project cannot send
its metrics (or a platform's credentials) anywhere the platform did not choose.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from typing import NamedTuple, Protocol
from urllib.parse import urlsplit

from tau.intent.runconfig import JOB, RunConfig
from tau.k8s import meta, paths
from tau.plan.model import MetricsOffload, Volume

IMAGE_ENV = "TAU_METRICS_OFFLOAD_IMAGE"
INTERVAL_ENV = "TAU_METRICS_OFFLOAD_INTERVAL"
UNRESOLVED_STORE = "<unresolved-experiment-store>"
UNRESOLVED_IMAGE = "<unresolved-offload-image>"
DEFAULT_INTERVAL = "10s"
#: The group of runs that name none (the reference's default).
DEFAULT_GROUP = "default"
#: Where the collector spools and checkpoints, under storage.output: on the data claim, so a
#: restarted collector (or the next attempt's) resumes instead of starting over.
OUT_DIR = ".tau/metrics-offload"
SESSION_ID_MAX = 64
_SESSION_ID = re.compile(r"^[a-z0-9-]+$")
_DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
_OFFLOAD = "metrics.offload.enabled"
_OPERATOR = "spec.experiments"


class Platform(NamedTuple):
    """What the platform sets for metrics offload, as the caller read it.

    `offline` is a client dry-run: no workspace was read, so `workspace`, `store`,
    `credentials_secret` and `workspace_image` are unknown rather than absent.
    """

    offline: bool = True
    workspace: str | None = None
    store: str | None = None
    credentials_secret: str | None = None
    workspace_image: str | None = None
    env_image: str | None = None
    env_interval: str | None = None


def platform(
    env: Mapping[str, str],
    *,
    offline: bool,
    workspace: str | None = None,
    store: str | None = None,
    credentials_secret: str | None = None,
    image: str | None = None,
) -> Platform:
    """The Platform of a render: the process env's image and interval, and on a submit
    (`offline` False) what the resolved TauWorkspace's spec.experiments says.
    """
    return Platform(
        offline=offline,
        workspace=workspace,
        store=store,
        credentials_secret=credentials_secret,
        workspace_image=image,
        env_image=(env.get(IMAGE_ENV) or "").strip() or None,
        env_interval=(env.get(INTERVAL_ENV) or "").strip() or None,
    )


class Report(Protocol):
    """Where a rule reports (resolve's Findings)."""

    def error(
        self,
        path: str,
        message: str,
        hint: str | None = None,
        *,
        key: bool = False,
        severity: str = "error",
        shown: str | None = None,
    ) -> None: ...


def session_id_problem(session: str) -> str | None:
    """Why `session` cannot be a metrics session id (the reference's three refusals), or None."""
    session = session.strip()
    if not session:
        return "metrics offload session ID is required"
    if len(session) > SESSION_ID_MAX:
        return f"metrics offload session ID must not exceed {SESSION_ID_MAX} characters"
    if not _SESSION_ID.match(session):
        return (
            f'metrics offload session ID "{session}" must contain only lowercase letters, '
            "digits, and '-'"
        )
    return None


def dry_run_session(name: str, config_hash: str) -> str:
    """The session id a render without a submit shows: derived from the run, so the same config
    renders the same bytes. A submit passes a fresh random one instead (pipeline.cluster_render).
    """
    return hashlib.sha256(f"{name}\n{config_hash}".encode()).hexdigest()[:24]


def image_problem(image: str) -> str | None:
    """Why `image` is not a pinned offload image (metricsoffload.ValidatePinnedImage), or None.

    Stricter than the reference, which also takes a non-latest tag: the collector writes the
    run's evidence, so the platform names exactly which build does (an @sha256 digest).
    """
    if any(c.isspace() for c in image):
        return "metrics offload image must not contain whitespace"
    if _DIGEST.search(image):
        return None
    last = image.rsplit("/", 1)[-1]
    if ":" in last and last.rsplit(":", 1)[1].lower() == "latest":
        return "metrics offload image must not use the unpinned :latest tag"
    return f'metrics offload image "{image}" must be pinned by an @sha256 digest'


def history_paths(history: tuple[str, ...], output: str) -> list[tuple[str, str]]:
    """(entry as written, absolute path): relative entries resolve under storage.output, as
    `TAU_METRICS_HISTORY` resolves them (one rule: `tau.plan.metrics_history.resolve`).
    """
    from tau.plan.metrics_history import resolve

    return list(zip(history, resolve(history, output or "/"), strict=True))


def _experiment(config: RunConfig) -> tuple[str, str, str]:
    """(project, experiment id, group) as the store names them; the group defaults."""
    exp = config.experiment
    name = (exp.name or "").strip()
    title = (exp.title or "").strip()
    group = (exp.group or "").strip()
    experiment = name or (meta.label_value(title) if title else "") or group
    return (exp.project or "").strip(), experiment, group or DEFAULT_GROUP


def _interval(f: Report, raw: str | None) -> str:
    from tau.intent.duration import DurationError, format_duration, parse_duration

    if raw is None:
        return DEFAULT_INTERVAL
    try:
        seconds = parse_duration(raw)
    except DurationError as exc:
        f.error(_OFFLOAD, f"{INTERVAL_ENV}: {exc}", shown=INTERVAL_ENV)
        return DEFAULT_INTERVAL
    if seconds <= 0:
        f.error(
            _OFFLOAD,
            f'{INTERVAL_ENV} must be a positive duration (got "{raw}")',
            "e.g. TAU_METRICS_OFFLOAD_INTERVAL=10s (the default), or unset it",
            shown=INTERVAL_ENV,
        )
        return DEFAULT_INTERVAL
    return format_duration(seconds)


def _image(f: Report, platform: Platform) -> str:
    ws = platform.workspace
    if platform.workspace_image:
        image, shown = platform.workspace_image, f'workspace "{ws}" {_OPERATOR}.offloadImage'
        fix = f'the platform operator pins spec.experiments.offloadImage of workspace "{ws}"'
    elif platform.env_image:
        image, shown = platform.env_image, IMAGE_ENV
        fix = f"export {IMAGE_ENV}=REGISTRY/taugrid-portal@sha256:<digest>"
    elif platform.offline:
        return UNRESOLVED_IMAGE
    else:
        where = f'workspace "{ws}"' if ws else "the workspace"
        f.error(
            _OFFLOAD,
            f"metrics.offload.enabled requires {IMAGE_ENV}",
            f"the platform operator sets spec.experiments.offloadImage of {where}, or export "
            f"{IMAGE_ENV}=REGISTRY/taugrid-portal@sha256:<digest>",
        )
        return UNRESOLVED_IMAGE
    problem = image_problem(image)
    if problem is not None:
        f.error(_OFFLOAD, problem, fix, shown=shown)
    return image


def _store(f: Report, platform: Platform) -> tuple[str, str | None]:
    """(store, credentials Secret) from the workspace; placeholders on a client dry-run."""
    if platform.offline:
        return UNRESOLVED_STORE, None
    ws = platform.workspace
    if ws is None:
        return UNRESOLVED_STORE, None  # refused as "requires a resolved TauWorkspace"
    store = platform.store
    if not store:
        f.error(
            _OFFLOAD,
            f'workspace "{ws}" names no experiment store, so metrics.offload.enabled has '
            "nowhere to deliver the metrics",
            f"the platform operator sets spec.experiments.store of TauWorkspace {ws} (a folder "
            "the pods reach, or postgresql://USER@HOST:PORT/DB?objects=s3://BUCKET/PREFIX); "
            "until then set metrics.offload.enabled: false",
        )
        return UNRESOLVED_STORE, None
    try:
        password = urlsplit(store).password if "://" in store else None
    except ValueError:
        password = None
    if password is not None:
        # Never echo the value: it holds a password, and the pod spec would too.
        f.error(
            _OFFLOAD,
            f'workspace "{ws}" {_OPERATOR}.store holds a password, which the rendered pod '
            "would carry in plain text",
            "the platform operator moves it into the Secret named by "
            "spec.experiments.credentialsSecret (as PGPASSWORD)",
        )
        return UNRESOLVED_STORE, None
    return store, platform.credentials_secret


def resolve(
    f: Report,
    config: RunConfig,
    *,
    output: str | None,
    result_pvc: str | None,
    volumes: tuple[Volume, ...],
    config_hash: str,
    platform: Platform,
    session: str | None,
    retry_env: Mapping[str, str],
) -> MetricsOffload | None:
    """The sidecar's settings, every problem reported through `f`; None without offload.

    Args:
        output, result_pvc, volumes: storage.output as resolved and the PVC volumes.
        session: the submission's metrics session id; None renders `dry_run_session`.
        retry_env: TAU_RETRY_* of a retried attempt (the sidecar tags its rows with it).
    """
    if not config.metrics.offload_enabled:
        return None
    if config.engine == JOB and config.execution.nodes > 1:
        f.error(
            "execution.nodes",
            "metrics.offload.enabled requires a single Job pod; execution.nodes must be unset or 1",
            "offload runs beside one pod; drop execution.nodes or metrics.offload",
        )
    if not config.entrypoint:
        f.error(
            _OFFLOAD,
            "metrics.offload.enabled requires run.entrypoint so Tau can record the workload "
            "exit status",
            "set run.entrypoint: tau wraps it to write how the run ended",
        )
    if not platform.offline and platform.workspace is None:
        f.error(
            _OFFLOAD,
            "metrics.offload.enabled requires a resolved TauWorkspace; set policy.workspace, "
            "--workspace, or a workspace connection",
            "the workspace names the experiment store the metrics are delivered to",
        )
    out_root = (output or "").rstrip("/") or ""
    if not out_root or not paths.under_data(out_root):
        f.error(
            "storage.output" if config.storage.output else _OFFLOAD,
            f"metrics.offload.enabled requires storage.output on a writable PVC mounted under "
            f"{paths.DATA_ROOT}",
            "set storage.data_pvc (the output then defaults under /data) or storage.output "
            "under /data",
        )
    else:
        owner = [v for v in volumes if out_root == v.path or out_root.startswith(v.path + "/")]
        if not result_pvc or not owner or owner[0].read_only:
            f.error(
                "storage.output" if config.storage.output else _OFFLOAD,
                "metrics.offload.enabled requires storage.output backed by a writable PVC",
                "the collector keeps its spool and checkpoint there; mount the output's PVC rw",
            )
        for i, (raw, absolute) in enumerate(history_paths(config.metrics.history, out_root)):
            if not paths.under_data(absolute):
                f.error(
                    f"metrics.history[{i}]",
                    f'metrics.history "{raw}" must resolve under {paths.DATA_ROOT}',
                )
    image = _image(f, platform)
    store, secret = _store(f, platform)
    interval = _interval(f, platform.env_interval)
    if session is None:
        session = dry_run_session(config.name, config_hash)
    elif problem := session_id_problem(session):
        f.error(_OFFLOAD, problem)
    project, experiment, group = _experiment(config)
    attempt = retry_env.get("TAU_RETRY_ATTEMPT") or dict(config.runtime.env).get(
        "TAU_RETRY_ATTEMPT"
    )
    return MetricsOffload(
        image=image,
        store=store,
        credentials_secret=secret,
        session_id=session.strip(),
        project=project,
        experiment=experiment,
        group=group,
        history=tuple(a for _, a in history_paths(config.metrics.history, out_root or "/")),
        out=posixpath.join(out_root or paths.DATA_ROOT, OUT_DIR),
        interval=interval,
        artifact_uri=out_root or None,
        checkpoint_uri=config.resilience.checkpoint_path or None,
        attempt=attempt or None,
    )


def placeholders(offload: MetricsOffload | None) -> list[str]:
    """The fields a client dry-run shows as placeholders (the dry-run warning names them)."""
    if offload is None:
        return []
    out = []
    if offload.store == UNRESOLVED_STORE:
        out.append("experiment store")
    if offload.image == UNRESOLVED_IMAGE:
        out.append("offload image")
    return out
