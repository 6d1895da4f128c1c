"""`tau run status|list|get|logs` against kubectl doing the same reads, on the real apiserver.

    .venv/bin/python bench/lifecycle_vs_kubectl.py [--pods 1000] [--runs 7]

(--pods 0 times the small run only.)

Starts the control plane of tests/e2e (building its binaries, kubectl among them, on first
use), submits one small Job and lets it finish, then times each pair in fresh processes, one
after the other and alternating which goes first, so both see the same machine load:

  status  tau run status NAME            kubectl get jobs,pods,events,workloads -o json
  list    tau run list                   kubectl get jobs,rayjobs
  get     tau run get NAME               kubectl get job NAME -o json
  logs    tau run logs NAME              kubectl logs job/NAME

and, for an Indexed Job of --pods running pods (text status of the whole run):

  status  tau run status NAME            kubectl get pods -l <the Job's selector> -o json

It prints the medians of both and their ratio (tau / kubectl); the targets are at most 2x for
the small run and 1.5x at 1,000 pods. Under each pair it prints the API requests one more run
of each made, as the apiserver's audit log recorded them (the researcher's requests only,
each with the time the apiserver spent on it).
kubectl's discovery cache is warmed first, as on any machine that has used kubectl once.
Bytecode is compiled first, as `pip install` does. Skips (exit 0, saying why) where the
control plane cannot run (no Go toolchain).
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def timed(argv: list[str], env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return elapsed


def pair(
    label: str,
    tau: list[str],
    kubectl: list[str],
    env: dict[str, str],
    cwd: Path,
    runs: int,
    target: float,
    ok: tuple[int, ...] = (0,),
    audit: Path | None = None,
) -> float:
    """Time both commands `runs` times, alternating their order; print and return the ratio."""
    timed(tau, env, cwd, ok)  # warm: the OS page cache, kubectl's discovery cache
    timed(kubectl, env, cwd)
    ours, theirs = [], []
    for i in range(runs):
        if i % 2:
            theirs.append(timed(kubectl, env, cwd))
            ours.append(timed(tau, env, cwd, ok))
        else:
            ours.append(timed(tau, env, cwd, ok))
            theirs.append(timed(kubectl, env, cwd))
    a, b = statistics.median(ours), statistics.median(theirs)
    ratio = a / b
    verdict = "ok" if ratio <= target else f"over the {target:g}x target"
    line = (
        f"{label:<28} tau {a * 1000:6.0f} ms   kubectl {b * 1000:6.0f} ms   "
        f"ratio {ratio:4.2f}x (target <= {target:g}x: {verdict})"
    )
    print(line, flush=True)
    if audit is not None:
        print(f"  requests  tau: {requests_made(audit, tau, env, cwd, ok)}", flush=True)
        print(f"  requests  kubectl: {requests_made(audit, kubectl, env, cwd)}", flush=True)
    return ratio


def requests_made(
    audit: Path, argv: list[str], env: dict[str, str], cwd: Path, ok: tuple[int, ...] = (0,)
) -> str:
    """The requests one run of `argv` made, from the audit log: a count, then each one."""
    import json

    start = audit.stat().st_size
    timed(argv, env, cwd, ok)
    time.sleep(1)  # the audit backend writes an event just after its answer
    with audit.open("rb") as log:
        log.seek(start)
        events = [json.loads(line) for line in log.read().splitlines() if line.strip()]
    done = [e for e in events if e.get("stage") == "ResponseComplete"]
    calls = [
        f"{e.get('verb')} {e.get('requestURI')} {(e.get('responseStatus') or {}).get('code')}"
        f" ({served_ms(e):.0f} ms in the apiserver)"
        for e in done
    ]
    return f"{len(calls)}" + "".join(f"\n    {c}" for c in calls)


def served_ms(event: dict[str, Any]) -> float:
    """How long the apiserver took over one request, from its audit event's timestamps."""
    from datetime import datetime

    received = datetime.fromisoformat(str(event.get("requestReceivedTimestamp")))
    complete = datetime.fromisoformat(str(event.get("stageTimestamp")))
    return (complete - received).total_seconds() * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    if shutil.which("go") is None:
        print("skipped: no Go toolchain for the control plane (see README, make e2e)")
        return 0

    import yaml

    from tests.e2e.conftest import connection_descriptor
    from tests.e2e.controlplane import objects, session
    from tests.e2e.controlplane.build import build_all
    from tests.e2e.controlplane.researcher import tau_binary

    kubectl = str(build_all(quiet=True)["kubectl"])
    # An installed tau has its bytecode compiled; a worktree may not (PYTHONDONTWRITEBYTECODE).
    compileall.compile_dir(str(ROOT / "src"), quiet=1)
    root = Path(tempfile.mkdtemp(prefix="tau-bench-"))
    current = session.start(root / "cluster")
    try:
        plane, researcher = current.plane, current.researcher
        for i in range(args.pods // 100 + 1):
            plane.api.apply(objects.gpu_node(f"cpu-bench-{i}", 0))
        repo = root / "repo"
        (repo / "tau").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        (repo / "tau" / "workspace.connection.yaml").write_text(
            yaml.safe_dump(connection_descriptor(researcher.workspace, researcher.context))
        )
        (root / "home").mkdir()
        env = {
            **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
            "KUBECONFIG": str(researcher.kubeconfig),
            "TAU_CONFIG_DIR": str(repo / ".tau-config"),
            "HOME": str(root / "home"),  # kubectl's discovery cache lives here
            "NO_COLOR": "1",
        }
        tau = tau_binary()
        subprocess.run(
            [tau, "workspace", "connection", "--trust"],
            env=env,
            cwd=repo,
            check=True,
            capture_output=True,
        )
        ns = researcher.namespace
        audit = plane.audit_log if plane.audit_log.is_file() else None
        k = [kubectl, "--context", researcher.context, "-n", ns]
        small = {
            "engine": "job",
            "runtime": {"image": "python:3.12-slim"},
            "compute": {"gpus": 0, "cpu_request": "100m", "memory_request": "64Mi"},
        }
        (repo / "tau" / "bench.py").write_text("print('bench')\n")
        name = "bench-small"
        (repo / "tau" / f"{name}.yaml").write_text(
            yaml.safe_dump({"name": name, "entrypoint": "bench.py", **small})
        )
        subprocess.run([tau, "run", name], env=env, cwd=repo, check=True, capture_output=True)
        wait_for(lambda: job_done(plane.api, ns, name), "the small Job to finish", 300)

        print(f"lifecycle verbs, tau vs kubectl (medians of {args.runs} paired runs)", flush=True)
        # `tau run get` of a run without storage.output reads the Job and says it recorded no
        # durable result (exit 1): the same read as kubectl's.
        for label, ours, theirs, ok in (
            (
                "status (small Job)",
                ["run", "status", name],
                ["get", "jobs,pods,events,workloads", "-o", "json"],
                (0,),
            ),
            ("list", ["run", "list"], ["get", "jobs,rayjobs"], (0,)),
            ("get (small Job)", ["run", "get", name], ["get", "job", name, "-o", "json"], (1,)),
            ("logs (small Job)", ["run", "logs", name], ["logs", f"job/{name}"], (0,)),
        ):
            pair(label, [tau, *ours], [*k, *theirs], env, repo, args.runs, 2.0, ok, audit)
        if args.pods == 0:
            return 0

        wide = {
            "name": "bench-wide",
            "entrypoint": "bench.py",
            **small,
            "runtime": {"image": "python:3.12-slim", "env": {"E2E_OUTCOME": "hold"}},
            "execution": {"launcher": "torchrun", "nodes": args.pods, "processes_per_node": 1},
        }
        (repo / "tau" / "bench-wide.yaml").write_text(yaml.safe_dump(wide))
        subprocess.run(
            [tau, "run", "bench-wide"], env=env, cwd=repo, check=True, capture_output=True
        )
        selector = "batch.kubernetes.io/job-name=bench-wide"
        wait_for(
            lambda: running(plane.api, ns, selector) >= args.pods,
            f"{args.pods} pods Running",
            900,
        )
        pair(
            f"status ({args.pods} pods)",
            [tau, "run", "status", "bench-wide"],
            [*k, "get", "pods", "-l", selector, "-o", "json"],
            env,
            repo,
            args.runs,
            1.5,
            audit=audit,
        )
    finally:
        current.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 0


def wait_for(condition: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what} after {seconds:.0f} s")
        time.sleep(1)


def job_done(api: Any, namespace: str, name: str) -> bool:
    job = api.get("batch/v1", "Job", name, namespace) or {}
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or ()
    )


def running(api: Any, namespace: str, selector: str) -> int:
    pods = api.list("v1", "Pod", namespace, label_selector=selector)
    return sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")


if __name__ == "__main__":
    raise SystemExit(main())
