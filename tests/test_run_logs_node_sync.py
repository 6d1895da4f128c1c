"""A log read of a pod the API has but its node does not know yet (a kubelet that just
restarted): read again until the node knows it, and never call the pod gone; the same for a
followed log, which carries on from its last line."""

from __future__ import annotations

import pytest

from tau.errors import ClusterError
from tau.kube import resources
from tau.runs import log_follow, logs, node_sync

POD = {"metadata": {"name": "eval-0"}, "spec": {"nodeName": "node-7"}}
NODE_404 = ClusterError('Pod "eval-0" not found in namespace "team"', status=404)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _read(monkeypatch: pytest.MonkeyPatch, answers: list, pod: dict | None) -> Clock:
    def pod_log(*_args, **_kwargs):
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(resources, "pod_log", pod_log)
    monkeypatch.setattr(resources, "find", lambda *_a, **_k: pod)
    return Clock()


def test_a_node_that_knows_the_pod_again_serves_its_log(monkeypatch):
    clock = _read(monkeypatch, [NODE_404, NODE_404, "line\n"], POD)
    text = logs._pod_log(None, "eval-0", "team", None, clock=clock, sleep=clock.sleep)
    assert text == "line\n"
    assert clock.slept == [1.0, 1.0]


def test_a_pod_the_api_no_longer_has_is_gone_at_once(monkeypatch):
    clock = _read(monkeypatch, [NODE_404], None)
    with pytest.raises(ClusterError) as caught:
        logs._pod_log(None, "eval-0", "team", None, clock=clock, sleep=clock.sleep)
    assert caught.value is NODE_404
    assert clock.slept == []


def test_a_node_that_never_knows_the_pod_is_named_not_the_pod(monkeypatch):
    clock = _read(monkeypatch, [NODE_404], POD)
    with pytest.raises(ClusterError) as caught:
        logs._pod_log(None, "eval-0", "team", None, clock=clock, sleep=clock.sleep)
    message = caught.value.message
    assert message.startswith("pod team/eval-0 exists but node node-7 does not serve its log")
    assert "not found" not in message
    assert "node node-7" in (caught.value.hint or "")
    assert sum(clock.slept) == pytest.approx(node_sync.NODE_SYNC_WAIT)


def test_other_refusals_are_not_waited_on(monkeypatch):
    refused = ClusterError("you are not allowed to read logs of pods", status=403)
    clock = _read(monkeypatch, [refused], POD)
    with pytest.raises(ClusterError) as caught:
        logs._pod_log(None, "eval-0", "team", None, clock=clock, sleep=clock.sleep)
    assert caught.value is refused and clock.slept == []


def _stamped(second: int, text: str) -> str:
    return f"2026-12-07T10:00:{second:02d}.000000000Z {text}\n"


class Node:
    """A kubelet that serves the log, restarts (404s while it relists) and serves it again."""

    def __init__(self, reads: list) -> None:
        self.reads = reads
        self.since: list[str | None] = []

    def __call__(self, _api, _pod, _namespace, options):
        self.since.append(options.since_time)
        answer = self.reads.pop(0)
        if isinstance(answer, Exception):
            raise answer
        yield from answer


def _follow(node: Node, pod: dict | None, ended: list[bool], clock: Clock) -> list[str]:
    said: list[str] = []
    out = log_follow.follow(
        None,
        "team",
        "eval-0",
        resources.LogOptions(container="main"),
        ended=lambda: ended.pop(0),
        say=said.append,
        opener=node,
        pod_finder=lambda: pod,
        sleep=clock.sleep,
        monotonic=clock,
    )
    text = list(out)
    assert said == []  # the API was there all along: no outage line
    return text


def test_a_followed_log_waits_for_the_restarted_kubelet_and_carries_on_from_its_last_line():
    node = Node(
        [
            [_stamped(1, "step 1"), _stamped(2, "step 2")],
            NODE_404,
            NODE_404,
            [_stamped(2, "step 2"), _stamped(3, "step 3")],
            [],
        ]
    )
    clock = Clock()
    text = _follow(node, POD, [False, True], clock)
    assert "".join(text) == "step 1\nstep 2\nstep 3\n"
    assert node.since[1:4] == ["2026-12-07T10:00:02Z"] * 3
    assert clock.slept.count(node_sync.AGAIN) >= 2


def test_a_followed_log_of_a_pod_the_api_no_longer_has_ends_with_the_404():
    node = Node([[_stamped(1, "step 1")], NODE_404])
    with pytest.raises(ClusterError) as caught:
        _follow(node, None, [False], Clock())
    assert caught.value is NODE_404


def test_a_followed_log_whose_node_never_knows_the_pod_again_names_the_node():
    node = Node([[_stamped(1, "step 1")]] + [NODE_404] * 100)
    clock = Clock()
    with pytest.raises(ClusterError) as caught:
        _follow(node, POD, [False], clock)
    assert caught.value.message.startswith("pod team/eval-0 exists but node node-7")
