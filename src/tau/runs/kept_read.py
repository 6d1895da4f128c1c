"""`tau run logs` of what outlived the pods: the kept copies of a run's attempts.

Performs I/O (the run's evidence places, and the data claim through a helper pod). Two copies
exist: the logs tau kept before it deleted an attempt (`tau.runs.kept_logs`, in the store the
workspace names or tau's state folder), and the Ray driver's output that the head's log sidecar
writes to the data claim as it goes (`<storage.output>/.tau/logs/attempt-<N>/ray-driver.log`),
which survives KubeRay deleting the head on its own.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tau.errors import TauError
from tau.runs import kept_place
from tau.runs.kept_logs import FACTS, PREVIOUS_SUFFIX, attempt_dir
from tau.runs.kept_place import Place, PlaceError

if TYPE_CHECKING:
    from tau.runs.log_options import LogOptions

_ATTEMPT = re.compile(r"^attempt-(\d+)/")
_THIS_ATTEMPT = re.compile(r"/attempt-\d+/ray-driver\.log$")
#: The kubelet's timestamp in front of a line (kept logs are read with timestamps).
_STAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T[0-9:.]+(?:Z|[+-]\d{2}:\d{2}) ")


@dataclass(frozen=True)
class KeptAttempt:
    """One attempt's kept logs: where, and its files relative to the attempt's folder."""

    place: Place
    attempt: int
    files: tuple[str, ...]

    def facts(self) -> dict[str, Any]:
        """The attempt's pods.json ({} when it cannot be read)."""
        try:
            data = self.place.read(f"{attempt_dir(self.attempt)}/{FACTS}")
            doc = json.loads(data or b"{}")
        except (PlaceError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}


def places(
    api: Any,
    namespace: str,
    name: str,
    obj: Mapping[str, Any] | None,
    system_namespace: str | None = None,
) -> list[Place]:
    """Where the run's kept logs may be: the workspace's store first (the TauWorkspaces read in
    `system_namespace`), then tau's state folder.
    """
    found: list[Place] = []
    store = kept_place.workspace_store(api, namespace, system_namespace=system_namespace)
    if store:
        run_id = kept_place.run_id_of(obj) if obj else name
        # A store tau cannot use here: the keeping said so when it fell back to the state folder.
        with contextlib.suppress(PlaceError):
            found.append(kept_place.store_place(store, run_id))
    found.append(kept_place.local_place(namespace, name))
    return found


def attempts(found: list[Place]) -> dict[int, KeptAttempt]:
    """Every kept attempt, the first place holding it winning."""
    out: dict[int, KeptAttempt] = {}
    for place in found:
        try:
            files = place.files(kept_place.LOGS)
        except PlaceError:
            continue
        by_attempt: dict[int, list[str]] = {}
        for rel in files:
            match = _ATTEMPT.match(rel)
            if match:
                by_attempt.setdefault(int(match.group(1)), []).append(rel[match.end() :])
        for attempt, rels in by_attempt.items():
            out.setdefault(attempt, KeptAttempt(place, attempt, tuple(sorted(rels))))
    return dict(sorted(out.items()))


def _order(kept: KeptAttempt) -> list[tuple[str, list[str]]]:
    """(pod, its containers with a kept log in start order) as the facts list them."""
    logs = {f for f in kept.files if f.endswith(".log") and not f.endswith(PREVIOUS_SUFFIX)}
    pods: list[tuple[str, list[str]]] = []
    for pod in kept.facts().get("pods") or []:
        name = str(pod.get("name"))
        names = [str(c.get("name")) for c in pod.get("containers") or []]
        pods.append((name, [c for c in names if f"{name}/{c}.log" in logs]))
    listed = {f"{p}/{c}.log" for p, cs in pods for c in cs}
    # Files without facts (a copy written by hand, say) still show, after the others.
    for rel in sorted(logs - listed):
        pod, _, leaf = rel.rpartition("/")
        for entry in pods:
            if entry[0] == pod:
                entry[1].append(leaf.removesuffix(".log"))
                break
        else:
            pods.append((pod, [leaf.removesuffix(".log")]))
    return pods


def sources(kept: KeptAttempt, kind: str, opts: LogOptions) -> list[tuple[str, str]]:
    """(pod, container) pairs of a kept attempt to show, in order, as the live pods would be."""
    from tau.k8s.containers import DRIVER_LOG_CONTAINER

    pods = _order(kept)
    if kind == "RayJob":
        return [(p, DRIVER_LOG_CONTAINER) for p, cs in pods if DRIVER_LOG_CONTAINER in cs]
    if opts.all_containers:
        return [(p, c) for p, cs in pods for c in cs]
    return [(p, opts.container or "main") for p, _ in pods]


def _shape(text: str, opts: LogOptions, label: str) -> str:
    lines = text.splitlines()
    if not opts.timestamps:
        lines = [_STAMP.sub("", line, count=1) for line in lines]
    if opts.tail >= 0:
        lines = lines[-opts.tail :] if opts.tail else []
    return "".join(f"{label}{line}\n" for line in lines)


