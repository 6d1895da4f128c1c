"""Every failure-classification rule of `tau.status.classify`, and their precedence."""

from __future__ import annotations

import pytest

from tau.status.classify import (
    DEFAULT_RETRY_ON,
    FAILURE_RULES,
    FailureReason,
    classify,
    is_retryable,
    should_retry,
)
from tau.status.model import State
from tau.status.snapshot import Snapshot

F = FailureReason
FAILED_JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "train"},
    "status": {"conditions": [{"type": "Failed", "status": "True"}]},
}


def pod(
    name="train-0", phase="Failed", reason="", conditions=(), container_reason="", last_reason=""
):
    status = {
        "phase": phase,
        "conditions": list(conditions),
        "containerStatuses": [
            {
                "name": "c",
                "restartCount": 1 if last_reason else 0,
                "state": {"terminated": {"exitCode": 1, "reason": container_reason}},
                "lastState": {"terminated": {"reason": last_reason}} if last_reason else {},
            }
        ],
    }
    if reason:
        status["reason"] = reason
    return {
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
        "status": status,
    }


def event(reason):
    return {
        "kind": "Event",
        "involvedObject": {"kind": "Pod", "name": "train-0"},
        "reason": reason,
        "message": "m",
        "lastTimestamp": "2026-12-02T10:00:00Z",
    }


def snap(*objects, job=FAILED_JOB):
    return Snapshot.from_objects("research", "train", [job, *objects])


OOM = pod(container_reason="OOMKilled")
OOM_LAST = pod(container_reason="Error", last_reason="OOMKilled")
DISRUPTED = pod(
    conditions=[{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
)
EVICTED_POD = pod(reason="Evicted")
#: What a real kubelet leaves on a pod it evicted under node pressure: reason Evicted, and a
#: DisruptionTarget condition that names the kubelet.
BY_KUBELET = {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet"}
KUBELET_EVICTED = pod(reason="Evicted", conditions=[BY_KUBELET])

RULES = [
    ("completed wins over everything", snap(OOM, DISRUPTED), State.SUCCEEDED, F.COMPLETED),
    ("not failed is running", snap(OOM), State.RUNNING, F.RUNNING),
    ("queued is not a failure", snap(DISRUPTED), State.QUEUED, F.RUNNING),
    ("container OOMKilled", snap(OOM), State.FAILED, F.OOM_KILLED),
    ("last state OOMKilled", snap(OOM_LAST), State.FAILED, F.OOM_KILLED),
    (
        "OOMKilled beats preemption",
        snap(OOM, DISRUPTED, event("Preempted")),
        State.FAILED,
        F.OOM_KILLED,
    ),
    ("DisruptionTarget=True", snap(DISRUPTED), State.FAILED, F.PREEMPTED),
    (
        "event reason containing preempt",
        snap(pod(), event("PreemptedByKueue")),
        State.FAILED,
        F.PREEMPTED,
    ),
    ("preemption beats eviction", snap(EVICTED_POD, event("Preempted")), State.FAILED, F.PREEMPTED),
    ("Failed pod reason Evicted", snap(EVICTED_POD), State.FAILED, F.EVICTED),
    ("the kubelet's eviction is no preemption", snap(KUBELET_EVICTED), State.FAILED, F.EVICTED),
    (
        "a pod the kubelet ended (no Evicted reason) is evicted",
        snap(pod(reason="Terminated", conditions=[BY_KUBELET])),
        State.FAILED,
        F.EVICTED,
    ),
    (
        "the scheduler's preemption beside a kubelet eviction",
        snap(KUBELET_EVICTED, pod(name="train-1", conditions=DISRUPTED["status"]["conditions"])),
        State.FAILED,
        F.PREEMPTED,
    ),
    ("event reason Evicted", snap(pod(), event("Evicted")), State.FAILED, F.EVICTED),
    ("anything else", snap(pod(container_reason="Error")), State.FAILED, F.UNKNOWN),
    ("no pods at all", snap(), State.FAILED, F.UNKNOWN),
]


@pytest.mark.parametrize(
    ("snapshot", "state", "expected"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_classification_rule(snapshot, state, expected):
    assert classify(snapshot, state) is expected


def test_state_is_derived_when_not_given():
    assert classify(snap(OOM)) is F.OOM_KILLED
    ok = {**FAILED_JOB, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert classify(snap(OOM, job=ok)) is F.COMPLETED


def test_rule_order_is_the_contract_order():
    assert [r for r, _ in FAILURE_RULES] == [F.OOM_KILLED, F.PREEMPTED, F.EVICTED]


@pytest.mark.parametrize(
    ("reason", "retryable"),
    [
        (F.OOM_KILLED, True),
        (F.PREEMPTED, True),
        (F.EVICTED, True),
        (F.UNKNOWN, False),
        (F.COMPLETED, False),
        (F.RUNNING, False),
        ("bogus", False),
    ],
)
def test_is_retryable(reason, retryable):
    assert is_retryable(reason) is retryable


def test_oomkilled_is_opt_in_and_unknown_never_retries():
    assert DEFAULT_RETRY_ON == (F.PREEMPTED, F.EVICTED)
    assert not should_retry(F.OOM_KILLED, [])
    assert should_retry(F.OOM_KILLED, ["oomkilled"])
    assert should_retry("Preempted", [])
    assert not should_retry(F.UNKNOWN, ["Unknown"])
