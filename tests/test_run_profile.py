"""`tau run status --run-profile`: time per phase and the results line; and the submit summary
that points at it."""

from __future__ import annotations

import json

from tau.cli import main
from tau.status.model import Evidence, Phase, PhaseResult, PhaseStatus, RunStatus, State
from tau.status.profile import lines, spans
from tests.test_cli_lifecycle import project  # noqa: F401  (fixture)


def _status(*phases: tuple[Phase, str | None], evidence: Evidence | None = None) -> RunStatus:
    return RunStatus(
        name="eval",
        namespace="team",
        kind="Job",
        state=State.RUNNING,
        phases=tuple(PhaseResult(p, PhaseStatus.DONE, "", None, at) for p, at in phases),
        workloads=(),
        pods=(),
        diagnostics=(),
        actions=(),
        evidence=evidence,
        failure_reason=None,
        startup_failed=False,
        observed_at="2026-01-01T01:00:00Z",
    )


def test_each_phase_is_charged_until_the_next_one_began():
    status = _status(
        (Phase.SUBMITTED, "2026-01-01T00:00:00Z"),
        (Phase.KUEUE_ADMISSION, "2026-01-01T00:02:05Z"),
        (Phase.POD_SCHEDULING, None),
        (Phase.CONTAINER_START, "2026-01-01T00:02:35Z"),
        evidence=Evidence("/data/out/eval", "training-data", "final/model"),
    )
    assert [(s.phase, s.seconds) for s in spans(status)] == [
        (Phase.SUBMITTED.value, 125),
        (Phase.KUEUE_ADMISSION.value, 30),
        (Phase.CONTAINER_START.value, 3445),
    ]
    text = lines(status)
    assert text[-2].split() == ["total", "1h00m"]
    assert text[-1] == "results: /data/out/eval on PVC training-data (checkpoint final/model)"


def test_a_run_with_no_started_phase_says_so():
    assert lines(_status((Phase.SUBMITTED, None))) == ["(no phase has started yet)"]


def test_status_run_profile_in_text_and_json(project, kube_api, capsys):  # noqa: F811
    kube_api.register_kueue_kuberay_tau_kinds()
    assert main(["run", "eval", "-n", "team"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "profile: tau run status eval -n team --run-profile"
    assert main(["run", "status", "eval", "-n", "team", "--run-profile"]) == 0
    view = capsys.readouterr().out
    assert "Run profile" in view and "total" in view
    assert main(["run", "status", "eval", "-n", "team", "-o", "json", "--run-profile"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["profile"]["phases"][0]["name"] == Phase.SUBMITTED.value
    assert main(["run", "status", "eval", "-n", "team", "-o", "json"]) == 0
    assert "profile" not in json.loads(capsys.readouterr().out)


def test_run_profile_is_a_snapshot_not_a_watch(project, capsys):  # noqa: F811
    assert main(["run", "status", "eval", "-n", "team", "--watch", "--run-profile"]) == 1
    assert "--run-profile is a snapshot view; drop --watch to see it" in capsys.readouterr().err
