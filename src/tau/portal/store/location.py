"""Which store a `--store` value names: a folder, or a team store URL (`opener` opens either).

Pure apart from reading the environment mapping it is given.
A team store is `postgresql://USER@HOST:PORT/DB?objects=s3://BUCKET/PREFIX`: the index in that
database, the metric and artifact files under that object-store prefix. Secrets never ride in
the URL: the database password comes from libpq's places (PGPASSWORD, ~/.pgpass), the object
store's credentials from the AWS variables or profile, so the URL can be printed as it is.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tau.objectstore import is_team_url
from tau.portal.errors import UsageError
from tau.portal.store import resolve

FORM = "postgresql://USER@HOST:PORT/DB?objects=s3://BUCKET/PREFIX"


@dataclass(frozen=True)
class TeamURL:
    """A parsed team store URL."""

    #: The URL as the user wrote it (it holds no secret: parsing refuses a password).
    text: str
    #: The libpq connection URI: the URL without `objects`.
    conninfo: str
    bucket: str
    #: Key prefix under the bucket, without leading or trailing `/` ("" for the bucket root).
    prefix: str

    def __str__(self) -> str:
        return self.text


def parse_team_url(value: str, *, flag: str = "--store") -> TeamURL:
    """The parts of a team store URL; a located error for anything else."""
    parts = urlsplit(value)
    if parts.password is not None:
        # Never echo the value: it holds a password.
        shown = f"{parts.scheme}://{parts.username or ''}:***@{parts.hostname or ''}"
        raise UsageError(
            f"{flag} {shown}...: the URL must not hold a password",
            hint="put the password in PGPASSWORD or ~/.pgpass (libpq reads both)",
        )
    query = parse_qsl(parts.query, keep_blank_values=True)
    objects = [v for k, v in query if k == "objects"]
    if len(objects) != 1:
        raise UsageError(
            f"{flag} {value}: a team store URL names its object store once with ?objects=",
            hint=f"write it as {FORM}",
        )
    obj = urlsplit(objects[0])
    if obj.scheme != "s3" or not obj.netloc:
        raise UsageError(
            f"{flag} {value}: objects={objects[0]} is not s3://BUCKET/PREFIX",
            hint=f"write it as {FORM}",
        )
    if not parts.path.strip("/"):
        raise UsageError(f"{flag} {value}: names no database", hint=f"write it as {FORM}")
    rest = urlencode([(k, v) for k, v in query if k != "objects"])
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, rest, ""))
    return TeamURL(value, conninfo, obj.netloc, obj.path.strip("/"))


def resolve_store(store: str | None, env: Mapping[str, str] | None = None) -> Path | TeamURL:
    """The folder root or the team URL named by `--store`, `TAU_EXP_STORE` or the root parts."""
    environ = os.environ if env is None else env
    chosen = resolve.chosen_store(store, environ)
    if is_team_url(chosen):
        return parse_team_url(chosen, flag="--store" if store else "TAU_EXP_STORE")
    return resolve.resolve_root(store, environ)
