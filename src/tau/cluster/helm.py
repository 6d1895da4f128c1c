"""Drive the real `helm` binary as a subprocess: version detection and flag adaptation.

Performs I/O (runs `helm`). Every invocation that can reach a cluster carries tau's dedicated
kubeconfig and the resolved context explicitly (`--kubeconfig`, `--kube-context`), and the
child's `$KUBECONFIG` points at the same file, so the user's own kubeconfig and current context
are never used by accident. Offline invocations (`helm template`) get an empty kubeconfig.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.errors import ClusterError, TauError

#: The oldest Helm tau drives: `uninstall --ignore-not-found` appeared in 3.13, OCI charts
#: without the experimental flag in 3.8; 3.14 is the oldest still receiving security fixes.
MIN_VERSION = (3, 14, 0)
INSTALL_HINT = (
    "install Helm 3.14 or newer (Helm 4 is supported): https://helm.sh/docs/intro/install/ "
    "(for example `curl -fsSL https://raw.githubusercontent.com/helm/helm/main/scripts/"
    "get-helm-3 | bash`), or put it on PATH / set $TAU_HELM"
)
#: Seconds allowed on top of helm's own --timeout before tau kills the child.
KILL_GRACE_SECONDS = 60.0
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")

#: `helm list` state filters naming every release state (Helm 3 and 4 both take them).
_ALL_STATES = (
    "--deployed",
    "--failed",
    "--pending",
    "--superseded",
    "--uninstalling",
    "--uninstalled",
)


class HelmMissing(TauError):
    """No usable `helm` binary: bad input for the operator to fix (exit 1)."""


class HelmFailed(ClusterError):
    """`helm` exited non-zero or did not finish in time (exit 3)."""

    def __init__(self, message: str, *, stderr: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.stderr = stderr


@dataclass(frozen=True)
class Access:
    """Which cluster helm talks to: tau's dedicated kubeconfig and one context."""

    kubeconfig: Path
    context: str

    def flags(self) -> list[str]:
        return ["--kubeconfig", str(self.kubeconfig), "--kube-context", self.context]


