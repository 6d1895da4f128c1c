"""`portal serve` routes: the overview page and the JSON boards (contract §10).

A board whose source is missing answers 503 with the reason; the others keep working. The
Kusto boards answer 503 "not configured": this server has no Kusto source.
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
from tau.portal.web.stellar_routes import etag_of, json_response, not_modified


def _board(reader: ClusterReader, build: Callable[[boards.ClusterView], dict[str, Any]]) -> Any:
    def handler(request: Request) -> Response:
        try:
            return json_response(build(reader.view()))
        except boards.Unavailable as exc:
            raise ApiError(503, str(exc)) from None

    return handler


def _kusto(request: Request) -> Response:
    raise ApiError(503, boards.KUSTO_REASON)


def page(reader: ClusterReader) -> Callable[[Request], Response]:
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
        context = {"o": doc, "b": sections, "kusto_reason": boards.KUSTO_REASON}
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


def routes(reader: ClusterReader) -> list[Route]:
    out = [
        Route("/portal", page(reader)),
        Route("/api/portal/overview", _board(reader, boards.overview)),
        Route("/api/portal/runs", _board(reader, boards.runs_board)),
        Route("/api/portal/jobs", _board(reader, boards.queues_board)),
        Route("/api/portal/nodes", _board(reader, boards.nodes_board)),
        Route("/api/portal/ray", _board(reader, boards.ray_board)),
    ]
    out += [Route(f"/api/portal/{name}", _kusto) for name in boards.KUSTO_BOARDS]
    return out
