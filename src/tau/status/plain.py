"""The human view of `tau run status` laid out without rich, for a console without colour.

Pure, apart from `colourless_width`, which reads the environment and the terminal's size.
`tau run status` prints to pipes and files (scripts, `watch`, CI logs) as often as to a
terminal, and importing rich and laying the view out through it cost more CPU than the status
reads themselves. For a console that shows no colour rich prints the view (`tau.status.text`)
as plain lines: word-wrapped paragraphs, a tree with box-drawing guides, tables whose columns
are as wide as their widest cell (the last one narrowed and wrapped when the table is wider
than the console). This module lays out the same blocks (`tau.status.view`) byte for byte as
rich does there, for what it can promise: printable ASCII and the em dash (one cell each).
Anything else (a wide or combining character, a control character, a table cell rich would
read as markup or emoji, a table whose other columns or title are wider than the console, a
terminal, a colour override) gets None, and the caller prints through rich. Tests compare the
two on every reviewed status case at many widths and on generated content.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from tau.status import view
from tau.status.model import RunStatus

#: Characters laid out here, each one cell wide (the em dash is the view's own).
_SIMPLE = re.compile(r"[\x20-\x7e\u2014\n]*")
#: Table cells are strings rich reads as markup and emoji codes: anything these could match
#: goes to rich.
_RICH_SYNTAX = re.compile(r"\[|:\S*?:")
#: A word and the whitespace after it (rich's line breaking unit).
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")
#: Tree guides (rich's, for a UTF-8 console): a fork, the last fork, and what continues them.
_FORK, _END, _CONTINUE, _SPACE = "├── ", "└── ", "│   ", "    "
#: Narrower consoles go to rich (a width rich treats specially, such as 0).
_MIN_WIDTH = 20


class _Unsupported(Exception):
    """The view holds something this layout does not promise to lay out as rich would."""


def colourless_width(stream: Any, environ: Mapping[str, str]) -> int | None:
    """The width rich's default `Console()` would use on `stream`, when it would print no
    colour or style there; None when it would (a terminal, FORCE_COLOR, TTY_COMPATIBLE=1), or
    when its console would not be a plain UTF-8 one (Windows, IPython, IDLE).
    """
    import builtins

    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return None
    if str(getattr(sys.stdin, "__module__", "")).startswith("idlelib"):
        return None
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible == "1":
        return None
    if compatible != "0":
        force = environ.get("FORCE_COLOR")
        if force is not None and force != "":
            return None
        if force is None and _isatty(stream):
            return None
    if not (getattr(stream, "encoding", "utf-8") or "utf-8").lower().startswith("utf"):
        return None
    columns = environ.get("COLUMNS")
    width = int(columns) if columns is not None and columns.isdigit() else _terminal_columns()
    return width if width >= _MIN_WIDTH else None


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except ValueError:  # a closed stream
        return False


def _terminal_columns() -> int:
    """The columns of the first of stdin, stdout, stderr that is a terminal; else 80."""
    for descriptor in (0, 1, 2):
        try:
            return os.get_terminal_size(descriptor).columns or 80
        except (AttributeError, ValueError, OSError):
            continue
    return 80


def render(status: RunStatus, width: int, *, run_profile: bool = False) -> str | None:
    """The view as a colourless rich console of `width` cells prints it; None when this
    layout cannot promise the same bytes.
    """
    if width < _MIN_WIDTH:
        return None
    lines: list[str] = []
    try:
        for block in view.blocks(status, run_profile=run_profile):
            if isinstance(block, view.Text):
                lines += _paragraph(block, width)
            elif isinstance(block, view.Tree):
                lines += _tree(block, width)
            else:
                lines += _table(block, width)
    except _Unsupported:
        return None
    return "".join(line + "\n" for line in lines)


def _plain(spans: view.Spans) -> str:
    text = "".join(piece for piece, _ in spans)
    if _SIMPLE.fullmatch(text) is None:
        raise _Unsupported
    return text


def _wrap(text: str, width: int) -> list[str]:
    """Each line of `text` broken into lines of at most `width` cells, as rich's
    `Text.wrap` breaks them (overflow "fold", justify "default").
    """
    out: list[str] = []
    for line in text.split("\n"):
        breaks = _breaks(line, width)
        for start, end in zip([0, *breaks], [*breaks, len(line)], strict=True):
            piece = line[start:end]
            if len(piece) > width:
                space = _TRAILING_SPACE.search(piece)
                if space is not None:
                    piece = piece[: len(piece) - min(len(space.group()), len(piece) - width)]
            out.append(piece[:width])
    return out


def _breaks(line: str, width: int) -> list[int]:
    """Where rich's `divide_line` breaks `line` for `width` cells (folding long words)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(line):
        start, word = match.start(), match.group()
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:
            folded = [word[i : i + width] for i in range(0, len(word), width)]
            for index, piece in enumerate(folded):
                if start:
                    breaks.append(start)
                if index == len(folded) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = len(word)
    return breaks


