"""Backfill metric summaries for metric files recorded without them (e.g. a hand-built packet).

Performs I/O. Runs before a search; when another writer holds the lock it is skipped with a
warning rather than waiting, and only files not yet summarized are read (with pyarrow).
"""

from __future__ import annotations

from tau.portal.store.core import Store
from tau.portal.store.interface import Store as AnyStore
from tau.portal.store.lock import try_lock


def ensure_summaries(store: AnyStore) -> list[str]:
    """Summarize every metric file not yet in `metric_summary_files`; returns warnings.

    Only a folder store is backfilled: a team store holds what `experiment push` copied, and
    push backfills the folder before it copies.
    """
    if not isinstance(store, Store):
        return []
    pending = store.query(
        "SELECT * FROM metric_files WHERE file_id NOT IN (SELECT file_id FROM metric_summary_files)"
    )
    if not pending:
        return []
    lock = try_lock(store.lock_path)
    if lock is None:
        return [f"skipped summarizing {len(pending)} metric files: the store writer lock is busy"]
    lock.release()
    from tau.portal.store.metrics import summarize
    from tau.portal.store.write import record_metric_file

    warnings: list[str] = []
    with store.writer() as w:
        for row in pending:
            import pyarrow.parquet as pq

            try:
                table = pq.read_table(store.root / str(row["path"]), partitioning=None)
            except (OSError, ValueError) as exc:
                warnings.append(f"metric file {row['path']} was not readable: {exc}")
                continue
            record_metric_file(w, row, summarize(table))
    return warnings
