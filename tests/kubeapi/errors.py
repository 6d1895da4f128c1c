"""Kubernetes ``Status`` failure bodies and the exception that carries them through the emulator.

Every failure the emulator reports is raised as an :class:`ApiError` deep inside the store or the
request handler and rendered once, at the HTTP boundary, as the ``Status`` object a real API server
sends. The messages copy the wording of kube-apiserver so client code that parses ``reason`` or
shows ``message`` behaves as it would against a cluster.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request failure that renders as a ``kind: Status`` body with ``code`` as HTTP status."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        return failure_status(self.code, self.reason, self.message, self.details)


def failure_status(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def qualified_resource(plural: str, group: str) -> str:
    # The API server names core resources without a group suffix ("pods"), others "jobs.batch".
    return f"{plural}.{group}" if group else plural


def _details(plural: str, group: str, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {"kind": plural}
    if group:
        details["group"] = group
    if name is not None:
        details["name"] = name
    return details


def resource_not_found() -> ApiError:
    # What a real server answers for a path it does not serve, e.g. a CRD that is not installed.
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{qualified_resource(plural, group)} "{name}" not found',
        _details(plural, group, name),
    )


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{qualified_resource(plural, group)} "{name}" already exists',
        _details(plural, group, name),
    )


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {qualified_resource(plural, group)} "{name}": {why}',
        _details(plural, group, name),
    )


STALE_OBJECT = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, group: str, name: str, causes: list[str]) -> ApiError:
    # 422 Invalid mirrors field-validation failures; the message lists every cause like the server.
    what = f"{kind}.{group}" if group else kind
    message = f'{what} "{name}" is invalid: ' + ", ".join(causes)
    details = {"name": name, "kind": kind, "causes": [{"message": c} for c in causes]}
    if group:
        details["group"] = group
    return ApiError(422, "Invalid", message, details)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        f"the server does not allow this method on the requested resource ({method})",
    )


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format ({content_type}) - accepted media "
        f"types include: {', '.join(accepted)}",
    )


def expired(requested: str, oldest: int) -> ApiError:
    # A watch from a compacted resourceVersion: kube-apiserver reports 410 Gone, reason Expired.
    return ApiError(410, "Expired", f"too old resource version: {requested} ({oldest})")


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(user: str, verb: str, plural: str, group: str, namespace: str | None) -> ApiError:
    scope = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    return ApiError(
        403,
        "Forbidden",
        f'{qualified_resource(plural, group)} is forbidden: User "{user}" cannot {verb} resource '
        f'"{plural}" in API group "{group}"{scope}',
        _details(plural, group, None),
    )
