"""`tau run list` --include-external and --history-limit against the local Kubernetes API."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tau.cli import main
from tau.runs import listing
from tests.test_cli_lifecycle import project  # noqa: F401  (fixture)


def _job(name: str, created: str, labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "team",
            "labels": labels or {},
            "creationTimestamp": created,
        },
        "spec": {},
    }


def _cluster(kube_api, capsys) -> None:
    assert main(["run", "eval", "-n", "team"]) == 0
    kube_api.put(_job("queued-by-hand", "2020-01-01T00:00:00Z", {"kueue.x-k8s.io/queue-name": "q"}))
    kube_api.put(_job("not-queued", "2020-01-01T00:00:00Z"))
    capsys.readouterr()


def test_include_external_adds_kueue_managed_jobs_tau_did_not_create(project, kube_api, capsys):  # noqa: F811
    _cluster(kube_api, capsys)
    assert main(["run", "list", "-n", "team", "--include-external"]) == 0
    history, *rows = capsys.readouterr().out.splitlines()
    assert history == "History: live-only"
    table = [line.split() for line in rows]
    assert table[0] == ["NAME", "KIND", "STATUS", "AGE", "SOURCE"]
    assert sorted((r[0], r[-1]) for r in table[1:]) == [
        ("eval", "tau"),
        ("queued-by-hand", "external"),
    ]


def test_without_include_external_only_tau_runs_are_listed(project, kube_api, capsys):  # noqa: F811
    _cluster(kube_api, capsys)
    assert main(["run", "list", "-n", "team", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["name"], r["source"]) for r in doc["runs"]] == [("eval", "tau")]


def test_history_limit_keeps_the_newest_and_says_what_it_left_out(project, kube_api, capsys):  # noqa: F811
    _cluster(kube_api, capsys)
    args = ["run", "list", "-n", "team", "--include-external", "--history-limit", "1"]
    assert main(args) == 0
    captured = capsys.readouterr()
    # Both were created in the same emulator second; the later name sorts first.
    assert [line.split()[0] for line in captured.out.splitlines()[2:]] == ["queued-by-hand"]
    assert captured.err == "showing the newest 1 of 2 runs; raise --history-limit to see more\n"
    assert main([*args, "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == 1
    assert doc["historyDiagnostic"].startswith("showing the newest 1 of 2 runs")


def test_history_limit_must_be_positive(project, capsys):  # noqa: F811
    assert main(["run", "list", "-n", "team", "--history-limit", "0"]) == 1
    assert "--history-limit must be at least 1 (got 0)" in capsys.readouterr().err


def test_kusto_history_is_not_in_scope_and_exits_2(project, capsys):  # noqa: F811
    assert main(["run", "list", "-n", "team", "--kusto-endpoint", "https://k"]) == 2
    err = capsys.readouterr().err
    assert "tau run list --kusto-endpoint/--kusto-database: not implemented yet" in err
    assert "Kusto-backed run history is not in scope" in err


def test_a_rayjob_managed_by_multikueue_counts_as_external():
    rayjob = {
        "metadata": {"name": "r", "namespace": "team", "creationTimestamp": ""},
        "spec": {"managedBy": "kueue.x-k8s.io/multikueue"},
    }
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert listing.rows([], [rayjob], now) == []
    (row,) = listing.rows([], [rayjob], now, include_external=True)
    assert (row.kind, row.source, row.age) == ("RayJob", "external", "<unknown>")
