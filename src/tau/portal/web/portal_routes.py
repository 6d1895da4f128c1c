"""`portal serve` routes: the overview page and the JSON boards (contract §10).

A board whose source is missing answers 503 with the reason; the others keep working. The
Kusto boards answer 503 "not configured": this server has no Kusto source.

The page's nav stays on HTML: board pills jump to the board's section, and when the server also
serves a store (`portal serve --store`) "Experiments" goes to Stellar and each run's experiment
cell links to its Stellar page, but only for targets the store holds (a link never 404s).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from tau.portal.stellar import html
from tau.portal.web import boards
from tau.portal.web.cluster import ClusterReader
from tau.portal.web.errors import ApiError
from tau.portal.web.stellar_routes import Stellar, etag_of, json_response, not_modified

#: Shown in place of the Stellar link when `portal serve` has no store.
STELLAR_HINT = "taugrid-portal portal serve --store STORE"
#: Distinct experiment labels looked up in the store per page (the rest stay text).
MAX_LOOKUPS = 50


def _board(reader: ClusterReader, build: Callable[[boards.ClusterView], dict[str, Any]]) -> Any:
    def handler(request: Request) -> Response:
        try:
            return json_response(build(reader.view()))
        except boards.Unavailable as exc:
            raise ApiError(503, str(exc)) from None

    return handler


def _kusto(request: Request) -> Response:
    raise ApiError(503, boards.KUSTO_REASON)


def stellar_targets(stellar: Stellar | None, runs: list[dict[str, Any]]) -> dict[str, str]:
    """`namespace/name` of each cluster run → the Stellar target its labels name (the run
    group, else the experiment), for the targets the served store holds.
    """
    if stellar is None:
        return {}
    known: dict[str, bool] = {}
    out = {}
    for r in runs:
        target = str(r.get("group") or r.get("experiment") or "")
        if not target:
            continue
        if target not in known:
            if len(known) >= MAX_LOOKUPS:
                continue
            try:
                stellar.source.status(target)
                known[target] = True
            except Exception:  # not in the store, or the store is unreadable: no link
                known[target] = False
        if known[target]:
            out[f"{r.get('namespace')}/{r.get('name')}"] = target
    return out


def page(reader: ClusterReader, stellar: Stellar | None = None) -> Callable[[Request], Response]:
    nav = {
        "experiments_url": "/stellar" if stellar is not None else None,
        "stellar_hint": None if stellar is not None else STELLAR_HINT,
        "portal_url": "/portal",
    }

    def handler(request: Request) -> Response:
        view = reader.view()
        sections = {}
        for name, build in (
            ("runs", boards.runs_board),
            ("jobs", boards.queues_board),
            ("nodes", boards.nodes_board),
            ("ray", boards.ray_board),
        ):
            try:
                sections[name] = {"state": "ready", "data": build(view)}
            except boards.Unavailable as exc:
                sections[name] = {"state": "unavailable", "reason": str(exc)}
        doc = boards.overview(view)
        fragment = request.query_params.get("fragment") == "1"
        ready = sections["runs"]["state"] == "ready"
        runs = sections["runs"]["data"]["runs"] if ready else []
        context = {
            "o": doc,
            "b": sections,
            "kusto_reason": boards.KUSTO_REASON,
            "nav": nav,
            "stellar_targets": stellar_targets(stellar, runs[:200]),
        }
        # The data, not the clock, decides whether the page changed.
        body = html.render("portal_main.html.j2", **context)
        etag = etag_of(body)
        if not_modified(request, etag):
            return Response(status_code=304, headers={"ETag": etag})
        if not fragment:
            body = html.render(
                "portal.html.j2",
                **context,
                live_url="/portal?fragment=1",
                live_etag=etag,
                live_interval=5,
            )
        return Response(body, media_type="text/html; charset=utf-8", headers={"ETag": etag})

    return handler


def routes(reader: ClusterReader, stellar: Stellar | None = None) -> list[Route]:
    out = [
        Route("/portal", page(reader, stellar)),
        Route("/api/portal/overview", _board(reader, boards.overview)),
        Route("/api/portal/runs", _board(reader, boards.runs_board)),
        Route("/api/portal/jobs", _board(reader, boards.queues_board)),
        Route("/api/portal/nodes", _board(reader, boards.nodes_board)),
        Route("/api/portal/ray", _board(reader, boards.ray_board)),
    ]
    out += [Route(f"/api/portal/{name}", _kusto) for name in boards.KUSTO_BOARDS]
    return out
