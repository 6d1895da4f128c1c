"""The shared identifier rule for runs, projects, groups, artifacts, events and metric files.

Pure. Lowercase `[a-z0-9]` with internal `-`, `_` or `.`, alphanumeric at both ends.
"""

from __future__ import annotations

import re

from tau.portal.errors import UsageError

_ALLOWED = re.compile(r"^[a-z0-9._-]+$")


def validate_id(kind: str, value: str) -> str:
    """Return `value` when it is a valid id of `kind`, else a usage error quoting it."""
    if not value:
        raise UsageError(f"{kind} is required")
    if value != value.strip() or not _ALLOWED.match(value):
        raise UsageError(
            f'{kind} "{value}" is invalid (use lowercase alphanumerics with internal '
            "'-', '_' or '.')"
        )
    if not (value[0].isalnum() and value[-1].isalnum()):
        raise UsageError(f'{kind} "{value}" is invalid (must start and end with an alphanumeric)')
    return value
