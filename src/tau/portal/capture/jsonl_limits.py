"""Bounds every `metrics.history` line must meet before a JSON parser sees it. Pure.

Both parsers of `tau.portal.capture.jsonl` recurse per nesting level: pyarrow's JSON reader
overflows the C stack (a segfault, no message) on a line nested about 20,000 deep, and the
standard library's parser raises `RecursionError` at about 1,000. A metrics row is one flat
object of numbers, so a line is refused, with its file and line, when it nests deeper than
`MAX_DEPTH` or is longer than `MAX_LINE_BYTES` (the reference's own line-scanner bound, 16 MiB).

The scan costs a few C-level passes, about a tenth of a second for a million rows: the line
lengths are checked a window of MAX_LINE_BYTES at a time (`rfind` of the window's last
newline); the depth bound is first a count, from a copy of the file that keeps only its
newlines and opening brackets (a line cannot nest deeper than it opens), and only a line that
opens more than MAX_DEPTH brackets is measured exactly, with its strings (whose brackets do not
nest) taken out first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import accumulate

from tau.portal.errors import UsageError

#: Nesting levels a line may open (the row's own object is level 1).
MAX_DEPTH = 100
#: Bytes a line may hold, its newline not counted.
MAX_LINE_BYTES = 16 * 1024 * 1024

#: A complete JSON string, escapes included (the unrolled form: linear, no backtracking).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: Every byte but the four brackets, for `bytes.translate(None, delete=...)`.
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
#: Every byte but the opening brackets and the newline.
_NOT_OPENER = bytes(b for b in range(256) if b not in b"[{\n")
#: +1 for an opening bracket, -1 for a closing one (indexed by byte value).
_STEP = [0] * 256
for _b in b"[{":
    _STEP[_b] = 1
for _b in b"]}":
    _STEP[_b] = -1


def depth(line: bytes) -> int:
    """The deepest nesting of brackets outside strings (0 for a line with none).

    Brackets after an unterminated string are inside it, so they are not counted (the parser
    refuses the line as malformed anyway). Only C-level loops: the line is at most
    `MAX_LINE_BYTES`.
    """
    bare = _STRING.sub(b"", line)
    quote = bare.find(b'"')
    if quote >= 0:
        bare = bare[:quote]
    brackets = bare.translate(None, _NOT_BRACKET)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def long_lines(buf: bytes, limit: int) -> Iterator[tuple[int, int]]:
    """(line number, length) of each line of `buf` longer than `limit` bytes, in order.

    A window of `limit + 1` bytes from a line's start holds that line's newline exactly when
    the line fits; every line up to the window's last newline fits too, so the next window
    starts after it. One `rfind` per window, not one step per line.
    """
    size = len(buf)
    start = 0
    line, counted = 1, 0  # the line number at offset `counted` (advanced only when needed)
    while start < size:
        stop = min(start + limit + 1, size)
        newline = buf.rfind(b"\n", start, stop)
        if newline >= 0:
            start = newline + 1
            continue
        end = buf.find(b"\n", start)
        end = size if end < 0 else end
        if end - start > limit:
            line += buf.count(b"\n", counted, start)
            counted = start
            yield line, end - start
        start = end + 1


def check_lines(data: bytes, where: str, first_line: int = 1) -> None:
    """Refuse the first line over either bound, naming `where:line`.

    Raises:
        UsageError: a line is longer than `MAX_LINE_BYTES` or nests deeper than `MAX_DEPTH`.
    """
    for line, length in long_lines(data, MAX_LINE_BYTES):
        raise UsageError(
            f"{where}:{line + first_line - 1}: line is {length} bytes; the limit is "
            f"{MAX_LINE_BYTES} bytes (16 MiB)",
            hint="a metrics.history row holds scalar metrics; write large values to a file of "
            "their own and keep the row small, or drop the line",
        )
    openers = data.translate(None, _NOT_OPENER)
    if len(openers) - openers.count(b"\n") <= MAX_DEPTH:
        return  # not even the whole file opens enough brackets
    lines: list[bytes] | None = None
    for line, _ in long_lines(openers, MAX_DEPTH):
        if lines is None:
            lines = data.split(b"\n")  # once, and only for a file with a candidate line
        found = depth(lines[line - 1])
        if found > MAX_DEPTH:
            raise UsageError(
                f"{where}:{line + first_line - 1}: nested {found} levels deep; the limit is "
                f"{MAX_DEPTH}",
                hint="a metrics.history row is one flat JSON object of numbers (nested values "
                "carry no metric); flatten the value or drop the line",
            )
