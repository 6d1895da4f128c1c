"""What `tau run logs` reads of each pod: the options of one read. Pure.

Apart from `tau.runs.logs` so the readers of kept copies (`tau.runs.kept_read`) take the same
options without importing the live reader.
"""

from __future__ import annotations

from dataclasses import dataclass

from tau.errors import UsageError


@dataclass(frozen=True)
class LogOptions:
    """What to read of each pod. `container`, `all_containers`, `previous` and `prefix` apply
    to Job pods only: a RayJob's driver log has one fixed source.
    """

    follow: bool = False
    tail: int = 200
    container: str | None = None
    all_containers: bool = False
    previous: bool = False
    timestamps: bool = False
    prefix: bool = False
    #: An attempt of a retried or resumed run (None: the current one).
    attempt: int | None = None

    def check(self) -> None:
        """Refuse combinations that cannot mean anything.

        Raises:
            UsageError: --container with --all-containers, --follow with --all-containers, or
                a --tail below -1.
        """
        if self.attempt is not None and self.attempt < 0:
            raise UsageError(
                f"--attempt {self.attempt} must be an attempt number: 0 for the first submit",
                hint="`tau run history NAME` lists a run's attempts",
            )
        if self.tail < -1:
            raise UsageError(
                f"--tail {self.tail} must be -1 (every line) or a count of lines",
                hint="e.g. --tail 200, or --tail -1 for the whole log",
            )
        if self.all_containers and self.container:
            raise UsageError(
                "--container and --all-containers exclude each other",
                hint="name one container with -c, or read them all with --all-containers",
            )
        if self.all_containers and self.follow:
            raise UsageError(
                "--follow streams one container; it cannot follow --all-containers",
                hint="follow one container with -f -c NAME, or drop -f to read them all",
            )

    def job_only_flags(self) -> list[str]:
        """The Job-only flags that are set."""
        return [
            flag
            for flag, on in (
                ("--container", bool(self.container)),
                ("--all-containers", self.all_containers),
                ("--previous", self.previous),
                ("--prefix", self.prefix),
            )
            if on
        ]
