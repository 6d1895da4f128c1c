"""Read queries on the team store's index through libpq itself (ctypes), without psycopg.

Performs I/O (PostgreSQL). A read command on a team store (`experiment search`, `status`, ...)
is a fresh process that runs a handful of queries: importing psycopg costs it about 90 ms of a
300 ms budget (psycopg loads asyncio, logging and its whole type registry at import), while
libpq, which psycopg drives anyway, loads and connects in a few milliseconds. So reads go
through libpq directly: the query's `?` placeholders become `$1`, `$2`, ... and the values go
as server-side parameters (`PQexecParams`, typed as psycopg types them), so no value is ever
quoted into the query text; results come back as text and are typed by their column's type
OID as psycopg types them (int, float, Decimal, bool, str).

libpq is the system's (`libpq.so.5`, `libpq.5.dylib`) or the copy bundled with psycopg's binary
wheel; where neither loads, `load()` is None and the team store reads with psycopg. Writers
(`experiment init`, `experiment push`) and `experiment sql` keep psycopg: they need its
transactions and run long enough not to notice its import.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

_CONNECTION_OK = 0
_CONNECTION_BAD = 1
_COMMAND_OK = 1
_TUPLES_OK = 2
_DIAG_SQLSTATE = ord("C")
_DIAG_MESSAGE_PRIMARY = ord("M")
#: SQLSTATE classes psycopg raises as OperationalError: the connection or the server failed,
#: not the query (a rerun on a fresh connection may succeed).
_OPERATIONAL = ("08", "53", "54", "55", "57", "58")


def _bool(value: bytes) -> bool:
    return value == b"t"


def _decimal(value: bytes) -> Decimal:
    return Decimal(value.decode())


#: How a text result of each type OID becomes the Python value psycopg gives for it.
_TYPES: dict[int, Callable[[bytes], Any]] = {
    16: _bool,  # bool
    20: int,  # int8
    21: int,  # int2
    23: int,  # int4
    26: int,  # oid
    700: float,  # float4
    701: float,  # float8
    1700: _decimal,  # numeric (sum() of bigint, for one)
    18: bytes.decode,  # "char"
    19: bytes.decode,  # name
    25: bytes.decode,  # text
    705: bytes.decode,  # unknown (an untyped literal)
    1042: bytes.decode,  # bpchar
    1043: bytes.decode,  # varchar
}


class Error(Exception):
    """A failed connection or query; `operational`: the server or the connection failed, not
    the query (on a connection that is now closed, a fresh one may succeed).
    """

    def __init__(self, message: str, *, operational: bool) -> None:
        super().__init__(message)
        self.operational = operational


_loaded: list[ctypes.CDLL | None] = []


def load() -> ctypes.CDLL | None:
    """The loaded libpq (once per process), or None when no copy of it loads."""
    if not _loaded:
        _loaded.append(_load())
    return _loaded[0]


def _candidates() -> Iterator[str]:
    """Where libpq may be: the system's, then the copy psycopg's binary wheel bundles (loading
    that one also loads the wheel's own copies of its dependencies: about 100 ms more).
    """
    yield from ("libpq.so.5", "libpq.5.dylib", "libpq.dylib")
    from importlib.util import find_spec

    try:
        spec = find_spec("psycopg_binary")  # finds the wheel without importing it
    except (ImportError, ValueError):
        return
    if spec is not None and spec.origin:
        bundled = Path(spec.origin).parent.parent / "psycopg_binary.libs"
        yield from sorted(str(p) for p in bundled.glob("libpq*.so*"))


def _load() -> ctypes.CDLL | None:
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            _declare(lib)
        except AttributeError:  # not libpq after all
            continue
        return lib
    return None


def _declare(lib: ctypes.CDLL) -> None:
    p, s, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    strings = ctypes.POINTER(ctypes.c_char_p)
    for name, args, result in (
        ("PQconnectdbParams", [strings, strings, i], p),
        ("PQstatus", [p], i),
        ("PQerrorMessage", [p], s),
        ("PQfinish", [p], None),
        ("PQexec", [p, s], p),
        ("PQresultStatus", [p], i),
        ("PQresultErrorField", [p, i], s),
        ("PQntuples", [p], i),
        ("PQnfields", [p], i),
        ("PQfname", [p, i], s),
        ("PQftype", [p, i], ctypes.c_uint),
        ("PQgetvalue", [p, i, i], s),
        ("PQgetisnull", [p, i, i], i),
        ("PQclear", [p], None),
        (
            "PQexecParams",
            [p, s, i, ctypes.POINTER(ctypes.c_uint), strings, ctypes.c_void_p, ctypes.c_void_p, i],
            p,
        ),
    ):
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = result


class Connection:
    """One libpq connection in autocommit mode, for read queries."""

    def __init__(self, lib: ctypes.CDLL, conninfo: str, *, application_name: str) -> None:
        self._lib = lib
        settings = {
            # The URL first: its parameters, then these (a later one wins), as psycopg merges.
            "dbname": conninfo,
            "connect_timeout": "5",
            "application_name": application_name,
            "client_encoding": "UTF8",
        }
        keys = (ctypes.c_char_p * (len(settings) + 1))(*(k.encode() for k in settings), None)
        values = (ctypes.c_char_p * (len(settings) + 1))(
            *(v.encode() for v in settings.values()), None
        )
        pg = lib.PQconnectdbParams(keys, values, 1)
        if not pg:
            raise Error("connection failed: out of memory", operational=True)
        if lib.PQstatus(pg) != _CONNECTION_OK:
            message = _text(lib.PQerrorMessage(pg))
            lib.PQfinish(pg)
            raise Error(f"connection failed: {message}", operational=True)
        self._pg: int | None = pg

    @property
    def closed(self) -> bool:
        return self._pg is None or self._lib.PQstatus(self._pg) == _CONNECTION_BAD

    def close(self) -> None:
        if self._pg is not None:
            self._lib.PQfinish(self._pg)
            self._pg = None

    def rows(self, sql: str, params: Sequence[Any], pieces: Sequence[str]) -> list[dict[str, Any]]:
        """The rows of `sql` as dicts; `pieces` is `sql` split at its placeholders, which become
        `$1`, `$2`, ... with `params` sent apart as server-side parameters.
        """
        if self._pg is None:
            raise Error("the connection is closed", operational=True)
        if len(pieces) != len(params) + 1:
            raise Error(
                f"the query has {len(pieces) - 1} placeholders but {len(params)} parameters",
                operational=False,
            )
        text = pieces[0] + "".join(f"${n}{p}" for n, p in enumerate(pieces[1:], 1))
        typed = [_parameter(v) for v in params]
        count = len(typed)
        types = (ctypes.c_uint * max(count, 1))(*(t for t, _ in typed))
        values = (ctypes.c_char_p * max(count, 1))(*(v for _, v in typed))
        lib, pg = self._lib, self._pg
        # Text format in and out (NULL lengths and formats): libpq reads each value to its NUL.
        res = lib.PQexecParams(pg, text.encode(), count, types, values, None, None, 0)
        if not res:
            raise self._failure(None)
        try:
            if lib.PQresultStatus(res) not in (_TUPLES_OK, _COMMAND_OK):
                raise self._failure(res)
            return _rows(lib, res)
        finally:
            lib.PQclear(res)

    def _failure(self, res: int | None) -> Error:
        lib = self._lib
        lost = lib.PQstatus(self._pg) == _CONNECTION_BAD
        state = _text(lib.PQresultErrorField(res, _DIAG_SQLSTATE)) if res else ""
        message = _text(lib.PQresultErrorField(res, _DIAG_MESSAGE_PRIMARY)) if res else ""
        message = message or _text(lib.PQerrorMessage(self._pg)) or "query failed"
        return Error(message, operational=lost or state[:2] in _OPERATIONAL)


#: Parameter type OIDs, as psycopg sends them: a str goes untyped (0) so the server types it
#: from its use, as it does a quoted literal.
_BOOL, _INT8, _FLOAT8, _UNKNOWN = 16, 20, 701, 0


def _parameter(value: Any) -> tuple[int, bytes | None]:
    """(type OID, text form) of one query parameter; (0, None) is SQL NULL.

    Raises:
        Error: a type reads never pass, or a text holding NUL (PostgreSQL's text never holds
            one, and libpq would end the value there).
    """
    if value is None:
        return _UNKNOWN, None
    if isinstance(value, bool):
        return _BOOL, b"t" if value else b"f"
    if isinstance(value, int):
        return _INT8, str(value).encode()
    if isinstance(value, float):
        if math.isnan(value):
            return _FLOAT8, b"NaN"
        if math.isinf(value):
            return _FLOAT8, b"Infinity" if value > 0 else b"-Infinity"
        return _FLOAT8, repr(value).encode()
    if isinstance(value, str):
        if "\x00" in value:
            raise Error("a text parameter holds a NUL character", operational=False)
        return _UNKNOWN, value.encode()
    raise Error(f"cannot pass a {type(value).__name__} to a read query", operational=False)


def _rows(lib: ctypes.CDLL, res: int) -> list[dict[str, Any]]:
    columns = range(lib.PQnfields(res))
    names = [_text(lib.PQfname(res, c)) for c in columns]
    types = []
    for c in columns:
        oid = lib.PQftype(res, c)
        if oid not in _TYPES:
            raise Error(
                f"column {names[c]} has type {oid}, which reads do not take", operational=False
            )
        types.append(_TYPES[oid])
    # The two calls made per cell, without argument conversion: a third of the time per row.
    value, isnull = lib["PQgetvalue"], lib["PQgetisnull"]
    value.restype = ctypes.c_char_p
    handle = ctypes.c_void_p(res)
    fields = list(zip(columns, names, types, strict=True))
    out = []
    for r in range(lib.PQntuples(res)):
        row: dict[str, Any] = {}
        for c, name, kind in fields:
            raw = value(handle, r, c)
            # An empty text is either '' or NULL: only then ask which.
            row[name] = None if not raw and isnull(handle, r, c) else kind(raw)
        out.append(row)
    return out


def _text(raw: bytes | None) -> str:
    return raw.decode("utf-8", "replace").strip() if raw else ""
