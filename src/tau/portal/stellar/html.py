"""Render Stellar snapshots (and the portal overview) to HTML with Jinja2. Pure.

Autoescaping is on for every template: run ids, tags and messages come from users and clusters
(a run named `<script>alert(1)</script>` must render as text). The only markup inserted
unescaped is the SVG from `svg.line_chart`, which escapes its own text and attributes.

Two page forms share the templates: the self-contained file (`stellar -o html`: CSS and JS
inline, no URL to fetch) and the served page (assets from its own origin, so a strict CSP holds).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import ChainableUndefined, Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from tau.portal import jsonsafe
from tau.portal.stellar import chartdata, links, svg

#: Run detail cards rendered in full; the runs table lists every run.
MAX_RUN_CARDS = 50
CSS_PATH = "/stellar/assets/app.css"
JS_PATH = "/stellar/assets/app.js"


@dataclass(frozen=True)
class Assets:
    css: str
    js: str
    digest: str

    @property
    def css_url(self) -> str:
        return f"{CSS_PATH}?v={self.digest}"

    @property
    def js_url(self) -> str:
        return f"{JS_PATH}?v={self.digest}"


def _package_dir(name: str) -> str:
    return str(resources.files("tau.portal.stellar").joinpath(name))


#: Served as one stylesheet and one script, in this order. app.js comes last: it starts the
#: page and announces `stellar:render`, which the chart and compare modules listen for.
CSS_FILES = ("app.css", "charts.css", "compare.css")
JS_FILES = ("charts.js", "compare.js", "app.js")


@cache
def assets() -> Assets:
    root = resources.files("tau.portal.stellar").joinpath("assets")
    css = "\n".join(root.joinpath(n).read_text(encoding="utf-8") for n in CSS_FILES)
    js = "\n".join(root.joinpath(n).read_text(encoding="utf-8") for n in JS_FILES)
    digest = hashlib.sha256((css + "\0" + js).encode()).hexdigest()[:12]
    return Assets(css, js, digest)


def num(value: Any) -> str:
    """A metric value for a table cell."""
    if value is None or value == "":
        return "not collected"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:.6g}"


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_package_dir("templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=ChainableUndefined,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["num"] = num
    # A run's swatch class (swatch-0..11), keyed by its id like its chart colour.
    env.filters["swatch"] = svg.color_index
    # Page JSON (`tojson`) parses in a browser: NaN and infinities become null.
    env.policies["json.dumps_function"] = jsonsafe.dumps
    # Every run, group and experiment mention goes through these (see links.py and
    # templates/_links.html.j2): one place decides what a served or offline link is.
    env.filters["target_url"] = links.target_url
    env.filters["anchor"] = links.anchor
    env.filters["local_uri"] = links.is_local_uri
    env.globals["artifact_url"] = links.artifact_url
    env.globals["breadcrumbs"] = links.breadcrumbs
    env.tests["startingwith"] = lambda value, prefix: str(value).startswith(prefix)
    return env


def compile_templates() -> None:
    """Compile every template now (a server does it before its first page is asked for)."""
    env = environment()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


def chart_lines(chart: Mapping[str, Any]) -> list[svg.Line]:
    """The snapshot chart's series as drawable lines (values are already downsampled)."""
    return [
        svg.Line(
            run_id=str(s["run_id"]),
            group=str(s["run_group_id"]),
            color=str(s["color"]),
            steps=tuple(int(p["step"]) for p in s["values"]),
            values=tuple(float(p["value"]) for p in s["values"]),
            source_points=int(s["point_count"]),
        )
        for s in chart.get("series") or ()
    ]


def chart_svg(snapshot: Mapping[str, Any]) -> str:
    """The seed-envelope chart of a snapshot: one line per run of the chart metric."""
    chart = snapshot.get("chart") or {}
    lines = chart_lines(chart)
    metric = chart.get("metric_name") or "no metric"
    return svg.line_chart(
        lines,
        title=f"{metric} · {len(lines)} runs · {snapshot.get('target', '')}",
        chart_id="seed-envelope",
    )


def _context(
    snapshot: Mapping[str, Any], served_data: Mapping[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    """The template context. A served page (`served_data`: the URLs its charts read) carries
    the first chart's series only and links the no-JavaScript chart as an image; the offline
    report holds everything inline.
    """
    charts = snapshot.get("charts")
    if served_data and charts:
        charts = chartdata.served(charts, served_data["series_url"])
    return {
        "s": snapshot,
        "charts": charts,
        "chart_svg_url": (served_data or {}).get("chart_svg_url", ""),
        # svg.line_chart escapes its input; a served page links it instead of inlining it.
        "chart_svg": Markup("" if served_data else chart_svg(snapshot)),
        "max_run_cards": MAX_RUN_CARDS,
        "assets": assets(),
        "inline_assets": True,
        "live_url": None,
        "live_interval": 5,
        "live_etag": "",
        "metric_form": None,
        # Served pages link to other Stellar pages; the offline report links within itself.
        "served": False,
        "nav": {},
        "downloadable": frozenset(),
        "view": {},
        **extra,
    }


def stellar_page(
    snapshot: Mapping[str, Any],
    *,
    inline_assets: bool = True,
    live_url: str | None = None,
    live_etag: str = "",
    live_interval: int = 5,
    metric_form: str | None = None,
    nav: Mapping[str, Any] | None = None,
    downloadable: frozenset[str] = frozenset(),
    view: Mapping[str, str] | None = None,
    served_data: Mapping[str, str] | None = None,
) -> str:
    """The whole Stellar page: self-contained by default, or linking the served assets.

    A page with served assets is a served page: its mentions link to other Stellar pages, `nav`
    says what else the server has (`portal_url`), and `downloadable` names the artifact ids the
    server can hand out (local files inside the store).
    """
    return (
        environment()
        .get_template("stellar.html.j2")
        .render(
            _context(
                snapshot,
                served_data,
                inline_assets=inline_assets,
                live_url=live_url,
                live_etag=live_etag,
                live_interval=live_interval,
                metric_form=metric_form,
                served=not inline_assets,
                nav=dict(nav or {}),
                downloadable=downloadable,
                view=dict(view or {}),
            )
        )
    )


def stellar_fragment(
    snapshot: Mapping[str, Any],
    *,
    metric_form: str | None = None,
    nav: Mapping[str, Any] | None = None,
    downloadable: frozenset[str] = frozenset(),
    view: Mapping[str, str] | None = None,
    served_data: Mapping[str, str] | None = None,
    live_interval: int = 5,
) -> str:
    """The page's <main> content alone, for live refresh (only served pages refresh)."""
    return (
        environment()
        .get_template("stellar_main.html.j2")
        .render(
            _context(
                snapshot,
                served_data,
                metric_form=metric_form,
                live_url="live",
                live_interval=live_interval,
                served=True,
                nav=dict(nav or {}),
                downloadable=downloadable,
                view=dict(view or {}),
            )
        )
    )


def render(template: str, **context: Any) -> str:
    """Any other page template (landing, portal overview, error page): all served pages."""
    base = {
        "assets": assets(),
        "inline_assets": False,
        "live_url": None,
        "live_interval": 5,
        "live_etag": "",
        "served": True,
        "nav": {},
        "view": {},
    }
    return environment().get_template(template).render({**base, **context})
