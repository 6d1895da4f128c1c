"""Translate Kubernetes API and transport failures into one plain `ClusterError`, once.

Pure (classifies an exception it is handed; `kubernetes` and `urllib3` are not imported here, so
this module is safe to import from offline code). Call sites wrap each API call in
`api_call(...)`; nothing above it sees an `ApiException` or a urllib3 traceback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tau.errors import ClusterError
from tau.k8s.kinds import ResourceType

_ASK = "ask your platform operator"
#: The `reason` of a request that got no answer (refused, timed out, the connection dropped):
#: the API may be back in a moment (`tau.kube.outage`). TLS and name failures are not it.
UNREACHABLE = "Unreachable"


@contextmanager
def api_call(
    verb: str,
    resource: ResourceType,
    *,
    namespace: str | None = None,
    name: str | None = None,
    context: str | None = None,
) -> Iterator[None]:
    """Run one API call; any API or transport failure leaves as a `ClusterError`."""
    try:
        yield
    except ClusterError:
        raise
    except Exception as exc:
        translated = translate(exc, verb, resource, namespace=namespace, name=name, context=context)
        if translated is None:
            raise
        raise translated from exc


def translate(
    exc: BaseException,
    verb: str,
    resource: ResourceType,
    *,
    namespace: str | None = None,
    name: str | None = None,
    context: str | None = None,
) -> ClusterError | None:
    """The `ClusterError` for an API/transport failure, or None when `exc` is neither."""
    status = getattr(exc, "status", None)
    if _is_api_exception(exc) and isinstance(status, int) and status > 0:
        return _from_status(status, _status_body(exc), verb, resource, namespace, name, context)
    if _is_transport_error(exc):
        return _from_transport(exc, context)
    return None


def _is_api_exception(exc: BaseException) -> bool:
    # The official client's ApiException, or the lean session's HttpError (tau.kube.direct).
    return any(
        (c.__name__ == "ApiException" and c.__module__.startswith("kubernetes."))
        or (c.__name__ == "HttpError" and c.__module__ == "tau.kube.direct")
        for c in type(exc).__mro__
    )


def _is_transport_error(exc: BaseException) -> bool:
    # An ApiException with status 0 wraps a transport failure too.
    if _is_api_exception(exc):
        return True
    return any(c.__module__.startswith("urllib3") for c in type(exc).__mro__) or isinstance(
        exc, (ConnectionError, TimeoutError)
    )


def _status_body(exc: BaseException) -> dict[str, Any]:
    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        parsed = json.loads(body) if body else {}
    except ValueError:
        return {"message": str(body).strip()[:200]}
    return parsed if isinstance(parsed, dict) else {}


def _target(verb: str, resource: ResourceType, namespace: str | None, name: str | None) -> str:
    what = f'{resource.qualified} "{name}"' if name else resource.qualified
    where = f' in namespace "{namespace}"' if namespace else ""
    return f"{verb} {what}{where}"


def _from_status(
    status: int,
    body: dict[str, Any],
    verb: str,
    resource: ResourceType,
    namespace: str | None,
    name: str | None,
    context: str | None,
) -> ClusterError:
    target = _target(verb, resource, namespace, name)
    on = f' on context "{context}"' if context else ""
    if status == 401:
        return ClusterError(
            f"the cluster did not accept your credentials{on} (401 Unauthorized) to {target}",
            status=401,
            hint="sign in again (for AKS: `az login`, then retry so kubelogin refreshes the "
            f"token); if it persists, {_ASK}",
        )
    if status == 403:
        refusal = _admission_refusal(body)
        if refusal:
            # Not RBAC: a quota, an admission policy or a webhook refused this object, so
            # asking for access would not help; the server's reason is the one that does.
            return ClusterError(
                f"the cluster refused to {target}{on} (403 Forbidden): {refusal}",
                status=403,
                hint="an admission rule of the cluster (a ResourceQuota, a policy or a webhook) "
                f"refused it, not your permissions; if the reason is unclear, {_ASK}",
            )
        return ClusterError(
            f"you are not allowed to {target}{on} (403 Forbidden)",
            status=403,
            hint=f"{_ASK} (the TauWorkspace owner) to grant your identity access",
        )
    if status == 422:
        return ClusterError(
            f"the API server rejected {_subject(resource, namespace, name)} as invalid "
            f"(422 Invalid): {_invalid_fields(body)}",
            status=422,
            hint="the cluster validates more than tau does offline; change the value that sets "
            "the field named above and retry",
        )
    if status == 404:
        return _not_found(body, target, resource, namespace, name)
    if status == 409:
        reason = body.get("reason") or "Conflict"
        if reason == "AlreadyExists":
            return ClusterError(
                f'{resource.kind} "{name or "?"}" already exists'
                + (f' in namespace "{namespace}"' if namespace else ""),
                status=409,
                hint="choose a distinct name, or cancel the existing one first",
            )
        return ClusterError(
            f"conflict: could not {target}: the object changed while tau was updating it",
            status=409,
            hint="retry the command",
        )
    if status in (408, 504) or body.get("reason") == "Timeout":
        return ClusterError(
            f"the API server timed out trying to {target}",
            status=status,
            hint="retry; if it persists, the cluster may be overloaded",
        )
    message = str(body.get("message") or "").strip()
    detail = f": {message}" if message else ""
    return ClusterError(f"the API server failed to {target} ({status}){detail}", status=status)


#: How kube-apiserver's authorizer words a denial: `jobs.batch is forbidden: User "u" cannot
#: create resource "jobs" in API group "batch" in the namespace "ns"` (or `cannot get path`).
_RBAC_DENIAL = re.compile(r'\bcannot \S+ (resource|path) "')


def _admission_refusal(body: dict[str, Any]) -> str:
    """The server's message when a 403 came from admission (quota, policy, webhook), else "".

    Only the authorizer says "cannot VERB resource"; a 403 without a message stays an RBAC
    denial, the common case.
    """
    message = " ".join(str(body.get("message") or "").split())
    if not message or _RBAC_DENIAL.search(message):
        return ""
    return message


def _subject(resource: ResourceType, namespace: str | None, name: str | None) -> str:
    what = f'{resource.kind} "{name}"' if name else resource.qualified
    return what + (f' in namespace "{namespace}"' if namespace else "")


def _invalid_fields(body: dict[str, Any]) -> str:
    """What a 422 says is wrong, field by field, on one line: the server's causes, or its
    message without the `Kind.group "name" is invalid: ` preamble tau has already said.
    """
    details = body.get("details") or {}
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict) and c.get("message")]
    if causes:
        text = "; ".join(
            f"{c['field']}: {c['message']}" if c.get("field") else str(c["message"]) for c in causes
        )
    else:
        text = str(body.get("message") or "").strip()
        head, sep, rest = text.partition(" is invalid: ")
        if sep and " " not in head.split('"')[0].strip():
            text = rest
    return " ".join(text.split()) or "the object is invalid"


def _not_found(
    body: dict[str, Any],
    target: str,
    resource: ResourceType,
    namespace: str | None,
    name: str | None,
) -> ClusterError:
    details = body.get("details") or {}
    # An object 404 is a Status naming the object; a missing resource type (CRD not installed)
    # is the generic "the server could not find the requested resource" with no details.name.
    if name and details.get("name"):
        where = f' in namespace "{namespace}"' if namespace else ""
        return ClusterError(
            f'{resource.kind} "{name}" not found{where}', status=404, reason="NotFound"
        )
    if resource.owner:
        return ClusterError(
            f"{resource.kind} CRD not installed: is {resource.owner} installed?",
            status=404,
            reason="NotServed",
            hint=f"the cluster does not serve {resource.qualified}/{resource.version}; "
            f"{_ASK} to install {resource.owner}",
        )
    if name:
        where = f' in namespace "{namespace}"' if namespace else ""
        return ClusterError(
            f'{resource.kind} "{name}" not found{where}', status=404, reason="NotFound"
        )
    return ClusterError(
        f"the cluster does not serve {resource.qualified}", status=404, reason="NotServed"
    )


def _from_transport(exc: BaseException, context: str | None) -> ClusterError:
    text = _root_text(exc).lower()
    on = f' for context "{context}"' if context else ""
    if "timed out" in text or "timeout" in text:
        return ClusterError(
            f"the Kubernetes API server{on} did not answer in time",
            hint="check your network/VPN; retry later",
            reason=UNREACHABLE,
        )
    if "refused" in text:
        return ClusterError(
            f"connection to the Kubernetes API server{on} was refused",
            hint="the API server is down or the address is wrong; check the "
            "cluster is running and your VPN is up",
            reason=UNREACHABLE,
        )
    if "certificate" in text or "ssl" in text:
        return ClusterError(
            f"TLS verification of the Kubernetes API server{on} failed",
            hint="the cluster's CA changed or the kubeconfig is stale; re-fetch credentials",
        )
    if "name or service not known" in text or "nodename nor servname" in text or "resolve" in text:
        return ClusterError(
            f"the Kubernetes API server address{on} does not resolve",
            hint="check your network/VPN (private clusters need it)",
        )
    return ClusterError(
        f"could not reach the Kubernetes API server{on}",
        hint="check your network connection and the cluster address",
        reason=UNREACHABLE,
    )


def _root_text(exc: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(type(current).__name__ + " " + str(current))
        current = (
            getattr(current, "reason", None)
            if isinstance(getattr(current, "reason", None), BaseException)
            else (current.__cause__ or current.__context__)
        )
    return " ".join(parts)
