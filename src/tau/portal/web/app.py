"""The one ASGI app behind `experiment serve|open` and `portal serve` (Starlette).

Performs I/O only through the sources it is given (the store, the cluster reader). Every route is
GET/HEAD; everything else is refused by the security middleware before routing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tau.portal.web import stellar_routes as sr
from tau.portal.web.errors import ApiError, body
from tau.portal.web.security import HostGuard, SecurityMiddleware

Handler = Callable[[Request], Response]


def _deprecated(handler: Handler) -> Handler:
    def wrapped(request: Request) -> Response:
        response = handler(request)
        response.headers.update(sr.DEPRECATION_HEADERS)
        return response

    return wrapped


def stellar_routes(stellar: sr.Stellar) -> list[Route]:
    handlers: dict[str, Handler] = {
        "capabilities": stellar.capabilities,
        "snapshot": stellar.snapshot,
        "series": stellar.series,
        "runs": stellar.runs,
        "experiments": stellar.experiments,
        "status": stellar.status,
        "artifacts": stellar.artifacts,
        "artifact": stellar.artifact,
    }
    routes = [Route("/stellar", stellar.page)]
    for base in (sr.V2, *sr.LEGACY):
        for name, handler in handlers.items():
            legacy = base != sr.V2
            wrapped = _deprecated(handler) if legacy or name in sr.DEPRECATED_V2 else handler
            routes.append(Route(f"{base}/{name}", wrapped))
    return routes


async def _api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return sr.json_response(exc.body(), exc.status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    detail = f"no route {request.url.path}" if exc.status_code == 404 else str(exc.detail or "")
    return sr.json_response(body(exc.status_code, detail), exc.status_code)


DAMAGED_FIX = (
    "restore index.sqlite from a backup, or rebuild it from the store's files with "
    "`taugrid-portal experiment rebuild-index --store STORE`"
)


def damaged_detail(exc: Exception) -> str | None:
    """The 503 detail when `exc` is a damaged store index (no server path in it), else None."""
    from tau.portal.errors import IndexDamaged
    from tau.portal.store.core import is_damage

    if isinstance(exc, IndexDamaged):
        reason = exc.reason
    elif is_damage(exc):
        reason = str(exc).splitlines()[0] if str(exc) else "unreadable"
    else:
        return None
    return f"the experiment store index is damaged ({reason}); {DAMAGED_FIX}"


def _wants_html(request: Request) -> bool:
    return "text/html" in request.headers.get("accept", "") and not request.url.path.startswith(
        "/api/"
    )


def _unavailable_page(detail: str) -> Response:
    from html import escape

    text = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Stellar: store unavailable</title></head><body>"
        "<h1>Stellar: the experiment store is unavailable</h1>"
        f"<p>{escape(detail)}</p></body></html>"
    )
    return Response(text, 503, media_type="text/html; charset=utf-8")


async def _internal_error(request: Request, exc: Exception) -> Response:
    detail = damaged_detail(exc)
    if detail is not None:
        if _wants_html(request):
            return _unavailable_page(detail)
        return sr.json_response(body(503, detail), 503)
    # No traceback and no internals to the client: the reason is one line.
    detail = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'internal error'}"
    return sr.json_response(body(500, detail, "INTERNAL"), 500)


def create_app(
    *,
    guard: HostGuard,
    stellar: sr.Stellar | None = None,
    portal: Any | None = None,
) -> Any:
    """The ASGI app: Stellar routes when a store is given, portal routes when a cluster is."""
    # The page assets serve both Stellar and the portal pages.
    routes: list[Route] = [
        Route("/stellar/assets/{name}", sr.asset),
        # Browsers ask for it on every page; an empty answer keeps their consoles clean.
        Route("/favicon.ico", lambda request: Response(status_code=204)),
    ]
    if stellar is not None:
        routes += stellar_routes(stellar)
    if portal is not None:
        from tau.portal.web.portal_routes import routes as portal_routes

        routes += portal_routes(portal)
        routes.append(Route("/", lambda request: RedirectResponse("/portal", 302)))
        routes.append(Route("/healthz", lambda request: sr.json_response({"status": "ok"})))
    elif stellar is not None:
        routes.append(Route("/", stellar.root))
        routes.append(Route("/healthz", stellar.healthz))
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        ApiError: _api_error,
        HTTPException: _http_error,
        Exception: _internal_error,
    }
    app = Starlette(routes=routes, exception_handlers=handlers)
    return SecurityMiddleware(app, guard)
