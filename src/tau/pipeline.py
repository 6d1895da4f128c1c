"""The offline half of `tau run`: read the entrypoint and catalog, resolve, render.

Performs I/O (reads the entrypoint and the catalog). `--dry-run=client` prints exactly
what this returns, and submit sends the same objects, so a preview never lies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tau import render
from tau.errors import ConfigError, Diagnostic
from tau.intent import presets
from tau.intent.validate import ValidConfig
from tau.plan.model import UNRESOLVED_SERVICE_ACCOUNT, Plan, Script
from tau.plan.resolve import Resolved, resolve

if TYPE_CHECKING:
    from tau.plan.service import ServeSpec
    from tau.provenance import Provenance


class ExperimentsTarget(Protocol):
    """What a submit's render reads of the workspace it goes to (`tau.workspaces.target`'s
    WorkspaceTarget is one): its name and its spec.experiments, for metrics offload.
    """

    @property
    def workspace(self) -> str | None: ...
    @property
    def experiments_store(self) -> str | None: ...
    @property
    def experiments_secret(self) -> str | None: ...
    @property
    def offload_image(self) -> str | None: ...


PLACEHOLDER_WARNING = (
    "client dry-run does not contact the cluster: {fields} shown as a "
    "placeholder and resolved at submit; use --dry-run=server to see the real "
    "value"
)


@dataclass(frozen=True)
class Preview:
    """Rendered objects and what the user should hear about them."""

    documents: list[dict[str, Any]]
    resolved: Resolved

    @property
    def warnings(self) -> list[str]:
        lines = [d.format() for d in self.resolved.warnings]
        if self.resolved.placeholders:
            names = self.resolved.placeholders
            fields = (
                " and ".join(names)
                if len(names) < 3
                else (", ".join(names[:-1]) + " and " + names[-1])
            )
            lines.append("warning: " + PLACEHOLDER_WARNING.format(fields=fields))
        return lines


def dump(documents: list[dict[str, Any]], fmt: str) -> str:
    """The documents as the CLI prints them: canonical YAML, or JSON (`fmt` yaml or json)."""
    from tau.render import manifests

    return manifests.dump_yaml(documents) if fmt == "yaml" else manifests.dump_json(documents)


def service_documents(spec: ServeSpec, *, redact: bool) -> list[dict[str, Any]]:
    """A `tau serve` spec as its documents, in apply order: what `serve deploy --dry-run=client`
    prints (redacted) and deploy sends (unredacted).
    """
    from tau.render import service

    return service.render(spec, redact=redact)


def profile_name(plan: Plan) -> str:
    """The workload profile a submit reports (`profile=...`)."""
    from tau.render.labels import profile_name as name

    return name(plan)


def read_script(valid: ValidConfig) -> Script | None:
    """The entrypoint file, resolved against the config's directory; None with run.source.

    The file is read once per run: validate's import check keeps the bytes it read
    (`entry_bytes`), and only when it did not read them (not a .py file, run.working_dir)
    are they read here.

    Raises:
        ConfigError: the entrypoint does not exist or cannot be read.
    """
    entry = valid.config.entrypoint
    if not entry or valid.config.run.source is not None:
        return None
    path = Path(entry) if entry.startswith("/") else valid.config_dir / entry
    try:
        content = valid.entry_bytes if valid.entry_bytes is not None else path.read_bytes()
    except (OSError, ValueError) as exc:
        missing = isinstance(exc, FileNotFoundError)
        reason = "file not found" if missing else (getattr(exc, "strerror", None) or str(exc))
        raise ConfigError(
            [
                Diagnostic(
                    valid.entry_path,
                    f'run.entrypoint "{entry}": {reason} ({path})',
                    "the entrypoint resolves relative to the config file's directory",
                    valid.where(valid.entry_path),
                )
            ]
        ) from None
    first_line = content.split(b"\n", 1)[0]
    shebang = (
        first_line[2:].decode(errors="replace").strip() if first_line.startswith(b"#!") else None
    )
    return Script(path.name, content, shebang)


def read_project(valid: ValidConfig) -> tuple[bytes, str] | None:
    """(zip, module) of `run.working_dir`, or None when it is not set.

    Raises:
        ConfigError: the project cannot be archived or the entrypoint is not inside it.
    """
    config = valid.config
    working_dir = config.run.working_dir
    if not working_dir:
        return None
    from tau.intent import project  # zipfile and shutil: only a run that ships a project

    root = Path(working_dir) if working_dir.startswith("/") else valid.config_dir / working_dir
    loc = valid.where("run.working_dir")
    try:
        data = project.archive(root, config.run.working_dir_excludes)
    except project.ProjectError as exc:
        raise ConfigError(
            [Diagnostic("run.working_dir", f'run.working_dir "{working_dir}": {exc}', location=loc)]
        ) from None
    entry = config.entrypoint or ""
    script = Path(entry) if entry.startswith("/") else valid.config_dir / entry
    module = project.module_of(script, root)
    if module is None:
        raise ConfigError(
            [
                Diagnostic(
                    valid.entry_path,
                    f'entrypoint "{entry}" must be a .py file inside '
                    f'run.working_dir "{working_dir}" (it runs as python3 -m)',
                    location=valid.where(valid.entry_path),
                )
            ]
        )
    return data, module


def catalog_for(valid: ValidConfig, env: Mapping[str, str]) -> presets.Catalog:
    explicit = valid.config.policy.topology_policy
    path = None
    if explicit:
        path = Path(explicit) if explicit.startswith("/") else valid.config_dir / explicit
    try:
        return presets.load_catalog(path, env.get("TAU_TOPOLOGY_POLICY"))
    except ConfigError as exc:
        # Point file-level problems at the field that named the file.
        loc = valid.where("policy.topology_policy") if explicit else None
        raise ConfigError(
            [
                replace(
                    d, location=d.location if d.location and d.location.line else loc or d.location
                )
                for d in exc.diagnostics
            ]
        ) from None


def client_preview(
    valid: ValidConfig,
    env: Mapping[str, str],
    provenance: Provenance | None = None,
    *,
    service_account: str | None = None,
) -> Preview:
    """Render offline with placeholders and redacted Secret references.

    The service account is the workspace's, known only at submit: a placeholder unless
    --service-account names it (`service_account`).
    """
    from tau.plan import metrics_offload

    resolved = resolve(
        valid,
        catalog_for(valid, env),
        read_script(valid),
        service_account=service_account or UNRESOLVED_SERVICE_ACCOUNT,
        project=read_project(valid),
        platform=metrics_offload.platform(env, offline=True),
    )
    return Preview(_stamp(_render(valid, resolved, redact=True), provenance), resolved)


def _stamp(documents: list[dict[str, Any]], provenance: Provenance | None) -> list[dict[str, Any]]:
    """The workload objects with the run's provenance annotations (code-sha, tau-command)."""
    from tau.provenance import annotate

    return annotate(documents, provenance) if provenance else documents


