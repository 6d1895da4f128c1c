"""The JSON error shape of every API route (`{error, code, detail, status}`), and which
requests get the HTML error page instead (browsers, outside `/api/`). Pure.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

#: Contract codes by HTTP status (§9.4); 4xx not listed here fall back to INVALID_ARGUMENT.
CODES = {
    400: "INVALID_ARGUMENT",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    501: "UNSUPPORTED_CAPABILITY",
    502: "ARTIFACT_FETCH_FAILED",
    503: "SOURCE_UNAVAILABLE",
    504: "UPSTREAM_TIMEOUT",
}


class ApiError(Exception):
    """A request the server refuses, with the status and the message the client sees."""

    def __init__(self, status: int, detail: str, code: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.code = code or CODES.get(
            status, "INVALID_ARGUMENT" if status < 500 else "SOURCE_UNAVAILABLE"
        )

    def body(self) -> dict[str, Any]:
        return body(self.status, self.detail, self.code)


def body(status: int, detail: str, code: str | None = None) -> dict[str, Any]:
    return {
        "error": HTTPStatus(status).phrase,
        "code": code or CODES.get(status, "INVALID_ARGUMENT"),
        "detail": detail,
        "status": status,
    }


_JSON_TYPES = ("application/json", "application/problem+json")


def _accepted(accept: str) -> list[tuple[str, float]]:
    """The media types of an Accept header with their q values, in header order."""
    out = []
    for part in accept.split(","):
        kind, *params = (p.strip() for p in part.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if kind:
            out.append((kind.lower(), q))
    return out


def wants_html(accept: str, path: str) -> bool:
    """Whether a request is a browser's that should get an HTML page (errors, `/`).

    Never for `/api/` paths (scripts rely on the JSON shape there). Elsewhere: `text/html` is
    accepted and JSON is not preferred to it (by q, then by order), as browsers send
    `text/html,...,*/*;q=0.8` and clients that want JSON say `application/json` first.
    """
    if path.startswith("/api/"):
        return False
    types = _accepted(accept)
    html = next(((i, q) for i, (t, q) in enumerate(types) if t == "text/html" and q > 0), None)
    if html is None:
        return False
    js = next(((i, q) for i, (t, q) in enumerate(types) if t in _JSON_TYPES and q > 0), None)
    return js is None or (html[1], -html[0]) > (js[1], -js[0])
