"""Human output of `tau run status`: a phase tree, tables, `Attention` and `Next` sections.

Pure apart from writing to the `Console` it is given. The view's content comes from
`tau.status.view`; this module turns it into rich renderables. Every string of a paragraph
goes in as `rich.text.Text` (never markup), so brackets in Kubernetes messages cannot be
mistaken for styles, and output to a fixed-width, colourless console is byte-for-byte
deterministic.
"""

from __future__ import annotations

import io

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from tau.status import view
from tau.status.model import RunStatus
from tau.status.view import MARKERS, MAX_ROWS, age

__all__ = ["MARKERS", "MAX_ROWS", "age", "render", "renderable", "to_text"]


def _text(spans: view.Spans) -> Text:
    (first, style), rest = spans[0], spans[1:]
    text = Text(first, style=style)
    for piece, piece_style in rest:
        text.append(piece, style=piece_style or None)
    return text


def _paragraph(block: view.Text) -> RenderableType:
    text = _text(block.spans)
    # Padding (not leading spaces) keeps wrapped continuation lines under their first line.
    return Padding(text, (0, 0, 0, block.indent)) if block.indent else text


def _tree(block: view.Tree) -> Tree:
    tree = Tree(_text(block.label), guide_style=block.guide_style)
    for label, children in block.nodes:
        node = tree.add(_text(label))
        for child in children:
            node.add(_text(child))
    return tree


def _table(block: view.Table) -> Table:
    table = Table(
        title=Text(block.title, style="bold"),
        title_justify="left",
        box=None,
        show_edge=False,
        pad_edge=False,
        header_style="bold",
    )
    last = len(block.columns) - 1
    for index, column in enumerate(block.columns):
        # Names stay whole (they get copied into commands); only the last, free-text column folds.
        table.add_column(column, no_wrap=index < last, overflow="fold")
    for row in block.rows:
        table.add_row(*row)
    return table


def _rich(block: view.Block) -> RenderableType:
    if isinstance(block, view.Text):
        return _paragraph(block)
    if isinstance(block, view.Tree):
        return _tree(block)
    return _table(block)


def renderable(status: RunStatus, *, run_profile: bool = False) -> Group:
    """The whole view as one rich renderable (with the Run profile section when asked)."""
    return Group(*(_rich(block) for block in view.blocks(status, run_profile=run_profile)))


def render(status: RunStatus, console: Console, *, run_profile: bool = False) -> None:
    """Print the view to `console` (the CLI's, or a recording one in tests)."""
    console.print(renderable(status, run_profile=run_profile))


def to_text(status: RunStatus, width: int = 100, *, run_profile: bool = False) -> str:
    """The view as plain text for a fixed-width, colourless console (tests, snapshots)."""
    console = Console(
        width=width,
        record=True,
        color_system=None,
        file=io.StringIO(),
        force_terminal=False,
        legacy_windows=False,
    )
    render(status, console, run_profile=run_profile)
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"
