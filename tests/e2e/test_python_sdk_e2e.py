"""`tau python submit` on the real control plane: a train → eval chain of decorated functions.

The train RayJob goes through Kueue and KubeRay; the SDK waits for it through tau's own client,
deletes it, and only then submits the eval with the train's checkpoint path. A failing train
stops the chain: the eval is never submitted, the command exits 1 and says what still exists.
The fake Ray head ends a driver by the head container's E2E_OUTCOME (unset: succeeds).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api
from tests.e2e.test_rayjob_lifecycle import finish as finish_rayjob

pytestmark = pytest.mark.e2e

RAY = "ray.io/v1"
NAMES = ("tau-py-chain", "tau-py-chain-eval", "tau-py-bad", "tau-py-bad-eval")

MODULE = """
import tau

@tau.train(name="{name}", gpus=1, runtime_pip=["pyyaml==6.0.3"], env={env})
def fit(ctx):
    return ctx.checkpoints_dir / "last.safetensors"

@tau.eval(name="{name}-eval", after="{name}", cpu_workers=1,
          extra_manifest={{"runtime": {{"pip": ["pyyaml==6.0.3"], "env": {eval_env}}}}})
def score(ctx):
    return str(ctx.upstream_checkpoint)
"""


def write_module(
    shell: Shell, name: str, env: dict[str, str], eval_env: dict[str, str] | None = None
) -> Path:
    path = shell.cwd / f"{name.replace('-', '_')}.py"
    listed = [{"name": k, "value": v} for k, v in (eval_env or {}).items()]
    path.write_text(MODULE.format(name=name, env=env, eval_env=listed))
    return path


@pytest.fixture(scope="module", autouse=True)
def _cleanup(admin: Api, researcher) -> Iterator[None]:
    """A chain stopped half-way leaves its train RayJob (by design); remove it at the end."""
    yield
    for name in NAMES:
        admin.delete(RAY, "RayJob", name, researcher.namespace)


#: The chain's waits, short for the fake cluster (the defaults are a day and five minutes).
WAITS = ["--timeout", "3m", "--poll-interval", "1", "--cleanup-timeout", "2m"]


def test_a_train_then_eval_chain_waits_deletes_the_train_and_submits_the_eval(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    upstream = "/data/checkpoints/finetunes/py-chain/artifacts/last.safetensors"
    # The eval's driver holds until the test has read the eval RayJob from the server.
    module = write_module(repo, "py-chain", {}, eval_env={"E2E_OUTCOME": "hold"})
    done: dict[str, Any] = {}
    # No --namespace: the repository's workspace names it, as for `tau run`.
    chain = threading.Thread(
        target=lambda: done.update(
            proc=repo.tau("python", "submit", module.name, *WAITS, timeout=400)
        )
    )
    chain.start()
    try:
        live = wait_for(
            "the eval RayJob, submitted once the train succeeded",
            lambda: admin.get(RAY, "RayJob", "tau-py-chain-eval", ns),
            timeout=300,
        )
        # By then the train RayJob was deleted, and the eval carries the train's checkpoint.
        assert admin.get(RAY, "RayJob", "tau-py-chain", ns) is None
        head = live["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
        env = {e["name"]: e.get("value") for e in head["containers"][0]["env"]}
        assert env["TAU_UPSTREAM_CHECKPOINT"] == upstream
        finish_rayjob(admin, ns, "tau-py-chain-eval", "succeeded")
    finally:
        chain.join(timeout=400)
    proc = done["proc"]
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if line.startswith("tau python submit:")]
    expected_order = [
        "tau python submit: submitting @tau.train name='py-chain' (gpus=1, workers=1)",
        f"tau python submit: waiting for rayjob/tau-py-chain in {ns} (",
        "tau python submit:   rayjob/tau-py-chain status=SUCCEEDED",
        "tau python submit: deleting completed rayjob/tau-py-chain to release RayCluster "
        "resources before eval...",
        "tau python submit: submitting @tau.eval name='py-chain-eval' "
        f"(gpus=1, cpu_workers=1, upstream='{upstream}')",
        f"tau python submit: waiting for rayjob/tau-py-chain-eval in {ns} (",
        "tau python submit:   rayjob/tau-py-chain-eval status=SUCCEEDED",
    ]
    position = 0
    for want in expected_order:
        hits = [i for i, line in enumerate(said) if line.startswith(want) and i >= position]
        assert hits, (want, said)
        position = hits[0]
    # Both RayJobs are gone: the train before the eval went out, the eval after it ended.
    assert admin.get(RAY, "RayJob", "tau-py-chain", ns) is None
    assert admin.get(RAY, "RayJob", "tau-py-chain-eval", ns) is None
    assert "submitted tau-py-chain (" in proc.stdout
    assert "submitted tau-py-chain-eval (" in proc.stdout


def test_a_failed_train_stops_the_chain_before_the_eval(
    repo: Shell, admin: Api, researcher
) -> None:
    ns = researcher.namespace
    module = write_module(repo, "py-bad", {"E2E_OUTCOME": "fail"})
    proc = repo.tau("python", "submit", module.name, "-n", ns, *WAITS, timeout=400)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert (
        "tau python submit: rayjob/tau-py-bad reports FAILED; check "
        f"`tau run logs tau-py-bad -n {ns}`." in proc.stderr
    )
    assert "tau python submit: eval 'py-bad-eval' was not submitted" in proc.stderr
    assert admin.get(RAY, "RayJob", "tau-py-bad-eval", ns) is None
    # The failed train is left for the user to read, and the chain said so.
    assert admin.get(RAY, "RayJob", "tau-py-bad", ns) is not None
    assert f"rayjob/tau-py-bad (train 'py-bad') still exists in {ns}" in proc.stderr


def test_server_dry_run_of_a_build_sends_nothing(
    repo: Shell, admin: Api, researcher, tmp_path: Path
) -> None:
    ns = researcher.namespace
    module = write_module(repo, "py-dry", {})
    out = tmp_path / "build"
    repo.ok("python", "build", module.name, "-o", str(out), "-n", ns)
    proc = repo.tau("python", "submit-build", str(out), "--dry-run=server")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("kind: RayJob") == 2
    assert admin.get(RAY, "RayJob", "tau-py-dry", ns) is None


def test_doctor_checks_the_workspace_and_every_permission_submit_needs(
    repo: Shell, researcher
) -> None:
    ns = researcher.namespace
    proc = repo.tau("python", "doctor")
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    lines = proc.stdout.splitlines()
    assert all(line.startswith("tau python doctor: ") for line in lines), lines
    for want in (
        "create rayjobs.ray.io",
        "create jobs.batch",
        "create secrets",
        "watch rayjobs.ray.io",
        "delete rayjobs.ray.io",
    ):
        assert any(want in line and f'"{ns}"' in line for line in lines), (want, lines)
    assert lines[-1] == "tau python doctor: ok"
