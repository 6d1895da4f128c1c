"""The scheduler's FailedScheduling message read reason by reason (tau.status.scheduling), with
the exact strings of the Kubernetes 1.37 scheduler (pkg/scheduler/framework/types.go FitError,
and the volumebinding, tainttoleration, noderesources, nodeaffinity, podtopologyspread,
nodeunschedulable and dynamicresources plugins)."""

from __future__ import annotations

import pytest

from tau.status import text
from tau.status.interpret import interpret
from tau.status.scheduling import Cause, Reading, Reason, hint, read
from tests.test_status_interpret import NOW, load_objects, snapshot_of

#: PostFilter's tail when no pod can be preempted (defaultpreemption: "preemption: " + msg).
NOT_HELPFUL = "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            '0/3 nodes are available: persistentvolumeclaim "training-data" not found. '
            + NOT_HELPFUL,
            Reading(
                3,
                (
                    Reason(
                        Cause.CLAIM_MISSING,
                        'persistentvolumeclaim "training-data" not found',
                        None,
                        "training-data",
                    ),
                ),
            ),
        ),
        (
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
            + NOT_HELPFUL,
            Reading(
                3,
                (Reason(Cause.CLAIM_UNBOUND, "pod has unbound immediate PersistentVolumeClaims"),),
            ),
        ),
        (
            "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient "
            "nvidia.com/gpu. preemption: 0/3 nodes are available: 1 Preemption is not helpful for "
            "scheduling, 2 No preemption victims found for incoming pod.",
            Reading(
                3,
                (
                    Reason(Cause.TAINT, "node(s) had untolerated taint(s)", 1),
                    Reason(Cause.RESOURCES, "Insufficient nvidia.com/gpu", 2),
                ),
            ),
        ),
        (
            "0/4 nodes are available: 1 Insufficient cpu, 1 Too many pods, 2 node(s) didn't "
            "match Pod's node affinity/selector. pod group preemption: 0/4 nodes are available: "
            "4 Preemption is not helpful for scheduling.",
            Reading(
                4,
                (
                    Reason(Cause.RESOURCES, "Insufficient cpu", 1),
                    Reason(Cause.RESOURCES, "Too many pods", 1),
                    Reason(Cause.SELECTOR, "node(s) didn't match Pod's node affinity/selector", 2),
                ),
            ),
        ),
        (
            "0/5 nodes are available: 1 node(s) didn't find available persistent volumes to bind, "
            "1 node(s) didn't match PersistentVolume's node affinity, 1 node(s) didn't match pod "
            "topology spread constraints, 2 node(s) were unschedulable.",
            Reading(
                5,
                (
                    Reason(
                        Cause.VOLUME, "node(s) didn't find available persistent volumes to bind", 1
                    ),
                    Reason(
                        Cause.VOLUME, "node(s) didn't match PersistentVolume's node affinity", 1
                    ),
                    Reason(
                        Cause.TOPOLOGY, "node(s) didn't match pod topology spread constraints", 1
                    ),
                    Reason(Cause.NODES_UNAVAILABLE, "node(s) were unschedulable", 2),
                ),
            ),
        ),
        (
            "0/4 nodes are available: 4 cannot allocate all claims.",
            Reading(4, (Reason(Cause.DEVICES, "cannot allocate all claims", 4),)),
        ),
        (
            '0/2 nodes are available: persistentvolumeclaim "ckpt" bound to non-existent '
            'persistentvolume "pv-1".',
            Reading(
                2,
                (
                    Reason(
                        Cause.VOLUME,
                        'persistentvolumeclaim "ckpt" bound to non-existent '
                        'persistentvolume "pv-1"',
                        None,
                        "ckpt",
                    ),
                ),
            ),
        ),
        (
            "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod "
            "ports.",
            Reading(
                2,
                (
                    Reason(
                        Cause.OTHER, "node(s) didn't have free ports for the requested pod ports", 2
                    ),
                ),
            ),
        ),
        (
            "running PreBind plugin VolumeBinding: timed out",
            Reading(
                None, (Reason(Cause.OTHER, "running PreBind plugin VolumeBinding: timed out"),)
            ),
        ),
    ],
)
def test_each_reason_of_the_schedulers_message_gets_its_cause(message, expected):
    assert read(message) == expected


def test_the_hint_puts_a_missing_claim_first_and_names_it_and_the_namespace():
    reading = read(
        '0/3 nodes are available: persistentvolumeclaim "training-data" not found. ' + NOT_HELPFUL
    )
    assert hint(reading, "team", ("training-data",)) == (
        'the claim "training-data" does not exist in namespace team: the platform provisions '
        "claims, and a Ready workspace can still lack one"
    )


def test_the_unbound_reason_names_the_claims_the_pod_mounts():
    reading = read("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.")
    assert hint(reading, "team", ("training-data", "ckpt")) == (
        'no volume is bound to the claim "training-data", "ckpt" in namespace team yet: the '
        "platform provisions volumes"
    )


def test_the_free_resources_hint_names_the_resources():
    reading = read("0/3 nodes are available: 1 Insufficient memory, 2 Insufficient nvidia.com/gpu.")
    assert hint(reading, "team") == (
        "no node has enough free memory, nvidia.com/gpu now: nodes are busy or too small"
    )


def test_a_missing_claim_is_not_diagnosed_as_a_node_pool_problem():
    status = interpret(snapshot_of("claim-not-found"), NOW)
    view = text.to_text(status, width=200)
    assert [(d.code, d.owner.value) for d in status.diagnostics] == [("ClaimNotFound", "platform")]
    assert status.diagnostics[0].message == (
        'persistentvolumeclaim "training-data" not found in namespace research; '
        "waiting: pod train-0-p1v2c"
    )
    assert "a Ready workspace can still lack a PVC" in status.diagnostics[0].suggestion
    for wrong in ("node pool", "taint", "capacity", "device plugins", "tau cluster validate"):
        assert wrong not in view, wrong


def test_the_same_cause_on_several_pods_is_said_once():
    objects = load_objects("claim-not-found")
    pod = next(o for o in objects if o["kind"] == "Pod")
    second = {**pod, "metadata": {**pod["metadata"], "name": "train-1-p1v2d"}}
    status = interpret(snapshot_of("claim-not-found", [*objects, second]), NOW)
    (diagnostic,) = status.diagnostics
    assert diagnostic.message.endswith("waiting: pod train-0-p1v2c and 1 more")
