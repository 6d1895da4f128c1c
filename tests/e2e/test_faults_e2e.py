"""Faults on the real node: the control plane, the node and its runtime fail under running work,
and tau keeps reading them right (`make e2e-faults`).

Each fault is injected by the harness (`tests.e2e.controlplane.faults`) while a real run
executes on the real node; what happens is observed only through tau's commands as a
researcher types them (`tau run status`, `--watch`, `tau run logs -f`, `tau run cancel`).
The runs print numbered ticks until the test drops a stop file on their data claim, so a run
lasts as long as its fault needs and no longer, and every line of its log is accounted for:
none missing, none twice. The suite ends with one summary line (faults injected, runs
completed, log lines lost, duplicate objects, tracebacks, diagnoses naming the wrong layer).
"""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.faults import Faults
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import DATA_CLAIM, console_script
from tests.e2e.test_real_pods import job_config, state, status_doc, write_target

pytestmark = pytest.mark.e2e

#: Prints a numbered tick five times a second until its stop file appears on the data claim
#: (bounded, so a test that died never leaves it running for long), then says how many.
TICKER = """\
import pathlib, signal, sys, time
stop = pathlib.Path("/data/faults/{name}.stop")
told = []
# As PID 1 it would ignore SIGTERM: a cancelled ticker stops at once, or (DRAIN) goes on
# until its stop file, as a trainer writing its last checkpoint does.
signal.signal(signal.SIGTERM, lambda *_: told.append(1) if {drain} else sys.exit(143))
tick = 0
while not stop.exists() and tick < 6000:
    print(f"tick {{tick:05d}}", flush=True)
    tick += 1
    time.sleep(0.2)
print(f"done after {{tick}} ticks", flush=True)
sys.exit(143 if told else 0)
"""
#: The line that says an outage was come through (tau.kube.outage).
AWAY = re.compile(r"^the Kubernetes API was away for \d+(?:s|m\d\ds) \(.+\); .+ carried on$")
#: The real node has 2 CPUs, and its queue as much quota: a holder asking 1200m leaves too
#: little for a second run asking 1000m, which waits for quota until the holder ends.
HOLDER_CPU = {"cpu_request": "1200m", "cpu_limit": "2"}
#: How long a restart may take to come back (the harness's own bound, and some).
BACK = 600
WAITER_CPU = {"cpu_request": "1000m", "cpu_limit": "2"}


@dataclass
class Tally:
    """What the summary line counts."""

    faults: int = 0
    runs_completed: int = 0
    lines_lost: int = 0
    lines_twice: int = 0
    duplicates: int = 0
    tracebacks: int = 0
    wrong_layer: int = 0
    notes: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"fault suite: {self.faults} faults injected, {self.runs_completed} runs completed, "
            f"{self.lines_lost} log lines lost, {self.lines_twice} log lines twice, "
            f"{self.duplicates} duplicate objects, "
            f"{self.tracebacks} tracebacks, {self.wrong_layer} diagnoses naming the wrong layer"
        )


TALLY = Tally()


class _SummaryLine:
    """Prints the tally in pytest's terminal summary, after every test and its teardown."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line("")
        terminalreporter.write_line(TALLY.line())
        for note in TALLY.notes:
            terminalreporter.write_line(f"  {note}")


@pytest.fixture(scope="module", autouse=True)
def summary(request: pytest.FixtureRequest) -> Tally:
    plugins = request.config.pluginmanager
    if not plugins.has_plugin("tau-fault-summary"):
        plugins.register(_SummaryLine(), "tau-fault-summary")
    return TALLY


@pytest.fixture(scope="module")
def faults(plane: Any) -> Faults:
    return Faults(plane)


@pytest.fixture(scope="module")
def claim_folder(admin: Api, researcher: Any) -> Path:
    """The real workspace's data claim, as a folder of this machine (a local volume): the
    test drops the runs' stop files in its `faults/` folder, which the pods see at /data."""
    pv = admin.get("v1", "PersistentVolume", f"{DATA_CLAIM}-{researcher.real_workspace}") or {}
    folder = Path(pv["spec"]["local"]["path"]) / "faults"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o777)
    return folder


# ---------------------------------------------------------------------- helpers


