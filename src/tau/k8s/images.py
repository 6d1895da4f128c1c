"""Whether an image reference floats: no tag (which means `:latest`) or `:latest` itself.

Pure. One rule for `tau serve deploy` (which refuses a floating image) and `tau run` (which
warns, as the reference accepts one): a digest or any other tag counts as pinned.
"""

from __future__ import annotations

import re

#: The characters of an image reference (IPv6 registries bracket their address); anything
#: else, such as the seed's `<pinned-image>` placeholder, is not a reference to judge here.
_REFERENCE = re.compile(r"[A-Za-z0-9._:/@\[\]-]+")
UNTAGGED = "untagged"
LATEST = "latest"


def is_reference(image: str) -> bool:
    """Whether `image` is made of an image reference's characters (a rough shape check)."""
    return bool(_REFERENCE.fullmatch(image))


def floating(image: str) -> str | None:
    """UNTAGGED or LATEST when `image` floats, else None (a digest, another tag, or no image
    reference at all).
    """
    if not is_reference(image):
        return None
    ref, _, digest = image.partition("@")
    if digest:
        return None
    # The tag follows the last path segment's colon; a registry's port sits before a slash.
    last = ref.rsplit("/", 1)[-1]
    _, colon, tag = last.partition(":")
    if not colon or not tag:
        return UNTAGGED
    return LATEST if tag == "latest" else None
