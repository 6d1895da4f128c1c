"""Stellar's routes: the page, its assets, and the read-only v2 API (contract §9.4).

Handlers are plain functions (Starlette runs them in its thread pool: the store reads block).
Every list is bounded; every error is the JSON shape of `errors.py`.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlencode, urlparse

from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from tau.portal import jsonsafe
from tau.portal.errors import StoreError
from tau.portal.stellar import chartdata, html, links, snapshot
from tau.portal.stellar.downsample import downsample
from tau.portal.stellar.evidence import Series
from tau.portal.web.cache import Memo
from tau.portal.web.errors import ApiError, wants_html
from tau.portal.web.source import StellarSource

V2 = "/api/v2/stellar"
LEGACY = ("/api/v1/stellar", "/api/stellar")
DEFAULT_LIMIT, MAX_LIMIT = 50, 200
DEFAULT_POINTS, MAX_POINTS = 8000, 12000
#: Seconds between a live page's conditional GETs of its fragment. A running run's rows reach
#: the page within one offload interval plus this (issue 37): an unchanged store answers 304
#: from the version check alone (a stat of the folder store, one query of a team store).
LIVE_INTERVAL = 2
_MODES = ("full", "summary", "metric")
_DEPRECATION = {
    "Deprecation": "true",
    "Link": f'<{V2}/capabilities>; rel="successor-version"',
    "Warning": '299 - "Deprecated Stellar dashboard API; migrate to canonical narrow v2 reads"',
}


def now() -> datetime:
    return datetime.now(UTC)


def dumps(doc: Any) -> bytes:
    # Compact: a 100-run snapshot is megabytes of points, and indentation adds a third.
    return jsonsafe.dumps(doc, separators=(",", ":")).encode() + b"\n"


def etag_of(*parts: str) -> str:
    return '"' + hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24] + '"'


def not_modified(request: Request, etag: str) -> bool:
    wanted = request.headers.get("if-none-match", "")
    return etag in {t.strip() for t in wanted.split(",")} or wanted.strip() == "*"


def json_response(
    doc: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(dumps(doc), status, headers=dict(headers or {}), media_type="application/json")


def int_param(request: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"{name} must be an integer, got {raw!r}") from None
    if value < lo:
        raise ApiError(400, f"{name} must be at least {lo}")
    if value > hi:
        raise ApiError(400, f"{name} must be at most {hi}")
    return value


def required(request: Request, name: str) -> str:
    value = request.query_params.get(name, "").strip()
    if not value:
        raise ApiError(400, f"{name} query parameter is required")
    return value


@dataclass
class Built:
    doc: dict[str, Any]
    etag: str

    @functools.cached_property
    def body(self) -> bytes:
        """The document as the snapshot API sends it (encoded once, when first asked: a page
        never is).
        """
        return dumps(self.doc)


class Stellar:
    """The Stellar half of the app, over one store."""

    def __init__(
        self,
        source: StellarSource,
        *,
        default_target: str | None = None,
        metric: str | None = None,
        max_runs: int = 200,
        directions: Mapping[str, str] | None = None,
        include_failed: bool = False,
    ) -> None:
        self.source = source
        self.default_target = default_target
        self.metric = metric
        self.max_runs = max_runs
        self.directions = dict(directions or {})
        self.include_failed = include_failed
        self._snapshots: Memo[Built] = Memo(size=32)
        #: The evidence of a target per store version: a page's charts ask for one metric's
        #: series at a time (lazy charts, zoom), and each would otherwise re-read the index.
        self._evidence: Memo[Any] = Memo(size=8)
        self._pages: Memo[tuple[str, str]] = Memo(size=32)
        #: Set by `create_app` when the same server serves the portal (the nav links to it).
        self.portal_url: str | None = None

    @property
    def nav(self) -> dict[str, Any]:
        """What the shared nav bar of Stellar's pages links to."""
        return {"experiments_url": links.STELLAR_PATH, "portal_url": self.portal_url}

    # -- shared ---------------------------------------------------------------------------
    def evidence(self, target: str, kind: str = "", *, cached: bool = False) -> Any:
        """The target's evidence (`kind` picks a run, group or experiment of that id); 404.

        `cached` reuses the evidence read for this store version: a snapshot build reads it
        once for its page, and the charts that page fetches next (the series API) reuse it.
        """

        def read() -> Any:
            try:
                return self.source.evidence(target, max_runs=self.max_runs, kind=kind)
            except LookupError:
                what = f"{kind.replace('_', ' ')} " if kind else ""
                raise ApiError(404, f"experiment store record not found: {what}{target}") from None

        if not cached:
            return read()
        return self._evidence.get((self.source.version(), target, kind), read)

    def built(
        self,
        target: str,
        metric: str | None,
        mode: str,
        points: bool,
        view: tuple[str, bool] = ("", False),
        kind: str = "",
    ) -> Built:
        """The snapshot of `target`; `view` is the request's (direction, include_failed)."""
        version = self.source.version()
        way, include_failed = view
        key = (version, target, kind, metric or "", mode, points, way, include_failed)
        directions = {**self.directions, **({"": way} if way else {})}
        if way and metric:
            directions[metric] = way

        def build() -> Built:
            ev = self.evidence(target, kind, cached=True)
            doc = snapshot.build(
                ev,
                now=now(),
                metric=metric,
                mode=mode,
                include_points=points,
                directions=directions,
                include_failed=include_failed,
                # Pages (and their fallback image) are the documents with points: a page
                # embeds its first chart's series and fetches the others when they are seen,
                # and the image is drawn from the chart's values (no polyline coordinates).
                embedded_charts=chartdata.SERVED_EMBEDDED if points else None,
                polylines=False,
            )
            tag = etag_of(
                version, target, kind, metric or "", mode, str(points), way, str(include_failed)
            )
            return Built(doc, tag)

        return self._snapshots.get(key, build)

    def _kind(self, request: Request) -> str:
        """The `kind=` of a link (run, group or experiment) as a target type; "" when unset."""
        raw = request.query_params.get("kind", "").strip()
        if not raw:
            return ""
        if raw not in links.KINDS:
            raise ApiError(400, f"kind must be run, group or experiment, got {raw!r}")
        return links.KINDS[raw]

    def _metric(self, request: Request) -> str | None:
        return request.query_params.get("metric") or self.metric

    def _view(self, request: Request) -> tuple[str, bool]:
        """The page's direction override and failed-runs toggle (query parameters)."""
        from tau.portal.store.direction import normalize

        raw = request.query_params.get("direction", "").strip()
        way = normalize(raw) if raw and raw != "auto" else ""
        if way is None:
            raise ApiError(400, f"direction must be max or min (or auto), got {raw!r}")
        flag = request.query_params.get("include_failed", "").strip().lower()
        if flag not in ("", "0", "1", "true", "false", "on", "off"):
            raise ApiError(400, f"include_failed must be 1 or 0, got {flag!r}")
        return way, (flag in ("1", "true", "on")) or (not flag and self.include_failed)

    # -- pages ----------------------------------------------------------------------------
    def root(self, request: Request) -> Response:
        """`/`: the default target's page, else the landing page for browsers and the service
        description for API clients (contract §9.4).
        """
        if self.default_target:
            return RedirectResponse(f"/stellar?target={quote(self.default_target)}", 302)
        if wants_html(request.headers.get("accept", ""), request.url.path):
            return self.landing(request)
        return json_response(
            {
                "service": "tau.exp.stellar",
                "store_path": self.source.store_path,
                "source": "local",
                "endpoints": ["/stellar", "/healthz", *(f"{V2}/{p}" for p in _ENDPOINTS)],
            }
        )

    def healthz(self, request: Request) -> Response:
        try:
            self.source.version()
            self.source.search_experiments({}, 1)  # reads the index: a damaged one answers 503
        except OSError as exc:
            raise ApiError(503, f"experiment store is not readable: {exc}") from None
        except StoreError as exc:
            raise ApiError(503, f"experiment store is not readable: {exc.message}") from None
        return json_response({"ok": True, "store_path": self.source.store_path, "source": "local"})

    def page(self, request: Request) -> Response:
        # `/stellar` without a target is the landing page even with --default-target: the nav's
        # "Experiments" link must reach it (`/` is where the default target is served).
        target = request.query_params.get("target", "").strip()
        if not target:
            return self.landing(request)
        metric = self._metric(request)
        view = self._view(request)
        kind = self._kind(request)
        built = self.built(target, metric, "full", True, view, kind)
        fragment = request.query_params.get("fragment") == "1"
        kept = self.kept_logs(built.doc)
        # tau writes kept logs beside the index, not into it: they are part of the page's tag.
        page_etag = built.etag if kept is None else etag_of(built.etag, repr(kept))
        if not_modified(request, page_etag):
            return Response(status_code=304, headers={"ETag": page_etag})
        page_doc = built.doc if kept is None else {**built.doc, "kept_logs": kept}

        # Links to other targets keep the view chosen here (only what the URL set).
        asked = request.query_params
        keep = {
            "metric": asked.get("metric", ""),
            "direction": view[0],
            "include_failed": ("1" if view[1] else "0") if asked.get("include_failed") else "",
        }
        keep = {k: v for k, v in keep.items() if v}

        def render() -> tuple[str, str]:
            live = (
                f"/stellar?target={quote(target)}&fragment=1"
                + (f"&kind={request.query_params['kind']}" if kind else "")
                + (f"&metric={quote(metric)}" if metric else "")
                + (f"&direction={view[0]}" if view[0] else "")
                + ("&include_failed=1" if view[1] else "")
            )
            downloadable = self._downloadable(built.doc)
            data = {"target": target, "kind": asked.get("kind", "")}
            data = {k: v for k, v in data.items() if v}
            served = {
                "series_url": f"{V2}/series?" + urlencode(data),
                "chart_svg_url": "/stellar/chart.svg?"
                + urlencode({**data, **({"metric": metric} if metric else {}), **keep}),
            }
            if fragment:
                return page_etag, html.stellar_fragment(
                    page_doc,
                    metric_form="/stellar",
                    nav=self.nav,
                    downloadable=downloadable,
                    view=keep,
                    served_data=served,
                    live_interval=LIVE_INTERVAL,
                )
            # A target whose runs have all finished will not change: the page does not poll
            # (unless one failed moments ago: its retry's rows may follow).
            finished = bool((built.doc.get("live") or {}).get("settled"))
            return page_etag, html.stellar_page(
                page_doc,
                inline_assets=False,
                live_url=None if finished else live,
                live_etag=page_etag,
                live_interval=LIVE_INTERVAL,
                metric_form="/stellar",
                nav=self.nav,
                downloadable=downloadable,
                view=keep,
                served_data=served,
            )

        etag, text = self._pages.get((page_etag, fragment, *sorted(keep.items())), render)
        return Response(
            text,
            headers={"ETag": etag, "Cache-Control": "no-cache"},
            media_type="text/html; charset=utf-8",
        )

    def kept_logs(self, doc: Mapping[str, Any]) -> dict[str, Any] | None:
        """The kept logs of a run page's run (`tau.portal.stellar.kept_logs`); None for other
        pages, and for a source that is not a store (a test's fake).
        """
        root = getattr(self.source, "root", None)
        if doc.get("target_type") != "run" or root is None:
            return None
        from tau.portal.stellar import kept_logs

        return kept_logs.as_rows(root, str(doc.get("target") or ""))

    def kept_log(self, request: Request) -> Response:
        """One kept container log of a run, escaped into a page and capped (its end shown)."""
        from tau.portal.stellar import kept_logs

        run_id = required(request, "run")
        path = required(request, "path")
        root = getattr(self.source, "root", None)
        if not kept_logs.valid_path(path):
            raise ApiError(400, "path must name a kept log: attempt-N/POD/CONTAINER.log")
        found = kept_logs.read(root, run_id, path) if root is not None else None
        if found is None:
            raise ApiError(404, f"no kept log {path} for run {run_id}")
        text, size = found
        shown = len(text.encode())
        page = html.render(
            "kept_log.html.j2",
            run_id=run_id,
            path=path,
            text=text,
            size=size,
            shown_bytes=shown,
            cut=shown < size,
            run_url=f"/stellar?target={quote(run_id)}&kind=run",
            nav=self.nav,
        )
        return Response(page, media_type="text/html; charset=utf-8")

    def _downloadable(self, doc: Mapping[str, Any]) -> frozenset[str]:
        """Ids of the target's artifacts the artifact route would hand out (local files inside
        the store): only those get a download link, so a served link never 404s.
        """
        ok = set()
        for a in doc.get("artifacts") or ():
            uri = str(a.get("uri") or "")
            if not links.is_local_uri(uri):
                continue
            if self._stored_object(uri, content=False) is not None:
                ok.add(str(a.get("artifact_id")))
                continue
            try:
                local_artifact(self.source.store_path, uri)
            except ApiError:
                continue
            ok.add(str(a.get("artifact_id")))
        return frozenset(ok)

    def landing(self, request: Request) -> Response:
        found = self.source.search_experiments({}, DEFAULT_LIMIT)
        text = html.render(
            "landing.html.j2",
            store_path=self.source.store_path,
            experiments=found.get("experiments", []),
            truncated=bool(found.get("truncated")),
            nav=self.nav,
        )
        return Response(
            text, media_type="text/html; charset=utf-8", headers={"Cache-Control": "no-cache"}
        )

    # -- API ------------------------------------------------------------------------------
    def capabilities(self, request: Request) -> Response:
        return json_response(
            {
                "api_version": "v2",
                "schema_version": snapshot.SCHEMA_VERSION,
                "service": "tau.exp.stellar",
                "source_mode": "local",
                "server": {"tau_version": _version(), "generated_at": _iso(now())},
                "paths": {
                    "canonical_base_path": V2,
                    "legacy_base_path": LEGACY[1],
                    "supported_bases": [V2, *LEGACY],
                },
                "data_sources": {"local": True, "kusto": False},
                "capabilities": {
                    "snapshot": True,
                    "series_detail": True,
                    # `series?format=columns&start_step=&end_step=`: the charts' compact
                    # columns of a step range (on-demand charts and zoom detail).
                    "series_columns": True,
                    "run_search": True,
                    "experiment_search": True,
                    "experiment_mutation": False,
                    "artifact_index": True,
                    "artifact_content": True,
                    "status": True,
                },
                "degradations": [
                    {"code": "KUSTO_NOT_CONFIGURED", "detail": "Kusto source is not configured"},
                    {"code": "READ_ONLY", "detail": "the API is read-only; use the CLI to write"},
                ],
            }
        )

    def snapshot(self, request: Request) -> Response:
        target = required(request, "target")
        mode = request.query_params.get("mode", "full") or "full"
        if mode not in _MODES:
            raise ApiError(400, f"mode must be one of: {', '.join(_MODES)}")
        built = self.built(
            target, self._metric(request), mode, False, self._view(request), self._kind(request)
        )
        if not_modified(request, built.etag):
            return Response(status_code=304, headers={"ETag": built.etag})
        return Response(built.body, media_type="application/json", headers={"ETag": built.etag})

    def chart_svg(self, request: Request) -> Response:
        """The server-drawn chart of a target (the page's no-JavaScript fallback image)."""
        target = required(request, "target")
        built = self.built(
            target, self._metric(request), "full", True, self._view(request), self._kind(request)
        )
        if not_modified(request, built.etag):
            return Response(status_code=304, headers={"ETag": built.etag})
        return Response(
            html.chart_svg(built.doc),
            media_type="image/svg+xml",
            headers={"ETag": built.etag, "Cache-Control": "no-cache"},
        )

    def series(self, request: Request) -> Response:
        target = required(request, "target")
        metric = required(request, "metric")
        max_points = int_param(request, "max_points", DEFAULT_POINTS, 1, MAX_POINTS)
        start = int_param(request, "start_step", 0, 0, 2**62)
        end = int_param(request, "end_step", 2**62, 0, 2**62)
        if start > end:
            raise ApiError(400, "start_step must be <= end_step")
        shape = request.query_params.get("format", "points") or "points"
        if shape not in ("points", "columns"):
            raise ApiError(400, f"format must be points or columns, got {shape!r}")
        run_id = request.query_params.get("run_id", "")
        ev = self.evidence(target, self._kind(request), cached=True)
        run_ids = [str(r["run_id"]) for r in ev.runs]
        if run_id:
            if run_id not in run_ids:
                raise ApiError(404, f"run {run_id} is not part of target {target}")
            run_ids = [run_id]
        if shape == "columns":
            return self._columns(ev, metric, run_ids, start, end, max_points)
        out = []
        for s in ev.load_series(metric, run_ids)[:MAX_LIMIT]:
            pairs = [(x, y) for x, y in zip(s.steps, s.values, strict=True) if start <= x <= end]
            d = downsample([p[0] for p in pairs], [p[1] for p in pairs], max(4, max_points))
            out.append(
                {
                    "run_id": s.run_id,
                    "source_points": d.source_points,
                    "returned_points": d.rendered_points,
                    "decimated": d.decimated,
                    "non_finite_points": d.non_finite,
                    "points": [
                        {"step": x, "value": y} for x, y in zip(d.steps, d.values, strict=True)
                    ],
                }
            )
        return json_response(
            {
                "target": target,
                "metric": metric,
                "start_step": start,
                "end_step": None if end == 2**62 else end,
                "max_points": max_points,
                "series": out,
            }
        )

    def _columns(
        self, ev: Any, metric: str, run_ids: list[str], start: int, end: int, max_points: int
    ) -> Response:
        """The page's compact chart columns (chartdata.encode) of the steps in [start, end]:
        what a served page's charts fetch for a metric it did not embed, or for a zoomed range
        (raw points when they fit in `max_points` per run, else each bucket's min and max).
        `unreadable_runs`: the runs whose summaries promise the metric but whose files gave
        no points (missing or damaged), as the page names them.
        """
        loaded = ev.load_series(metric, run_ids)
        out = [
            chartdata.encode(window(s, start, end), max(4, max_points)) for s in loaded[:MAX_LIMIT]
        ]
        got = {s.run_id for s in loaded}
        promised = {str(s["run_id"]) for s in ev.summaries if s.get("metric_name") == metric}
        return json_response(
            {
                "target": ev.target,
                "metric": metric,
                "format": "columns",
                "start_step": start,
                "end_step": None if end == 2**62 else end,
                "max_points": max_points,
                "series": out,
                "unreadable_runs": [r for r in run_ids if r in promised and r not in got],
            }
        )

    def runs(self, request: Request) -> Response:
        limit = int_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        filters = {k: v for k, v in request.query_params.items() if k != "limit"}
        try:
            return json_response(self.source.search_runs(filters, limit))
        except LookupError as exc:
            raise ApiError(404, f"experiment store record not found: {exc.args[0]}") from None
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    def experiments(self, request: Request) -> Response:
        limit = int_param(request, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT)
        filters = {k: v for k, v in request.query_params.items() if k != "limit"}
        try:
            return json_response(self.source.search_experiments(filters, limit))
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None

    def status(self, request: Request) -> Response:
        target = required(request, "target")
        try:
            return json_response(self.source.status(target))
        except LookupError:
            raise ApiError(404, f"experiment store record not found: {target}") from None

    def artifacts(self, request: Request) -> Response:
        target = required(request, "target")
        run = request.query_params.get("run", "")
        kind = request.query_params.get("type", "")
        ev = self.evidence(target, self._kind(request))
        rows = [
            {
                **a,
                "fetch_url": f"{V2}/artifact?target={quote(target)}"
                f"&artifact={quote(str(a['artifact_id']))}",
            }
            for a in ev.artifacts
            if (not run or a.get("run_id") == run) and (not kind or a.get("type") == kind)
        ]
        return json_response(
            {
                "source": "index",
                "target": target,
                "run": run,
                "count": len(rows),
                "truncated": len(rows) > MAX_LIMIT,
                "artifacts": rows[:MAX_LIMIT],
            }
        )

    def artifact(self, request: Request) -> Response:
        target = required(request, "target")
        artifact_id = required(request, "artifact")
        ev = self.evidence(target, self._kind(request))
        row = next((a for a in ev.artifacts if str(a.get("artifact_id")) == artifact_id), None)
        if row is None:
            raise ApiError(404, "artifact was not found for target")
        uri = str(row.get("uri") or "")
        stored = self._stored_object(uri) if links.is_local_uri(uri) else None
        if stored is not None:
            name, data = stored
            return Response(
                data,
                media_type="application/octet-stream",
                headers={"Content-Disposition": f'attachment; filename="{quote(name)}"'},
            )
        path = local_artifact(self.source.store_path, uri)
        return FileResponse(path, filename=path.name, content_disposition_type="attachment")

    def _stored_object(self, uri: str, *, content: bool = True) -> tuple[str, bytes] | None:
        """(name, bytes) of an artifact the store keeps as an object (a team store's copy);
        None for a folder store, whose artifacts are local files.
        """
        read_object = getattr(self.source, "stored_artifact", None)
        return read_object(uri, content=content) if read_object is not None else None