def _paragraph(block: view.Text, width: int) -> list[str]:
    text = _plain(block.spans)
    if not block.indent:
        return _wrap(text, width)
    inner = width - block.indent
    return [" " * block.indent + line.ljust(inner) for line in _wrap(text, inner)]


def _tree(block: view.Tree, width: int) -> list[str]:
    lines = _wrap(_plain(block.label), width)
    for index, (label, children) in enumerate(block.nodes):
        last = index == len(block.nodes) - 1
        fork, below = (_END, _SPACE) if last else (_FORK, _CONTINUE)
        lines += _guided(_wrap(_plain(label), width - 4), fork, below)
        for child_index, child in enumerate(children):
            child_last = child_index == len(children) - 1
            child_fork, child_below = (_END, _SPACE) if child_last else (_FORK, _CONTINUE)
            wrapped = _wrap(_plain(child), width - 8)
            lines += _guided(wrapped, below + child_fork, below + child_below)
    return lines


def _guided(lines: list[str], first: str, rest: str) -> list[str]:
    return [(first if index == 0 else rest) + line for index, line in enumerate(lines)]


def _table(block: view.Table, width: int) -> list[str]:
    rows = [block.columns, *block.rows]
    for row in block.rows:
        for cell in row:
            if "\n" in cell or _SIMPLE.fullmatch(cell) is None or _RICH_SYNTAX.search(cell):
                raise _Unsupported
    count = len(block.columns)
    # Each column is as wide as its widest cell, plus rich's padding: one space between a
    # cell and each neighbour, none at the table's edges.
    content = [max(len(row[i]) for row in rows) for i in range(count)]
    pads = [(0 if i == 0 else 1, 0 if i == count - 1 else 1) for i in range(count)]
    total = sum(content) + sum(left + right for left, right in pads)
    if total > width:
        # rich narrows the only column that may wrap, the last, by the excess; its heading
        # must still fit on one line (a taller heading aligns differently).
        content[-1] -= total - width
        total = width
        if count < 2 or content[-1] < len(block.columns[-1]):
            raise _Unsupported
    if len(block.title) > total or _SIMPLE.fullmatch(block.title) is None:
        raise _Unsupported
    out = [block.title.ljust(total)]
    blank = [" " * (left + size + right) for size, (left, right) in zip(content, pads, strict=True)]
    for row in rows:
        cells = [
            " " * left + cell.ljust(size) + " " * right
            for cell, size, (left, right) in zip(row[:-1], content, pads, strict=False)
        ]
        last = _wrap(row[-1], content[-1])
        for index, piece in enumerate(last):
            start = "".join(cells) if index == 0 else "".join(blank[:-1])
            out.append(start + " " * pads[-1][0] + piece.ljust(content[-1]))
    return out
