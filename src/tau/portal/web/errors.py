"""The JSON error shape of every API route: `{error, code, detail, status}`. Pure."""

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
