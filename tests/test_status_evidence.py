"""Status checks the evidence of a run that offloads its metrics (layer 7, issue 37 item 5).

The store is a real folder store seeded the way the collector delivers (tests/offload_store_
support.py); the cluster is the fixture objects (pure) or the local API emulator (the CLI).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.cli import evidence_read as store_read
from tau.status import document
from tau.status.interpret import interpret
from tau.status.model import Owner, Phase, PhaseStatus, RunStatus, State
from tau.status.offload import Offload, StoreEvidence, offload_of, store_to_read
from tau.status.snapshot import Snapshot
from tau.status.text import to_text
from tests import offload_store_support as seed

FIXTURES = Path(__file__).parent / "fixtures" / "status"
NOW = datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[1]


def _objects(case: str) -> list[dict[str, Any]]:
    text = (FIXTURES / f"{case}.yaml").read_text()
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def sidecar(store: str, run: str = "train-r1") -> dict[str, Any]:
    """The metrics-offload sidecar as the render writes it."""
    return {
        "name": "metrics-offload",
        "image": "ghcr.io/example/offload@sha256:" + "a" * 64,
        "restartPolicy": "Always",
        "command": ["taugrid-portal", "experiment", "offload", "metrics", "--watch"],
        "args": ["--run", run, "--project", "demo", "--source", "stellar-online"],
        "env": [
            {"name": "TAU_EXP_STORE", "value": store},
            {"name": "TAU_METRICS_SESSION_ID", "value": "sess-1"},
        ],
        "envFrom": [{"secretRef": {"name": "store-credentials"}}],
    }


def offloading(
    objects: list[dict[str, Any]], store: str | None = "/stores/team", *, with_sidecar: bool = True
) -> list[dict[str, Any]]:
    """The objects with the Job's pod template made an offloading one."""
    objects = copy.deepcopy(objects)
    job = next(o for o in objects if o["kind"] == "Job")
    template = job["spec"]["template"]
    template.setdefault("metadata", {})["annotations"] = {
        "tau.azure.com/metrics-session-id": "sess-1",
        "tau.azure.com/experiment-source": "stellar",
    }
    if with_sidecar:
        side = sidecar(store or "")
        if store is None:
            side["env"] = side["env"][1:]
        template["spec"]["initContainers"] = [side]
    return objects


def status_of(objects: list[dict[str, Any]], ev: StoreEvidence | None = None) -> RunStatus:
    snapshot = Snapshot.from_objects("research", "train", objects)
    if ev is not None:
        snapshot = Snapshot(**{**snapshot.__dict__, "store_evidence": ev})
    return interpret(snapshot, NOW)


def evidence_phase(status: RunStatus) -> Any:
    return next(p for p in status.phases if p.name is Phase.EVIDENCE)


LANDED = StoreEvidence(
    "/stores/team",
    "train-r1",
    metrics=(("acc", 1000), ("loss", 1000), ("system/cpu", 60)),
    marker="succeeded",
    reason="workload-entrypoint-exit",
    checkpoint_uri="pvc://training-data/ckpt/train",
    attempt=0,
)


# -- the offload, read from the workload ------------------------------------------------------


def test_a_run_that_does_not_offload_has_no_offload_and_no_evidence_phase() -> None:
    status = status_of(_objects("success"))
    assert offload_of(next(o for o in _objects("success") if o["kind"] == "Job")) is None
    assert all(p.name is not Phase.EVIDENCE for p in status.phases)
    assert [d.code for d in status.diagnostics] == ["EvidenceUnverified"]
    assert document.to_dict(status)["evidence"]["offload"] is None


def test_the_offload_is_read_from_the_sidecar_of_the_job_template() -> None:
    job = next(o for o in offloading(_objects("success")) if o["kind"] == "Job")
    assert offload_of(job) == Offload("sess-1", "train-r1", "/stores/team", sidecar=True)


