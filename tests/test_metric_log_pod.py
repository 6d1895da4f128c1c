"""`metrics.history` in the render, and `tau.log` in the pod with tau installed or not.

The render sets TAU_METRICS_HISTORY and ships /script/tau.py (tau/_pod_tau.py) with
/script/_tau_metric_log.py (tau/metric_log.py). The pod cases unpack a rendered payload with the
init container's own decoder and run the training script under an interpreter that has no tau
(the base interpreter, -s -E), under one where tau is installed, and under one with a tau from
before tau.log.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tau.cli import main
from tau.plan import metrics_history
from tau.render import payload
from tests.manifest_check import validate_document

SRC = Path(__file__).resolve().parents[1] / "src"
TRAIN = """\
import sys
import tau

for step in range(3):
    tau.log({"loss": 1.0 / (step + 1), "nan": float("nan")})
print("tau from", tau.__file__, "log from", tau.log.__module__)
"""
JOB = """\
name: mlog
engine: {engine}
entrypoint: {entrypoint}
runtime:
  image: ghcr.io/example/trainer:1.4.2
{runtime}
compute:
  {compute}
policy:
  queue: research
  namespace: research
storage:
  data_pvc: training-data
metrics:
  history: {history}
"""


def render(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    *,
    engine: str = "job",
    history: str = '["metrics.jsonl"]',
    runtime: str = "",
    entrypoint: str = "train.py",
    script: str = TRAIN,
) -> list[dict[str, Any]]:
    compute = "gpus: 0" if engine == "job" else "workers: 1\n  gpus_per_worker: 1"
    config = JOB.format(
        engine=engine, history=history, runtime=runtime, entrypoint=entrypoint, compute=compute
    )
    (tmp_path / "tau.yaml").write_text(config)
    (tmp_path / entrypoint).write_text(script)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    code = main(["run", "--config", "tau.yaml", "--dry-run=client", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    parsed = json.loads(out)
    docs = parsed["items"] if parsed.get("kind") == "List" else [parsed]
    for doc in docs:
        assert validate_document(doc) == [], doc["kind"]
    return docs


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def payload_init(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["initContainers"] if c["name"] == payload.SCRIPT_INIT)


def unpack(init: dict[str, Any], target: Path, python: str = sys.executable) -> None:
    """What the tau-payload init container does in the pod, with its own decoder."""
    target.mkdir()
    env = {**env_of(init), "TAU_PAYLOAD_TARGET_DIR": str(target)}
    proc = subprocess.run(
        [python, "-s", "-c", init["command"][2]], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_a_job_with_history_gets_the_env_the_shipped_logger_and_pythonpath(
    tmp_path, capsys, monkeypatch
):
    (job,) = render(tmp_path, capsys, monkeypatch)
    pod = job["spec"]["template"]["spec"]
    (main_container,) = pod["containers"]
    env = env_of(main_container)
    assert env["TAU_METRICS_HISTORY"] == "/data/checkpoints/workflows/mlog/metrics.jsonl"
    assert main_container["command"][-1] == (
        'export PYTHONPATH="/script${PYTHONPATH:+:$PYTHONPATH}" && exec python3 /script/train.py'
    )
    unpack(payload_init(pod), tmp_path / "script")
    shipped = {p.name: p.read_bytes() for p in (tmp_path / "script").iterdir()}
    assert shipped == {
        "train.py": TRAIN.encode(),
        "tau.py": (SRC / "tau" / "_pod_tau.py").read_bytes(),
        "_tau_metric_log.py": (SRC / "tau" / "metric_log.py").read_bytes(),
    }


def test_history_entries_resolve_under_the_output_and_a_glob_stays_a_glob(
    tmp_path, capsys, monkeypatch
):
    history = '["metrics/*.jsonl", "/data/elsewhere/m.jsonl", "./a/../b.jsonl"]'
    (job,) = render(tmp_path, capsys, monkeypatch, history=history)
    env = env_of(job["spec"]["template"]["spec"]["containers"][0])
    assert env["TAU_METRICS_HISTORY"] == "/data/checkpoints/workflows/mlog/metrics/*.jsonl"
    assert metrics_history.resolve(
        ("metrics/*.jsonl", "/data/elsewhere/m.jsonl", "./a/../b.jsonl"), "/data/out"
    ) == ("/data/out/metrics/*.jsonl", "/data/elsewhere/m.jsonl", "/data/out/b.jsonl")


def test_runtime_env_cannot_set_it(tmp_path, capsys, monkeypatch):
    (tmp_path / "tau.yaml").write_text(
        JOB.format(
            engine="job", history='["m.jsonl"]', entrypoint="train.py", compute="gpus: 0",
            runtime="  env:\n    TAU_METRICS_HISTORY: /data/mine.jsonl",
        )
    )  # fmt: skip
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "tau.yaml", "--dry-run=client"]) == 1
    assert "Tau-managed keys that cannot be overridden: TAU_METRICS_HISTORY" in (
        capsys.readouterr().err
    )


def test_a_shebang_script_gets_the_env_but_no_shipped_python(tmp_path, capsys, monkeypatch):
    script = "#!/bin/bash\necho hi\n"
    (job,) = render(tmp_path, capsys, monkeypatch, entrypoint="run.sh", script=script)
    pod = job["spec"]["template"]["spec"]
    assert env_of(pod["containers"][0])["TAU_METRICS_HISTORY"].endswith("/metrics.jsonl")
    assert "initContainers" not in pod  # still the env-var transport, no python3 needed
    assert "PYTHONPATH" not in pod["containers"][0]["command"][-1]


def test_an_entrypoint_named_tau_py_is_not_replaced(tmp_path, capsys, monkeypatch):
    (job,) = render(tmp_path, capsys, monkeypatch, entrypoint="tau.py", script="print(1)\n")
    pod = job["spec"]["template"]["spec"]
    assert "initContainers" not in pod or all(
        "_tau_metric_log" not in json.dumps(c) for c in pod["initContainers"]
    )


def test_a_rayjob_with_history_ships_the_logger_to_head_and_workers(tmp_path, capsys, monkeypatch):
    (rayjob,) = render(tmp_path, capsys, monkeypatch, engine="rayjob")
    spec = rayjob["spec"]
    assert metrics_history.PYTHONPATH_EXPORT in spec["entrypoint"].splitlines()
    head = spec["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    (workers,) = spec["rayClusterSpec"]["workerGroupSpecs"]
    worker = workers["template"]["spec"]
    for pod in (head, worker):
        env = env_of(pod["containers"][0])
        assert env["TAU_METRICS_HISTORY"] == "/data/mlog/metrics.jsonl"
        # Ray Train's rank 0 runs on a worker: it imports tau from the /script Ray puts on
        # its sys.path (the driver script's folder).
        assert any(m["mountPath"] == "/script" for m in pod["containers"][0]["volumeMounts"])
    unpack(payload_init(head), tmp_path / "script")
    assert {"tau.py", "_tau_metric_log.py", "train.py"} <= set(os.listdir(tmp_path / "script"))


def test_a_run_without_history_is_unchanged(tmp_path, capsys, monkeypatch):
    config = JOB.format(
        engine="job", history="[]", runtime="", entrypoint="train.py", compute="gpus: 0"
    )
    (tmp_path / "tau.yaml").write_text(config.replace("metrics:\n  history: []\n", ""))
    (tmp_path / "train.py").write_text(TRAIN)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--config", "tau.yaml", "--dry-run=client", "-o", "json"]) == 0
    out = capsys.readouterr().out
    assert "TAU_METRICS_HISTORY" not in out and "TAU_PAYLOAD_B64" not in out


# ------------------------------------------------------------------------- in the pod


@pytest.fixture
def script_dir(tmp_path: Path, capsys, monkeypatch) -> Path:
    """/script of a rendered Job, unpacked by the init container's own decoder."""
    config = tmp_path / "config"
    config.mkdir()
    (job,) = render(config, capsys, monkeypatch)
    target = tmp_path / "script"
    unpack(payload_init(job["spec"]["template"]["spec"]), target, _bare_python())
    return target