def window(series: Series, start: int, end: int) -> Series:
    """The points of `series` with start <= step <= end (steps ascending, as stored)."""
    from bisect import bisect_left, bisect_right

    steps = series.steps
    if not steps or (steps[0] >= start and steps[-1] <= end):
        return series
    if list(steps) != sorted(steps):  # not as stored: filter point by point
        keep = [i for i, x in enumerate(steps) if start <= x <= end]
    else:
        keep = list(range(bisect_left(steps, start), bisect_right(steps, end)))
    times = series.wall_times
    return Series(
        series.run_id,
        series.metric_name,
        tuple(steps[i] for i in keep),
        tuple(series.values[i] for i in keep),
        tuple(times[i] for i in keep) if len(times) == len(steps) else (),
    )


def asset(request: Request) -> Response:
    name = request.path_params["name"]
    a = html.assets()
    if name == "app.css":
        content, kind = a.css, "text/css; charset=utf-8"
    elif name == "app.js":
        content, kind = a.js, "text/javascript; charset=utf-8"
    else:
        raise ApiError(404, f"no asset {name}")
    cache = (
        "public, max-age=31536000, immutable"
        if request.query_params.get("v") == a.digest
        else "no-cache"
    )
    return Response(
        content, media_type=kind, headers={"Cache-Control": cache, "ETag": f'"{a.digest}"'}
    )


