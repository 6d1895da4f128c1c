"""Human and JSON output of `tau run status`, compared with reviewed files (--update-golden)."""

from __future__ import annotations

import json

import pytest

from tau.status import document, text
from tau.status.interpret import interpret
from tau.status.snapshot import Snapshot
from tests.golden_plugin import assert_golden
from tests.test_status_interpret import CASES, FIXTURES, NOW, load_objects, run

TEXT = FIXTURES / "text"
JSON = FIXTURES / "json"
NAMES = [c[0] for c in CASES]


@pytest.mark.parametrize("case", NAMES)
def test_text_view_matches_the_reviewed_file(case, update_golden):
    assert_golden(text.to_text(run(case), width=100), TEXT / f"{case}.txt", update_golden)


@pytest.mark.parametrize("case", NAMES)
def test_json_document_matches_the_reviewed_file(case, update_golden):
    assert_golden(document.to_json(run(case)), JSON / f"{case}.json", update_golden)


def test_every_reviewed_file_has_a_case():
    assert {p.stem for p in TEXT.glob("*.txt")} == set(NAMES)
    assert {p.stem for p in JSON.glob("*.json")} == set(NAMES)


def test_text_is_deterministic_and_fits_the_width():
    status = run("unschedulable")
    first, second = text.to_text(status), text.to_text(status)
    assert first == second
    assert max(len(line) for line in first.splitlines()) <= 100


def test_phase_markers_and_sections():
    output = text.to_text(run("crashloop-backoff"))
    assert "├── [x] Submitted" in output
    assert "├── [-] DRA allocation" in output
    assert "├── [!] Container start" in output
    assert "└── [ ] Ready" in output
    assert "\nAttention\n  error: CrashLoopBackOff" in output
    assert "fix: researcher" in output
    assert "\nNext\n  researcher: read the logs: tau run logs train -n research" in output


def test_brackets_in_cluster_messages_are_not_markup():
    objects = load_objects("unschedulable")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"]["conditions"][0]["message"] = "0/1 nodes: [bold]taint[/bold] {a: b}"
    status = interpret(Snapshot.from_objects("research", "train", objects), NOW)
    assert "[bold]taint[/bold] {a: b}" in text.to_text(status, width=200)


def test_normal_progress_says_no_current_issues():
    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    pod["status"]["containerStatuses"][0].update(
        ready=False, state={"waiting": {"reason": "ContainerCreating"}}
    )
    pod["status"]["conditions"][-1]["status"] = "False"
    output = text.to_text(interpret(Snapshot.from_objects("research", "train", objects), NOW))
    assert "\nAttention\n  No current issues.\n" in output
    assert "researcher: follow startup live" in output


def test_json_document_key_order_and_api_version():
    doc = document.to_dict(run("success"))
    assert list(doc) == [
        "apiVersion",
        "kind",
        "metadata",
        "status",
        "phases",
        "workloads",
        "pods",
        "diagnostics",
        "actions",
        "evidence",
    ]
    assert doc["apiVersion"] == "tau.azure.com/v1alpha1" and doc["kind"] == "RunStatus"
    assert doc["status"]["state"] == "succeeded"
    assert doc["evidence"]["verified"] is False
    assert json.loads(document.to_json(run("success"))) == doc


def test_big_runs_are_truncated_in_tables():
    objects = load_objects("running")
    pod = next(o for o in objects if o["kind"] == "Pod")
    many = [{**pod, "metadata": {**pod["metadata"], "name": f"train-{i:03d}"}} for i in range(60)]
    others = [o for o in objects if o["kind"] != "Pod"]
    status = interpret(Snapshot.from_objects("research", "train", others + many), NOW)
    output = text.to_text(status)
    assert f"+{60 - text.MAX_ROWS} more" in output
    assert "train-059" not in output
