"""Read what is new in the `metrics.history` files: whole lines only, each line once.

Performs I/O (reads the history files). A history is a file appended to (a write may end
mid-line: the part after the last newline waits for the next pass; the per-rank files tau.log
writes beside it, `metrics.rank-N.jsonl`, are read with it) or a glob whose matching files are
chunks written as a dotfile then renamed (dotfiles are not read: they are chunks still being
written). Each file's offset and line count live in the checkpoint; a file whose
inode changed or that shrank was replaced, and is read again from its start.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

#: Bytes read from one file in one pass: a backlog is read over several passes, never whole.
MAX_READ = 2 << 20
#: The longest line read whole: over the importer's bound (16 MiB), so such a line reaches the
#: parser and is refused by its number there; anything longer is skipped here.
LONGEST = 32 << 20


@dataclass
class Piece:
    """New whole lines of one history file."""

    path: str
    #: The history entry (path or glob) that named the file.
    given: str
    data: bytes
    #: The line number of `data`'s first line in the file.
    first_line: int
    #: The file's offset and line count after `data`.
    offset: int
    lines: int
    inode: int
    #: The file holds more than this read took (the next read goes on from `offset`).
    more: bool = False


def files(patterns: Sequence[str]) -> Iterator[tuple[str, str]]:
    """(path, pattern) of every history file there is now, in name order per pattern."""
    seen: set[str] = set()
    for pattern in patterns:
        expanded = os.path.expanduser(pattern)
        if glob.has_magic(expanded):
            matches = [(m, pattern) for m in sorted(glob.glob(expanded, recursive=True))]
        else:
            matches = [(expanded, pattern)] if os.path.exists(expanded) else []
            matches += [(m, m) for m in rank_siblings(expanded)]
        for match, given in matches:
            if os.path.basename(match).startswith(".") or match in seen:
                continue
            if not os.path.isfile(match):
                continue
            seen.add(match)
            yield match, given


def rank_siblings(path: str) -> list[str]:
    """The per-rank files `tau.log` writes beside a plain history path when every rank logs:
    `metrics.rank-1.jsonl`, `metrics.rank-2.jsonl`... beside `metrics.jsonl`, in rank order.
    """
    root, ext = os.path.splitext(path)
    found = []
    for match in glob.glob(glob.escape(root) + ".rank-*" + glob.escape(ext)):
        rank = match[len(root) + len(".rank-") : len(match) - len(ext)]
        if rank.isdigit():
            found.append((int(rank), match))
    return [m for _, m in sorted(found)]


def read_new(
    patterns: Sequence[str],
    state: dict[str, dict[str, int]],
    *,
    final: bool = False,
    notes: list[str] | None = None,
) -> list[Piece]:
    """The new whole lines of every history file since `state` (not updated here).

    `final`: the workload has ended, so a last line without its newline is whole too.
    """
    out = []
    for path, pattern in files(patterns):
        try:
            st = os.stat(path)
        except OSError:
            continue  # gone since the listing (a chunk folder cleaned up)
        known = state.get(path)
        offset, lines = 0, 0
        if known is not None:
            if known.get("inode") == st.st_ino and st.st_size >= int(known.get("offset", 0)):
                offset, lines = int(known["offset"]), int(known.get("lines", 0))
            elif notes is not None:
                notes.append(f"{path}: replaced or truncated since last read; reading it again")
        if st.st_size <= offset:
            continue
        try:
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(min(st.st_size - offset, MAX_READ))
                window = MAX_READ
                # A line longer than one read: read on (to the importer's line bound) until its
                # end is in, so a long line is never stuck.
                while b"\n" not in data and len(data) == window and window < LONGEST:
                    window = min(window * 2, LONGEST)
                    fh.seek(offset)
                    data = fh.read(min(st.st_size - offset, window))
                if b"\n" not in data and len(data) == window:
                    skipped = _skip_line(fh, offset + len(data))
                    if skipped is not None:
                        if notes is not None:
                            notes.append(
                                f"{path}:{lines + 1}: line is over {LONGEST} bytes; skipped"
                            )
                        out.append(Piece(path, pattern, b"", lines + 2, skipped, lines + 1,
                                         st.st_ino, True))  # fmt: skip
                    continue
        except OSError as exc:
            if notes is not None:
                notes.append(f"{path}: not readable ({exc.strerror or exc}); trying again")
            continue
        # The read stopped at its bound, not at the file's end: more is there already.
        more = len(data) == window and offset + len(data) < st.st_size
        cut = data.rfind(b"\n") + 1
        if final and len(data) == st.st_size - offset:
            cut = len(data)  # the writer has exited: its last line is complete
        if cut == 0:
            continue
        data = data[:cut]
        count = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        out.append(
            Piece(path, pattern, data, lines + 1, offset + cut, lines + count, st.st_ino, more)
        )
    return out


def _skip_line(fh: Any, start: int) -> int | None:
    """The offset just past the next newline at or after `start`; None when none is written yet."""
    fh.seek(start)
    position = start
    while True:
        block = fh.read(1 << 20)
        if not block:
            return None
        found = block.find(b"\n")
        if found >= 0:
            return position + found + 1
        position += len(block)


def baseline(patterns: Sequence[str]) -> dict[str, dict[str, int]]:
    """Offsets at the current end of every history file (`--baseline-existing-history`)."""
    state = {}
    for path, _ in files(patterns):
        with open(path, "rb") as fh:
            data = fh.read()
        cut = data.rfind(b"\n") + 1
        state[path] = {
            "offset": cut,
            "lines": data[:cut].count(b"\n"),
            "inode": os.stat(path).st_ino,
        }
    return state