def local_artifact(store_path: str, uri: str) -> Path:
    """The file an artifact URI names, only when it resolves (symlinks too) inside the store.

    Raises:
        ApiError: 400 when the path escapes the store; 404 when it is not a local file; 501 for
            remote URIs (this server reads only the local store).
    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        raw = unquote(parsed.path) if parsed.scheme == "file" else uri
    else:
        raise ApiError(
            501, f"artifact {uri} is remote ({parsed.scheme}); fetch it from its store directly"
        )
    root = Path(store_path).resolve()
    candidate = Path(raw) if Path(raw).is_absolute() else root / raw
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise ApiError(400, "artifact path escapes the Stellar store")
    if not resolved.is_file():
        raise ApiError(404, "artifact was not found for target")
    return resolved


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tau")
    except PackageNotFoundError:
        return "unknown"


_ENDPOINTS = (
    "capabilities",
    "snapshot",
    "series",
    "runs",
    "experiments",
    "status",
    "artifacts",
    "artifact",
)
#: Endpoints whose legacy-base and v2 forms carry the deprecation headers (contract §9.4).
DEPRECATED_V2 = frozenset({"snapshot", "series", "runs", "experiments"})
DEPRECATION_HEADERS = _DEPRECATION
ENDPOINTS = _ENDPOINTS