#: Commands left running by the test under way, stopped at its end whatever happened.
LEFT_RUNNING: list[Background] = []


@pytest.fixture(autouse=True)
def _stop_left_running() -> Iterator[None]:
    yield
    while LEFT_RUNNING:
        LEFT_RUNNING.pop().stop()


class Background:
    """A tau command left running, as in a second terminal; its output kept in files."""

    def __init__(self, shell: Shell, folder: Path, tag: str, *argv: str) -> None:
        self.argv = argv
        self.out_path, self.err_path = folder / f"{tag}.out", folder / f"{tag}.err"
        self._out: IO[bytes] = self.out_path.open("wb")
        self._err: IO[bytes] = self.err_path.open("wb")
        self.proc = subprocess.Popen(
            [console_script("tau"), *argv],
            env=shell.env,
            cwd=shell.cwd,
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
        )
        LEFT_RUNNING.append(self)

    @property
    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout)
        finally:
            self._out.close()
            self._err.close()
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self._out.close()
        self._err.close()


def ticks(text: str) -> list[int]:
    return [int(m) for m in re.findall(r"^tick (\d{5})$", text, flags=re.M)]


def account_for(log: str, who: str) -> None:
    """Every tick of the run's log exactly once, in order, up to its own count; tallied."""
    seen = ticks(log)
    done = re.search(r"^done after (\d+) ticks$", log, flags=re.M)
    assert done, f"{who}: the log has no final line:\n{log[-2000:]}"
    total = int(done.group(1))
    missing = sorted(set(range(total)) - set(seen))
    twice = len(seen) - len(set(seen))
    TALLY.lines_lost += len(missing)
    TALLY.lines_twice += twice
    assert not missing and not twice, f"{who}: missing {missing[:20]}, {twice} lines twice"
    assert seen == sorted(seen), f"{who}: ticks out of order"


def clean_stderr(text: str, who: str, *, outages: int) -> None:
    """No traceback, and exactly `outages` lines saying the API was away (and nothing else)."""
    if "Traceback" in text:
        TALLY.tracebacks += 1
    assert "Traceback" not in text, f"{who}:\n{text}"
    said = [line for line in text.splitlines() if line.strip()]
    away = [line for line in said if AWAY.match(line)]
    assert len(away) == outages, f"{who}: expected {outages} outage line(s):\n{text}"


def start_ticker(
    shell: Shell,
    researcher: Any,
    name: str,
    cpu: dict[str, str] | None = None,
    *,
    drain: bool = False,
) -> None:
    config = job_config(name, researcher.image, compute=dict(cpu or HOLDER_CPU))
    write_target(shell, config, TICKER.format(name=name, drain=drain))
    shell.ok("run", name)


def ticking(shell: Shell, name: str, at_least: int = 1, timeout: float = 600) -> int:
    """Until the run's log (read as a researcher does) holds `at_least` ticks; the count."""

    def count() -> int:
        proc = shell.tau("run", "logs", name, "--tail", "-1")
        found = len(ticks(proc.stdout)) if proc.returncode == 0 else 0
        return found if found >= at_least else 0

    found: int = wait_for(f"{name} to tick {at_least} times", count, timeout=timeout)
    return found


def finish(shell: Shell, folder: Path, name: str, timeout: float = 600) -> None:
    """Drop the run's stop file and wait until status reads it succeeded."""
    (folder / f"{name}.stop").write_text("stop\n")
    wait_for(f"{name} to succeed", lambda: state(shell, name) == "succeeded", timeout=timeout)
    TALLY.runs_completed += 1


def one_of_each(admin: Api, namespace: str, name: str) -> None:
    """The run is one Job with one Kueue Workload, whatever the fault did: counted."""
    jobs = [j for j in admin.list("batch/v1", "Job", namespace) if j["metadata"]["name"] == name]
    uids = {j["metadata"]["uid"] for j in jobs}
    workloads = [
        w
        for w in admin.list("kueue.x-k8s.io/v1beta2", "Workload", namespace)
        if (w["metadata"].get("labels") or {}).get("kueue.x-k8s.io/job-uid") in uids
    ]
    extra = max(0, len(jobs) - 1) + max(0, len(workloads) - len(jobs))
    TALLY.duplicates += extra
    assert len(jobs) == 1 and len(workloads) == 1, (jobs, workloads)