def test_the_offload_of_a_rayjob_is_read_from_the_head_template() -> None:
    rayjob = {
        "kind": "RayJob",
        "metadata": {"name": "ray-train"},
        "spec": {
            "rayClusterSpec": {
                "headGroupSpec": {
                    "template": {
                        "metadata": {"annotations": {"tau.azure.com/metrics-session-id": "s-9"}},
                        "spec": {
                            "initContainers": [sidecar("postgresql://u@db/x?objects=s3://b/p")],
                            "containers": [{"name": "ray-head"}],
                        },
                    }
                }
            }
        },
    }
    assert offload_of(rayjob) == Offload(
        "s-9", "train-r1", "postgresql://u@db/x?objects=s3://b/p", sidecar=True
    )


def test_only_a_finished_offloading_run_with_a_store_is_read() -> None:
    def snap(objects: list[dict[str, Any]]) -> Snapshot:
        return Snapshot.from_objects("research", "train", objects)

    assert store_to_read(snap(_objects("success"))) is None  # does not offload
    assert store_to_read(snap(offloading(_objects("running")))) is None  # still running
    assert store_to_read(snap(offloading(_objects("success"), None))) is None  # no store
    found = store_to_read(snap(offloading(_objects("success"))))
    assert found is not None and found.store == "/stores/team"
    failed = store_to_read(snap(offloading(_objects("oomkilled"))))
    assert failed is not None  # a failed run's evidence is read too


# -- the phase, the diagnostics and the JSON --------------------------------------------------


def test_landed_evidence_is_a_done_phase_and_one_info_line() -> None:
    status = status_of(offloading(_objects("success")), LANDED)
    phase = evidence_phase(status)
    expected = (
        "1,000 steps of acc, loss (+1 system metric); marker succeeded; "
        "checkpoint pvc://training-data/ckpt/train"
    )
    assert (phase.status, phase.detail) == (PhaseStatus.DONE, expected)
    assert [d.code for d in status.diagnostics] == ["EvidenceLanded"]
    assert status.diagnostics[0].message == f"evidence: {expected}"
    # The unchecked result-path note is replaced: the evidence was checked.
    assert "not checked by tau" not in to_text(status)
    evidence = next(a for a in status.actions if a.name == "evidence")
    assert evidence.command == "taugrid-portal experiment status train-r1 --store /stores/team"
    doc = document.to_dict(status)["evidence"]
    assert doc["verified"] is True
    assert doc["offload"] == {
        "store": "/stores/team",
        "runId": "train-r1",
        "sessionId": "sess-1",
        "checked": True,
        "error": None,
        "metrics": {"acc": 1000, "loss": 1000, "system/cpu": 60},
        "marker": {
            "state": "succeeded",
            "reason": "workload-entrypoint-exit",
            "message": None,
            "attempt": 0,
            "checkpointUri": "pvc://training-data/ckpt/train",
            "artifactUri": None,
        },
    }


def _missing(ev: StoreEvidence | None, **kw: Any) -> tuple[RunStatus, str, Owner]:
    status = status_of(offloading(_objects("success"), **kw), ev)
    phase = evidence_phase(status)
    assert phase.status is PhaseStatus.WARNING
    assert phase.hint is not None and phase.hint.startswith("layer 7: ")
    # The header points at the layer: the first phase that is not done.
    assert "(first open phase: Evidence)" in to_text(status)
    assert document.to_dict(status)["evidence"]["verified"] is False
    codes = [
        d
        for d in status.diagnostics
        if d.code.startswith(("Evidence", "Offload")) and d.code != "EvidenceUnverified"
    ]
    assert len(codes) == 1
    return status, codes[0].code + " — " + codes[0].message, codes[0].owner


