"""The team store: the index in PostgreSQL, metric and artifact files in S3-compatible storage.

Performs I/O (libpq or psycopg, pyarrow's S3 filesystem). It implements `interface.Store`, so
every read command and both servers run on it unchanged: the read SQL of the folder store is
written in the subset both databases share and only its placeholders are translated here.
Reads go through libpq directly (`libpq.py`: a read command does not pay psycopg's import),
or through psycopg where libpq cannot be loaded. It is written only by `experiment push` (see
`push.py`); `experiment init --store URL` creates and migrates its schema, and opening it for
reading never changes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from tau.portal.errors import StoreError
from tau.portal.store import libpq, schema, teamschema
from tau.portal.store.interface import Params, Row
from tau.portal.store.location import TeamURL
from tau.portal.store.objects import first_line
from tau.portal.store.recent import Recent

T = TypeVar("T")
INIT = "taugrid-portal experiment init --store"
APPLICATION = "taugrid-portal"


@functools.lru_cache(maxsize=512)
def pieces(sql: str) -> tuple[str, ...]:
    """The query split at SQLite's `?` placeholders (one more piece than placeholders).

    Question marks inside quoted strings or identifiers are left alone.
    """
    out: list[str] = []
    piece: list[str] = []
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            out.append("".join(piece))
            piece = []
            continue
        piece.append(ch)
    out.append("".join(piece))
    return tuple(out)


@functools.lru_cache(maxsize=512)
def to_postgres(sql: str) -> str:
    """The query with SQLite's `?` placeholders as psycopg's `%s` (and a literal `%` doubled)."""
    return "%s".join(p.replace("%", "%%") for p in pieces(sql))


def connect(url: TeamURL) -> Any:
    """An autocommit connection (client-side parameter binding, rows as dicts)."""
    import logging

    import psycopg
    from psycopg.rows import dict_row

    # psycopg logs a lost connection's cleanup as well; the command's own one-line error says
    # it, so the log line would only repeat it (without a handler Python prints it to stderr).
    log = logging.getLogger("psycopg")
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    try:
        return psycopg.connect(
            url.conninfo,
            autocommit=True,
            cursor_factory=psycopg.ClientCursor,
            row_factory=dict_row,
            connect_timeout=5,
            application_name=APPLICATION,
        )
    except psycopg.Error as exc:
        raise unreachable(url, exc) from None


class Reader(Protocol):
    """A connection that runs read queries written with `?` placeholders."""

    @property
    def closed(self) -> bool: ...

    def rows(self, sql: str, params: Sequence[Any]) -> list[Row]: ...

    def close(self) -> None: ...


class _LibpqReader:
    """Reads through libpq itself (see `libpq.py`)."""

    def __init__(self, conn: libpq.Connection) -> None:
        self.conn = conn

    @property
    def closed(self) -> bool:
        return self.conn.closed

    def rows(self, sql: str, params: Sequence[Any]) -> list[Row]:
        return self.conn.rows(sql, params, pieces(sql))

    def close(self) -> None:
        self.conn.close()


class _PsycopgReader:
    """Reads through psycopg (where libpq cannot be loaded by itself); its errors as libpq's."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    @property
    def closed(self) -> bool:
        return bool(self.conn.closed)

    def rows(self, sql: str, params: Sequence[Any]) -> list[Row]:
        import psycopg

        try:
            return list(self.conn.execute(to_postgres(sql), params))
        except psycopg.OperationalError as exc:
            raise libpq.Error(str(exc), operational=True) from None
        except psycopg.Error as exc:
            raise libpq.Error(str(exc), operational=False) from None

    def close(self) -> None:
        self.conn.close()


def reader(url: TeamURL) -> Reader:
    """A read connection to the team store's index: libpq's own when it loads, else psycopg's."""
    lib = libpq.load()
    if lib is None:
        return _PsycopgReader(connect(url))
    try:
        return _LibpqReader(libpq.Connection(lib, url.conninfo, application_name=APPLICATION))
    except libpq.Error as exc:
        raise unreachable(url, exc) from None


class Unreachable(StoreError):
    """The team store's database cannot be reached (down, restarting, refusing the login)."""


def unreachable(url: TeamURL, exc: BaseException) -> StoreError:
    """One line naming the database and what libpq said (libpq never prints a password)."""
    return Unreachable(
        f"team store index {url.conninfo.split('?', 1)[0]}: {first_line(exc)}",
        hint="check the server is up and PGPASSWORD or ~/.pgpass holds the password",
    )


