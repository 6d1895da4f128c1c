"""The team store's object storage: pyarrow's own S3 filesystem over an S3-compatible server.

Performs I/O. The endpoint and credentials come from the standard AWS places (AWS_ENDPOINT_URL,
AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, or a profile), read by the AWS SDK inside
pyarrow: this module never holds a secret, so no message of it can print one.
"""

from __future__ import annotations

from typing import Any

from tau.portal.errors import StoreError


def filesystem(env: dict[str, str] | None = None) -> Any:
    """An `S3FileSystem` for the endpoint the AWS variables name (`tau.objectstore`)."""
    from tau.objectstore import ObjectStoreError
    from tau.objectstore import filesystem as make

    try:
        return make(env)
    except ObjectStoreError as exc:
        raise StoreError(exc.message, hint=exc.hint or None) from None


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