def has_workload(admin: Api, namespace: str, name: str) -> bool:
    job = admin.get("batch/v1", "Job", name, namespace) or {}
    uid = (job.get("metadata") or {}).get("uid")
    selector = f"kueue.x-k8s.io/job-uid={uid}"
    return bool(uid) and bool(
        admin.list("kueue.x-k8s.io/v1beta2", "Workload", namespace, label_selector=selector)
    )


def apiserver_refuses(plane: Any) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", plane.ports.apiserver), timeout=1):
            return False
    except OSError:
        return True


def diagnostics(shell: Shell, name: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = status_doc(shell, name).get("diagnostics") or []
    return found


def diagnosed(shell: Shell, name: str, code: str, owner: str, timeout: float) -> dict[str, Any]:
    """Until status gives the run the diagnostic `code`; the first such, its owner checked
    (a wrong one is tallied)."""
    said: list[dict[str, Any]] = wait_for(
        f"status to say {code}",
        lambda: [d for d in diagnostics(shell, name) if d["code"] == code],
        timeout=timeout,
    )
    if said[0]["owner"] != owner:
        TALLY.wrong_layer += 1
    assert said[0]["owner"] == owner, said
    return said[0]


def cleanup(shell: Shell, *names: str) -> None:
    for name in names:
        shell.tau("run", "cancel", name, timeout=300)


# ---------------------------------------------------------------------- 1, 2: the control plane


@pytest.mark.parametrize("component", ["apiserver", "etcd"])
def test_watch_and_followed_logs_carry_on_across_a_control_plane_restart(
    component: str,
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
    tmp_path: Path,
) -> None:
    """A run holds the node's quota and ticks under `tau run logs -f`; a second run waits for
    quota under `tau run status --watch`. The apiserver (or etcd) stops for 20 s and comes
    back on the same data. Both commands carry on: the log has every tick once, the watch
    follows the waiting run until it starts; each says once that the API was away."""
    holder, waiter = f"f{component[:3]}-hold", f"f{component[:3]}-wait"
    submitted = f"f{component[:3]}-sub"
    try:
        start_ticker(real_repo, researcher, holder)
        wait_for("the holder to run", lambda: state(real_repo, holder) == "running", timeout=600)
        ticking(real_repo, holder)
        logs = Background(real_repo, tmp_path, "logs", "run", "logs", holder, "-f", "--tail", "-1")
        config = job_config(waiter, researcher.image, compute=dict(WAITER_CPU))
        write_target(real_repo, config, "print('the waiting run ran', flush=True)\n")
        real_repo.ok("run", waiter)
        wait_for("the waiter to queue", lambda: state(real_repo, waiter) == "queued", timeout=120)
        watch = Background(
            real_repo,
            tmp_path,
            "watch",
            "run",
            "status",
            waiter,
            "--watch",
            "--interval",
            "1",
        )
        wait_for("the watch's first frame", lambda: "watching " in watch.stdout, timeout=120)
        wait_for("the followed log to tick", lambda: len(ticks(logs.stdout)) >= 5, timeout=120)

        restarted: list[Any] = []
        restart = threading.Thread(
            target=lambda: restarted.append(
                faults.restart_apiserver(down_for=20)
                if component == "apiserver"
                else faults.restart_etcd(down_for=20)
            ),
            daemon=True,
        )
        restart.start()
        if component == "apiserver":
            # `tau run` at that moment says it could not submit, and submits once when the
            # API is back.
            wait_for("the apiserver to be down", lambda: apiserver_refuses(faults.plane))
            config = job_config(submitted, researcher.image, compute=dict(WAITER_CPU))
            write_target(real_repo, config, "print('submitted once', flush=True)\n")
            refused = real_repo.tau("run", submitted)
            assert refused.returncode != 0, (refused.stdout, refused.stderr)
            assert "Traceback" not in refused.stderr, refused.stderr
            assert "Kubernetes API server" in refused.stderr, refused.stderr
        restart.join(BACK)
        assert restarted, "the restart did not finish"
        outage = restarted[0]
        if component == "apiserver":
            real_repo.ok("run", submitted)
            wait_for(
                "Kueue's Workload of the run submitted after the outage",
                lambda: has_workload(admin, researcher.real_workspace, submitted),
                timeout=120,
            )
            one_of_each(admin, researcher.real_workspace, submitted)
        TALLY.faults += 1
        TALLY.notes.append(f"{outage.fault}: the API away {outage.away:.0f}s")
        at_return = len(ticks(logs.stdout))
        # The followed log carries on past the restart (the holder ticks five times a second).
        wait_for(
            "the followed log to carry on",
            lambda: len(ticks(logs.stdout)) >= at_return + 25,
            timeout=300,
        )
        assert watch.proc.poll() is None, (watch.stdout[-2000:], watch.stderr)
        finish(real_repo, claim_folder, holder)
        assert logs.wait(300) == 0, logs.stderr
        account_for(logs.stdout, f"tau run logs -f {holder}")
        # The holder's quota is free: the waiter is admitted and starts; the watch ends there.
        assert watch.wait(600) == 0, (watch.stdout[-3000:], watch.stderr)
        last = watch.stdout.rsplit("watching ", 1)[-1]
        assert "[x] Container start" in last or "succeeded" in last, last
        wait_for("the waiter to succeed", lambda: state(real_repo, waiter) == "succeeded")
        TALLY.runs_completed += 1
        # An apiserver restart cuts every connection: each command says so once. With etcd
        # away the apiserver stays up and serves watches from its cache, so a command that
        # made no request needing etcd in those 20 s has nothing to say; never more than once.
        for who, err in (("logs -f", logs.stderr), ("status --watch", watch.stderr)):
            said = len([line for line in err.splitlines() if AWAY.match(line)])
            clean_stderr(err, who, outages=1 if component == "apiserver" else min(said, 1))
        assert "the waiting run ran" in real_repo.ok("run", "logs", waiter)
        one_of_each(admin, researcher.real_workspace, waiter)
    finally:
        cleanup(real_repo, holder, waiter, submitted)


# ---------------------------------------------------------------------- 9: cancel under a fault


def test_a_cancel_while_the_apiserver_restarts_finishes_and_says_the_outage(
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
    tmp_path: Path,
) -> None:
    """`tau run cancel` has deleted the Job and waits for its pod, which drains (it goes on
    after SIGTERM until its stop file); the apiserver stops for 20 s under that wait. The
    cancel carries on when it is back, and finishes: the pod gone, the quota reclaimed."""
    name = "fcan"
    try:
        start_ticker(real_repo, researcher, name, drain=True)
        wait_for("the run to run", lambda: state(real_repo, name) == "running", timeout=600)
        ticking(real_repo, name)
        cancel = Background(real_repo, tmp_path, "cancel", "run", "cancel", name)
        wait_for(
            "the cancel to wait for the pod",
            lambda: "waiting for fcan to release compute" in cancel.stderr,
            timeout=120,
        )
        outage = faults.restart_apiserver(down_for=20)
        TALLY.faults += 1
        TALLY.notes.append(f"cancel under {outage.fault}: the API away {outage.away:.0f}s")
        assert cancel.proc.poll() is None, (cancel.stdout, cancel.stderr)
        # The pod finishes draining; the cancel sees it gone and says it is complete.
        (claim_folder / f"{name}.stop").write_text("stop\n")
        assert cancel.wait(400) == 0, (cancel.stdout, cancel.stderr)
        assert cancel.stdout.startswith(f"cancelled Job {researcher.real_workspace}/{name}: "), (
            cancel.stdout
        )
        clean_stderr(cancel.stderr, "tau run cancel", outages=1)
        ns = researcher.real_workspace
        assert not admin.list(
            "v1", "Pod", ns, label_selector=f"batch.kubernetes.io/job-name={name}"
        )
        assert admin.get("batch/v1", "Job", name, ns) is None
    finally:
        cleanup(real_repo, name)


# ---------------------------------------------------------------------- 3: the kubelet


def test_a_stopped_kubelet_reads_as_node_not_ready_owned_by_the_platform(
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
) -> None:
    """The kubelet stops for 90 s under a running Job: its container goes on ticking. Once the
    node controller marks the node NotReady (its grace period, 50 s by default, is kept),
    status says the node is NotReady and the platform owns it; the run is still running.
    When the kubelet returns the run completes and reads Succeeded with no warning left."""
    name = "fkub"
    try:
        start_ticker(real_repo, researcher, name)
        wait_for("the run to run", lambda: state(real_repo, name) == "running", timeout=600)
        ticking(real_repo, name)
        stopped_at = faults.stop_kubelet()
        TALLY.faults += 1
        lost = wait_for(
            "status to say the node is NotReady",
            lambda: [d for d in diagnostics(real_repo, name) if d["code"] == "NodeNotReady"],
            timeout=180,
        )
        doc = status_doc(real_repo, name)
        assert doc["status"]["state"] == "running", doc["status"]
        wrong = [
            d
            for d in doc.get("diagnostics") or []
            if d["severity"] in ("error", "warning") and d["owner"] != "platform"
        ]
        TALLY.wrong_layer += len(wrong)
        assert lost[0]["owner"] == "platform" and not wrong, doc.get("diagnostics")
        text = real_repo.tau("run", "status", name).stdout
        assert "node tau-node-0 is NotReady" in text, text
        assert "fix: platform" in text, text
        # The kubelet stays away 90 s in all (the fault's duration), then comes back.
        time.sleep(max(0.0, 90 - (time.monotonic() - stopped_at)))
        outage = faults.start_kubelet(stopped_at)
        TALLY.notes.append(f"{outage.fault}: {outage.away:.0f}s")
        finish(real_repo, claim_folder, name)
        left = [d for d in diagnostics(real_repo, name) if d["severity"] in ("error", "warning")]
        assert not left, left
        # The container was never restarted: it ran through the kubelet's absence.
        ran_through(real_repo, researcher, admin, name, "the kubelet")
    finally:
        cleanup(real_repo, name)


def ran_through(real_repo: Shell, researcher: Any, admin: Api, name: str, what: str) -> None:
    """The run's one container was never restarted, its log is whole, and it made one Job and
    one Workload: it ran through the fault."""
    (pod,) = admin.list("v1", "Pod", researcher.real_workspace, label_selector=f"job-name={name}")
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 0
    account_for(real_repo.ok("run", "logs", name, "--tail", "-1"), f"{name} after {what}")
    one_of_each(admin, researcher.real_workspace, name)


# ---------------------------------------------------------------------- 4: containerd


def test_a_containerd_restart_keeps_the_containers_and_status_reports_no_failure(
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
) -> None:
    """containerd restarts under a running Job: its shim keeps the container, which goes on
    ticking; every status read while containerd comes back and the run carries on says
    running, with no error; the run completes with its whole log."""
    name = "fctd"
    try:
        start_ticker(real_repo, researcher, name)
        wait_for("the run to run", lambda: state(real_repo, name) == "running", timeout=600)
        before = ticking(real_repo, name)
        outage = faults.restart_containerd()
        TALLY.faults += 1
        TALLY.notes.append(f"{outage.fault}: {outage.away:.0f}s")
        failures: list[Any] = []

        def carried_on() -> bool:
            doc = status_doc(real_repo, name)
            bad = [d for d in doc.get("diagnostics") or [] if d["severity"] == "error"]
            if doc["status"]["state"] not in ("running",) or bad:
                failures.append((doc["status"], bad))
            proc = real_repo.tau("run", "logs", name, "--tail", "-1")
            return len(ticks(proc.stdout)) >= before + 25

        wait_for("the run to tick on after the restart", carried_on, timeout=300)
        TALLY.wrong_layer += len(failures)
        assert not failures, failures
        finish(real_repo, claim_folder, name)
        ran_through(real_repo, researcher, admin, name, "containerd")
    finally:
        cleanup(real_repo, name)


# ---------------------------------------------------------------------- 7: the node cut off


def test_a_node_cut_off_reads_as_node_not_ready_and_its_log_is_whole_after(
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
) -> None:
    """The node's link goes down for 60 s under a running Job (its kubelet cannot reach the
    apiserver, the apiserver cannot reach it): the same reads as a stopped kubelet, and once
    the link is back the run completes with every line of its log. The node controller marks
    the node NotReady after its grace period (50 s): when that comes later than 60 s on a
    busy machine, the link stays down until status has said so."""
    name = "flnk"
    try:
        start_ticker(real_repo, researcher, name)
        wait_for("the run to run", lambda: state(real_repo, name) == "running", timeout=600)
        ticking(real_repo, name)
        cut_at = faults.link_down()
        TALLY.faults += 1
        try:
            lost = wait_for(
                "status to say the node is NotReady",
                lambda: [d for d in diagnostics(real_repo, name) if d["code"] == "NodeNotReady"],
                timeout=180,
            )
            doc = status_doc(real_repo, name)
            wrong = [
                d
                for d in doc.get("diagnostics") or []
                if d["severity"] in ("error", "warning") and d["owner"] != "platform"
            ]
            TALLY.wrong_layer += len(wrong)
            assert lost[0]["owner"] == "platform" and not wrong, doc.get("diagnostics")
            assert doc["status"]["state"] == "running", doc["status"]
            time.sleep(max(0.0, 60 - (time.monotonic() - cut_at)))
        finally:
            outage = faults.link_up(cut_at)
        TALLY.notes.append(f"{outage.fault}: {outage.away:.0f}s")
        finish(real_repo, claim_folder, name)
        left = [d for d in diagnostics(real_repo, name) if d["severity"] in ("error", "warning")]
        assert not left, left
        account_for(real_repo.ok("run", "logs", name, "--tail", "-1"), f"{name} after the link")
        one_of_each(admin, researcher.real_workspace, name)
    finally:
        cleanup(real_repo, name)


# ---------------------------------------------------------------------- 8: the data claim full

#: Writes 8 MiB checkpoints to the data claim until the volume is full: the write fails with
#: ENOSPC, Python prints it, and the process exits 1.
FILLS_THE_CLAIM = """\
import os, pathlib
out = pathlib.Path("/data/ckpt")
out.mkdir(parents=True, exist_ok=True)
for step in range(1000):
    with open(out / f"step-{step}.pt", "wb") as ckpt:
        ckpt.write(os.urandom(8 * 1024 * 1024))
        ckpt.flush()
        os.fsync(ckpt.fileno())
    print(f"checkpoint step {step} written", flush=True)
"""


def test_a_full_data_claim_fails_the_run_in_its_own_words_and_names_storage(
    real_repo: Shell, researcher: Any, faults: Faults
) -> None:
    """The run's data claim is a 64 MiB volume; its checkpoints fill it. The run fails with
    the reason its process gave, quoted from its last log lines (`No space left on
    device`); status names storage as the layer and the platform as the owner; the
    checkpoints written before are in its log as written."""
    name, claim = "ffull", "tiny-data"
    faults.small_claim(researcher.real_workspace, claim, "64Mi")
    TALLY.faults += 1
    try:
        config = job_config(
            name, researcher.image, compute=dict(WAITER_CPU), storage={"data_pvc": claim}
        )
        write_target(real_repo, config, FILLS_THE_CLAIM)
        real_repo.ok("run", name)
        wait_for("the run to fail", lambda: state(real_repo, name) == "failed", timeout=600)
        found = diagnostics(real_repo, name)
        full = [d for d in found if d["code"] == "StorageFull"]
        wrong = [d for d in found if d["severity"] == "error" and d["owner"] != "platform"]
        TALLY.wrong_layer += len(wrong) + (0 if full else 1)
        assert full and not wrong, found
        assert full[0]["owner"] == "platform", full
        assert full[0]["message"].startswith("storage: "), full
        assert "No space left on device" in full[0]["message"], full
        text = real_repo.tau("run", "status", name).stdout
        assert "No space left on device" in text and "fix: platform" in text, text
        logs = real_repo.ok("run", "logs", name)
        written = re.findall(r"^checkpoint step (\d+) written$", logs, flags=re.M)
        assert written and [int(w) for w in written] == list(range(len(written))), logs[-2000:]
        assert "No space left on device" in logs.splitlines()[-1], logs[-2000:]
    finally:
        cleanup(real_repo, name)


# ---------------------------------------------------------------------- 5: memory pressure

#: Writes its checkpoint, then takes memory in 64 MiB steps (every page touched) up to
#: HOLD_MIB and holds it, more than the bounded node lets its pods use before the kubelet
#: evicts; a retried attempt resumes from the checkpoint and ends without taking any.
HOGS_THE_NODE = """\
import os, pathlib, time
ckpt = pathlib.Path(os.environ.get("TAU_RESUME_FROM") or "/data/checkpoints/finetunes/{name}")
state = ckpt / "step"
if os.environ.get("TAU_RETRY_ATTEMPT") and state.exists():
    reason = os.environ.get("TAU_RETRY_REASON")
    print(f"resumed from step {{state.read_text()}} after {{reason}}", flush=True)
    raise SystemExit(0)
ckpt.mkdir(parents=True, exist_ok=True)
state.write_text("7")
print("checkpoint written at step 7", flush=True)
time.sleep(15)  # a trainer's warm-up; tau, watching, is following this log by then
held = []
for mib in range(64, {hold_mib} + 1, 64):
    chunk = bytearray(64 << 20)
    chunk[::4096] = b"\\x01" * (len(chunk) // 4096)
    held.append(chunk)
    print(f"holding {{mib}} MiB", flush=True)
    time.sleep(0.1)
time.sleep(900)  # until the kubelet evicts it
print("never evicted", flush=True)
raise SystemExit(3)
"""
#: The bounded node: its pods may use 3 GiB, and the kubelet evicts once less than 1 GiB of
#: that is left; the run holds 2.5 GiB, over the threshold and under the cgroup's cap (so
#: the kubelet evicts it before the kernel's OOM killer would kill it).
PODS_MEMORY, EVICT_BELOW, HOLD_MIB = "3Gi", "1Gi", 2560


def test_memory_pressure_evicts_the_run_in_the_kubelets_words_and_the_retry_resumes(
    real_repo: Shell, researcher: Any, admin: Api, faults: Faults, tmp_path: Path
) -> None:
    """The node's kubelet runs with a hard memory threshold the run can reach (its pods
    bounded to 3 GiB, evicted below 1 GiB left). A run with the default retry_on writes
    its checkpoint and holds 2.5 GiB: the kubelet evicts it; status says so in the
    kubelet's words (memory, the threshold, the container that used the most) and names
    the platform; the retry resumes from the checkpoint and the run succeeds, as one Job
    and one Workload; the evicted attempt's log is kept (tau's own copy: the node removed
    its container)."""
    name = "fevict"
    try:
        with faults.bounded_memory(PODS_MEMORY, EVICT_BELOW):
            config = job_config(
                name,
                researcher.image,
                compute={**WAITER_CPU, "memory_request": "256Mi", "memory_limit": "2900Mi"},
                resilience={"max_retries": 1},
            )
            write_target(real_repo, config, HOGS_THE_NODE.format(name=name, hold_mib=HOLD_MIB))
            run = Background(real_repo, tmp_path, "run", "run", name)
            TALLY.faults += 1
            message = diagnosed(real_repo, name, "Evicted", "platform", timeout=600)["message"]
            assert "was evicted by node tau-node-0: " in message, message
            assert "The node was low on resource: memory." in message, message
            assert "Threshold quantity: 1Gi" in message, message
            assert re.search(r"Container main was using \d+\w+, request is 256Mi", message), message
            code = run.wait(900)
            out = run.stdout + run.stderr
            assert code == 0, out
            clean_stderr(run.stderr, "tau run", outages=0)
            assert "attempt 1/1 failed (Evicted)" in out, out
            assert "completed successfully" in out, out
        TALLY.runs_completed += 1
        # Read as soon as the kubelet is back on its own configuration: a kubelet that has
        # just restarted does not know its ended pods yet, and tau waits for it to.
        logs = real_repo.ok("run", "logs", name)
        assert "resumed from step 7 after Evicted" in logs, logs[-2000:]
        assert state(real_repo, name) == "succeeded"
        # The evicted attempt: a kubelet removes an evicted pod's containers, their logs with
        # them, before tau keeps the attempt; tau followed the log while it watched, and its
        # copy is what was kept, up to the eviction.
        first = real_repo.tau("run", "logs", name, "--attempt", "0")
        assert first.returncode == 0, first.stderr
        assert "checkpoint written at step 7" in first.stdout, first.stdout[-2000:]
        assert "holding 64 MiB" in first.stdout, first.stdout[-2000:]
        assert "never evicted" not in first.stdout, first.stdout[-2000:]
        one_of_each(admin, researcher.real_workspace, name)
    finally:
        cleanup(real_repo, name)


# ---------------------------------------------------------------------- 6: Kueue preemption

#: A ticker that keeps its last tick on the data claim and starts again after it: a run that
#: resumes from its checkpoint. It ends on SIGTERM at once (Kueue's eviction deletes its pod).
RESUMING_TICKER = """\
import pathlib, signal, sys, time
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
stop = pathlib.Path("/data/faults/{name}.stop")
ckpt = pathlib.Path("/data/faults/{name}.ckpt")
tick = 0
if ckpt.exists():
    tick = int(ckpt.read_text()) + 1
    print(f"resumed from tick {{tick - 1}}", flush=True)
while not stop.exists() and tick < 6000:
    print(f"tick {{tick:05d}}", flush=True)
    ckpt.write_text(str(tick))
    tick += 1
    time.sleep(0.2)
print(f"done after {{tick}} ticks", flush=True)
"""


def test_a_preempted_run_names_its_preemptor_waits_for_quota_and_resumes(
    real_repo: Shell,
    researcher: Any,
    admin: Api,
    faults: Faults,
    claim_folder: Path,
) -> None:
    """A running run holds the real queue's quota; a run of the `priority` tier asks for it.
    Kueue preempts the running one (the queue preempts lower priority within it): its status
    says so in Kueue's words and names the preemptor; it waits for quota while the preemptor
    runs; once the preemptor is done it is admitted again and resumes from its checkpoint."""
    from tests.e2e.controlplane.researcher import REAL_QUEUE

    low, high = "fpre-low", "fpre-high"
    queue = admin.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", REAL_QUEUE) or {}
    before = dict(queue["spec"].get("preemption") or {})
    queue["spec"]["preemption"] = {**before, "withinClusterQueue": "LowerPriority"}
    admin.apply(queue)
    try:
        config = job_config(low, researcher.image, compute=dict(HOLDER_CPU))
        write_target(real_repo, config, RESUMING_TICKER.format(name=low))
        real_repo.ok("run", low)
        wait_for("the run to run", lambda: state(real_repo, low) == "running", timeout=600)
        ticking(real_repo, low, at_least=10)
        urgent = job_config(high, researcher.image, compute=dict(HOLDER_CPU))
        urgent["policy"] = {**urgent["policy"], "priority_tier": "priority"}
        write_target(real_repo, urgent, TICKER.format(name=high, drain=False))
        real_repo.ok("run", high)
        TALLY.faults += 1
        message = diagnosed(real_repo, low, "Preempted", "queue owner", timeout=300)["message"]
        assert "Preempted to accommodate a workload" in message, message
        assert "due to prioritization in the ClusterQueue" in message, message
        assert f"preempted for Job {researcher.real_workspace}/{high}" in message, message
        wait_for("the preemptor to run", lambda: state(real_repo, high) == "running", timeout=600)
        # The preempted run waits for quota while the preemptor holds it.
        assert state(real_repo, low) == "queued"
        finish(real_repo, claim_folder, high)
        wait_for("the run to run again", lambda: state(real_repo, low) == "running", timeout=600)
        wait_for(
            "the run to resume from its checkpoint",
            lambda: "resumed from tick " in real_repo.tau("run", "logs", low).stdout,
            timeout=300,
        )
        finish(real_repo, claim_folder, low)
        logs = real_repo.ok("run", "logs", low, "--tail", "-1")
        resumed = int(re.findall(r"^resumed from tick (\d+)$", logs, flags=re.M)[-1])
        assert f"tick {resumed + 1:05d}" in logs, logs[-2000:]
    finally:
        cleanup(real_repo, low, high)
        queue = admin.get("kueue.x-k8s.io/v1beta2", "ClusterQueue", REAL_QUEUE) or {}
        if before:
            queue["spec"]["preemption"] = before
        else:
            queue["spec"].pop("preemption", None)
        admin.apply(queue)