@dataclass(frozen=True)
class Result:
    """What one helm invocation returned."""

    argv: tuple[str, ...]
    stdout: str
    stderr: str


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`v3.15.4+gfa9efb0` (or `version.BuildInfo{Version:"v3.15.4", ...}`) → (3, 15, 4). Pure."""
    match = _VERSION.search(text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


class Helm:
    """One `helm` binary of a known major version."""

    def __init__(
        self, binary: str, version: tuple[int, int, int], *, runner: Runner = subprocess.run
    ) -> None:
        self.binary = binary
        self.version = version
        self._runner = runner

    @property
    def major(self) -> int:
        return self.version[0]

    @property
    def version_text(self) -> str:
        return ".".join(str(p) for p in self.version)

    def rollback_flag(self) -> str:
        """`--atomic` was renamed `--rollback-on-failure` in Helm 4."""
        return "--rollback-on-failure" if self.major >= 4 else "--atomic"

    def apply_flags(self) -> list[str]:
        """Helm 4 applies server-side; take ownership of fields an older client-side apply set."""
        return ["--server-side=true", "--force-conflicts"] if self.major >= 4 else []

    def kill_after(self, helm_timeout: float) -> float:
        """Seconds before tau kills a helm step that was given `helm_timeout` itself."""
        return helm_timeout + KILL_GRACE_SECONDS

    def command(self, args: Sequence[str]) -> str:
        """The command line as an operator would type it (for plans and recovery steps)."""
        return " ".join(_quote(a) for a in ("helm", *args))

    def run(
        self,
        args: Sequence[str],
        *,
        access: Access | None,
        timeout: float | None = None,
        what: str = "",
    ) -> Result:
        """Run `helm ARGS` (plus the access flags); raise HelmFailed on a non-zero exit.

        Args:
            args: the helm arguments, without the access flags.
            access: the cluster to talk to; None runs offline with an empty kubeconfig.
            timeout: seconds before tau kills helm (helm's own --timeout should fire first).
            what: a short description for error messages ("the main upgrade").
        """
        argv = [self.binary, *args, *(access.flags() if access else [])]
        env = dict(os.environ)
        env["KUBECONFIG"] = str(access.kubeconfig) if access else os.devnull
        label = what or f"helm {args[0]}"
        try:
            proc = self._runner(
                argv, capture_output=True, text=True, env=env, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise HelmFailed(
                f"{label} did not finish within {_seconds(timeout)}; tau stopped helm",
                stderr=_text(exc.stderr),
                hint="check the release with `helm status` and the cluster events; "
                "raise --timeout if the cluster is slow",
            ) from None
        except OSError as exc:
            raise HelmMissing(
                f"cannot run {self.binary}: {exc.strerror}", hint=INSTALL_HINT
            ) from None
        if proc.returncode != 0:
            detail = _last_lines(proc.stderr or proc.stdout)
            raise HelmFailed(
                f"{label} failed (helm exited {proc.returncode})"
                + (f": {detail}" if detail else ""),
                stderr=proc.stderr or "",
            )
        return Result(tuple(argv), proc.stdout or "", proc.stderr or "")

    # ------------------------------------------------------------------ queries

    def release(self, name: str, access: Access) -> list[dict[str, Any]]:
        """Every release called `name`, in any namespace (`helm list --all-namespaces`)."""
        out = self.run(
            # Every state by name: Helm 3's `--all` means the same but Helm 4 removed it.
            [
                "list",
                "--all-namespaces",
                *_ALL_STATES,
                "--filter",
                f"^{re.escape(name)}$",
                "-o",
                "json",
            ],
            access=access,
            timeout=120,
            what="helm list",
        ).stdout
        try:
            rows = json.loads(out or "[]")
        except ValueError:
            raise HelmFailed(
                f"helm list printed something that is not JSON: {out[:200]!r}"
            ) from None
        return [r for r in rows if isinstance(r, dict) and r.get("name") == name]

    def status(self, name: str, namespace: str, access: Access) -> dict[str, Any] | None:
        """`helm status -o json` of the release, or None when it does not exist."""
        try:
            out = self.run(
                ["status", name, "--namespace", namespace, "-o", "json"],
                access=access,
                timeout=120,
                what="helm status",
            ).stdout
        except HelmFailed as exc:
            if "not found" in exc.stderr.lower():
                return None
            raise
        try:
            doc = json.loads(out)
        except ValueError:
            raise HelmFailed(
                f"helm status printed something that is not JSON: {out[:200]!r}"
            ) from None
        return doc if isinstance(doc, dict) else None


def find_helm(env: Mapping[str, str] | None = None, *, runner: Runner = subprocess.run) -> Helm:
    """The helm on PATH (or $TAU_HELM), with its version; checked before anything else happens.

    Raises:
        HelmMissing: not found, not runnable, or older than MIN_VERSION.
    """
    env = os.environ if env is None else env
    binary = env.get("TAU_HELM") or shutil.which("helm", path=env.get("PATH"))
    minimum = ".".join(str(p) for p in MIN_VERSION)
    if not binary:
        raise HelmMissing(
            f"helm not found on PATH: tau cluster install/uninstall need Helm {minimum} or newer",
            hint=INSTALL_HINT,
        )
    try:
        proc = runner(
            [binary, "version", "--short"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HelmMissing(f"cannot run {binary} version: {exc}", hint=INSTALL_HINT) from None
    version = parse_version(proc.stdout or "") if proc.returncode == 0 else None
    if version is None:
        raise HelmMissing(
            f"cannot tell the version of {binary} (`helm version --short` printed "
            f"{(proc.stdout or proc.stderr or '').strip()[:80]!r})",
            hint=INSTALL_HINT,
        )
    if version < MIN_VERSION:
        found = ".".join(str(p) for p in version)
        raise HelmMissing(
            f"helm {found} at {binary} is too old: tau needs Helm {minimum} or newer",
            hint=INSTALL_HINT,
        )
    return Helm(binary, version, runner=runner)


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"


def _seconds(timeout: float | None) -> str:
    if timeout is None:
        return "the time limit"
    minutes, seconds = divmod(int(timeout), 60)
    return f"{minutes}m{seconds}s" if minutes else f"{seconds}s"


def _text(data: Any) -> str:
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return data or ""


def _last_lines(text: str, count: int = 3) -> str:
    lines = [line.strip() for line in (text or "").strip().splitlines() if line.strip()]
    return " | ".join(lines[-count:])