def cluster_render(
    valid: ValidConfig,
    env: Mapping[str, str],
    *,
    namespace: str,
    queue: str | None,
    service_account: str | None = None,
    retry_env: dict[str, str] | None = None,
    redact: bool = False,
    provenance: Provenance | None = None,
    workspace: ExperimentsTarget | None = None,
    metrics_session: str | None = None,
) -> Preview:
    """Render for a real submit: the namespace, the queue and the service account (when the
    workspace or --service-account gives them) known, Secret references intact unless `redact`.
    Everything else is the client dry-run's path.

    `workspace` is the resolved target whose spec.experiments metrics offload reads (None: no
    workspace, only a namespace). `metrics_session` defaults to a fresh random id: this is the
    submit boundary, the one place a render may draw randomness.
    """
    import secrets

    from tau.plan import metrics_offload

    platform = metrics_offload.platform(
        env,
        offline=False,
        workspace=workspace.workspace if workspace else None,
        store=workspace.experiments_store if workspace else None,
        credentials_secret=workspace.experiments_secret if workspace else None,
        image=workspace.offload_image if workspace else None,
    )
    resolved = resolve(
        valid,
        catalog_for(valid, env),
        read_script(valid),
        namespace=namespace,
        queue=queue,
        service_account=service_account,
        retry_env=retry_env,
        project=read_project(valid),
        platform=platform,
        metrics_session=metrics_session or secrets.token_hex(12),
    )
    return Preview(_stamp(_render(valid, resolved, redact=redact), provenance), resolved)


def _render(valid: ValidConfig, resolved: Resolved, *, redact: bool) -> list[dict[str, Any]]:
    """Render the plan; a payload over its size limit is a diagnostic, not an exception."""
    from tau.intent.validate import limits
    from tau.render.payload import PayloadTooLarge

    try:
        return render.render(resolved.plan, redact=redact)
    except PayloadTooLarge as exc:
        raise limits.payload_too_large(valid, str(exc)) from None
