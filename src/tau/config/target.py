"""Find the config a `tau run` command means: TARGET, --config, or a default file.

Performs I/O (checks which files exist).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tau.config.probe import is_file
from tau.errors import UsageError
from tau.k8s.names import DNS_1123_LABEL

DEFAULT_FILES = ("tau.yaml", "tau.yml", ".tau.yaml")
SMOKE_CONFIG = "smoke/tau.yaml"


@dataclass(frozen=True)
class Target:
    """The config file to read and the run name the command line gives, if any."""

    path: Path
    name: str | None = None


def resolve(target: str | None, config: Path | None, cwd: Path) -> Target:
    """Resolve the command line to a config file.

    Raises:
        UsageError: the target is a path, is missing, or is ambiguous.
    """
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
    if config is not None:
        path = config if config.is_absolute() else cwd / config
        if not is_file(path):
            raise UsageError(f'config file "{config}" not found')
        return Target(path, target)
    if target == "smoke":
        # The built-in probe ships with tau; a repository's own tau/smoke.yaml is not read.
        from tau.config.spec import spec_path

        return Target(spec_path(SMOKE_CONFIG))
    if target is not None:
        found = [
            p for p in (cwd / "tau" / f"{target}.yaml", cwd / "tau" / f"{target}.yml") if is_file(p)
        ]
        if len(found) == 2:
            raise UsageError(
                f'run target "{target}" has both tau/{target}.yaml and '
                f"tau/{target}.yml; keep exactly one extension"
            )
        if not found:
            raise UsageError(
                f'run target "{target}" not found; expected tau/{target}.yaml or pass --config'
            )
        return Target(found[0])
    for name in DEFAULT_FILES:
        if is_file(cwd / name):
            return Target(cwd / name)
    raise UsageError("no Tau run config found; create tau.yaml or pass --config")
