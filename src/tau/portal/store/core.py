"""Opening, creating and writing the experiment store: the manifest, the index, the commit.

Performs I/O. Every mutation goes through one `Writer` under the store's writer lock:

1. rows are written inside one SQLite transaction and collected for the JSONL mirrors;
2. new files (Parquet metric files, artifact copies) are first written under `.tmp/`;
3. at commit a journal names the mirror sizes, the transaction id and the files; then the
   files are renamed into place, the mirror lines appended and SQLite commits (recording the
   transaction id in `schema_meta`); then the journal is removed.

A writer killed at any point leaves either the whole commit or nothing visible: the next
writer finds the journal and, unless SQLite holds its transaction id, truncates the mirrors
back and deletes the files it names (readers only ever see what the index lists). A writer that
fails (a full disk, above all) does that undo itself before it reports, so nothing of it is
left behind, not even its scratch files; the error names the file it could not write.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tau.portal.errors import IndexDamaged, StoreError, WriteConflict
from tau.portal.store import schema
from tau.portal.store.full import write_problem
from tau.portal.store.lock import TIMEOUT_SECONDS, WriterLock

Row = dict[str, Any]


#: SQLite's result codes for a damaged database file (SQLITE_CORRUPT, SQLITE_NOTADB).
_DAMAGE_CODES = (11, 26)
_DAMAGE_WORDS = ("malformed", "not a database", "database disk image", "file is not a database")
#: The index of the store this process opened last: a CLI process opens one store, so a damage
#: error met anywhere below can name the file.
_last_index: list[Path] = []


def is_damage(exc: BaseException) -> bool:
    """Whether `exc` says the SQLite file itself is corrupt or truncated (not locked, not SQL)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _DAMAGE_CODES:
        return True
    text = str(exc).lower()
    return any(w in text for w in _DAMAGE_WORDS)


def damaged(exc: BaseException, index: Path | None = None) -> IndexDamaged:
    """The located error for a damage exception (the last opened index when none is given)."""
    where = index or (_last_index[-1] if _last_index else Path(schema.INDEX))
    return IndexDamaged(str(where), str(exc).splitlines()[0] if str(exc) else "unreadable")


def folder_version(root: Path) -> str:
    """Changes with every commit: the manifest's and the index's mtime and size (no open)."""
    parts = []
    for name in (schema.MANIFEST, schema.INDEX, schema.INDEX + "-wal"):
        try:
            st = (root / name).stat()
        except FileNotFoundError:
            continue
        parts.append(f"{name}:{st.st_mtime_ns}:{st.st_size}")
    if not parts:
        raise FileNotFoundError(f"experiment store {root} has no manifest.json")
    return "|".join(parts)


