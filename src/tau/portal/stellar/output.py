"""The three `stellar -o` renderings and the `plot` document, as text. Pure."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from tau.portal import jsonsafe
from tau.portal.stellar import html, tui

PLOT_SCHEMA = "tau.exp.plot.v0"


def as_json(snapshot: Mapping[str, Any]) -> str:
    return jsonsafe.dumps(snapshot, indent=2) + "\n"


def wants_color(stream: Any, environ: Mapping[str, str]) -> bool:
    """Whether the TUI is coloured on `stream`: a terminal, unless NO_COLOR is set and not empty
    (https://no-color.org; rich's own consoles honour it, but this one exports its text).
    """
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and not environ.get("NO_COLOR")


def as_tui(snapshot: Mapping[str, Any], *, width: int = 120, color: bool = False) -> str:
    """Plain text (for files, pipes and goldens); trailing padding is trimmed."""
    console = Console(
        width=width,
        record=True,
        file=_Null(),
        color_system="standard" if color else None,
        force_terminal=color,
        highlight=False,
    )
    tui.render(snapshot, console)
    text = console.export_text(styles=color)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def as_html(snapshot: Mapping[str, Any]) -> str:
    return html.stellar_page(snapshot)


def plot_svg(snapshot: Mapping[str, Any]) -> str:
    """The chart alone as an SVG file (no generation time inside: byte-identical per store)."""
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + html.chart_svg(snapshot) + "\n"


def plot_result(snapshot: Mapping[str, Any], out: str, size: int) -> dict[str, Any]:
    chart = snapshot["chart"]
    return {
        "schema_version": PLOT_SCHEMA,
        "target": snapshot["target"],
        "target_type": snapshot["target_type"],
        "metric_name": chart.get("metric_name", ""),
        "out": out,
        "bytes": size,
        "series": len(chart.get("series") or ()),
        "warnings": list(snapshot["warnings"]),
    }


class _Null(io.StringIO):
    """A sink that drops what the console writes; only the recording is kept."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        return None