def show(kept: KeptAttempt, kind: str, opts: LogOptions) -> Iterator[str]:
    """The kept attempt's logs as `tau run logs` prints live ones (labels, --tail, --timestamps).

    Raises:
        TauError: the attempt kept no log of the container asked for (raised at once, before
            anything is shown).
    """
    chosen = sources(kept, kind, opts)
    suffix = PREVIOUS_SUFFIX if opts.previous else ".log"
    present = set(kept.files)
    chosen = [(p, c) for p, c in chosen if f"{p}/{c}{suffix}" in present]
    if not chosen:
        which = "previous " if opts.previous else ""
        container = (
            "the driver log" if kind == "RayJob" else f"{which}container {opts.container or 'main'}"
        )
        kept_ones = sorted(
            {
                f.rpartition("/")[2].removesuffix(".log")
                for f in kept.files
                if f.endswith(".log") and not f.endswith(PREVIOUS_SUFFIX)
            }
        )
        why = _why_not_kept(kept, opts)
        raise TauError(
            f"attempt {kept.attempt} kept no log of {container} (in {kept.place.where})"
            + (f": {why}" if why else ""),
            hint=f"its kept logs: {', '.join(kept_ones) or 'none'}; pick one with -c NAME or "
            "read them all with --all-containers",
        )
    return _emit(kept, kind, opts, chosen, suffix)


def _why_not_kept(kept: KeptAttempt, opts: LogOptions) -> str:
    """What the attempt's facts say of the container's missing log (the node had removed
    it, say), with how its pod ended in the words of whoever ended it; "" when nothing.
    """
    key = "previous_log_error" if opts.previous else "log_error"
    wanted = opts.container or "main"
    for pod in kept.facts().get("pods") or []:
        for container in pod.get("containers") or []:
            if container.get("name") == wanted and container.get(key):
                ended = " ".join(str(pod[k]).strip() for k in ("reason", "message") if pod.get(k))
                return str(container[key]) + (f"; pod {pod.get('name')}: {ended}" if ended else "")
    return ""


def _emit(
    kept: KeptAttempt, kind: str, opts: LogOptions, chosen: list[tuple[str, str]], suffix: str
) -> Iterator[str]:
    from tau.k8s.containers import RAY_HEAD_CONTAINER

    several = len({p for p, _ in chosen}) > 1
    for pod, container in chosen:
        data = kept.place.read(f"{attempt_dir(kept.attempt)}/{pod}/{container}{suffix}") or b""
        text = data.decode("utf-8", "replace")
        label = f"[pod/{pod}/{container}] " if opts.prefix else f"[{pod}] " if several else ""
        if kind == "RayJob" and not text.strip():
            # No driver output: what the head's Ray said is the next place to look (as live).
            head = kept.place.read(f"{attempt_dir(kept.attempt)}/{pod}/{RAY_HEAD_CONTAINER}.log")
            if head:
                text = head.decode("utf-8", "replace")
                label = f"[pod/{pod}/{RAY_HEAD_CONTAINER}] "
        yield _shape(text, opts, label)


def uid_matches(kept: KeptAttempt, obj: Mapping[str, Any]) -> bool:
    """Whether the kept attempt is of this very workload (not an earlier run of its name)."""
    uid = (obj.get("metadata") or {}).get("uid")
    return not uid or kept.facts().get("uid") in (None, uid)


def not_found(
    namespace: str, name: str, attempt: int, kept: Mapping[int, KeptAttempt], live: int | None
) -> TauError:
    """The error for an --attempt the run never had, listing the attempts it has."""
    listed = [f"{n} (kept in {k.place.where})" for n, k in kept.items() if n != live]
    if live is not None:
        listed.append(f"{live} (the current one)")
    listed.sort(key=lambda text: int(text.split()[0]))
    return TauError(
        f"run {namespace}/{name} has no attempt {attempt}; its attempts: "
        + (", ".join(listed) or "none"),
        hint=f"read one with `tau run logs {name} -n {namespace} --attempt N`",
    )


def driver_copy_of(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(data claim, path) of the driver's copy the RayJob's head sidecar writes, as its own
    spec says (the sidecar's variable and the head's `data` volume); None when it writes none.
    """
    from tau.k8s.containers import DRIVER_LOG_CONTAINER, DRIVER_LOG_COPY_ENV

    spec = (obj.get("spec") or {}).get("rayClusterSpec") or {}
    template = ((spec.get("headGroupSpec") or {}).get("template") or {}).get("spec") or {}
    path = next(
        (
            str(e.get("value") or "")
            for c in template.get("containers") or []
            if c.get("name") == DRIVER_LOG_CONTAINER
            for e in c.get("env") or []
            if e.get("name") == DRIVER_LOG_COPY_ENV
        ),
        "",
    )
    claim = next(
        (
            str((v.get("persistentVolumeClaim") or {}).get("claimName") or "")
            for v in template.get("volumes") or []
            if v.get("name") == "data"
        ),
        "",
    )
    return (claim, path) if claim and path else None


def claim_copy(
    api: Any,
    namespace: str,
    obj: Mapping[str, Any],
    attempt: int | None = None,
    backend: Any = None,
) -> tuple[str, str] | None:
    """(where, text) of the Ray driver's copy on the data claim, or None when the run keeps
    none or it was never written. `attempt` reads an earlier attempt's copy: each attempt's
    head wrote its own folder beside this one's.

    Raises:
        ClusterError: the helper pod could not read the claim.
    """
    from tau.k8s import paths

    found = driver_copy_of(obj)
    if found is None or not paths.under_data(found[1]):
        return None
    pvc, full = found
    if attempt is not None:
        full = _THIS_ATTEMPT.sub(f"/attempt-{attempt}/ray-driver.log", full)
    rel = full.removeprefix(paths.DATA_ROOT).lstrip("/")
    if backend is None:
        from tau.registry.pvc import PvcBackend

        backend = PvcBackend.for_run(pvc, api, namespace=namespace, run=dict(obj))
    data = backend.read(rel)
    if data is None:
        return None
    return f"the claim {pvc} at {full}", bytes(data).decode("utf-8", "replace")


def shaped_claim_text(text: str, opts: LogOptions) -> str:
    """The claim's copy with --tail applied (it carries no timestamps to strip)."""
    return _shape(text, opts, "")


Note = Callable[[str], None]