class TeamStore:
    """An opened team store (`interface.Store`)."""

    def __init__(self, url: TeamURL, conn: Any = None) -> None:
        self.url = url
        #: psycopg's connection, for writers and `experiment sql` (opened when first used).
        self._conn: Any = conn
        #: The connection read queries use (opened when first used).
        self._reader: Reader | None = None
        self._fs: Any = None
        self.manifest: dict[str, Any] = {
            "schema_version": schema.SCHEMA_VERSION,
            "kind": schema.KIND,
            "backend": "team",
            "team_schema_version": teamschema.VERSION_NAME,
            "project": "",
            "experiment_id": "",
        }

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, url: TeamURL) -> TeamStore:
        """Open for reading; a store whose schema is missing or older says to run `init`."""
        store = cls(url)
        have = store.schema_version()
        if have != teamschema.VERSION:
            store.close()
            raise _version_error(url, have)
        return store

    @classmethod
    def init(cls, url: TeamURL) -> tuple[TeamStore, int]:
        """Create or migrate the schema (in one transaction); the version it started from."""
        import psycopg

        conn = connect(url)
        store = cls(url, conn)
        # Its reads (the version it starts from) run inside the migration's transaction.
        store._reader = _PsycopgReader(conn)
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (teamschema.MIGRATE_LOCK,))
                conn.execute(teamschema.meta_table())
                have = store.schema_version()
                if have > teamschema.VERSION:
                    raise _version_error(url, have)
                for step in range(have, teamschema.VERSION):
                    for statement in teamschema.MIGRATIONS[step]:
                        conn.execute(statement)
                conn.execute(
                    f"INSERT INTO {teamschema.META} (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                    (str(teamschema.VERSION),),
                )
        except psycopg.Error as exc:
            store.close()
            raise unreachable(url, exc) from None
        except BaseException:
            store.close()
            raise
        return store, have

    def schema_version(self) -> int:
        """The schema version the database holds (0: none)."""
        found = self.scalar("SELECT to_regclass(?)::text", (teamschema.META,))
        if found is None:
            return 0
        value = self.scalar(f"SELECT value FROM {teamschema.META} WHERE key = 'schema_version'")
        return int(value) if value is not None else 0

    # -- interface.Store -----------------------------------------------------------------
    @property
    def location(self) -> str:
        return self.url.text

    @property
    def project(self) -> str:
        return ""

    @property
    def experiment_id(self) -> str:
        return ""

    @property
    def filesystem(self) -> Any:
        if self._fs is None:
            from tau.portal.store.objects import filesystem

            self._fs = filesystem()
        return self._fs

    def path_of(self, rel: str) -> str:
        prefix = f"{self.url.bucket}/{self.url.prefix}" if self.url.prefix else self.url.bucket
        return f"{prefix}/{rel.lstrip('/')}"

    def file_bytes(self, rel: str) -> bytes:
        return _FILES.get(
            self.path_of(rel), lambda: _read_object(self.filesystem, self.path_of(rel))
        )

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        return self._retrying(lambda r: r.rows(sql, _args(params)))

    def scalar(self, sql: str, params: Params = ()) -> Any:
        rows = self.query(sql, params)
        return next(iter(rows[0].values())) if rows else None

    def read_only(self, sql: str) -> tuple[list[str], list[Row]]:
        """Column names and rows of one query run in a READ ONLY transaction (`experiment sql`)."""
        import psycopg

        conn = self.conn
        try:
            with conn.transaction():
                conn.execute("SET TRANSACTION READ ONLY")
                cur = conn.execute(sql)
                columns = [d.name for d in cur.description or ()]
                rows = list(cur.fetchall())
        except psycopg.OperationalError as exc:
            raise unreachable(self.url, exc) from None
        except psycopg.Error as exc:
            raise StoreError(
                f"taugrid-portal experiment sql: {first_line(exc)}",
                hint="list tables with: select table_name from information_schema.tables "
                "where table_schema = 'public'",
            ) from None
        return columns, rows

    def version(self) -> str:
        seq = self.scalar(f"SELECT coalesce(max(seq), 0) FROM {teamschema.PUSHES}")
        return f"team:{seq}"

    def close(self) -> None:
        for conn in (self._reader, self._conn):
            if conn is not None:
                conn.close()
        self._reader = None
        self._conn = None

    @property
    def conn(self) -> Any:
        """The psycopg connection (writers and `experiment sql`)."""
        if self._conn is None or self._conn.closed:
            self._conn = connect(self.url)
        return self._conn

    def _retrying(self, work: Callable[[Reader], T]) -> T:
        """Run a read; once more on a fresh connection when the server went away meanwhile
        (a restarted database must not leave a long-running server broken).
        """
        for attempt in (1, 2):
            if self._reader is None or self._reader.closed:
                self._reader = reader(self.url)
            conn = self._reader
            try:
                return work(conn)
            except libpq.Error as exc:
                if not exc.operational:
                    raise StoreError(f"team store query failed: {first_line(exc)}") from None
                if attempt == 2 or not conn.closed:
                    raise unreachable(self.url, exc) from None
                conn.close()
                self._reader = None
        raise AssertionError("unreachable")


#: 64 MB of fetched metric files: a chart decodes a file's metrics once (see `series`), so a
#: file is fetched again only for a metric stored in a row group not yet read.
_FILES: Recent[bytes] = Recent(64 << 20, len)


def _read_object(fs: Any, path: str) -> bytes:
    with fs.open_input_stream(path) as fh:
        return bytes(fh.read())


def _args(params: Params) -> Sequence[Any]:
    """The parameters of a query written with `?` placeholders (positional only)."""
    if isinstance(params, Mapping):
        raise TypeError("team store reads take positional parameters")
    return tuple(params)


def _version_error(url: TeamURL, have: int) -> StoreError:
    if have == 0:
        return StoreError(
            f"team store {url} is not initialized",
            hint=f"create its schema once with `{INIT} {url}`",
        )
    if have < teamschema.VERSION:
        return StoreError(
            f"team store {url} has schema v{have}; this taugrid-portal reads v{teamschema.VERSION}",
            hint=f"migrate it with `{INIT} {url}`",
        )
    return StoreError(
        f"team store {url} has schema v{have}, newer than this taugrid-portal "
        f"(v{teamschema.VERSION})",
        hint="upgrade taugrid-portal",
    )
