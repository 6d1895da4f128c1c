"""A team store's object side, as seen from below the portal: which store values are team store
URLs, where such a URL keeps its objects, and the S3 filesystem its AWS variables name.

The portal's store (`tau.portal.store.location`, `.objects`) and the logs `tau run` keeps before
it deletes a workload (`tau.runs.kept_place`) both need these, and `tau.runs` sits below the
portal; so they live here, importing nothing of tau. pyarrow is imported only when a
filesystem is made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

#: The URL schemes of a team store (its index is a PostgreSQL database).
SCHEMES = ("postgresql", "postgres")


class ObjectStoreError(ValueError):
    """A store value or object store setting that cannot be used; `hint` says what to do."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def is_team_url(value: str) -> bool:
    return value.split("://", 1)[0].lower() in SCHEMES and "://" in value


def objects_root(value: str) -> str:
    """`BUCKET/PREFIX` (or `BUCKET`) of a team store URL's `?objects=s3://BUCKET/PREFIX`.

    Raises:
        ObjectStoreError: the URL holds a password, or names no object store, or not as
            s3://BUCKET/PREFIX.
    """
    if urlsplit(value).password is not None:
        raise ObjectStoreError(
            "the URL must not hold a password",
            hint="put the password in PGPASSWORD or ~/.pgpass (libpq reads both)",
        )
    objects = [v for k, v in parse_qsl(urlsplit(value).query) if k == "objects"]
    parts = urlsplit(objects[0]) if len(objects) == 1 else None
    if parts is None or parts.scheme != "s3" or not parts.netloc:
        raise ObjectStoreError(
            "a team store URL names its object store once, as ?objects=s3://BUCKET/PREFIX"
        )
    prefix = parts.path.strip("/")
    return f"{parts.netloc}/{prefix}" if prefix else parts.netloc


def filesystem(env: Mapping[str, str] | None = None) -> Any:
    """An `S3FileSystem` for the endpoint the AWS variables name (AWS's own when none).

    Raises:
        ObjectStoreError: pyarrow is not installed (the `tau[portal]` extra brings it),
            AWS_ENDPOINT_URL is not an http(s) URL, or pyarrow refused a setting.
    """
    try:
        import pyarrow.fs as pafs
    except ModuleNotFoundError as exc:
        raise ObjectStoreError(
            f"writing to a team store's object storage needs {exc.name}, which is not installed",
            hint="install tau with its portal extra: pip install 'tau[portal]'",
        ) from None

    environ = dict(os.environ) if env is None else dict(env)
    # A team store on a platform's own object server has no instance metadata service: without
    # this the SDK probes 169.254.169.254 for credentials and region before giving up.
    os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
    options: dict[str, Any] = {
        "region": environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION") or "us-east-1",
        "connect_timeout": 5.0,
        "request_timeout": 30.0,
        # A stopped server fails the command at once rather than after minutes of retries.
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=2),
    }
    endpoint = environ.get("AWS_ENDPOINT_URL_S3") or environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        parts = urlsplit(endpoint)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ObjectStoreError(
                f"AWS_ENDPOINT_URL={endpoint!r} is not an http(s) URL",
                hint="set it like AWS_ENDPOINT_URL=http://127.0.0.1:7070",
            )
        options["endpoint_override"] = parts.netloc
        options["scheme"] = parts.scheme
    try:
        return pafs.S3FileSystem(**options)
    except Exception as exc:  # pyarrow raises its own error types for bad settings
        text = str(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        raise ObjectStoreError(f"object store settings were refused: {first}") from None


def read_file(fs: Any, path: str) -> bytes | None:
    """The bytes of the object at `path` of `fs` (from `filesystem()`), None when absent."""
    import pyarrow.fs as pafs

    if fs.get_file_info(path).type != pafs.FileType.File:
        return None
    with fs.open_input_stream(path) as fh:
        return bytes(fh.read())


def list_files(fs: Any, top: str) -> list[str]:
    """Every object under `top` of `fs`, as paths relative to it ('/'-separated), sorted."""
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(top, allow_not_found=True, recursive=True))
    return sorted(i.path[len(top) + 1 :] for i in infos if i.type == pafs.FileType.File)
