# ruff: noqa: E501
"""Metrics offload (issue 37, item 1): what the platform sets, the refusals, the pod shape, and
the wrapper's sentinel as the collector reads it.

The dispatch refusals a config alone triggers are catalog cases (tests/test_messages_catalog.py)
and goldens (golden/*metrics-offload*); here are the ones that need a submit: the resolved
TauWorkspace's spec.experiments, the tau process's TAU_METRICS_OFFLOAD_* env and the session id.
The wrapper is run for real (bash for a Job, /bin/sh for a RayJob driver) against a temporary
directory standing in for /var/run/tau/metrics.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tau import pipeline
from tau.errors import ConfigError
from tau.intent import load, validate
from tau.intent.runconfig import Metrics
from tau.k8s import meta
from tau.plan import metrics_offload as plan_offload
from tau.render import manifests
from tau.render import metrics_offload as offload
from tau.workspaces.readiness import view
from tau.workspaces.target import WorkspaceTarget, workspace_target
from tests.manifest_check import validate_document

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
PIN = "sha256:" + "c" * 64
IMAGE = f"registry.example/taugrid-portal@{PIN}"
STORE = "postgresql://tau@db.team:5432/tau?objects=s3://evidence/runs"
SECRET = "tau-evidence-credentials"
WORKSPACE = WorkspaceTarget(
    "team",
    "jobqueue",
    "team-ws",
    experiments_store=STORE,
    experiments_secret=SECRET,
    offload_image=IMAGE,
)


def _valid(case: str) -> Any:
    return validate.validate(load.load(GOLDEN / case / "tau.yaml"))


def _render(
    case: str = "job-metrics-offload",
    env: dict[str, str] | None = None,
    workspace: WorkspaceTarget | None = WORKSPACE,
    **kw: Any,
) -> list[dict[str, Any]]:
    return pipeline.cluster_render(
        _valid(case), env or {}, namespace="team", queue="jobqueue", workspace=workspace, **kw
    ).documents


def _errors(**kw: Any) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        _render(**kw)
    return [d.message for d in caught.value.diagnostics if d.severity == "error"]


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    if doc["kind"] == "RayJob":
        return doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]
    return doc["spec"]["template"]


def _sidecar(doc: dict[str, Any]) -> dict[str, Any]:
    (found,) = [c for c in _pod(doc)["spec"]["initContainers"] if c["name"] == "metrics-offload"]
    return found


# --- the platform side: TauWorkspace spec.experiments -------------------------------------------


def test_the_workspace_view_reads_spec_experiments_into_the_run_target():
    obj = {
        "metadata": {"name": "team-ws", "generation": 1},
        "spec": {
            "queue": "jobqueue",
            "experiments": {
                "store": STORE,
                "credentialsSecret": SECRET,
                "offloadImage": IMAGE,
            },
        },
        "status": {
            "phase": "Ready",
            "observedGeneration": 1,
            "conditions": [
                {"type": "RBACReady", "status": "True"},
                {"type": "QueueReady", "status": "True"},
            ],
        },
    }
    target = workspace_target(view(obj))
    assert (target.experiments_store, target.experiments_secret, target.offload_image) == (
        STORE,
        SECRET,
        IMAGE,
    )


def test_a_submit_renders_the_workspace_store_secret_and_image_and_no_placeholder():
    docs = _render()
    sidecar = _sidecar(docs[0])
    assert sidecar["image"] == IMAGE
    assert {"name": "TAU_EXP_STORE", "value": STORE} in sidecar["env"]
    assert sidecar["envFrom"] == [{"secretRef": {"name": SECRET}}]
    text = manifests.dump_yaml(docs)
    assert "<unresolved-" not in text.replace("<unresolved-service-account>", "")
    for doc in docs:
        assert validate_document(doc) == [], doc["kind"]


def test_a_redacted_render_names_no_credentials_secret():
    sidecar = _sidecar(_render(redact=True)[0])
    assert sidecar["envFrom"] == [{"secretRef": {"name": "<redacted>"}}]
    assert SECRET not in manifests.dump_yaml(_render(redact=True))


def test_a_folder_store_without_credentials_has_no_env_from():
    ws = WorkspaceTarget("team", "jobqueue", "team-ws", experiments_store="/data/evidence")
    sidecar = _sidecar(_render(workspace=ws, env={plan_offload.IMAGE_ENV: IMAGE})[0])
    assert "envFrom" not in sidecar
    assert {"name": "TAU_EXP_STORE", "value": "/data/evidence"} in sidecar["env"]


def test_the_workspace_image_wins_over_the_process_env():
    other = f"registry.example/other@sha256:{'d' * 64}"
    assert _sidecar(_render(env={plan_offload.IMAGE_ENV: other})[0])["image"] == IMAGE
    ws = WORKSPACE.__class__(**{**WORKSPACE.__dict__, "offload_image": None})
    assert _sidecar(_render(workspace=ws, env={plan_offload.IMAGE_ENV: other})[0])["image"] == other


# --- the session id ---------------------------------------------------------------------------


def _session(doc: dict[str, Any]) -> str:
    return str(doc["metadata"]["annotations"][meta.ANNOTATION_METRICS_SESSION_ID])


def test_each_submit_draws_a_new_session_id_and_the_pod_reads_it_from_its_annotation():
    first, second = _render()[0], _render()[0]
    assert _session(first) != _session(second)
    assert re.fullmatch(r"[0-9a-f]{24}", _session(first))
    notes = _pod(first)["metadata"]["annotations"]
    assert notes[meta.ANNOTATION_METRICS_SESSION_ID] == _session(first)
    assert notes[meta.ANNOTATION_EXPERIMENT_SOURCE] == "stellar"
    env = {e["name"]: e for e in _sidecar(first)["env"]}
    assert env["TAU_METRICS_SESSION_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == (
        "metadata.annotations['tau.azure.com/metrics-session-id']"
    )


def test_a_client_dry_run_renders_the_same_session_id_every_time():
    valid = _valid("job-metrics-offload")
    once = pipeline.client_preview(valid, {}).documents
    again = pipeline.client_preview(valid, {}).documents
    assert manifests.dump_yaml(once) == manifests.dump_yaml(again)
    assert _session(once[0]) == plan_offload.dry_run_session("offload", _config_hash(valid))


def _config_hash(valid: Any) -> str:
    from tau.plan.resolve import config_hash

    return config_hash(valid)


@pytest.mark.parametrize(
    ("session", "message"),
    [
        ("  ", "metrics offload session ID is required"),
        ("a" * 65, "metrics offload session ID must not exceed 64 characters"),
        (
            "Run_1",
            "metrics offload session ID \"Run_1\" must contain only lowercase letters, digits, and '-'",
        ),
    ],
    ids=["empty", "too-long", "bad-characters"],
)
def test_the_reference_refuses_a_malformed_session_id(session: str, message: str):
    assert _errors(metrics_session=session) == [message]
    assert plan_offload.session_id_problem("a" * 64) is None


# --- refusals that need the submit's workspace or env -------------------------------------------


def test_offload_without_a_workspace_is_refused():
    expected = (
        "metrics.offload.enabled requires a resolved TauWorkspace; set policy.workspace, "
        "--workspace, or a workspace connection"
    )
    no_workspace = WorkspaceTarget("team", None, None)
    assert expected in _errors(workspace=no_workspace, env={plan_offload.IMAGE_ENV: IMAGE})


def test_offload_without_any_image_names_the_env_var_and_the_operator_field():
    ws = WorkspaceTarget("team", "jobqueue", "team-ws", experiments_store=STORE)
    with pytest.raises(ConfigError) as caught:
        _render(workspace=ws)
    (diag,) = caught.value.diagnostics
    assert diag.message == "metrics.offload.enabled requires TAU_METRICS_OFFLOAD_IMAGE"
    assert diag.hint is not None
    assert 'spec.experiments.offloadImage of workspace "team-ws"' in diag.hint


@pytest.mark.parametrize(
    ("image", "message"),
    [
        ("registry.example/portal:latest", "metrics offload image must not use the unpinned :latest tag"),
        ("registry.example/portal", 'metrics offload image "registry.example/portal" must be pinned by an @sha256 digest'),
        ("registry.example/portal:1.4", 'metrics offload image "registry.example/portal:1.4" must be pinned by an @sha256 digest'),
        (f"registry.example/portal @{PIN}", "metrics offload image must not contain whitespace"),
    ],
    ids=["latest", "untagged", "tag-only", "whitespace"],
)  # fmt: skip
def test_an_unpinned_offload_image_is_refused_wherever_it_comes_from(image: str, message: str):
    bare = WorkspaceTarget("team", "jobqueue", "team-ws", experiments_store=STORE)
    assert _errors(workspace=bare, env={plan_offload.IMAGE_ENV: image}) == [message]
    pinned = WorkspaceTarget(
        "team", "jobqueue", "team-ws", experiments_store=STORE, offload_image=image
    )
    with pytest.raises(ConfigError) as caught:
        _render(workspace=pinned)
    assert caught.value.diagnostics[0].path == 'workspace "team-ws" spec.experiments.offloadImage'


def test_a_workspace_without_a_store_is_refused_with_the_operator_fix():
    ws = WorkspaceTarget("team", "jobqueue", "team-ws", offload_image=IMAGE)
    with pytest.raises(ConfigError) as caught:
        _render(workspace=ws)
    (diag,) = caught.value.diagnostics
    assert diag.message.startswith('workspace "team-ws" names no experiment store')
    assert diag.hint is not None and "spec.experiments.store of TauWorkspace team-ws" in diag.hint


def test_a_store_url_holding_a_password_is_refused_without_echoing_it():
    ws = WorkspaceTarget(
        "team",
        "jobqueue",
        "team-ws",
        experiments_store="postgresql://tau:hunter2@db:5432/tau?objects=s3://b/p",
        offload_image=IMAGE,
    )
    with pytest.raises(ConfigError) as caught:
        _render(workspace=ws)
    assert "hunter2" not in caught.value.format()
    assert "holds a password" in caught.value.format()


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("soon", 'TAU_METRICS_OFFLOAD_INTERVAL: invalid duration "soon" (use forms like 30s, 5m, 1h30m)'),
        ("0s", 'TAU_METRICS_OFFLOAD_INTERVAL must be a positive duration (got "0s")'),
        ("-5s", 'TAU_METRICS_OFFLOAD_INTERVAL must be a positive duration (got "-5s")'),
    ],
    ids=["unparsable", "zero", "negative"],
)  # fmt: skip
def test_a_bad_offload_interval_is_refused(raw: str, message: str):
    assert _errors(env={plan_offload.INTERVAL_ENV: raw}) == [message]


def test_the_interval_env_sets_the_collectors_interval():
    command = _sidecar(_render(env={plan_offload.INTERVAL_ENV: "90s"})[0])["command"]
    assert command[command.index("--interval") + 1] == "1m30s"


def test_every_platform_problem_of_a_submit_is_reported_in_one_run():
    ws = WorkspaceTarget("team", "jobqueue", "team-ws")
    messages = _errors(workspace=ws, env={plan_offload.INTERVAL_ENV: "0"}, metrics_session="X")
    assert len(messages) == 4, messages


def test_a_history_resolving_outside_data_is_refused():
    """Unreachable from a config (config.go already refuses such entries); kept as run_job.go
    has it, for a plan built some other way.
    """
    valid = _valid("job-metrics-offload")
    config = valid.config._replace(metrics=Metrics(history=("/srv/m.jsonl",), offload_enabled=True))
    found: list[tuple[str, str]] = []

    class Report:
        def error(self, path: str, message: str, hint: str | None = None, **_: Any) -> None:
            found.append((path, message))

    plan_offload.resolve(
        Report(),
        config,
        output="/data/out",
        result_pvc="d",
        volumes=(),
        config_hash="h",
        platform=plan_offload.Platform(),
        session=None,
        retry_env={},
    )
    assert ("metrics.history[0]", 'metrics.history "/srv/m.jsonl" must resolve under /data') in (
        found
    )


# --- the pod shape ------------------------------------------------------------------------------


def test_the_sidecar_is_a_native_sidecar_with_the_contract_command():
    doc = _render(env={})[0]
    pod = _pod(doc)["spec"]
    sidecar = _sidecar(doc)
    assert sidecar["restartPolicy"] == "Always"
    assert pod["shareProcessNamespace"] is True
    assert pod["initContainers"][-1] is sidecar
    out = "/data/checkpoints/workflows/offload"
    assert sidecar["command"] == [
        "taugrid-portal", "experiment", "offload", "metrics", "--watch",
        "--run", "offload", "--project", "vision", "--experiment", "baseline",
        "--group", "sweep-1", "--source", "stellar-online",
        "--out", f"{out}/.tau/metrics-offload",
        "--completion-file", "/var/run/tau/metrics/completion.json",
        "--ready-file", "/var/run/tau/metrics/ready",
        "--done-file", "/var/run/tau/metrics/done",
        "--interval", "10s",
        "--history", f"{out}/metrics.jsonl",
        "--history", "/data/shared/vision/chunks/*.jsonl",
        "--status-artifact-uri", out,
    ]  # fmt: skip
    assert sidecar["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    runtime = {"name": "tau-metrics", "mountPath": "/var/run/tau/metrics"}
    main = pod["containers"][0]
    assert runtime in main["volumeMounts"] and runtime in sidecar["volumeMounts"]
    assert {"name": "data", "mountPath": "/data"} in sidecar["volumeMounts"]
    assert main["command"][:2] == ["bash", "-c"] and main["command"][3] == "tau-metrics-offload"
    assert pod["terminationGracePeriodSeconds"] >= offload.DONE_TIMEOUT + offload.DRAIN_GRACE


def test_a_retry_attempt_reaches_the_collector():
    docs = _render(retry_env={"TAU_RETRY_ATTEMPT": "2", "TAU_RETRY_REASON": "Evicted"})
    assert {"name": "TAU_RETRY_ATTEMPT", "value": "2"} in _sidecar(docs[0])["env"]
    first = _render()
    assert "TAU_RETRY_ATTEMPT" not in {e["name"] for e in _sidecar(first[0])["env"]}


def test_the_rayjob_head_carries_the_sidecar_and_its_driver_is_wrapped():
    doc = _render("rayjob-metrics-offload")[0]
    head = _pod(doc)["spec"]
    assert head["shareProcessNamespace"] is True
    assert _sidecar(doc)["image"] == IMAGE
    assert "tau_completion=/var/run/tau/metrics/completion.json" in doc["spec"]["entrypoint"]
    for group in doc["spec"]["rayClusterSpec"]["workerGroupSpecs"]:
        assert "initContainers" not in group["template"]["spec"] or all(
            c["name"] != "metrics-offload" for c in group["template"]["spec"]["initContainers"]
        )
    assert validate_document(doc) == []


def test_a_run_without_offload_renders_no_part_of_it():
    text = (GOLDEN / "job-checkpoint-artifact" / "rendered.yaml").read_text()
    assert "metrics-offload" not in text and "shareProcessNamespace" not in text


# --- the wrapper, run ---------------------------------------------------------------------------


def _wrapper(
    tmp: Path, launch: str = '"$@" &', ready_timeout: int = 5, done_timeout: int = 5
) -> str:
    return offload.wrapper_script(
        launch, runtime_dir=str(tmp), ready_timeout=ready_timeout, done_timeout=done_timeout
    )


def _sentinel(tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((tmp / "completion.json").read_text())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", data.pop("completed_at"))
    assert not [p for p in tmp.iterdir() if p.name.startswith(".")]  # renamed, not left
    return data


@pytest.mark.parametrize("code", [0, 3])
def test_the_wrapper_records_the_entrypoint_exit_and_returns_its_code(tmp_path: Path, code: int):
    (tmp_path / "ready").touch()
    (tmp_path / "done").touch()
    argv = ["bash", "-c", _wrapper(tmp_path), "tau-metrics-offload", "sh", "-c", f"exit {code}"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert result.returncode == code, result.stderr
    assert _sentinel(tmp_path) == {
        "state": "succeeded" if code == 0 else "failed",
        "reason": "workload-entrypoint-exit",
        "message": f"entrypoint exited with code {code}",
    }


def test_without_a_ready_collector_the_entrypoint_never_runs(tmp_path: Path):
    ran = tmp_path / "ran"
    argv = ["bash", "-c", _wrapper(tmp_path, ready_timeout=1, done_timeout=1), "w"]
    result = subprocess.run([*argv, "touch", str(ran)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 1
    assert not ran.exists()
    assert _sentinel(tmp_path)["reason"] == "metrics-offloader-not-ready"
    assert _sentinel(tmp_path)["state"] == "failed"
    assert "did not confirm delivery" in result.stderr


def test_sigterm_is_forwarded_and_recorded_as_cancelled(tmp_path: Path):
    (tmp_path / "ready").touch()
    (tmp_path / "done").touch()
    started = tmp_path / "started"
    child = (
        f'trap "echo got-term; exit 7" TERM; touch {started}; sleep 30 >/dev/null 2>&1 & wait $!'
    )
    argv = ["bash", "-c", _wrapper(tmp_path), "w", "bash", "-c", child]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    # The workload has set its own trap once it touched the file.
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 7
    assert "got-term" in out
    assert _sentinel(tmp_path) == {
        "state": "cancelled",
        "reason": "workload-termination",
        "message": "the workload was terminated (SIGTERM); entrypoint exit code 7",
    }


def test_the_ray_driver_wrapper_runs_under_posix_sh(tmp_path: Path):
    (tmp_path / "ready").touch()
    (tmp_path / "done").touch()
    script = _wrapper(tmp_path, launch="(\nset -eu\necho driver\nexit 4\n) &")
    result = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=30)
    assert (result.returncode, result.stdout) == (4, "driver\n")
    assert _sentinel(tmp_path)["state"] == "failed"


def test_workspace_status_shows_where_offload_delivers_and_masks_a_password():
    from tau.workspaces.report import status_text

    obj = {
        "metadata": {"name": "team-ws"},
        "spec": {
            "experiments": {
                "store": "postgresql://tau:hunter2@db:5432/tau?objects=s3://b/p",
                "credentialsSecret": SECRET,
                "offloadImage": IMAGE,
            }
        },
    }
    text = status_text(obj)
    assert "experiments:    store postgresql://tau:***@db:5432/tau?objects=s3://b/p" in text
    assert f"credentialsSecret {SECRET}" in text and f"offloadImage {IMAGE}" in text
    assert "hunter2" not in text
    assert "experiments:" not in status_text({"metadata": {"name": "plain"}, "spec": {}})
