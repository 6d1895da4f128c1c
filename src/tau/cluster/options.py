"""The flags of `tau cluster install|uninstall`, their contract defaults and their checks. Pure.

Defaults follow the reference CLI (contract §1.2). The options are validated once, before any
helm call, so a bad `--timeout` or `--set` is reported as bad input (exit 1) up front.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tau.errors import UsageError
from tau.intent.duration import DurationError, format_duration, parse_duration
from tau.k8s.dra import SHARED_CLUSTER_QUEUE

DEFAULT_RELEASE = "taugrid"
DEFAULT_NAMESPACE = "tau-system"
DEFAULT_CHART = "oci://mcr.microsoft.com/aks/ai-runtime/helm/taugrid"
DEFAULT_VERSION = "0.3.2"
DEFAULT_TIMEOUT = "15m"
#: The chart value that turns the baseline queue objects on and off.
BASELINE_QUEUE_VALUE = "baselineQueue.enabled"
#: What the baseline queue creates (deleted by the drain, while Kueue still runs).
BASELINE_QUEUE_OBJECTS = (
    ("clusterqueue", SHARED_CLUSTER_QUEUE),
    ("resourceflavor", "taugrid-default"),
    ("topology", "default-node-topology"),
)


@dataclass(frozen=True)
class Target:
    """Which release of which chart, where."""

    release: str = DEFAULT_RELEASE
    namespace: str = DEFAULT_NAMESPACE
    chart: str = DEFAULT_CHART
    timeout: str = DEFAULT_TIMEOUT

    @property
    def timeout_seconds(self) -> float:
        return parse_timeout(self.timeout)

    @property
    def chart_name(self) -> str:
        """The chart's own name: the last path segment of the reference, without a version."""
        tail = self.chart.rstrip("/").rsplit("/", 1)[-1]
        return tail.split(":", 1)[0].split("@", 1)[0]


@dataclass(frozen=True)
class InstallOptions:
    """`tau cluster install` flags."""

    target: Target = field(default_factory=Target)
    version: str = DEFAULT_VERSION
    values: tuple[str, ...] = ()
    set_values: tuple[str, ...] = ()
    set_strings: tuple[str, ...] = ()
    create_namespace: bool = True
    wait: bool = False
    atomic: bool = False
    dependency_update: bool = True
    dry_run: bool = False

    def value_args(self) -> list[str]:
        """`-f`, `--set` and `--set-string` in the order helm applies them."""
        args: list[str] = []
        for path in self.values:
            args += ["--values", path]
        for item in self.set_values:
            args += ["--set", item]
        for item in self.set_strings:
            args += ["--set-string", item]
        return args


@dataclass(frozen=True)
class UninstallOptions:
    """`tau cluster uninstall` flags."""

    target: Target = field(default_factory=Target)
    wait: bool = True
    dry_run: bool = False
    keep_history: bool = False
    no_hooks: bool = False
    yes: bool = False
    drain_queue: bool = True


def parse_timeout(text: str, flag: str = "--timeout") -> float:
    """Seconds of a Go duration flag; a usage error naming the flag otherwise."""
    try:
        seconds = parse_duration(text)
    except DurationError as exc:
        raise UsageError(
            f"{flag}: {exc}", hint=f"use forms like 90s, 15m, 1h ({flag} 15m)"
        ) from None
    if seconds <= 0:
        raise UsageError(f'{flag}: "{text}" must be positive', hint=f"for example {flag} 15m")
    return seconds


def check_install(options: InstallOptions) -> None:
    """Every flag problem of an install, before anything runs.

    Raises:
        UsageError: bad --timeout, empty --release/--namespace/--chart/--version, or a
            `--set` / `--set-string` item without `=`.
    """
    check_target(options.target)
    if not options.version.strip():
        raise UsageError(
            "--version must not be empty", hint=f"for example --version {DEFAULT_VERSION}"
        )
    for flag, items in (("--set", options.set_values), ("--set-string", options.set_strings)):
        for item in items:
            if "=" not in item or item.startswith("="):
                raise UsageError(
                    f'{flag} "{item}": expected KEY=VALUE',
                    hint=f"for example {flag} {BASELINE_QUEUE_VALUE}=true",
                )


def check_target(target: Target) -> None:
    """Flags shared by install and uninstall."""
    parse_timeout(target.timeout)
    for flag, value in (
        ("--release", target.release),
        ("--namespace", target.namespace),
        ("--chart", target.chart),
    ):
        if not value.strip():
            raise UsageError(f"{flag} must not be empty")


def timeout_text(seconds: float) -> str:
    """How helm is given the timeout (a Go duration)."""
    return format_duration(seconds)
