"""Size limits of what a run ships inside its manifest. Stage: client (`--dry-run=client`).

Pure. The RayJob payload (the entrypoint, the Tune driver and the run.working_dir archive,
gzipped into one env var) is measured when it is encoded; an oversize payload becomes a
diagnostic at the field that put the bytes there, never an exception out of render.
"""

from __future__ import annotations

from tau.errors import ConfigError, Diagnostic
from tau.intent.validate import ValidConfig

#: The stage that runs these rules: `--dry-run=client` and submit, never `tau run validate`.
STAGE = "client"


def payload_too_large(valid: ValidConfig, reason: str) -> ConfigError:
    """The error for a payload over its limit, located at run.working_dir or the entrypoint."""
    config = valid.config
    if config.run.working_dir:
        path, value = "run.working_dir", config.run.working_dir
        hint = (
            "exclude data and checkpoints with run.working_dir_excludes, or bake the code "
            "into the image"
        )
    else:
        path, value = valid.entry_path, config.entrypoint or ""
        hint = "ship the project with run.working_dir, or bake the code into the image"
    message = f'{path} "{value}": the RayJob script payload does not fit: {reason}'
    return ConfigError([Diagnostic(path, message, hint, valid.where(path))])