@pytest.mark.parametrize(
    ("ev", "kw", "line", "owner"),
    [
        (
            None,
            {"with_sidecar": False},
            "OffloadNotWired — offload not wired: the pod template has no metrics-offload "
            "sidecar; no evidence reaches a store",
            Owner.PLATFORM,
        ),
        (
            None,
            {"store": None},
            "OffloadNotWired — offload not wired: the metrics-offload sidecar names no store "
            "(TAU_EXP_STORE); no evidence reaches a store",
            Owner.PLATFORM,
        ),
        (
            StoreEvidence("/stores/team", "train-r1", error="connection refused"),
            {},
            "EvidenceUnreachable — store /stores/team could not be read: connection refused",
            Owner.PLATFORM,
        ),
        (
            StoreEvidence("/stores/team", "train-r1"),
            {},
            "EvidenceNoRows — no training metric rows of run train-r1 in /stores/team",
            Owner.RESEARCHER,
        ),
        (
            StoreEvidence(
                "/stores/team",
                "train-r1",
                metrics=(("system/cpu_cores", 30),),
                marker="succeeded",
            ),
            {},
            "EvidenceNoRows — no training metric rows of run train-r1 in /stores/team; "
            "marker succeeded",
            Owner.RESEARCHER,
        ),
        (
            StoreEvidence("/stores/team", "train-r1", metrics=(("loss", 300),)),
            {},
            "EvidenceNoMarker — 300 steps of loss in /stores/team, but no terminal "
            "tau/run_status marker",
            Owner.PLATFORM,
        ),
        (
            StoreEvidence(
                "/stores/team",
                "train-r1",
                metrics=(("loss", 120),),
                marker="failed",
                reason="metrics-offloader-not-ready",
                message="no ready file after 300s",
                attempt=1,
            ),
            {},
            "EvidenceMarkerFailed — evidence: 120 steps of loss; marker failed "
            "(metrics-offloader-not-ready: no ready file after 300s) after 2 attempts",
            Owner.RESEARCHER,
        ),
    ],
)
def test_each_missing_piece_is_named_as_layer_7_with_its_owner(
    ev: StoreEvidence | None, kw: dict[str, Any], line: str, owner: Owner
) -> None:
    status, found, who = _missing(ev, **kw)
    assert found == line
    assert who is owner
    assert status.state is State.SUCCEEDED  # the cluster's half stays true


def test_a_running_offloading_run_is_not_checked_yet() -> None:
    status = status_of(offloading(_objects("running")))
    # No Evidence phase while it runs: startup completes (a watch stops) as for any run.
    assert all(p.name is not Phase.EVIDENCE for p in status.phases)
    assert status.startup_complete and status.first_open_phase is None
    assert not [d for d in status.diagnostics if d.code.startswith(("Evidence", "Offload"))]


def test_a_running_run_whose_offload_is_not_wired_says_so_already() -> None:
    status = status_of(offloading(_objects("running"), None))
    assert [d.code for d in status.diagnostics if d.code == "OffloadNotWired"] == [
        "OffloadNotWired"
    ]
    assert status.startup_complete


def test_a_view_that_did_not_read_the_store_claims_nothing() -> None:
    status = status_of(offloading(_objects("success")))
    assert all(p.name is not Phase.EVIDENCE for p in status.phases)
    assert [d.code for d in status.diagnostics] == ["EvidenceUnverified"]


def test_missing_evidence_leaves_startup_complete() -> None:
    status = status_of(offloading(_objects("success")), StoreEvidence("/s", "train-r1"))
    assert status.startup_complete
    assert status.first_open_phase is not None
    assert status.first_open_phase.name is Phase.EVIDENCE


def test_the_text_view_says_what_landed() -> None:
    text = to_text(status_of(offloading(_objects("success")), LANDED), width=120)
    assert "[x] Evidence" in text
    assert "info: EvidenceLanded — evidence: 1,000 steps of acc, loss" in text


# -- reading a real folder store --------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return seed.init(tmp_path / "store")


def _offload(root: Path | str, run: str = "train-r1") -> Offload:
    return Offload("sess-1", run, str(root), sidecar=True)


def test_the_store_read_counts_each_metric_and_reads_the_marker(store: Path) -> None:
    for seq in range(10):
        steps = range(seq * 100, seq * 100 + 100)
        rows = [{"_step": s, "loss": 1.0 / (s + 1), "acc": s / 1000} for s in steps]
        seed.deliver(store, "train-r1", rows, seq=seq)
    seed.mark(store, "train-r1", checkpoint="pvc://training-data/ckpt/train")
    ev = store_read.read(_offload(store))
    assert ev.error == ""
    assert dict(ev.metrics) == {"acc": 1000, "loss": 1000}
    assert (ev.marker, ev.reason, ev.checkpoint_uri, ev.attempt) == (
        "succeeded",
        "workload-entrypoint-exit",
        "pvc://training-data/ckpt/train",
        0,
    )
    status = status_of(offloading(_objects("success"), str(store)), ev)
    assert evidence_phase(status).detail == (
        "1,000 steps of acc, loss; marker succeeded; checkpoint pvc://training-data/ckpt/train"
    )


