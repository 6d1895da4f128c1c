"""The human view of `tau run status` laid out without rich, for a console without colour.

Pure, apart from `colourless_width`, which reads the environment and the terminal's size.
`tau run status` prints to pipes and files (scripts, `watch`, CI logs) as often as to a
terminal, and importing rich and laying the view out through it cost more CPU than the status
reads themselves. For a console that shows no colour rich prints the view (`tau.status.text`)
as plain lines: word-wrapped paragraphs, a tree with box-drawing guides, tables whose columns
are as wide as their widest cell (narrowed as rich narrows them when the table is wider than
the console: the last column wraps, the others are cut). This module lays out the same blocks
(`tau.status.view`) byte for byte as rich does there, for what it can promise: printable ASCII
and the em dash (one cell each). Anything else (a wide or combining character, a control
character, a table cell rich would read as markup or emoji, a terminal, a colour override)
gets None, and the caller prints through rich. Tests compare the two on every reviewed status
case at many widths and on generated content. It is kept because it saves more than the 20 ms
a re-implementation must save: `bench/status_plain_vs_rich.py` pairs fresh interpreters with and
without rich's layout imported, 56 ms saved against an 80 ms start at load 5 on 2 cores (about
2.5 times a quiet machine's figures: some 22 ms there).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from typing import Any

from tau.status import view
from tau.status.model import RunStatus

#: Characters laid out here, each one cell wide (the em dash is the view's own), and the
#: newline between lines. (A set: a regular expression over this class costs more to compile
#: than the whole layout.)
_SIMPLE = frozenset(map(chr, range(0x20, 0x7F))) | {"\u2014", "\n"}
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
    # The console crops every line to its width (only a table can be wider).
    return "".join(line[:width] + "\n" for line in lines)


def _plain(spans: view.Spans) -> str:
    text = "".join(piece for piece, _ in spans)
    if not _SIMPLE.issuperset(text):
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
    for row in block.rows:
        for cell in row:
            if "\n" in cell or not _SIMPLE.issuperset(cell) or _RICH_SYNTAX.search(cell):
                raise _Unsupported
    if "\n" in block.title or not _SIMPLE.issuperset(block.title):
        raise _Unsupported
    count = len(block.columns)
    # rich pads each cell with one space towards each neighbour, none at the table's edges.
    pads = [(0 if i == 0 else 1, 0 if i == count - 1 else 1) for i in range(count)]
    widths = _column_widths(block, pads, width)
    total = sum(widths)
    out = [piece.ljust(total) for piece in _wrap(block.title, total)]
    out += _row(block.columns, widths, pads, header=True)
    for row in block.rows:
        out += _row(row, widths, pads, header=False)
    return out


def _column_widths(block: view.Table, pads: list[tuple[int, int]], width: int) -> list[int]:
    """Each column's width with its padding, as rich's table fits them into `width`: as wide as
    its widest cell (and no wider than the console); when the table is too wide, the last
    column (the only one that wraps) gives up the excess, and what remains is taken from every
    column evenly (which may still leave it wider than the console: the console crops it).
    """
    rows = [block.columns, *block.rows]
    widths = [
        min(max(len(row[i]) for row in rows) + left + right, width)
        for i, (left, right) in enumerate(pads)
    ]
    excess = sum(widths) - width
    if excess > 0:
        widths[-1] -= min(excess, widths[-1])
        excess = sum(widths) - width
    if excess > 0:
        widths = _ratio_reduce(excess, widths)
    return widths


def _ratio_reduce(total: int, widths: list[int]) -> list[int]:
    """Rich's `ratio_reduce` of `total` over `widths` with equal ratios, capped by each width."""
    share = sum(1 for size in widths if size)
    result: list[int] = []
    for size in widths:
        if size and share > 0:
            taken = min(size, round(total / share))
            result.append(size - taken)
            total -= taken
            share -= 1
        else:
            result.append(size)
    return result


def _row(
    cells: tuple[str, ...], widths: list[int], pads: list[tuple[int, int]], *, header: bool
) -> list[str]:
    """The lines of one row: cells cut to their column but the last, which wraps; a taller
    row leaves the other cells blank below them (above them in the heading row). A column
    with no room inside its padding shows blank.
    """
    columns: list[list[str]] = []
    for index, (cell, width, (left, right)) in enumerate(zip(cells, widths, pads, strict=True)):
        size = width - left - right
        lines = [] if size < 1 else _wrap(cell, size) if index == len(cells) - 1 else [cell[:size]]
        columns.append([" " * left + line.ljust(size) + " " * right for line in lines])
    height = max(1, *(len(lines) for lines in columns))
    for index, lines in enumerate(columns):
        blank = [" " * widths[index]] * (height - len(lines))
        columns[index] = blank + lines if header else lines + blank
    return ["".join(lines[line] for lines in columns) for line in range(height)]
