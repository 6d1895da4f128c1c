"""The one ASGI app behind `experiment serve|open` and `portal serve` (Starlette).

Performs I/O only through the sources it is given (the store, the cluster reader). Every route is
GET/HEAD; everything else is refused by the security middleware before routing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.gzip import DEFAULT_EXCLUDED_CONTENT_TYPES, GZipMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tau.portal.web import stellar_routes as sr
from tau.portal.web.errors import ApiError, body, wants_html
from tau.portal.web.security import HostGuard, SecurityMiddleware

Handler = Callable[[Request], Response]
#: Responses shorter than this are sent as they are.
GZIP_MIN_BYTES = 1024


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
    routes = [
        Route("/stellar", stellar.page),
        Route("/stellar/chart.svg", stellar.chart_svg),
        Route("/stellar/kept-log", stellar.kept_log),
    ]
    for base in (sr.V2, *sr.LEGACY):
        for name, handler in handlers.items():
            legacy = base != sr.V2
            wrapped = _deprecated(handler) if legacy or name in sr.DEPRECATED_V2 else handler
            routes.append(Route(f"{base}/{name}", wrapped))
    return routes


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


def unreachable_detail(exc: Exception) -> str | None:
    """The 503 detail when a team store's database is unreachable, else None."""
    if type(exc).__name__ != "Unreachable" or "tau.portal.store" not in type(exc).__module__:
        return None  # checked by name: the folder-only server never imports psycopg's side
    return "the team store's database is unreachable; the page comes back when it is"


def _browser(request: Request) -> bool:
    return wants_html(request.headers.get("accept", ""), request.url.path)


#: The error page's heading and what a user can do, by status.
_TITLES = {
    400: ("This request cannot be answered", ""),
    404: ("Nothing here", "Check the id, or pick it from the list of experiments."),
    405: ("Read-only", "Change runs with the taugrid-portal CLI."),
    500: (
        "The server could not build this page",
        "`taugrid-portal experiment stellar TARGET -o json` shows the same error with its "
        "location.",
    ),
    503: ("The experiment store is unavailable", ""),
}


def error_page(status: int, message: str, nav: dict[str, Any], hint: str = "") -> Response:
    """The HTML error page: status, one line, links home (never a traceback or a path)."""
    from http import HTTPStatus

    from tau.portal.stellar import html

    title, default_hint = _TITLES.get(status, ("This request cannot be answered", ""))
    text = html.render(
        "error.html.j2",
        status=status,
        phrase=HTTPStatus(status).phrase,
        title=title,
        message=message,
        hint=hint or default_hint,
        nav=nav,
    )
    return Response(text, status, media_type="text/html; charset=utf-8")


def _handlers(
    nav: dict[str, Any],
) -> dict[Any, Callable[[Request, Exception], Awaitable[Response]]]:
    """Errors as the JSON shape of errors.py for API clients, as an HTML page for browsers."""

    def reply(request: Request, status: int, detail: str, code: str | None = None) -> Response:
        if _browser(request):
            return error_page(status, detail, nav)
        return sr.json_response(body(status, detail, code), status)

    async def api_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return reply(request, exc.status, exc.detail, exc.code)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            detail = f"no route {request.url.path}"
            if _browser(request):
                detail = f"there is no page at {request.url.path}"
        else:
            detail = str(exc.detail or "")
        return reply(request, exc.status_code, detail)

    async def internal_error(request: Request, exc: Exception) -> Response:
        detail = damaged_detail(exc) or unreachable_detail(exc)
        if detail is not None:
            return reply(request, 503, detail)
        if _browser(request):
            # The exception's text may name a server path: the page says only its kind.
            return error_page(500, f"internal error ({type(exc).__name__})", nav)
        # No traceback and no internals to the client: the reason is one line.
        first = str(exc).splitlines()[0] if str(exc) else "internal error"
        return sr.json_response(body(500, f"{type(exc).__name__}: {first}", "INTERNAL"), 500)

    return {ApiError: api_error, HTTPException: http_error, Exception: internal_error}


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
    nav: dict[str, Any] = {
        "experiments_url": "/stellar" if stellar is not None else None,
        "portal_url": "/portal" if portal is not None else None,
    }
    if stellar is not None:
        stellar.portal_url = nav["portal_url"]
        routes += stellar_routes(stellar)
    if portal is not None:
        from tau.portal.web.portal_routes import routes as portal_routes

        routes += portal_routes(portal, stellar=stellar)
        routes.append(Route("/", lambda request: RedirectResponse("/portal", 302)))
        routes.append(Route("/healthz", lambda request: sr.json_response({"status": "ok"})))
    elif stellar is not None:
        routes.append(Route("/", stellar.root))
        routes.append(Route("/healthz", stellar.healthz))
    app = Starlette(routes=routes, exception_handlers=_handlers(nav))
    # Pages and JSON are text that compresses 5-10x; a client that does not say it accepts
    # gzip gets the bytes as they are. Small answers are not worth a gzip header.
    # Level 6: a 5 MB page compresses in a tenth of the time of level 9, a few percent larger.
    # Artifact downloads of any binary type go as they are.
    gzip = GZipMiddleware(
        app,
        minimum_size=GZIP_MIN_BYTES,
        compresslevel=6,
        exclude_content_types=(*DEFAULT_EXCLUDED_CONTENT_TYPES, "application/octet-stream"),
    )
    return SecurityMiddleware(gzip, guard)
