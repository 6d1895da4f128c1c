"""Problems the managed-workflow input checks find, placed at a config path, not yet located.

Pure. The Key Vault entries, the extra scripts and the secret payload are checked away from
the document they came from (the manifest's `runtime.env_kv`, the wrapper's `workflow.*`).
Each check gathers every problem it finds as a `Problem` with the config path it belongs to
and raises them together; the caller, which holds the document's source map, records them
into its `Findings` (`WorkflowInputError.report`), so they come out as located Diagnostics
beside every other problem of the file.
"""

# No `from __future__ import annotations`: see tau.intent.runconfig.
import json
from typing import NamedTuple, Protocol

from tau.errors import ConfigError, Diagnostic
from tau.intent.load import PathKey, dotted


class Problem(NamedTuple):
    """One problem: the config path it belongs to, the reference's message and a fix."""

    path: PathKey
    message: str
    hint: str | None = None
    #: Locate the key rather than its value (a map key that is itself the problem).
    key: bool = False


class _Recorder(Protocol):
    """What `report` needs of `tau.intent.validate.findings.Findings`."""

    def error(
        self, path: PathKey, message: str, hint: str | None = None, *, key: bool = False
    ) -> None: ...


class WorkflowInputError(ConfigError):
    """Every problem one check found, in the order found (never empty).

    A ConfigError already (unlocated Diagnostics), so one that is not `report`ed still reaches
    the user as a plain error rather than a traceback.
    """

    def __init__(self, problems: list[Problem] | tuple[Problem, ...]) -> None:
        self.problems = tuple(problems)
        super().__init__([Diagnostic(dotted(p.path), p.message, p.hint) for p in self.problems])

    def report(self, findings: _Recorder) -> None:
        """Record every problem into a findings collector (located through its source map)."""
        for problem in self.problems:
            findings.error(problem.path, problem.message, problem.hint, key=problem.key)


def raise_any(problems: list[Problem]) -> None:
    """Raise the problems found, if any."""
    if problems:
        raise WorkflowInputError(problems)


def quote(text: str) -> str:
    """A value quoted as the reference's Go `%q` shows it (escapes included)."""
    return json.dumps(text, ensure_ascii=False)