def _bare_python() -> str:
    """The interpreter this venv was made from: it has no tau installed."""
    return getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable


def _pod_run(
    python: str, argv: list[str], cwd: Path, history: Path, pythonpath: str | None = None
) -> str:
    env = {"PATH": os.environ.get("PATH", ""), "TAU_METRICS_HISTORY": str(history)}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    proc = subprocess.run(
        [python, *argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = history.read_text().splitlines()
    assert [json.loads(line)["_step"] for line in lines] == [0, 1, 2]
    assert '"nan":NaN' in lines[0]
    return proc.stdout


def _python(version: str) -> str | None:
    """An interpreter of `version` that runs (a pyenv shim may name one it cannot start)."""
    found = [shutil.which(f"python{version}")]
    found += sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))
    )
    for python in found:
        if python and subprocess.run([python, "-c", "pass"], capture_output=True).returncode == 0:
            return python
    return None


def _no_tau(python: str) -> None:
    probe = "import importlib.util; print(importlib.util.find_spec('tau'))"
    proc = subprocess.run([python, "-s", "-E", "-c", probe], capture_output=True, text=True)
    if proc.stdout.strip() != "None":
        pytest.skip(f"{python} has a tau installed")


def test_in_an_image_without_tau_the_shim_is_tau(script_dir: Path, tmp_path: Path) -> None:
    python = _bare_python()
    _no_tau(python)
    # As the pod runs it: python3 /script/train.py (its folder first on sys.path), -s -E so
    # neither a user site nor PYTHONPATH can lend it this project.
    out = _pod_run(
        python, ["-s", "-E", str(script_dir / "train.py")], tmp_path, tmp_path / "a.jsonl"
    )
    assert f"tau from {script_dir / 'tau.py'} log from _tau_metric_log" in out


