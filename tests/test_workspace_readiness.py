"""TauWorkspace readiness, target resolution and primary choice are pure and table-tested."""

from __future__ import annotations

import pytest

from tau.errors import UsageError
from tau.workspaces.readiness import Condition, not_ready_reason, phase_from_conditions, view
from tau.workspaces.target import (
    WorkspaceNotReady,
    reconcile,
    select_primary,
    workspace_target,
)
from tests.test_workspace_objects import tau_workspace


@pytest.mark.parametrize(
    ("conditions", "phase"),
    [
        ({"RBACReady": "True", "QueueReady": "True"}, "Ready"),
        ({"RBACReady": "True", "QueueReady": "True", "DriftDetected": "False"}, "Ready"),
        ({"RBACReady": "True", "QueueReady": "True", "DriftDetected": "True"}, "Degraded"),
        ({"RBACReady": "False", "QueueReady": "True"}, "Degraded"),
        ({"RBACReady": "True", "QueueReady": "False"}, "Degraded"),
        ({"RBACReady": "Unknown", "QueueReady": "True"}, "Pending"),
        ({"RBACReady": "True"}, "Pending"),
        ({}, "Pending"),
        ({"RBACReady": "True", "QueueReady": "True", "WorkloadIdentityReady": "False"}, "Ready"),
    ],
)
def test_phase_rule(conditions: dict[str, str], phase: str) -> None:
    conds = tuple(Condition(t, s) for t, s in conditions.items())
    assert phase_from_conditions(conds) == phase


def test_ready_workspace_gives_its_namespace_queue_and_defaults() -> None:
    target = workspace_target(view(tau_workspace()))
    assert (target.namespace, target.queue, target.workspace) == (
        "team-a-ns",
        "team-a-queue",
        "team-a",
    )
    assert target.service_account == "tau-runner"
    assert target.priority == "default"  # normal maps to default
    assert target.output_root == "/data/projects/team-a/runs"


def test_namespace_and_queue_fall_back_to_spec_then_name() -> None:
    obj = tau_workspace(namespace=None, queue=None)
    obj["spec"]["queue"] = "jobqueue"
    ws = view(obj)
    assert (ws.namespace, ws.queue) == ("team-a", "jobqueue")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"phase": "Degraded"}, "(phase=Degraded)"),
        ({"phase": "Pending"}, "(phase=Pending)"),
        ({"phase": ""}, "(phase=-)"),
        ({"observed": 1}, "observedGeneration 1 != generation 2"),
        ({"generation": 0, "observed": 0}, "observedGeneration 0 != generation 0"),
        (
            {
                "conditions": (
                    ("RBACReady", "True"),
                    ("QueueReady", "True"),
                    ("DriftDetected", "True"),
                )
            },
            "conditions say Degraded",
        ),
    ],
)
def test_not_ready(kwargs: dict, fragment: str) -> None:
    reason = not_ready_reason(view(tau_workspace(**kwargs)))
    assert reason is not None and reason.startswith('workspace "team-a" is not Ready')
    assert fragment in reason
    with pytest.raises(WorkspaceNotReady):
        workspace_target(view(tau_workspace(**kwargs)))


def test_not_ready_hint_names_the_failing_condition_and_the_owner() -> None:
    obj = tau_workspace(
        phase="Degraded",
        conditions=(("RBACReady", "True"), ("QueueReady", "False", "LocalQueueMissing", "lq gone")),
    )
    with pytest.raises(WorkspaceNotReady) as info:
        workspace_target(view(obj))
    assert "QueueReady=False (LocalQueueMissing: lq gone)" in (info.value.hint or "")
    assert "platform operator" in (info.value.hint or "")


def test_conflicting_namespace_or_queue_is_an_error() -> None:
    target = workspace_target(view(tau_workspace()))
    assert reconcile(target, namespace="team-a-ns", queue="auto") == target
    with pytest.raises(UsageError, match='namespace "other" conflicts'):
        reconcile(target, namespace="other")
    with pytest.raises(UsageError, match='queue "q2" conflicts'):
        reconcile(target, queue="q2")


def test_primary_is_the_annotated_one_else_the_oldest() -> None:
    old = view(tau_workspace("old", created="2025-01-01T00:00:00Z"))
    new = view(tau_workspace("new", created="2026-06-01T00:00:00Z"))
    marked = view(
        tau_workspace("marked", annotations={"tau.azure.com/v0-primary-workspace": "true"})
    )
    assert select_primary([new, old]).name == "old"
    assert select_primary([new, old, marked]).name == "marked"
    assert select_primary([]) is None
    twice = view(tau_workspace("m2", annotations={"tau.azure.com/v0-primary-workspace": "true"}))
    with pytest.raises(UsageError, match="more than one primary"):
        select_primary([marked, twice])
