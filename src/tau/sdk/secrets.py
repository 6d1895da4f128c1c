"""Secrets a workload's environment reads, named without their values.

Pure, except `read_value` (reads the local environment or a file when a run is submitted).
A `SecretRef` points at a Secret that already exists in the cluster; a `SecretSource` says where
on the submitting machine a value is, so the value travels in the run's own Secret at submit
time and never lands in a manifest, a build artifact or a log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tau.sdk.errors import SdkError


@dataclass(frozen=True)
class SecretRef:
    """A key of an existing Kubernetes Secret."""

    name: str
    key: str

    def __post_init__(self) -> None:
        if not self.name or not self.key:
            raise SdkError("tau.secret_ref requires non-empty secret name and key")


@dataclass(frozen=True)
class SecretSource:
    """A value read on the submitting machine (an env var or a file) into the run's Secret."""

    key: str
    env: str | None = None
    path: str | None = None

    def __post_init__(self) -> None:
        if not self.key:
            raise SdkError("tau secret sources require a non-empty key")
        if bool(self.env) == bool(self.path):
            raise SdkError("tau secret sources require exactly one of env or path")


def secret_ref(name: str, key: str) -> SecretRef:
    """An env value taken from key `key` of the existing Secret `name`."""
    return SecretRef(name=name, key=key)


#: The reference's short alias of secret_ref.
secret = secret_ref


def secret_from_env(key: str, *, env: str | None = None) -> SecretSource:
    """Key `key` of the run's Secret, read at submit time from the local env var `env`
    (default: `key` itself).
    """
    return SecretSource(key=key, env=env or key)


def secret_from_file(key: str, *, path: str) -> SecretSource:
    """Key `key` of the run's Secret, read at submit time from the local file `path`
    (relative to the module's folder); trailing newlines are dropped.
    """
    return SecretSource(key=key, path=path)


def read_value(source: SecretSource, env_name: str, *, base: Path) -> str:
    """The value `source` names, read now; an unset variable or a missing file is an SdkError
    that names the source and the env entry, never a value.
    """
    if source.env:
        if source.env not in os.environ:
            raise SdkError(f"tau-py: secret env source {source.env!r} for {env_name} is not set")
        return os.environ[source.env]
    assert source.path is not None  # __post_init__: exactly one of env and path
    path = Path(source.path).expanduser()
    if not path.is_absolute():
        path = base / path
    if not path.exists():
        raise SdkError(f"tau-py: secret file source {path} for {env_name} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise SdkError(
            f"tau-py: cannot read secret file source {path} for {env_name}: {reason}"
        ) from None
    return text.rstrip("\n")
