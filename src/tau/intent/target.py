"""Find the config a `tau run` command means: TARGET, --config, or a default file, and in a
monorepo the project (`tau.projects.yaml`) it belongs to.

Performs I/O (checks which files exist, reads the project catalog).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tau.errors import UsageError
from tau.intent import projects
from tau.intent.probe import is_file
from tau.k8s.names import DNS_1123_LABEL

DEFAULT_FILES = ("tau.yaml", "tau.yml", ".tau.yaml")
SMOKE_CONFIG = "smoke/tau.yaml"


@dataclass(frozen=True)
class Target:
    """The config file to read, the run name the command line gives, and the monorepo project.

    `project` is None outside a monorepo; otherwise its connection and workspace are the
    run's (see `tau.cli.run.Where.session`).
    """

    path: Path
    name: str | None = None
    project: projects.Project | None = None


def resolve(
    target: str | None, config: Path | None, cwd: Path, project: str | None = None
) -> Target:
    """Resolve the command line to a config file (and project, in a monorepo).

    The catalog is the one of the repository holding --config, else the working directory.
    Without a catalog the lookup is relative to `cwd`; with one, to the chosen project's
    directory (`tau.intent.projects.choose` gives the order).

    Raises:
        UsageError: the target is a path, is missing, or is ambiguous; --project without a
            catalog; a project that cannot be chosen.
        ConfigError: the catalog is invalid.
    """
    _check_target(target)
    explicit = None
    if config is not None:
        explicit = config if config.is_absolute() else cwd / config
        if not is_file(explicit):
            raise UsageError(f'config file "{config}" not found')
    anchor = explicit.parent if explicit is not None else cwd
    catalog = projects.find(anchor)
    if catalog is None:
        if project is not None:
            raise projects.missing(anchor)
        return _in_directory(target, explicit, cwd, None)
    chosen = projects.choose(catalog, name=project, config=explicit, cwd=cwd, target=target)
    return _in_directory(target, explicit, chosen.root, chosen)


def _check_target(target: str | None) -> None:
    looks_like_path = target is not None and (
        "/" in target or "\\" in target or target.endswith((".yaml", ".yml"))
    )
    if looks_like_path:
        raise UsageError(
            f'run target "{target}" must be a name, not a path; use --config for explicit paths'
        )
    if target is not None and not DNS_1123_LABEL.match(target):
        raise UsageError(
            f"run target \"{target}\" is not a valid run name (lowercase letters, digits and '-')"
        )


def _in_directory(
    target: str | None, explicit: Path | None, base: Path, project: projects.Project | None
) -> Target:
    """The config within `base` (the working directory, or the project's directory)."""
    if explicit is not None:
        return Target(explicit, target, project)
    if target == "smoke":
        # The built-in probe ships with tau; a repository's own tau/smoke.yaml is not read.
        from tau.intent.spec import spec_path

        return Target(spec_path(SMOKE_CONFIG), None, project)
    # Messages name files as the user finds them: tau/x.yaml, or projects/p/tau/x.yaml.
    prefix = f"{project.path}/" if project is not None else ""
    scope = f' in project "{project.name}"' if project is not None else ""
    if target is not None:
        found = [
            p for p in (base / "tau" / f"{target}.{ext}" for ext in ("yaml", "yml")) if is_file(p)
        ]
        if len(found) == 2:
            raise UsageError(
                f'run target "{target}" has both {prefix}tau/{target}.yaml and '
                f"{prefix}tau/{target}.yml; keep exactly one extension"
            )
        if not found:
            raise UsageError(
                f'run target "{target}" not found{scope}; expected {prefix}tau/{target}.yaml '
                "or pass --config"
            )
        return Target(found[0], None, project)
    for name in DEFAULT_FILES:
        if is_file(base / name):
            return Target(base / name, None, project)
    raise UsageError(f"no Tau run config found{scope}; create {prefix}tau.yaml or pass --config")
