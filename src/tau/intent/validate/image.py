"""The run's image should be pinned: a floating one (`:latest`, or no tag) gets a warning.

Pure. The reference accepts a floating `runtime.image`, so tau does too, but says so: what a
retry, a resume or a second node pulls may then differ from what this submit ran. `tau serve
deploy` refuses the same images (tau.k8s.images holds the one rule).
"""

from __future__ import annotations

from tau.intent.validate.context import Context
from tau.k8s import images

#: The stage that runs this rule: `tau run validate` (and so every dry run and submit).
STAGE = "offline"


def floating_warning(path: str, image: str) -> tuple[str, str] | None:
    """(message, hint) when `image` floats, else None."""
    found = images.floating(image)
    if found is None:
        return None
    # serve deploy's words (tau.plan.pod_parts.image_problem), then what it means for a run.
    why = "it has no tag, so it means :latest" if found == images.UNTAGGED else ":latest moves"
    return (
        f'{path} "{image}" is not pinned: {why}; a retry, a resume or another node may run a '
        "different image than this submit",
        "pin a version tag (e.g. ghcr.io/org/server:1.4.2) or a digest (@sha256:...); tau run "
        "accepts it, as the reference does, and tau serve deploy refuses it",
    )


def check(ctx: Context) -> None:
    image = ctx.get("runtime.image")
    if isinstance(image, str) and image and (found := floating_warning("runtime.image", image)):
        ctx.warn("runtime.image", *found)