def test_a_retried_run_says_its_attempts(store: Path) -> None:
    seed.deliver(store, "train-r1", [{"_step": s, "loss": 2.0} for s in range(50)], attempt=0)
    seed.mark(store, "train-r1", "failed", reason="workload-entrypoint-exit", attempt=0)
    seed.deliver(store, "train-r1", [{"_step": s, "loss": 1.0} for s in range(40, 100)], attempt=1)
    seed.mark(store, "train-r1", attempt=1)
    ev = store_read.read(_offload(store))
    assert (ev.marker, ev.attempt, dict(ev.metrics)) == ("succeeded", 1, {"loss": 110})
    assert (
        "marker succeeded after 2 attempts"
        in evidence_phase(status_of(offloading(_objects("success")), ev)).detail
    )


def test_a_run_the_store_never_saw_has_no_rows(store: Path) -> None:
    ev = store_read.read(_offload(store, "someone-else"))
    assert (ev.error, ev.metrics, ev.marker) == ("", (), "")


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("/nonexistent/store", "experiment store /nonexistent/store has no manifest.json"),
        ("postgresql://tau@127.0.0.1:9/evidence?objects=s3://bucket/p", "127.0.0.1"),
    ],
)
def test_an_unreadable_store_is_one_line_not_a_traceback(where: str, expected: str) -> None:
    ev = store_read.read(_offload(where), env={})
    assert expected in ev.error
    assert "\n" not in ev.error and "Traceback" not in ev.error
    status = status_of(offloading(_objects("success"), where), ev)
    assert evidence_phase(status).detail.startswith(f"store {where} could not be read: ")


# -- the CLI, against the API emulator --------------------------------------------------------

