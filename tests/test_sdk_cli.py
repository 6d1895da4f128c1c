"""`tau python` as a user runs it: inspect, build, submit and submit-build (client dry runs), the
chain's order and its report of what exists when it stops, and the CLI's shape.

The cluster side of the chain (watching and deleting a real RayJob) is in
tests/e2e/test_python_sdk_e2e.py; here the wait and delete are replaced by recorders.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.cli import main
from tau.sdk import submission

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "python" / "regression.py"


def tau(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def without_command(doc: dict[str, Any]) -> dict[str, Any]:
    """The rendered object minus the annotation that records the command line itself."""
    doc["metadata"]["annotations"].pop("tau.azure.com/tau-command", None)
    return doc


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


# --- the example of the README -------------------------------------------------------------


def test_the_example_runs_locally_train_then_eval(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    mse = yaml.safe_load(proc.stdout.strip().replace("'", '"'))["mse"]
    assert 0 <= mse < 0.05


def test_inspect_prints_each_manifest_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = tau(capsys, "python", "inspect", str(EXAMPLE))
    assert code == 0
    blocks = out.split("\n\n")
    assert blocks[0].startswith(f"# fit (kind=train, source: {EXAMPLE})\n")
    assert f"# score (kind=eval, source: {EXAMPLE})\n" in out
    train = yaml.safe_load(blocks[0])
    assert train["name"] == "regression"
    assert list(train)[:2] == ["schema_version", "name"]


def test_submit_dry_run_client_renders_the_train_then_the_eval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=client")
    assert code == 0, err
    rayjobs = [d for d in documents(out) if d["kind"] == "RayJob"]
    assert [r["metadata"]["name"] for r in rayjobs] == ["tau-regression", "tau-regression-eval"]
    assert "tau python submit: submitting @tau.train name='regression' (gpus=1, workers=1)" in err
    upstream = "/data/checkpoints/finetunes/regression/artifacts/line/model.json"
    assert f"upstream='{upstream}'" in err
    assert upstream in out  # TAU_UPSTREAM_CHECKPOINT of the eval's pods
    assert "waiting for" not in err  # a dry run never waits


def test_build_then_submit_build_renders_what_submit_renders(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, direct, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=client")
    assert code == 0, err
    out = tmp_path / "build"
    code, printed, err = tau(capsys, "python", "build", str(EXAMPLE), "-o", str(out))
    assert code == 0, err
    assert printed.strip() == str(out)
    code, built, err = tau(capsys, "python", "submit-build", str(out), "--dry-run=client")
    assert code == 0, err
    assert "tau python submit-build: submitting train name='regression' from " in err
    assert [without_command(d) for d in documents(built)] == [
        without_command(d) for d in documents(direct)
    ]


def test_submit_build_refuses_a_tampered_artifact_before_sending_anything(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "build"
    assert tau(capsys, "python", "build", str(EXAMPLE), "-o", str(out))[0] == 0
    module = out / "workloads" / "train-regression" / "tau_user_module.py"
    module.write_text(module.read_text() + "# changed\n")
    code, stdout, err = tau(capsys, "python", "submit-build", str(out), "--dry-run=client")
    assert code == 1
    assert stdout == ""
    assert "mismatch for workloads/train-regression/tau_user_module.py" in err
    assert "Traceback" not in err


# --- reference cases 42, 44–48 and the CLI's shape -----------------------------------------


def test_inspect_of_a_module_without_handles_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = write(tmp_path, "empty.py", "x = 1\n")
    code, out, err = tau(capsys, "python", "inspect", str(module))
    assert (code, out) == (1, "")
    assert f"no @tau.train or @tau.eval functions found in {module}" in err


def test_submit_refuses_two_trains_in_one_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = write(
        tmp_path,
        "two.py",
        """
        import tau

        @tau.train(name="a", runtime_pip=["p"])
        def a(ctx): ...

        @tau.train(name="b", runtime_pip=["p"])
        def b(ctx): ...
        """,
    )
    code, _, err = tau(capsys, "python", "submit", str(module), "--dry-run=client")
    assert code == 1
    assert (
        "tau python submit: multiple @tau.train handles found (a, b); v1 supports at most one "
        "per file" in err
    )


def test_eval_only_submit_needs_the_upstream_checkpoint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAU_UPSTREAM_CHECKPOINT", raising=False)
    module = write(
        tmp_path,
        "only_eval.py",
        """
        import tau

        @tau.eval(name="e", extra_manifest={"runtime": {"pip": ["p"]}})
        def e(ctx): ...
        """,
    )
    code, _, err = tau(capsys, "python", "submit", str(module), "--dry-run=client")
    assert code == 1
    assert "needs TAU_UPSTREAM_CHECKPOINT in the env" in err
    monkeypatch.setenv("TAU_UPSTREAM_CHECKPOINT", "/data/models/m.safetensors")
    code, out, err = tau(capsys, "python", "submit", str(module), "--dry-run=client")
    assert code == 0, err
    assert "/data/models/m.safetensors" in out


def test_submit_refuses_to_run_inside_a_submitted_job(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAU_DATA_DIR", "/data")
    code, out, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=client")
    assert (code, out) == (1, "")
    assert "refusing to .submit() from inside what looks like a cluster-submitted job" in err


def test_a_bad_dry_run_mode_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=foo")
    assert (code, out) == (1, "")
    assert "--dry-run" in err and "'client', 'server'" in err


def test_bootstrap_says_there_is_nothing_to_bootstrap(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = tau(capsys, "python", "bootstrap", "--tag", "v0.1.0")
    assert (code, out) == (2, "")
    assert "nothing to bootstrap" in err


def test_help_says_inspect_and_build_run_the_module(capsys: pytest.CaptureFixture[str]) -> None:
    for verb in ("inspect", "build", "submit"):
        main(["python", verb, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "its top-level code runs" in out, verb


def test_a_missing_module_names_the_path(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = tau(capsys, "python", "build", "nope.py", "-o", "/tmp/never")
    assert code == 1
    assert "MODULE nope.py: no such file" in err


# --- the chain ------------------------------------------------------------------------------


class Recorder:
    """Stands in for tau run, the RayJob wait and the delete; fails where told."""

    def __init__(self, fail_wait: BaseException | None = None) -> None:
        self.calls: list[tuple[str, str]] = []
        self.fail_wait = fail_wait

    def launch(self, path: Path, launch: submission.Launch) -> int:
        self.calls.append(("submit", yaml.safe_load(path.read_text())["name"]))
        return 0

    def wait(self, api: Any, ns: str, name: str, **_: Any) -> None:
        self.calls.append(("wait", name))
        if self.fail_wait is not None:
            raise self.fail_wait

    def delete(self, api: Any, ns: str, name: str, **_: Any) -> None:
        self.calls.append(("delete", name))


def steps(tmp_path: Path) -> list[submission.Step]:
    made = []
    for kind, name in (("train", "t"), ("eval", "t-eval")):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"name": name, "policy": {"namespace": "ns"}}))
        made.append(submission.Step(kind, name, f"tau-{name}", path, f"go {name}", "ns"))
    return made


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder()
    monkeypatch.setattr(submission, "launch_one", rec.launch)
    monkeypatch.setattr(submission, "_connect", lambda launch, ns: (object(), ns or "ns"))
    return rec


def run(rec: Recorder, tmp_path: Path, **launch: Any) -> tuple[int | None, list[str]]:
    said: list[str] = []
    code = submission.run_chain(
        steps(tmp_path),
        submission.Launch(**launch),
        prefix="tau python submit",
        say=said.append,
        wait_for=rec.wait,
        delete=rec.delete,
    )
    return code, said


def test_the_chain_waits_for_the_train_deletes_it_then_submits_and_follows_the_eval(
    recorder: Recorder, tmp_path: Path
) -> None:
    code, said = run(recorder, tmp_path)
    assert code == 0
    assert recorder.calls == [
        ("submit", "t"),
        ("wait", "tau-t"),
        ("delete", "tau-t"),
        ("submit", "t-eval"),
        ("wait", "tau-t-eval"),
        ("delete", "tau-t-eval"),
    ]
    assert said[0] == "go t"


def test_keep_train_rayjob_keeps_the_train(recorder: Recorder, tmp_path: Path) -> None:
    run(recorder, tmp_path, keep_train_rayjob=True)
    assert ("delete", "tau-t") not in recorder.calls
    assert ("delete", "tau-t-eval") in recorder.calls


def test_a_dry_run_only_submits(recorder: Recorder, tmp_path: Path) -> None:
    run(recorder, tmp_path, dry_run="client")
    assert recorder.calls == [("submit", "t"), ("submit", "t-eval")]


def test_a_failed_train_stops_the_chain_and_says_what_exists(
    recorder: Recorder, tmp_path: Path
) -> None:
    from tau.sdk.errors import SdkError

    recorder.fail_wait = SdkError("tau python submit: rayjob/tau-t reports FAILED")
    said: list[str] = []
    with pytest.raises(SdkError):
        submission.run_chain(
            steps(tmp_path),
            submission.Launch(),
            prefix="tau python submit",
            say=said.append,
            wait_for=recorder.wait,
            delete=recorder.delete,
        )
    assert ("submit", "t-eval") not in recorder.calls
    assert any("rayjob/tau-t (train 't') still exists in ns" in line for line in said)
    assert "tau python submit: eval 't-eval' was not submitted" in said


def test_ctrl_c_while_waiting_says_what_exists_and_what_was_not_submitted(
    recorder: Recorder, tmp_path: Path
) -> None:
    recorder.fail_wait = KeyboardInterrupt()
    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        submission.run_chain(
            steps(tmp_path),
            submission.Launch(context="ctx"),
            prefix="tau python submit",
            say=said.append,
            wait_for=recorder.wait,
            delete=recorder.delete,
        )
    assert said[-2] == (
        "tau python submit: rayjob/tau-t (train 't') still exists in ns: follow it with "
        "`tau run status tau-t -n ns --context ctx`, stop it with "
        "`tau run cancel tau-t -n ns --context ctx`"
    )
    assert said[-1] == "tau python submit: eval 't-eval' was not submitted"


def test_secret_values_go_to_a_private_payload_never_into_the_config(tmp_path: Path) -> None:
    from tau.sdk.generate import SecretLocator
    from tau.sdk.secrets import SecretSource

    (tmp_path / "token.txt").write_text("file-secret\n")
    values = submission.secret_values(
        [SecretLocator("FROM_FILE", "file-token", SecretSource("file-token", path="token.txt"))],
        tmp_path,
    )
    folder = tmp_path / "staged"
    folder.mkdir()
    path = submission.stage(
        folder,
        {"name": "x", "workflow": {"extra_scripts": ["a.py:a.py"]}},
        [("a.py", b"print(1)\n")],
        secret_name="tau-x-secrets",
        secrets=values,
    )
    config = yaml.safe_load(path.read_text())
    assert config["workflow"]["secret_payload"] == submission.PAYLOAD_FILE
    assert "file-secret" not in path.read_text()
    payload = folder / submission.PAYLOAD_FILE
    assert payload.stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(payload.read_text()) == {
        "name": "tau-x-secrets",
        "stringData": {"file-token": "file-secret"},
    }


def test_every_override_flag_is_a_field_of_the_domain_value() -> None:
    from dataclasses import fields

    from tau.sdk.cli import OverrideFlags
    from tau.sdk.overrides import Overrides

    assert [f.name for f in fields(OverrideFlags)] == [f.name for f in fields(Overrides)]


def test_override_flags_reach_the_generated_config(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "build"
    code, _, err = tau(
        capsys,
        "python",
        "build",
        str(EXAMPLE),
        "-o",
        str(out),
        "-n",
        "team-a",
        "--queue",
        "research",
        "--node-selector",
        "pool=gpu",
        "--node-selector",
        "zone=b",
        "--worker-cpu-request",
        "12",
    )
    assert code == 0, err
    train = yaml.safe_load((out / "workloads/train-regression/tau.yaml").read_text())
    assert train["policy"]["namespace"] == "team-a"
    assert train["policy"]["queue"] == "research"
    assert train["policy"]["node_selector"] == {"pool": "gpu", "zone": "b"}
    assert train["compute"]["worker_cpus"] == 12
    evaluation = yaml.safe_load((out / "workloads/eval-regression-eval/tau.yaml").read_text())
    assert "queue" not in evaluation["policy"]


def test_every_sizing_flag_renders_as_the_quantity_it_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The SDK writes whole cores as numbers; a limit the run config also knows by name
    (worker_cpu_limit, worker_memory_limit) is still read by the manifest's rules. On a GPU
    manifest the head's fields size each GPU worker, and the worker's fields the eval's CPU
    workers."""
    sizing = {
        "--cpu-request": "1",
        "--cpu-limit": "2",
        "--memory-request": "1Gi",
        "--memory-limit": "3Gi",
        "--worker-cpu-request": "3",
        "--worker-cpu-limit": "5",
        "--worker-memory-request": "2Gi",
        "--worker-memory-limit": "6Gi",
    }
    flags = [part for pair in sizing.items() for part in pair]
    code, out, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=client", *flags)
    assert code == 0, err
    evaluation = next(d for d in documents(out) if d["metadata"]["name"] == "tau-regression-eval")
    groups = {
        g["groupName"]: g["template"]["spec"]["containers"][0]["resources"]
        for g in evaluation["spec"]["rayClusterSpec"]["workerGroupSpecs"]
    }
    gpu, cpu = groups["tau-regression-eval-w"], groups["tau-regression-eval-cpu"]
    assert (gpu["requests"]["cpu"], gpu["limits"]["cpu"]) == ("1", "2")
    assert (gpu["requests"]["memory"], gpu["limits"]["memory"]) == ("1Gi", "3Gi")
    assert (cpu["requests"]["cpu"], cpu["limits"]["cpu"]) == ("3", "5")
    assert (cpu["requests"]["memory"], cpu["limits"]["memory"]) == ("2Gi", "6Gi")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--cpu-request", "0"], "tau-py: cpu_request must be >= 1 (got 0)"),
        (["--node-selector", "pool"], "node_selector entries must be key=value"),
        (["--timeout", "soon"], "invalid duration 'soon'"),
    ],
)
def test_bad_override_values_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    code, out, err = tau(capsys, "python", "submit", str(EXAMPLE), "--dry-run=client", *flags)
    assert (code, out) == (1, "")
    assert message in err
    assert "Traceback" not in err
