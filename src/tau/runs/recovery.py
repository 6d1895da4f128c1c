"""Retry and resume against the cluster: observe the run, delete it, submit its replacement.

Performs I/O. The decisions (what is retryable, the backoff, the env of an attempt) live in
tau.runs.retry and tau.status.classify; this module only supplies the cluster side of them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tau.errors import TauError
from tau.intent.validate import ValidConfig
from tau.k8s import durable, meta, paths
from tau.provenance import Provenance
from tau.runs import ownership
from tau.runs.retry import Outcome, Policy, retry_env

POLL_SECONDS = 5.0


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ClusterRun:
    """One run on a cluster, and how to observe, delete and resubmit it."""

    api: Any
    namespace: str
    valid: ValidConfig
    env: Mapping[str, str]
    queue: str | None = None
    service_account: str | None = None
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], datetime] = _now
    echo: Callable[[str], None] = print
    #: Code-sha and command annotations for every object this run (re)submits.
    provenance: Provenance | None = None
    #: The resolved WorkspaceTarget: metrics offload reads its spec.experiments on each render.
    workspace: Any = None
    #: Where the cluster's TauWorkspaces live: where a kept attempt finds the workspace's store.
    system_namespace: str | None = None
    _last: dict[str, Any] = field(default_factory=dict)
    #: The RayJob and the Job of the run's name at the last observation (None: absent).
    _found: tuple[tuple[str, Any], ...] = ()
    #: Blocking causes already said while watching (each is said once).
    _said: set[str] = field(default_factory=set)
    #: UIDs of the workloads whose logs are kept already (a RayJob's, as soon as it failed).
    _kept: set[str] = field(default_factory=set)
    #: The pods of the last observation, and tau's own copy of their logs (Jobs only:
    #: a kubelet removes an evicted pod's logs before the loop keeps the attempt).
    _pods: tuple[Any, ...] = ()
    _tee: Any = None

    @property
    def name(self) -> str:
        return self.valid.name

    def observe(self) -> tuple[Any, Any]:
        """(RunStatus, FailureReason) of the run now."""
        from tau.status import classify, fetch, interpret

        snapshot = fetch.fetch(self.api, self.namespace, self.name)
        status = interpret.interpret(snapshot, self.clock())
        self._last = dict(snapshot.rayjob or snapshot.job or {})
        self._found = (("RayJob", snapshot.rayjob), ("Job", snapshot.job))
        self._pods = tuple(snapshot.pods)
        return status, classify.classify(snapshot, status.state)

    def wait_terminal(self) -> Outcome:
        from tau.status.model import State

        while True:
            status, reason = self.observe()
            self._copy_logs()
            self._say_blocked(status)
            if status.state is State.SUCCEEDED:
                self._drop_copies()
                return Outcome(True)
            if status.state is State.FAILED:
                if self._tee is not None:
                    self._tee.settle(self._uid())
                self._keep_ray_logs()
                first = status.diagnostics[0].message if status.diagnostics else ""
                return Outcome(False, str(reason), first)
            if status.state is State.NOT_FOUND:
                raise TauError(
                    f"run {self.namespace}/{self.name} disappeared while tau was watching it",
                    hint="someone cancelled it; nothing to retry",
                )
            self.sleep(POLL_SECONDS)

    def _say_blocked(self, status: Any) -> None:
        """Say, once per cause, that the run waits on something waiting will not fix (a
        missing claim, say): the loop keeps watching, but not silently.
        """
        from tau.status.diagnose import BLOCKING

        for d in status.diagnostics:
            if d.code not in BLOCKING or d.code in self._said:
                continue
            self._said.add(d.code)
            self.echo(
                f"resilience: {self.namespace}/{self.name} is waiting on {d.code}: {d.message}\n"
                f"  fix: {d.owner.value} — {d.suggestion}\n"
                "  still watching; it starts once that is fixed (Ctrl-C stops watching, the run "
                f"stays; `tau run cancel {self.name} -n {self.namespace}` ends it)"
            )

    def _uid(self) -> str:
        return str((self._last.get("metadata") or {}).get("uid") or "")

    def _copy_logs(self) -> None:
        """Follow the logs of the Job's started containers into tau's own copy."""
        from tau.runs import log_tee

        job = dict(self._found).get("Job")
        if not job or dict(self._found).get("RayJob"):
            return
        if self._tee is None:
            self._tee = log_tee.Tee(self.api, self.namespace, self.name)
        self._tee.watch(job, self._pods)

    def _drop_copies(self) -> None:
        from tau.runs import log_tee

        if self._tee is not None and self._uid():
            log_tee.discard(self.namespace, self.name, self._uid())

    def _keep_ray_logs(self) -> None:
        """Keep a failed RayJob's logs at once: KubeRay deletes its cluster (and pods) seconds
        after the driver ends, long before a backoff has passed. A Job's pods stay until tau
        deletes it, which keeps them then (`tau.runs.cancel`).
        """
        from tau.runs import ownership
        from tau.runs.cancel import keep_logs

        rayjob = dict(self._found).get("RayJob")
        uid = str(((rayjob or {}).get("metadata") or {}).get("uid") or "")
        if not rayjob or not uid or uid in self._kept or not ownership.is_tau_owned(rayjob):
            return
        if keep_logs(
            self.api,
            self.namespace,
            "RayJob",
            dict(rayjob),
            system_namespace=self.system_namespace,
        ):
            self._kept.add(uid)

    def delete_and_wait(self, verb: str = "retry") -> None:
        """Delete the failed run (only if tau created it) and wait until it is gone, keeping
        its logs first unless they are kept already; `verb` (retry, resume) is what a refusal
        says tau was about to do.
        """
        from tau.runs.cancel import cancel

        uid = self._uid()
        cancel(
            self.api,
            self.namespace,
            self.name,
            wait=True,
            sleep=self.sleep,
            verb=verb,
            keep=not uid or uid not in self._kept,
            system_namespace=self.system_namespace,
        )
        # Kept (tau's copy stood in where the node had removed a log): the copy's work is done.
        self._drop_copies()

    def render(self, env: dict[str, str] | None, *, redact: bool = False) -> list[dict[str, Any]]:
        from tau import pipeline

        return pipeline.cluster_render(
            self.valid,
            self.env,
            namespace=self.namespace,
            queue=self.queue,
            service_account=self.service_account,
            retry_env=env,
            redact=redact,
            provenance=self.provenance,
            workspace=self.workspace,
        ).documents

    def resubmit(self, env: dict[str, str]) -> None:
        from tau.runs.submit import submit

        submit(self.api, self.render(env), submission_id=secrets.token_hex(12))

    def event(self, name: str, reason: str, message: str) -> None:
        from tau.runs.events import emit, event_body

        if self._last:
            emit(
                self.api,
                event_body(self.namespace, name, reason, message, self._last, self.clock()),
            )


def previous_attempt(workload: Mapping[str, Any]) -> int:
    """The retry attempt a workload was submitted as (0 for a first submit)."""
    notes = (workload.get("metadata") or {}).get("annotations") or {}
    try:
        return int(notes.get(meta.ANNOTATION_RETRY_ATTEMPT, "0"))
    except ValueError:
        return 0


@dataclass(frozen=True)
class ResumePlan:
    """What a resume will do, decided before anything is deleted."""

    reason: str
    attempt: int
    env: dict[str, str]
    documents: list[dict[str, Any]]
    warnings: tuple[str, ...]


def plan_resume(
    run: ClusterRun, policy: Policy, *, force: bool, resume_from: str | None
) -> ResumePlan:
    """Check that the run may be resumed and render its replacement.

    Raises:
        ForeignWorkload: tau did not create the workload of that name.
        TauError: the run is active, succeeded, unclassified, OOMKilled without --force, or
            the checkpoint is not durable.
    """
    from tau.plan.resolve import config_hash
    from tau.status.classify import FailureReason
    from tau.status.model import State

    where = f"{run.namespace}/{run.name}"
    status, reason = run.observe()
    if status.state is State.NOT_FOUND:
        raise TauError(
            f"run {where} not found: nothing to resume", hint=f"submit it with `tau run {run.name}`"
        )
    # Before anything else is decided: a workload tau did not create is never replaced.
    ownership.choose("resume", run._found)
    if status.state is State.SUCCEEDED:
        raise TauError(f"run {where} succeeded: nothing to resume")
    if status.state is not State.FAILED:
        raise TauError(
            f"run {where} is still {status.state.value}; resume replaces a failed run",
            hint=f"wait for it, or `tau run cancel {run.name} -n {run.namespace}`",
        )
    if reason is FailureReason.UNKNOWN:
        raise TauError(
            f"run {where} failed for a reason tau cannot classify (Unknown); "
            "it cannot be resumed blindly",
            hint=f"find the failed layer with `tau run status {run.name} -n "
            f"{run.namespace}`, fix it, then submit again",
        )
    if reason is FailureReason.OOM_KILLED and not force:
        raise TauError(
            f"run {where} was OOMKilled; the same config usually runs out of memory again",
            hint="raise compute memory first, then resume with --force",
        )
    checkpoint = resume_from or policy.checkpoint_path
    if not paths.under_data(checkpoint):
        raise TauError(
            f'resume needs a durable checkpoint under /data (got "{checkpoint}")',
            hint="node-local scratch does not survive the workload's deletion",
        )
    if run._last and durable.claim_at(run._last, checkpoint) is None:
        # The path is under /data, but no claim is mounted there: the run wrote into its
        # containers' own filesystem, which goes with the workload (nothing is deleted yet).
        raise TauError(
            f"run {where} has nothing to resume from: no PersistentVolumeClaim holds "
            f"{checkpoint} in its pods, so it only wrote to node-local scratch, and that state "
            "does not survive workload deletion",
            hint="nothing was deleted; set storage.data_pvc so checkpoints under /data persist, "
            f"then submit the run again (`tau run {run.name}`)",
        )
    warnings = []
    recorded = ((run._last.get("metadata") or {}).get("annotations") or {}).get(
        meta.ANNOTATION_CONFIG_HASH
    )
    current = config_hash(run.valid)
    if recorded and recorded != current:
        warnings.append(
            f"warning: config hash changed ({recorded[:8]} → {current[:8]}) since {where} was "
            "submitted; the replacement uses the config as it is now"
        )
    attempt = previous_attempt(run._last) + 1
    env = retry_env(
        Policy(
            policy.max_retries,
            policy.retry_on,
            policy.backoff_initial,
            policy.backoff_max,
            checkpoint,
        ),
        attempt,
        str(reason),
    )
    # Rendering first: a config that no longer renders must not cost the user their run.
    documents = run.render(env)
    replacement = next((d for d in documents if d.get("kind") in ("Job", "RayJob")), None)
    if replacement is not None and durable.claim_at(replacement, checkpoint) is None:
        was = durable.claim_at(run._last, checkpoint) if run._last else None
        raise TauError(
            f"the replacement of {where} mounts no PersistentVolumeClaim at {checkpoint}: "
            "TAU_RESUME_FROM would name a path with nothing under it",
            hint="nothing was deleted; set storage.data_pvc in the config"
            + (f" (the failed run wrote to claim {was})" if was else ""),
        )
    return ResumePlan(str(reason), attempt, env, documents, tuple(warnings))
