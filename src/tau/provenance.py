"""Provenance of a submitted run: the Git commit of its config and the tau command line.

Performs I/O (runs `git` in the config's directory). The values become the workload's code-sha
and tau-command annotations (tau.k8s.meta), which the evidence portal reads. Render
stays pure: these are gathered here and stamped onto the rendered workload objects by `annotate`.
A config outside a Git repository (or without `git` installed) simply has no code-sha.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.k8s import meta

REDACTED = "<redacted>"
#: A flag or KEY=VALUE whose name says it carries a credential.
_SECRET_NAME = re.compile(r"(secret|token|passw|credential|api[-_]?key|access[-_]?key)", re.I)
_URL_USERINFO = re.compile(r"(://)[^/@\s]+@")
#: The kinds a run creates that carry the run's annotations (not its headless Service).
_WORKLOAD_KINDS = ("Job", "RayJob")
_GIT_TIMEOUT = 5.0


@dataclass(frozen=True)
class Provenance:
    """Where a run came from; None fields are left out."""

    code_sha: str | None = None
    command: str | None = None

    def annotations(self) -> dict[str, str]:
        notes = {}
        if self.code_sha:
            notes[meta.ANNOTATION_CODE_SHA] = self.code_sha
        if self.command:
            notes[meta.ANNOTATION_TAU_COMMAND] = self.command
        return notes


def _git(directory: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def code_sha(directory: Path) -> str | None:
    """HEAD of the repository holding `directory`, with `-dirty` when tracked files differ from
    it (untracked files do not count, as with `git describe --dirty`); None outside Git and
    before the first commit.

    One `git status` answers both (its porcelain v2 header names HEAD's commit, and any other
    line is a changed tracked file): every `tau run` pays for this call, and a second git
    process was a visible share of a client dry run's time.
    """
    status = _git(
        directory,
        "status",
        "--porcelain=v2",
        "--branch",
        "--no-ahead-behind",
        "--untracked-files=no",
    )
    if status is None:
        return None
    head = None
    dirty = False
    for line in status.splitlines():
        if line.startswith("# branch.oid "):
            head = line.removeprefix("# branch.oid ").strip()
        elif line and not line.startswith("#"):
            dirty = True
    if not head or head == "(initial)":
        return None
    return head + ("-dirty" if dirty else "")


def command_line(argv: Sequence[str]) -> str:
    """`tau ARGS...` shell-quoted, with the value of any secret-named flag or KEY=VALUE and any
    URL credentials replaced by <redacted>.
    """
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, sep, _value = arg.partition("=")
        if sep and _SECRET_NAME.search(name):
            out.append(f"{name}={REDACTED}")
            continue
        if arg.startswith("-") and _SECRET_NAME.search(arg):
            hide_next = True
        out.append(_URL_USERINFO.sub(rf"\1{REDACTED}@", arg))
    return shlex.join(["tau", *out])


def collect(config_dir: Path, argv: Sequence[str]) -> Provenance:
    """The provenance of a run whose config lives in `config_dir`, invoked as `tau ARGV`."""
    return Provenance(code_sha(config_dir), command_line(argv))


def annotate(documents: list[dict[str, Any]], provenance: Provenance) -> list[dict[str, Any]]:
    """The documents with the provenance annotations on each workload object. Pure."""
    notes = provenance.annotations()
    if not notes:
        return documents
    out = []
    for doc in documents:
        if doc.get("kind") in _WORKLOAD_KINDS:
            md = doc["metadata"]
            doc = {
                **doc,
                "metadata": {**md, "annotations": {**(md.get("annotations") or {}), **notes}},
            }
        out.append(doc)
    return out
