"""The ``--registry pvc`` backend: registry documents on the PVC via short-lived helper pods.

Performs I/O (Kubernetes API). Each operation creates one pod (``tau-get-*``, ``tau-ls-*``,
``tau-write-*``, ``tau-cas-*``) that mounts the PVC at ``/data``, runs a small POSIX shell script,
prints a marker line plus its result, and is deleted. Payloads travel base64-encoded in env vars
(at most 512 KiB encoded, as in the reference). Writes go to a temp file that is renamed (or
hard-linked, for create-if-absent) into place; compare-and-swap holds a ``mkdir`` lock on the PVC,
because ``mkdir`` is atomic on every filesystem a PVC can sit on, and flock is not.
The client is the session's (`tau.session.connect`), built only when this backend is used.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from tau.errors import ClusterError
from tau.k8s import meta
from tau.k8s.kinds import POD
from tau.kube import resources
from tau.registry import layout
from tau.registry.errors import RegistryError

if TYPE_CHECKING:
    from tau.kube.client import ApiClient

HELPER_IMAGE = "busybox:1.36"
MAX_PAYLOAD = 512 * 1024
#: One env var stays well under Linux's per-string limit (MAX_ARG_STRLEN, 128 KiB).
_ENV_CHUNK = 96 * 1024

_PRELUDE = (
    'set -eu\nP="$TAU_ROOT/$TAU_PATH"\nD="$(dirname "$P")"\n'
    'T="$D/.$(basename "$P").${TAU_NONCE:-x}.tmp"\n'
)
_READ = _PRELUDE + 'if [ -f "$P" ]; then echo TAU-FOUND; base64 "$P"; else echo TAU-MISSING; fi\n'
_LIST = _PRELUDE + 'echo TAU-LIST\nif [ -d "$P" ]; then ls -1A "$P"; fi\n'
_CLEANUP = "trap 'rm -f \"$T\"' EXIT\n"
#: {chunks} becomes the payload env vars; sync so the bytes are durable before the rename.
_STAGE = 'mkdir -p "$D"\nprintf %s {chunks} | base64 -d > "$T"\nsync\n'
_REPLACE = 'mv -f "$T" "$P"\necho TAU-OK\n'
#: ln refuses an existing target: create-if-absent with the complete content, in one step.
_CREATE = 'if ln "$T" "$P" 2>/dev/null; then echo TAU-OK; else echo TAU-EXISTS; fi\n'
_LOCK = (
    'mkdir -p "$D"\nL="$P.lockdir"\nn=0\nuntil mkdir "$L" 2>/dev/null; do\n'
    '  n=$((n+1)); if [ "$n" -gt 600 ]; then echo "lock $L held too long" >&2; exit 3; fi\n'
    '  sleep 0.1\ndone\ntrap \'rm -f "$T"; rmdir "$L"\' EXIT\n'
    'if [ -f "$P" ]; then C="$(sha256sum "$P" | cut -d" " -f1)"; else C=absent; fi\n'
    'if [ "$C" != "$TAU_EXPECT" ]; then echo TAU-CHANGED; exit 0; fi\n'
)


#: Output lines of a helper pod (the class has a `list` method, so spell the type once here).
Lines = list[str]


class PvcBackend:
    """Registry documents on a PVC, read and written by helper pods."""

    def __init__(
        self,
        pvc: str,
        api: ApiClient,
        *,
        namespace: str,
        image: str = HELPER_IMAGE,
        placement: dict[str, Any] | None = None,
        timeout: float = 120.0,
        poll: float = 0.1,
    ) -> None:
        """`api` is the session's client (`tau.session.connect`); `namespace` has no default.

        `placement` (nodeSelector, tolerations) goes into each helper pod's spec.
        """
        self.pvc = pvc
        self.namespace = namespace
        self.image = image
        self.placement = dict(placement or {})
        self.timeout = timeout
        self.poll = poll
        self._api = api

    @classmethod
    def for_run(
        cls, pvc: str, api: ApiClient, *, namespace: str, run: Mapping[str, Any]
    ) -> PvcBackend:
        """A backend whose helper pods look like the run's: its image and placement.

        The run's image was pulled where the run ran (a cluster may reach no public
        registry), and its node selector and tolerations (Kueue adds its flavor's) lead the
        helpers to nodes that can mount the claim: a node-local or zonal volume is not
        reachable from every node.
        """
        spec = run.get("spec") or {}
        template = (spec.get("template") or {}).get("spec")  # a Job
        if template is None:  # a RayJob: its head pod mounts the data claim
            head = (spec.get("rayClusterSpec") or {}).get("headGroupSpec") or {}
            template = (head.get("template") or {}).get("spec") or {}
        containers = template.get("containers") or []
        notes = (run.get("metadata") or {}).get("annotations") or {}
        image = notes.get(meta.ANNOTATION_IMAGE) or (
            containers[0].get("image") if containers else None
        )
        placement = {k: template[k] for k in ("nodeSelector", "tolerations") if template.get(k)}
        return cls(pvc, api, namespace=namespace, image=image or HELPER_IMAGE, placement=placement)

    def display(self, path: str) -> str:
        """The path as workloads see it on the mounted PVC."""
        return f"{layout.PVC_MOUNT}/{path}"

    def read(self, path: str) -> bytes | None:
        """Read via a ``tau-get-*`` pod."""
        lines = self._run("get", _READ, path)
        if lines[0] == "TAU-MISSING":
            return None
        return base64.b64decode("".join(lines[1:]))

    def list(self, path: str) -> Lines:
        """List via a ``tau-ls-*`` pod."""
        return sorted(n for n in self._run("ls", _LIST, path)[1:] if n)

    def write(self, path: str, data: bytes, *, overwrite: bool) -> bool:
        """Write via a ``tau-write-*`` pod: temp file, sync, then rename or hard link."""
        stage, env = self._stage(data)
        script = _PRELUDE + _CLEANUP + stage + (_REPLACE if overwrite else _CREATE)
        return self._run("write", script, path, env)[0] == "TAU-OK"

    def cas(self, path: str, expected: bytes | None, data: bytes) -> bool:
        """Compare-and-swap via a ``tau-cas-*`` pod holding a mkdir lock on the PVC."""
        stage, env = self._stage(data)
        env["TAU_EXPECT"] = (
            hashlib.sha256(expected).hexdigest() if expected is not None else "absent"
        )
        script = _PRELUDE + _LOCK + stage + _REPLACE
        return self._run("cas", script, path, env)[0] == "TAU-OK"

    def _stage(self, data: bytes) -> tuple[str, dict[str, str]]:
        encoded = base64.b64encode(data).decode()
        if len(encoded) > MAX_PAYLOAD:
            raise RegistryError(
                f"document of {len(data)} bytes is too large for the pvc "
                f"registry (at most {MAX_PAYLOAD} bytes base64-encoded)"
            )
        parts = [encoded[i : i + _ENV_CHUNK] for i in range(0, len(encoded), _ENV_CHUNK)] or [""]
        env = {f"TAU_PAYLOAD_{i}": part for i, part in enumerate(parts)}
        env["TAU_NONCE"] = secrets.token_hex(6)
        chunks = " ".join(f'"$TAU_PAYLOAD_{i}"' for i in range(len(parts)))
        return _STAGE.replace("{chunks}", chunks), env

    def _pod(self, name: str, script: str, env: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "labels": {
                    meta.APP_MANAGED_BY: meta.MANAGED_BY_VALUE,
                    meta.APP_COMPONENT: "registry",
                },
            },
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "helper",
                        "image": self.image,
                        "command": ["sh", "-c", script],
                        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
                        "volumeMounts": [{"name": "registry", "mountPath": layout.PVC_MOUNT}],
                    }
                ],
                "volumes": [{"name": "registry", "persistentVolumeClaim": {"claimName": self.pvc}}],
                **self.placement,
            },
        }

    def _run(self, verb: str, script: str, path: str, env: dict[str, str] | None = None) -> Lines:
        """Run one helper pod to completion and return its output lines (first is a marker)."""
        name = f"tau-{verb}-{secrets.token_hex(4)}"
        full_env = {"TAU_ROOT": layout.PVC_MOUNT, "TAU_PATH": path, **(env or {})}
        with self._explained(f"cannot create helper pod {name}"):
            resources.create(
                self._api, POD, self._pod(name, script, full_env), namespace=self.namespace
            )
        try:
            with self._explained(f"helper pod {name} failed"):
                phase = self._wait(name)
                log = resources.pod_log(self._api, name, self.namespace)
        finally:
            self._delete(name)
        lines = log.splitlines()
        if phase != "Succeeded" or not lines or not lines[0].startswith("TAU-"):
            tail = " | ".join(lines[-3:]) or "no output"
            raise ClusterError(f"helper pod {name} on pvc {self.pvc} failed: {tail}")
        return lines

    def _wait(self, name: str) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            pod = resources.get(self._api, POD, name, namespace=self.namespace)
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed"):
                return str(phase)
            time.sleep(self.poll)
        raise ClusterError(
            f"helper pod {name} did not finish within {self.timeout:.0f}s",
            hint=f"check that pvc {self.pvc} exists in namespace "
            f"{self.namespace} and that image {self.image} can be pulled",
        )

    def _delete(self, name: str) -> None:
        with self._explained(f"cannot delete helper pod {name}"):
            resources.delete(self._api, POD, name, namespace=self.namespace, grace_seconds=0)

    @contextmanager
    def _explained(self, what: str) -> Iterator[None]:
        """Say which helper-pod step failed, with the likely cause for this backend."""
        try:
            yield
        except ClusterError as exc:
            hint = exc.hint
            if exc.status == 403:
                hint = f"your identity may not create pods in namespace {self.namespace}"
            elif exc.status == 404:
                hint = f"namespace {self.namespace} may not exist"
            raise ClusterError(
                f"{what}: {exc.message}", status=exc.status, hint=hint, reason=exc.reason
            ) from exc
