"""The retry loop with injected hooks: no cluster, no sleeping."""

from __future__ import annotations

import pytest

from tau.errors import TauError
from tau.intent import load, validate
from tau.runs.retry import Outcome, Policy, backoff, policy_of, retry_env, run, signature


class FakeWorld:
    def __init__(self, outcomes):
        self.outcomes = list(outcomes)
        self.log: list[tuple] = []

    def wait_terminal(self):
        return self.outcomes.pop(0)

    def delete_and_wait(self):
        self.log.append(("delete",))

    def resubmit(self, env):
        self.log.append(("resubmit", env))

    def event(self, name, reason, message):
        self.log.append(("event", name, reason, message))

    def sleep(self, seconds):
        self.log.append(("sleep", seconds))

    def echo(self, line):
        self.log.append(("echo", line))


POLICY = Policy(3, ("Preempted", "Evicted"), 30.0, 300.0, "/data/checkpoints/finetunes/t")


def test_backoff_doubles_from_the_initial_delay_and_stops_at_the_cap():
    assert [backoff(POLICY, n) for n in range(1, 7)] == [30, 60, 120, 240, 300, 300]


def test_a_preempted_run_is_deleted_and_resubmitted_with_the_retry_env():
    world = FakeWorld([Outcome(False, "Preempted", "pod  was\npreempted"), Outcome(True)])
    assert run(POLICY, "team", "t", world) == 0
    resubmits = [e for e in world.log if e[0] == "resubmit"]
    assert resubmits == [
        (
            "resubmit",
            {
                "TAU_RESUME_FROM": "/data/checkpoints/finetunes/t",
                "TAU_RETRY_ATTEMPT": "1",
                "TAU_RETRY_MAX": "3",
                "TAU_RETRY_REASON": "Preempted",
            },
        )
    ]
    events = [e for e in world.log if e[0] == "event"]
    assert events[0][1:3] == ("t-retry-1", "RayJobAttempt")
    assert "attempt=1/3 failure=Preempted signature=pod was preempted" in events[0][3]
    assert events[1][1:3] == ("t-retry-succeeded-1", "RayJobRetrySucceeded")
    assert ("echo", "attempt 1/3 failed (Preempted) — retrying in 30s") in world.log
    assert ("sleep", 30.0) in world.log


def test_a_reason_outside_retry_on_ends_the_loop_with_an_error_naming_it():
    world = FakeWorld([Outcome(False, "OOMKilled")])
    with pytest.raises(TauError) as err:
        run(POLICY, "team", "t", world)
    assert err.value.message == (
        "workload team/t failed (OOMKilled) — not in retry_on list [Preempted, Evicted]"
    )
    assert "raise compute memory" in err.value.hint
    assert not [e for e in world.log if e[0] == "resubmit"]


def test_unknown_is_never_retried():
    with pytest.raises(TauError, match=r"failed \(Unknown\)"):
        run(
            Policy(2, ("Preempted", "Evicted"), 1, 1, "/d"),
            "n",
            "t",
            FakeWorld([Outcome(False, "Unknown")]),
        )


def test_running_out_of_retries_emits_an_exhausted_event_and_fails():
    world = FakeWorld([Outcome(False, "Evicted")] * 3)
    with pytest.raises(TauError, match="exhausted all 2 retries"):
        run(Policy(2, ("Evicted",), 10, 15, "/d"), "n", "t", world)
    assert [e[2] for e in world.log if e[0] == "event"][-1] == "RayJobRetriesExhausted"
    assert [e[1] for e in world.log if e[0] == "sleep"] == [10, 15]


def test_reasons_match_case_insensitively():
    world = FakeWorld([Outcome(False, "evicted"), Outcome(True)])
    assert run(POLICY, "n", "t", world) == 0


def test_the_policy_comes_from_the_config_with_documented_defaults(tmp_path):
    (tmp_path / "t.py").write_text("print(1)\n")
    (tmp_path / "tau.yaml").write_text(
        "name: t\nengine: job\nentrypoint: t.py\ncompute: {gpus: 0}\n"
        "resilience: {max_retries: 2, retry_on: [oomkilled, Preempted], backoff_max: 2m}\n"
    )
    policy = policy_of(validate.validate(load.load(tmp_path / "tau.yaml")))
    assert policy == Policy(
        2, ("OOMKilled", "Preempted"), 30.0, 120.0, "/data/checkpoints/finetunes/t"
    )


def test_signatures_are_collapsed_and_bounded():
    assert signature("a\n\n  b " + "x" * 200) == ("a b " + "x" * 200)[:160]


def test_retry_env_names_are_exactly_the_settable_tau_keys():
    from tau.intent.validate.env import SETTABLE_TAU_KEYS

    assert tuple(sorted(retry_env(POLICY, 1, "Evicted"))) == SETTABLE_TAU_KEYS


def test_a_resubmitted_job_carries_the_retry_env_over_user_values():
    from pathlib import Path

    from tau import pipeline

    root = Path(__file__).resolve().parents[1] / "golden" / "job-env-secret-redacted"
    valid = validate.validate(load.load(root / "tau.yaml"))
    env = retry_env(POLICY, 2, "Evicted")
    doc = pipeline.cluster_render(valid, {}, namespace="n", queue=None, retry_env=env).documents[0]
    container = doc["spec"]["template"]["spec"]["containers"][0]
    got = {e["name"]: e.get("value") for e in container["env"]}
    assert {k: got[k] for k in env} == env