def test_a_process_the_entrypoint_starts_finds_it_on_pythonpath(
    script_dir: Path, tmp_path: Path
) -> None:
    python = _bare_python()
    _no_tau(python)
    code = (script_dir / "train.py").read_text()
    out = _pod_run(python, ["-s", "-c", code], tmp_path, tmp_path / "b.jsonl", str(script_dir))
    assert "log from _tau_metric_log" in out


@pytest.mark.parametrize("version", ["3.10", "3.12", "3.13"])
def test_the_shipped_files_run_on_the_pods_python(
    script_dir: Path, tmp_path: Path, version: str
) -> None:
    python = _python(version)
    if python is None:
        pytest.skip(f"no python{version} here")
    _no_tau(python)
    out = _pod_run(
        python, ["-s", "-E", str(script_dir / "train.py")], tmp_path, tmp_path / "c.jsonl"
    )
    assert "log from _tau_metric_log" in out


def test_an_installed_tau_wins(script_dir: Path, tmp_path: Path) -> None:
    """The image's tau (here this project, after /script on the path) is the tau imported."""
    code = (script_dir / "train.py").read_text() + "print('sdk', callable(tau.train))\n"
    path = f"{script_dir}{os.pathsep}{SRC}"
    out = _pod_run(sys.executable, ["-s", "-c", code], tmp_path, tmp_path / "d.jsonl", path)
    assert f"tau from {SRC / 'tau' / '__init__.py'} log from tau.metric_log" in out
    assert "sdk True" in out


def test_an_installed_tau_from_before_tau_log_gets_the_shipped_one(
    script_dir: Path, tmp_path: Path
) -> None:
    old = tmp_path / "site" / "tau"
    old.mkdir(parents=True)
    (old / "__init__.py").write_text("OLD = True\n")
    code = (script_dir / "train.py").read_text() + "print('old', tau.OLD)\n"
    path = f"{script_dir}{os.pathsep}{old.parent}"
    out = _pod_run(sys.executable, ["-s", "-c", code], tmp_path, tmp_path / "e.jsonl", path)
    assert f"tau from {old / '__init__.py'} log from _tau_metric_log" in out
    assert "old True" in out


def test_a_managed_workflow_ships_no_shim(tmp_path, capsys, monkeypatch):
    """Its trainer decides its history (validate warns), and its wrapper installs its own
    stand-in `tau` and refuses a staged tau.py: nothing of tau.log is added to it."""
    shutil.copytree(SRC.parent / "examples" / "tau", tmp_path / "tau")
    sft = tmp_path / "tau" / "sft.yaml"
    sft.write_text(sft.read_text() + 'metrics:\n  history: ["metrics.jsonl"]\n')
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["run", "sft", "--dry-run=client", "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "metrics.history has no effect on a managed workflow run" in err
    pod = json.loads(out)["spec"]["template"]["spec"]
    assert "TAU_METRICS_HISTORY" not in env_of(pod["containers"][0])
    unpack(payload_init(pod), tmp_path / "script")
    assert "tau.py" not in os.listdir(tmp_path / "script")


def test_a_tau_config_folder_in_the_working_directory_is_not_an_installed_tau(
    script_dir: Path, tmp_path: Path
) -> None:
    """A project's tau/ folder (tau.yaml files, no __init__.py) beside a `python -c` is skipped."""
    python = _bare_python()
    _no_tau(python)
    (tmp_path / "tau").mkdir()
    (tmp_path / "tau" / "train.yaml").write_text("name: train\n")
    code = (script_dir / "train.py").read_text()
    out = _pod_run(python, ["-s", "-c", code], tmp_path, tmp_path / "f.jsonl", str(script_dir))
    assert f"tau from {script_dir / 'tau.py'} log from _tau_metric_log" in out
