"""Server-drawn SVG line charts. Pure and deterministic: the same lines give the same bytes.

No scripts and no `style` attributes (the served page's CSP allows only its own origin), only
presentation attributes; every text and attribute value is escaped here, so callers may embed
the result as markup.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

#: The reference's fixed 12-colour cycle.
PALETTE = (
    "#2563eb",
    "#dc2626",
    "#16a34a",
    "#9333ea",
    "#ea580c",
    "#0891b2",
    "#ca8a04",
    "#db2777",
    "#4f46e5",
    "#65a30d",
    "#0d9488",
    "#78716c",
)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def color_index(run_id: str) -> int:
    """A run's palette slot, from its id alone: a new run never recolours the others.

    A stable hash (not Python's salted `hash`), so the same run has the same colour on every
    page, in every process and in the offline report.
    """
    digest = hashlib.sha256(str(run_id).encode()).digest()
    return int.from_bytes(digest[:4], "big") % len(PALETTE)


def run_color(run_id: str) -> str:
    return PALETTE[color_index(run_id)]


@dataclass(frozen=True)
class Line:
    """One series to draw.

    Attributes:
        run_id: the run the series belongs to.
        group: its run group.
        color: stroke colour.
        steps: x values (already downsampled).
        values: y values (already downsampled, finite).
        source_points: how many points the series had before downsampling.
    """

    run_id: str
    group: str
    color: str
    steps: tuple[int, ...]
    values: tuple[float, ...]
    source_points: int


@dataclass(frozen=True)
class Frame:
    """The data range a chart maps onto its plot area."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float

    @classmethod
    def of(cls, lines: Sequence[Line]) -> Frame | None:
        xs = [x for line in lines for x in (line.steps[:1] + line.steps[-1:])]
        ys = [
            y for line in lines for y in (min(line.values, default=0), max(line.values, default=0))
        ]
        if not xs or not any(line.values for line in lines):
            return None
        return cls(min(xs), max(xs), min(ys), max(ys))


WIDTH, HEIGHT = 800, 260
_LEFT, _RIGHT, _TOP, _BOTTOM = 64, 12, 30, 34


def num(value: float) -> str:
    """A short, stable label for an axis value."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    return f"{value:.4g}"


def _scale(lo: float, hi: float, a: float, b: float) -> tuple[float, float]:
    span = hi - lo
    if span == 0:
        return 0.0, (a + b) / 2  # a flat series sits in the middle
    k = (b - a) / span
    return k, a - lo * k


def polyline_points(line: Line, frame: Frame, width: int = WIDTH, height: int = HEIGHT) -> str:
    """The `points` attribute of `line` in a chart of the given size (one decimal)."""
    kx, bx = _scale(frame.x_min, frame.x_max, _LEFT, width - _RIGHT)
    ky, by = _scale(frame.y_min, frame.y_max, height - _BOTTOM, _TOP)
    return " ".join(
        f"{kx * x + bx:.1f},{ky * y + by:.1f}" for x, y in zip(line.steps, line.values, strict=True)
    )


def sampling_note(lines: Sequence[Line]) -> str:
    """What the chart shows of the data, said on the chart itself."""
    source = sum(line.source_points for line in lines)
    rendered = sum(len(line.steps) for line in lines)
    if rendered < source:
        return (
            f"downsampled: {rendered:,} of {source:,} points shown "
            "(per-bucket min/max kept, first and last point kept)"
        )
    return f"all {source:,} points shown"


def line_chart(
    lines: Sequence[Line],
    *,
    title: str,
    width: int = WIDTH,
    height: int = HEIGHT,
    chart_id: str = "chart",
) -> str:
    """An SVG document with one polyline per line, axis range labels and a sampling note."""
    frame = Frame.of(lines)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{_LEFT}" y="18" font-size="13" font-family="sans-serif" fill="#111827">'
        f"{escape(title)}</text>",
    ]
    if frame is None:
        out.append(
            f'<text x="{width // 2}" y="{height // 2}" text-anchor="middle" font-size="13" '
            'font-family="sans-serif" fill="#6b7280">no chart data (not collected)</text>'
        )
        out.append("</svg>")
        return "".join(out)
    left, right, top, bottom = _LEFT, width - _RIGHT, _TOP, height - _BOTTOM
    axis = 'stroke="#9ca3af" stroke-width="1"'
    label = 'font-size="11" font-family="sans-serif" fill="#4b5563"'
    out += [
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" {axis}/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" {axis}/>',
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" {label}>{num(frame.y_max)}</text>',
        f'<text x="{left - 6}" y="{bottom}" text-anchor="end" {label}>{num(frame.y_min)}</text>',
        f'<text x="{left}" y="{bottom + 16}" {label}>step {num(frame.x_min)}</text>',
        f'<text x="{right}" y="{bottom + 16}" text-anchor="end" {label}>'
        f"step {num(frame.x_max)}</text>",
        f'<text class="sampling-note" x="{right}" y="18" text-anchor="end" {label}>'
        f"{escape(sampling_note(lines))}</text>",
    ]
    for line in lines:
        if not line.values:
            continue
        out.append(
            f'<polyline class="series" data-run="{escape(line.run_id)}" '
            f'data-group="{escape(line.group)}" fill="none" stroke="{escape(line.color)}" '
            f'stroke-width="1.5" points="{polyline_points(line, frame, width, height)}">'
            f"<title>{escape(line.run_id)} ({escape(line.group)})</title></polyline>"
        )
    out.append("</svg>")
    return "".join(out)
