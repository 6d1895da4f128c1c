"""The team store's object storage: pyarrow's own S3 filesystem over an S3-compatible server.

Performs I/O. The endpoint and credentials come from the standard AWS places (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, or a profile), read by the AWS SDK inside
pyarrow: this module never holds a secret, so no message of it can print one.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from tau.portal.errors import StoreError


def filesystem(env: dict[str, str] | None = None) -> Any:
    """An `S3FileSystem` for the endpoint the AWS variables name (AWS's own when none)."""
    import pyarrow.fs as pafs

    environ = dict(os.environ) if env is None else env
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
            raise StoreError(
                f"AWS_ENDPOINT_URL={endpoint!r} is not an http(s) URL",
                hint="set it like AWS_ENDPOINT_URL=http://127.0.0.1:7070",
            )
        options["endpoint_override"] = parts.netloc
        options["scheme"] = parts.scheme
    try:
        return pafs.S3FileSystem(**options)
    except Exception as exc:  # pyarrow raises its own error types for bad settings
        raise StoreError(f"object store settings were refused: {first_line(exc)}") from None


def read_stored(store: Any, uri: str, *, content: bool = True) -> tuple[str, bytes] | None:
    """(name, bytes) of the store-relative artifact `uri` under the store's `artifacts/` prefix;
    None when it is not such a path (nothing outside that prefix is ever handed out) or is
    missing. Without `content` only its presence is checked (the bytes come back empty).
    """
    from posixpath import normpath

    import pyarrow.fs as pafs

    from tau.portal.store import schema

    rel = normpath(uri)
    if rel != uri or not rel.startswith(f"{schema.ARTIFACTS}/") or ".." in rel.split("/"):
        return None
    try:
        if not content:
            info = store.filesystem.get_file_info(store.path_of(rel))
            return (rel.rsplit("/", 1)[-1], b"") if info.type == pafs.FileType.File else None
        with store.filesystem.open_input_stream(store.path_of(rel)) as fh:
            return rel.rsplit("/", 1)[-1], bytes(fh.read())
    except (OSError, FileNotFoundError):
        return None


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
