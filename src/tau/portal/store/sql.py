"""`experiment sql QUERY`: read-only SQL over index.sqlite, guarded as the reference does.

Performs I/O (SQLite reads). The text guard is the reference's; the connection is also
opened read-only (`mode=ro`, `query_only`) so a statement that slips past it cannot write.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from tau.portal.errors import StoreError, UsageError
from tau.portal.store.core import Store
from tau.portal.store.interface import Store as AnyStore

_UNSAFE = (
    "insert ",
    "update ",
    "delete ",
    "drop ",
    "alter ",
    "create ",
    "replace ",
    "attach ",
    "detach ",
    "pragma ",
    "vacuum",
)
SQL = "taugrid-portal experiment sql"


def guard(query: str) -> str:
    """The query with a trailing `;` trimmed, when it is one read-only statement."""
    text = query.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if ";" in text:
        raise UsageError(f"{SQL} accepts exactly one read-only statement")
    lowered = re.sub(r"\s+", " ", text.lower()) + " "
    if not (lowered.startswith("select ") or lowered.startswith("with ")):
        raise UsageError(f"{SQL} only accepts read-only SELECT/WITH queries")
    for token in _UNSAFE:
        if token in lowered:
            raise UsageError(f'{SQL} rejected mutating or unsafe token "{token.strip()}"')
    return text


def run_query(store: AnyStore, query: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names and rows of a guarded query (on a team store: a read-only transaction)."""
    text = guard(query)
    if not isinstance(store, Store):
        from tau.portal.store.team import TeamStore

        assert isinstance(store, TeamStore)
        return store.read_only(text)
    conn = sqlite3.connect(f"{store.index_path.as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        conn.execute("PRAGMA query_only = ON")
        cur = conn.execute(text)
        columns = [d[0] for d in cur.description or ()]
        rows = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
    except sqlite3.Error as exc:
        raise StoreError(
            f"{SQL}: {exc}", hint="list tables with: select name from sqlite_master"
        ) from None
    finally:
        conn.close()
    return columns, rows
