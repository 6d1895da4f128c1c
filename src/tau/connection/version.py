"""`requirements.minTauVersion` of a workspace connection: refuse a tau too old for the repository.

Pure but for the build record it reads for the upgrade hint. A development build (`dev`, or a
PEP 440 `.devN` release) skips the check: it is built from a checkout and has no release number
to compare.
"""

from __future__ import annotations

import re

from tau.errors import UsageError

#: Where the README says how to install and upgrade this tau (never the Go project's installer,
#: which installs another program, nor a `tau` of the public package index, another project).
INSTALL_SECTION = 'the README\'s "Install" section'


def upgrade_hint(required: str, source: str = "") -> str:
    """How to upgrade to `required`: this project's own install, from the Git URL the running
    tau was built from when its build recorded one (tau.build_info), else a placeholder.
    """
    url = source or "<tau's repository URL>"
    return (
        f"upgrade tau to {required} or newer the way it was installed: "
        f"`pipx install --force tau-{required}-py3-none-any.whl` (or `uv tool install --force`; "
        f"the wheel of `make dist`), or `pip install --upgrade 'tau @ git+{url}'`; see "
        f"{INSTALL_SECTION}"
    )


_RELEASE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)")


def is_dev_build(version: str) -> bool:
    """A build without a release number: `dev`, or a `.devN` pre-release."""
    text = version.strip().lower()
    return text == "dev" or ".dev" in text or text.endswith("+dev")


def parse(version: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of `version`, ignoring any suffix; None when it has none."""
    match = _RELEASE.match(version.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def check(required: str, current: str, where: str) -> None:
    """Refuse when `current` is older than `required` (both major.minor.patch).

    Args:
        required: the descriptor's requirements.minTauVersion.
        current: this tau's version.
        where: the descriptor path, for the message.

    Raises:
        UsageError: this tau is too old, naming both versions and the upgrade command.
    """
    if is_dev_build(current):
        return
    have, need = parse(current), parse(required)
    if have is None or need is None or have >= need:
        return
    raise UsageError(
        f"tau {current} is too old for this repository: {where} requires "
        f"requirements.minTauVersion {required} or newer",
        hint=upgrade_hint(required, _source()),
    )


def _source() -> str:
    from tau.build_info import recorded_source

    return recorded_source()