def now_rfc3339() -> str:
    """The current UTC time as RFC3339 with seconds (the store's timestamp format)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """An opened folder experiment store at `root` (read side; `writer()` for mutations).

    One of the two implementations of `interface.Store`; the other is `team.TeamStore`.
    """

    def __init__(self, root: Path, manifest: Mapping[str, Any], *, lock_timeout: float) -> None:
        self.root = root
        self.manifest = dict(manifest)
        self.lock_timeout = lock_timeout
        self._conn: sqlite3.Connection | None = None

    # -- paths ---------------------------------------------------------------------------
    @property
    def index_path(self) -> Path:
        return self.root / str(self.manifest.get("index") or schema.INDEX)

    @property
    def lock_path(self) -> Path:
        return self.root / schema.LOCK

    @property
    def project(self) -> str:
        return str(self.manifest.get("project") or "default")

    @property
    def experiment_id(self) -> str:
        return str(self.manifest.get("experiment_id") or "")

    # -- the read interface shared with the team store (interface.Store) ------------------
    @property
    def location(self) -> str:
        return str(self.root)

    @property
    def filesystem(self) -> None:
        """Metric files are local: pyarrow opens them itself."""
        return None

    def path_of(self, rel: str) -> str:
        return str(self.root / rel)

    def file_bytes(self, rel: str) -> bytes:
        return (self.root / rel).read_bytes()

    def version(self) -> str:
        return folder_version(self.root)

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, root: Path, *, lock_timeout: float = TIMEOUT_SECONDS) -> Store:
        """Open an existing store; a clear error when `root` has no manifest or an unknown one."""
        manifest_path = root / schema.MANIFEST
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise StoreError(
                f"experiment store {root} has no manifest.json",
                hint=f"create it with `taugrid-portal experiment init NAME --store {root}`",
            ) from None
        except (OSError, ValueError) as exc:
            raise StoreError(
                f"experiment store {manifest_path} is not readable JSON: {exc}"
            ) from None
        if not isinstance(manifest, dict):
            raise StoreError(f"experiment store {manifest_path} is not a JSON object")
        kind = manifest.get("kind")
        if kind != schema.KIND:
            raise StoreError(f'unsupported experiment store kind "{kind}"')
        version = manifest.get("schema_version")
        if version not in schema.KNOWN_VERSIONS:
            raise StoreError(f'unsupported experiment store schema "{version}"')
        store = cls(root, manifest, lock_timeout=lock_timeout)
        _last_index.append(store.index_path)
        del _last_index[:-1]
        try:
            if version != schema.SCHEMA_VERSION or not store._schema_current():
                store._migrate()
        except sqlite3.DatabaseError as exc:
            if is_damage(exc):
                store.close()
                raise damaged(exc, store.index_path) from None
            raise
        return store

    @classmethod
    def init(
        cls, root: Path, *, project: str, experiment_id: str, lock_timeout: float = TIMEOUT_SECONDS
    ) -> tuple[Store, bool]:
        """Create the store at `root` (or attach to the one there); True when it was created."""
        if (root / schema.MANIFEST).exists():
            return cls.open(root, lock_timeout=lock_timeout), False
        if root.exists() and not root.is_dir():
            raise StoreError(f"experiment store {root} is not a directory")
        root.mkdir(parents=True, exist_ok=True)
        with WriterLock(root / schema.LOCK, timeout=lock_timeout):
            raced = (root / schema.MANIFEST).exists()  # another process created it meanwhile
            if not raced:
                store = cls._create(root, project, experiment_id, lock_timeout)
        if raced:
            return cls.open(root, lock_timeout=lock_timeout), False
        return store, True

    @classmethod
    def _create(cls, root: Path, project: str, experiment_id: str, lock_timeout: float) -> Store:
        stamp = now_rfc3339()
        manifest = {
            "schema_version": schema.SCHEMA_VERSION,
            "kind": schema.KIND,
            "project": project,
            "experiment_id": experiment_id,
            "created_at": stamp,
            "updated_at": stamp,
            "index": schema.INDEX,
            "append_log_dir": schema.APPEND_LOG,
            "metrics_dir": schema.METRICS,
            "artifacts_dir": schema.ARTIFACTS,
        }
        for sub in (schema.APPEND_LOG, schema.METRICS, schema.ARTIFACTS):
            (root / sub).mkdir(exist_ok=True)
        store = cls(root, manifest, lock_timeout=lock_timeout)
        conn = store.conn
        _create_schema(conn)
        conn.commit()
        _write_json_atomic(root / schema.MANIFEST, manifest)
        return store

    def _schema_current(self) -> bool:
        if not self.index_path.exists():
            return False
        conn = self.conn
        have: dict[str, set[str]] = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            have[name] = set()
        for table, (_, columns) in schema.TABLES.items():
            if table not in have:
                return False
            present = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
            if not set(columns) <= present:
                return False
        return True

    def _migrate(self) -> None:
        """Bring an older (or hand-built) packet to the current schema: additive steps only."""
        with WriterLock(self.lock_path, timeout=self.lock_timeout):
            conn = self.conn
            _create_schema(conn)
            for table, (_, columns) in schema.TABLES.items():
                present = {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}
                for column in columns:
                    if column not in present:
                        kind = schema.column_type(table, column)
                        conn.execute(f'ALTER TABLE "{table}" ADD COLUMN "{column}" {kind}')
            conn.commit()
            if self.manifest.get("schema_version") != schema.SCHEMA_VERSION:
                self.manifest["schema_version"] = schema.SCHEMA_VERSION
                self.manifest["updated_at"] = now_rfc3339()
                _write_json_atomic(self.root / schema.MANIFEST, self.manifest)

    # -- reading -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.index_path, timeout=5.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=5000")
        conn.row_factory = sqlite3.Row
        return conn

    @property
    def conn(self) -> sqlite3.Connection:
        """The store's SQLite connection (autocommit; writers open explicit transactions)."""
        if self._conn is None:
            self._conn = self._connect()
        return self._conn

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Row]:
        """Rows of a read query as plain dicts."""
        return [dict(r) for r in self.conn.execute(sql, params)]

    def scalar(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        found = self.conn.execute(sql, params).fetchone()
        return None if found is None else found[0]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- writing -------------------------------------------------------------------------
    @contextmanager
    def writer(self) -> Iterator[Writer]:
        """One atomic mutation under the writer lock; commits when the block ends cleanly."""
        with WriterLock(self.lock_path, timeout=self.lock_timeout):
            recover(self)
            writer = Writer(self)
            try:
                yield writer
                writer.commit()
            except BaseException as exc:
                writer.rollback()
                problem = write_problem(exc, writer.writing, self.root)
                if problem is not None:
                    raise problem from None
                raise


class Writer:
    """The write side of one transaction; see the module docstring for the commit protocol."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.conn = store.conn
        self.txn = secrets.token_hex(8)
        self.mirror: dict[str, list[str]] = {}
        self.files: list[tuple[Path, Path]] = []  # (tmp, final)
        #: The file being written, for the error when a write fails (a target, not a scratch).
        self.writing: Path | None = None
        self.stamp = now_rfc3339()
        self.conn.execute("BEGIN IMMEDIATE")
        self._open = True

    def get(self, table: str, key: Mapping[str, Any]) -> Row | None:
        where = " AND ".join(f'"{k}" = ?' for k in key)
        cur = self.conn.execute(f'SELECT * FROM "{table}" WHERE {where}', tuple(key.values()))
        found = cur.fetchone()
        return dict(found) if found is not None else None

    def put(self, table: str, row: Mapping[str, Any], *, conflict: str | None = None) -> bool:
        """Write a write-once record: True when created, False when identical; else conflict.

        `row` may omit columns; omitted columns are stored as NULL and compared as NULL.
        """
        keys, columns = schema.TABLES[table]
        full = {c: row.get(c) for c in columns}
        if table == "runs" and full["experiment_id"] is None:
            full["experiment_id"] = ""
        existing = self.get(table, {k: full[k] for k in keys})
        if existing is not None:
            if _same(existing, full):
                return False
            differing = sorted(c for c in columns if not _equal(existing.get(c), full[c]))
            raise WriteConflict(
                conflict
                or f"{table} record {_key_text(full, keys)} already exists with different "
                + ", ".join(differing)
            )
        self._insert(table, full)
        return True

    def replace(self, table: str, row: Mapping[str, Any]) -> bool:
        """Write a record that may change (merges, summaries); True when anything changed."""
        keys, columns = schema.TABLES[table]
        full = {c: row.get(c) for c in columns}
        existing = self.get(table, {k: full[k] for k in keys})
        if existing is not None and _same(existing, full):
            return False
        self._insert(table, full, replace=True)
        return True

    def _insert(self, table: str, full: Row, *, replace: bool = False) -> None:
        names = ", ".join(f'"{c}"' for c in full)
        marks = ", ".join("?" for _ in full)
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        self.conn.execute(f'{verb} INTO "{table}" ({names}) VALUES ({marks})', tuple(full.values()))
        if table in schema.MIRRORED:
            self.mirror.setdefault(table, []).append(
                json.dumps(full, sort_keys=False, separators=(",", ":"), ensure_ascii=False)
            )

    def tmp_path(self, name: str, *, target: Path | None = None) -> Path:
        """A scratch path for a new file; `publish` moves it into the store at commit.

        Args:
            target: where the file will be published: what an error names if writing the
                scratch file fails. A failed writer removes its scratch files either way.
        """
        tmp_dir = self.store.root / schema.TMP
        self.writing = target or tmp_dir
        tmp_dir.mkdir(exist_ok=True)
        return tmp_dir / f"{self.txn}-{len(self.files)}-{name}"

    def publish(self, tmp: Path, final: Path) -> None:
        self.files.append((tmp, final))

    def commit(self) -> None:
        root = self.store.root
        log_dir = root / schema.APPEND_LOG
        log_dir.mkdir(exist_ok=True)
        sizes = {}
        for table in self.mirror:
            path = log_dir / f"{table}.jsonl"
            sizes[table] = path.stat().st_size if path.exists() else 0
        journal = {
            "txn": self.txn,
            "mirrors": sizes,
            "files": [str(final.relative_to(root)) for _, final in self.files],
        }
        self.writing = root / schema.JOURNAL
        _write_json_atomic(root / schema.JOURNAL, journal)
        for tmp, final in self.files:
            self.writing = final
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, final)
        for table, lines in self.mirror.items():
            self.writing = log_dir / f"{table}.jsonl"
            with open(self.writing, "a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        self.writing = self.store.index_path
        self.conn.execute(
            "INSERT OR REPLACE INTO schema_meta (key, value) VALUES ('last_txn', ?)", (self.txn,)
        )
        self.conn.execute("COMMIT")
        self._open = False
        (root / schema.JOURNAL).unlink()

    def rollback(self) -> None:
        """Undo everything this writer did: the SQLite transaction, a commit it had begun
        (files moved, mirror lines appended: `recover` reads the journal), its scratch files.
        """
        if self._open:
            if self.conn.in_transaction:  # a COMMIT that failed may have rolled back already
                self.conn.execute("ROLLBACK")
            self._open = False
        recover(self.store)


def recover(store: Store) -> None:
    """Undo a commit a killed writer left half done (call under the writer lock)."""
    root = store.root
    journal_path = root / schema.JOURNAL
    if journal_path.exists():
        try:
            journal = json.loads(journal_path.read_text(encoding="utf-8"))
        except ValueError:
            journal = None  # the journal itself was cut short: nothing after it happened
        if isinstance(journal, dict):
            found = store.conn.execute(
                "SELECT value FROM schema_meta WHERE key = 'last_txn'"
            ).fetchone()
            committed = found is not None and found[0] == journal.get("txn")
            if not committed:
                for table, size in dict(journal.get("mirrors") or {}).items():
                    path = root / schema.APPEND_LOG / f"{table}.jsonl"
                    if path.exists() and path.stat().st_size > int(size):
                        os.truncate(path, int(size))
                for rel in journal.get("files") or []:
                    (root / rel).unlink(missing_ok=True)
                    _prune(root, (root / rel).parent)
        journal_path.unlink()
    tmp_dir = root / schema.TMP
    if tmp_dir.exists():
        shutil.rmtree(tmp_dir, ignore_errors=True)


def _prune(root: Path, folder: Path) -> None:
    """Remove `folder` and its parents while empty, keeping the store's top-level folders."""
    while folder.parent != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (or already gone): the rest of the tree stays
        folder = folder.parent


def _create_schema(conn: sqlite3.Connection) -> None:
    for statement in schema.ddl():
        conn.execute(statement)
    meta = {
        "schema_version": schema.SCHEMA_VERSION,
        "metric_schema_version": schema.METRIC_SCHEMA_VERSION,
        "metric_schema_columns": ",".join(schema.METRIC_COLUMNS),
    }
    for key, value in meta.items():
        conn.execute("INSERT OR REPLACE INTO schema_meta (key, value) VALUES (?, ?)", (key, value))


def _write_json_atomic(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _equal(a: Any, b: Any) -> bool:
    if a == b:
        return True
    # SQLite hands back ints for whole REALs and the other way round.
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return False


def _same(existing: Mapping[str, Any], full: Mapping[str, Any]) -> bool:
    return all(_equal(existing.get(c), v) for c, v in full.items())


def _key_text(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    return "/".join(f'"{row[k]}"' for k in keys)
