"""The one findings collector: every rule of every stage records its problems here.

Pure. A finding is a Diagnostic placed at a config path, located through the document's
source map (the value's line and column, or the key's for unknown and misplaced keys).
The schema walker, the offline rules, the client-stage rules of resolve and the
connection descriptor all collect through this class, so every problem of a file is
reported at once and worded the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tau.errors import ConfigError, Diagnostic
from tau.intent.load import PathKey, SourceMap, dotted


def split_path(path: str) -> PathKey:
    """`storage.volumes[1]` → ("storage", "volumes", 1); map keys never contain dots here."""
    parts: list[str | int] = []
    for piece in path.split(".") if path else []:
        while "[" in piece:
            head, _, rest = piece.partition("[")
            if head:
                parts.append(head)
            index, _, piece = rest.partition("]")
            parts.append(int(index))
        if piece:
            parts.append(piece)
    return tuple(parts)


@dataclass
class Findings:
    """Diagnostics of one document, in the order found."""

    source: SourceMap
    out: list[Diagnostic] = field(default_factory=list)

    def error(
        self,
        path: str | PathKey,
        message: str,
        hint: str | None = None,
        *,
        key: bool = False,
        severity: str = "error",
        shown: str | None = None,
    ) -> None:
        """Record a problem at a config path.

        Args:
            path: dotted (`runtime.env.FOO`, `storage.volumes[1]`), or a tuple when a map
                key itself holds dots (`("policy", "node_selector", "kubernetes.io/os")`).
            key: locate the key rather than its value (unknown or misplaced keys).
            shown: the path the message is about when it names the group rather than the
                entry (`execution.configs: "nnodes" is ...` at `execution.configs.nnodes`), so
                the line does not repeat the group before its own words.
        """
        parts = split_path(path) if isinstance(path, str) else path
        loc = self.source.key(parts) if key else self.source.value(parts)
        self.out.append(Diagnostic(shown or dotted(parts), message, hint, loc, severity))

    def warn(self, path: str | PathKey, message: str, hint: str | None = None) -> None:
        self.error(path, message, hint, severity="warning")

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.out if d.severity == "error"]

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        """The warnings, sorted by place."""
        found = (d for d in self.out if d.severity != "error")
        return tuple(sorted(found, key=Diagnostic.sort_key))

    def raise_errors(self) -> None:
        """Raise every finding (warnings ride along) when any of them is an error."""
        if any(d.severity == "error" for d in self.out):
            raise ConfigError(self.out)