PROBE = """
import json, sys
from tau.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _put_finished_job(kube_api: Any, objects: list[dict[str, Any]]) -> None:
    kube_api.register_kueue_kuberay_tau_kinds()
    job = next(o for o in objects if o["kind"] == "Job")
    job = {**job, "metadata": {**job["metadata"], "namespace": "team"}}
    status = job.pop("status")
    kube_api.put(job)
    kube_api.set_status("batch/v1", "Job", "train", status, namespace="team")


def _status(
    argv: list[str], kubeconfig_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, str, set[str]]:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "cfg"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "run", "status", "train", "-n", "team",
         "--context", "emulator", *argv],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.stderr == "", proc.stderr
    *shown, last = proc.stdout.splitlines()
    report = json.loads(last)
    return report["code"], "\n".join(shown), set(report["modules"])


def _loaded(modules: set[str], package: str) -> bool:
    return any(m == package or m.startswith(package + ".") for m in modules)


def test_status_of_a_run_that_does_not_offload_loads_no_store_code(
    kube_api: Any, kubeconfig_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _put_finished_job(kube_api, _objects("success"))
    code, out, modules = _status([], kubeconfig_file, tmp_path, monkeypatch)
    assert code == 0 and "State: succeeded" in out
    assert "tau.status.offload" in modules  # the probe did decide
    for package in ("tau.portal", "tau.cli.evidence_read", "pyarrow", "psycopg", "sqlite3"):
        assert not _loaded(modules, package), package


def test_status_of_a_finished_offloading_run_says_what_landed(
    kube_api: Any,
    kubeconfig_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    store: Path,
) -> None:
    seed.deliver(store, "train-r1", [{"_step": s, "loss": 1.0, "acc": 0.5} for s in range(1000)])
    seed.mark(store, "train-r1", checkpoint="pvc://training-data/ckpt")
    _put_finished_job(kube_api, offloading(_objects("success"), str(store)))
    code, out, modules = _status([], kubeconfig_file, tmp_path, monkeypatch)
    assert code == 0
    assert "EvidenceLanded — evidence: 1,000 steps of acc, loss; marker succeeded; " in out
    assert "checkpoint pvc://training-data/ckpt" in out
    assert "not checked by tau" not in out
    # Two index reads: no team-store driver for a folder store, and no metric file opened.
    assert not _loaded(modules, "psycopg") and not _loaded(modules, "pyarrow")
    code, out, _ = _status(["-o", "json"], kubeconfig_file, tmp_path, monkeypatch)
    doc = json.loads(out)
    assert doc["evidence"]["verified"] is True
    assert doc["evidence"]["offload"]["metrics"] == {"acc": 1000, "loss": 1000}


def test_status_with_the_store_unreachable_says_so_and_does_not_fail(
    kube_api: Any, kubeconfig_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    where = "postgresql://tau@127.0.0.1:9/evidence?objects=s3://bucket/p"
    _put_finished_job(kube_api, offloading(_objects("success"), where))
    code, out, _ = _status([], kubeconfig_file, tmp_path, monkeypatch)
    assert code == 0
    assert f"EvidenceUnreachable — store {where} could not be read: " in out
    assert "Traceback" not in out


def test_the_last_frame_of_a_watch_says_what_landed(store: Path) -> None:
    import io

    from rich.console import Console

    from tau.status.watch import ChangeFeed, watch

    seed.deliver(store, "train-r1", [{"_step": s, "loss": 1.0} for s in range(40)])
    seed.mark(store, "train-r1")
    finished = Snapshot.from_objects(
        "research", "train", offloading(_objects("success"), str(store))
    )
    console = Console(width=160, record=True, color_system=None, file=io.StringIO())
    result = watch(
        None,
        "research",
        "train",
        console=console,
        interval=0.01,
        clock=lambda: NOW,
        fetcher=lambda api, ns, name: finished,
        feed=ChangeFeed(None, "research", "train"),
        evidence=store_read.attach,
    )
    assert (result.exit_code, result.reason) == (0, "completed")
    assert "EvidenceLanded — evidence: 40 steps of loss; marker succeeded" in console.export_text()


@pytest.mark.parametrize(
    "where",
    [
        "postgresql://tau:hunter2@127.0.0.1:9/evidence?objects=s3://bucket/p",
        "postgresql://tau@127.0.0.1:9/evidence?password=hunter2&objects=s3://bucket/p",
    ],
)
def test_a_password_in_the_store_url_is_never_printed(where: str) -> None:
    ev = store_read.read(_offload(where), env={})
    status = status_of(offloading(_objects("success"), where), ev)
    text = to_text(status, width=200) + document.to_json(status)
    assert "hunter2" not in text
    assert "***" in text


def test_a_rayjob_names_its_head_s_collector_log_without_a_job_only_flag() -> None:
    objects = copy.deepcopy(_objects("rayjob-success"))
    rayjob = next(o for o in objects if o["kind"] == "RayJob")
    head = rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    head.setdefault("metadata", {})["annotations"] = {"tau.azure.com/metrics-session-id": "s"}
    head["spec"]["initContainers"] = [sidecar("/stores/team")]
    name = rayjob["metadata"]["name"]
    snapshot = Snapshot.from_objects("research", name, objects)
    ev = StoreEvidence("/stores/team", "train-r1", metrics=(("loss", 5),))
    status = interpret(Snapshot(**{**snapshot.__dict__, "store_evidence": ev}), NOW)
    assert evidence_phase(status).status is PhaseStatus.WARNING
    logs = next(a for a in status.actions if a.name == "offload-logs")
    assert logs.command is None and "Ray head pod" in logs.description


@pytest.mark.parametrize(
    "ev",
    [
        LANDED,
        StoreEvidence("/stores/team", "train-r1", metrics=(("loss", 300),)),
        StoreEvidence("/stores/team", "train-r1", error="connection refused"),
    ],
)
def test_the_colourless_layout_prints_the_evidence_as_rich_does(ev: StoreEvidence) -> None:
    from tau.status import plain
    from tests.test_status_plain import WIDTHS, rich_output

    status = status_of(offloading(_objects("success")), ev)
    for width in WIDTHS:
        assert plain.render(status, width) == rich_output(status, width), width
