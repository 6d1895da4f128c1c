"""`taugrid-portal` against the real control plane: `portal serve` as a subprocess reading the
live cluster, its boards in Debian's headless Chromium (runs, Jobs/Queue with a workload Kueue
holds back, the fake GPU nodes, a RayJob's RayCluster), a screenshot, the researcher's
namespaced view that degrades board by board, and `experiment capture run-profile` and
`autocapture` recording a finished run's outcome with its Kueue and pod facts in the store the
running portal serves as Stellar.

The portal that shows the whole cluster runs as the cluster admin: the Nodes board lists Nodes
and the Jobs / Queue board lists ClusterQueues, both cluster-scoped kinds the researcher's role
(tau-researcher-v1, bound in one namespace) cannot read. Run as the researcher, the portal keeps
the Runs and Ray boards and names the forbidden list on the others; the test proves that too.
"""

from __future__ import annotations

import json
import re
import signal
import struct
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tau.k8s.quantity import parse_quantity
from tau.portal.web.boards import KUSTO_WARNING

# The browser suite's fixtures: Debian's Chromium (skipped outside CI when missing, failed in CI)
# and a page that records requests and errors.
from tests.browser import conftest as browser_suite
from tests.browser.conftest import Watched
from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.cluster import ADMIN_CONTEXT
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import console_script, run_console
from tests.e2e.test_job_lifecycle import gpu_job, job_pods, status_doc, write_target
from tests.e2e.test_job_scheduling import torchrun

pytestmark = pytest.mark.e2e

HELD, DONE, WAITING, RAY = "portal-held", "portal-done", "portal-waiting", "portal-ray"
PROJECT, GROUP = "portal-e2e", "boards"
EXPERIMENT = {"project": PROJECT, "name": PROJECT, "group": GROUP}
#: The GPU inventory: the two KWOK GPU nodes and the real node (which advertises the pool's GPUs).
GPU_NODES = ("gpu-h100-0", "gpu-h100-1", "tau-node-0")
browser = browser_suite.browser
watched = browser_suite.watched
#: Straight to the loopback server, whatever proxy the environment names.
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
SERVING = re.compile(r"serving taugrid-portal portal at (http://127\.0\.0\.1:\d+)/portal")


def portal_cli(
    env: dict[str, str], cwd: Path, *argv: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return run_console("taugrid-portal", list(argv), env, cwd=cwd, timeout=timeout)


def portal_ok(env: dict[str, str], cwd: Path, *argv: str) -> str:
    proc = portal_cli(env, cwd, *argv)
    assert proc.returncode == 0, (
        f"taugrid-portal {' '.join(argv)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )
    return proc.stdout


# --- the portal server ------------------------------------------------------------------------


@dataclass
class Portal:
    url: str
    process: subprocess.Popen[bytes]
    stderr: Path

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with NO_PROXY.open(self.url + path, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.read()

    def json(self, path: str) -> tuple[int, Any]:
        status, body = self.get(path)
        return status, json.loads(body)

    def board(self, name: str) -> dict[str, Any]:
        status, doc = self.json(f"/api/portal/{name}")
        assert status == 200, (name, status, doc)
        board: dict[str, Any] = doc
        return board

    def log(self) -> str:
        return self.stderr.read_text()


@contextmanager
def serve_portal(env: dict[str, str], cwd: Path, folder: Path, *argv: str) -> Iterator[Portal]:
    """`taugrid-portal portal serve` on a free loopback port (port 0: the server picks one and
    prints it); stopped with SIGTERM when the block ends, and killed if it does not stop."""
    folder.mkdir(parents=True, exist_ok=True)
    stderr = folder / "portal.stderr"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            [console_script("taugrid-portal"), "portal", "serve", "--addr", "127.0.0.1:0", *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=sink,
        )
    try:

        def announced() -> str | None:
            text = stderr.read_text()
            if process.poll() is not None:
                raise AssertionError(f"portal serve exited {process.returncode}:\n{text}")
            found = SERVING.search(text)
            return found.group(1) if found else None

        portal = Portal(wait_for("the portal to listen", announced, timeout=60), process, stderr)
        healthy = (200, {"status": "ok"})
        wait_for("the portal to answer", lambda: portal.json("/healthz") == healthy)
        yield portal
    finally:
        stop(process)


def stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    return int(process.returncode)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


# --- the cluster's runs -------------------------------------------------------------------------


def workloads_of(admin: Api, ns: str, owner: str) -> list[dict[str, Any]]:
    return [
        w
        for w in admin.list("kueue.x-k8s.io/v1beta2", "Workload", ns)
        if any(o["name"] == owner for o in w["metadata"].get("ownerReferences") or [])
    ]


def cancel(repo: Shell, name: str) -> None:
    proc = repo.tau("run", "cancel", name)
    assert proc.returncode == 0, f"tau run cancel {name}: {proc.stdout}{proc.stderr}"


def state_of(repo: Shell, name: str) -> str:
    return str(status_doc(repo, name)["status"]["state"])


def job(name: str, outcome: str | None) -> dict[str, Any]:
    return gpu_job(name, outcome, experiment=EXPERIMENT)


@pytest.fixture(scope="module")
def done(repo: Shell) -> str:
    """A Job that ran to success (it keeps no quota)."""
    write_target(repo, DONE, job(DONE, None))
    repo.ok("run", DONE)
    wait_for(f"{DONE} to succeed", lambda: state_of(repo, DONE) == "succeeded")
    return DONE


@pytest.fixture(scope="module")
def held(repo: Shell) -> Iterator[str]:
    """A Job that stays Running on a GPU node until the module ends (then it is cancelled)."""
    write_target(repo, HELD, job(HELD, "hold"))
    repo.ok("run", HELD)
    try:
        wait_for(f"{HELD} to run", lambda: state_of(repo, HELD) == "running", timeout=180)
        yield HELD
    finally:
        cancel(repo, HELD)


@pytest.fixture(scope="module")
def ray(repo: Shell, admin: Api, researcher: Any, held: str) -> Iterator[str]:
    """A RayJob held Running (after the held Job, so Kueue admits both before the waiting run):
    KubeRay makes its RayCluster, and the fake Ray head answers for it."""
    ns = researcher.namespace
    config = {
        "name": RAY,
        "engine": "rayjob",
        "entrypoint": f"{RAY}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2", "env": {"E2E_OUTCOME": "hold"}},
        "compute": {"workers": 1, "gpus_per_worker": 0},
        "policy": {"preset": "azure.research.training.l"},
        "experiment": EXPERIMENT,
    }
    write_target(repo, RAY, config)
    repo.ok("run", RAY)
    try:
        wait_for(
            f"the RayCluster of {RAY}",
            lambda: [
                c
                for c in admin.list("ray.io/v1", "RayCluster", ns)
                if (c["metadata"].get("labels") or {}).get("tau.azure.com/run-id") == RAY
                and (c.get("status") or {}).get("state") == "ready"
            ],
            timeout=180,
        )
        yield RAY
    finally:
        cancel(repo, RAY)


@pytest.fixture
def waiting(repo: Shell, admin: Api, researcher: Any, held: str, ray: str) -> Iterator[str]:
    """All 16 GPUs in one run while the held runs keep some: Kueue holds its Workload back."""
    ns = researcher.namespace
    write_target(repo, WAITING, {**torchrun(WAITING), "experiment": EXPERIMENT})
    repo.ok("run", WAITING)
    try:
        wait_for(
            f"Kueue to hold {WAITING} back for quota",
            lambda: [
                w
                for w in workloads_of(admin, ns, WAITING)
                if "insufficient unused quota"
                in next(
                    (
                        c.get("message") or ""
                        for c in (w.get("status") or {}).get("conditions") or []
                        if c["type"] == "QuotaReserved"
                    ),
                    "",
                )
            ],
        )
        yield WAITING
    finally:
        # Cancelled first (fixture teardown runs before the held runs'), so it never runs.
        cancel(repo, WAITING)


@pytest.fixture(scope="module")
def store(repo: Shell, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh experiment store for the portal's Stellar and the capture commands."""
    root = tmp_path_factory.mktemp("portal-store") / "store"
    out = portal_ok(repo.env, repo.cwd, "experiment", "init", PROJECT, "--store", str(root))
    assert out.startswith(f"initialized experiment store {root}\n"), out
    return root


@pytest.fixture(scope="module")
def portal(
    researcher: Any, store: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Portal]:
    """The whole-cluster portal: the admin's kubeconfig and context, outside any repository."""
    folder = tmp_path_factory.mktemp("portal-admin")
    with serve_portal(
        dict(researcher.admin_env),
        folder,
        folder,
        "--context",
        ADMIN_CONTEXT,
        "--store",
        str(store),
    ) as served:
        yield served


# --- the tests ----------------------------------------------------------------------------------


def test_the_portal_boards_show_the_live_cluster_in_chromium(
    portal: Portal,
    watched: Watched,
    done: str,
    held: str,
    ray: str,
    waiting: str,
    admin: Api,
    researcher: Any,
    tmp_path: Path,
) -> None:
    ns = researcher.namespace
    log = portal.log()
    assert "Jobs, Ray, Nodes, and Runs boards disabled" not in log, log
    # The line names no flag: this build has no --kusto-endpoint to point at.
    assert KUSTO_WARNING in log
    assert "--kusto" not in log

    # The JSON boards first: what the page must show, from the server's own reads.
    pending_wl = workloads_of(admin, ns, WAITING)[0]["metadata"]["name"]

    def runs_settled() -> dict[str, dict[str, Any]] | None:
        rows = {r["name"]: r for r in portal.board("runs")["runs"] if r["namespace"] == ns}
        want = {DONE: "succeeded", HELD: "running", RAY: "running", WAITING: "queued"}
        ok = all(rows.get(n, {}).get("state") == s for n, s in want.items())
        return rows if ok else None

    rows = wait_for("the runs board to show the four runs", runs_settled)
    assert (rows[DONE]["kind"], rows[HELD]["kind"], rows[RAY]["kind"]) == ("Job", "Job", "RayJob")
    assert rows[HELD]["queue"] == f"{ns}-queue" and rows[HELD]["pods"] == 1
    assert rows[WAITING]["phase"] == "Kueue admission"
    assert "insufficient unused quota" in rows[WAITING]["reason"]
    assert {rows[n]["group"] for n in (DONE, HELD, RAY, WAITING)} == {GROUP}

    def queue_settled() -> dict[str, Any] | None:
        # Kueue writes the queues' counters a moment after it decides: wait for them.
        board = portal.board("jobs")
        cq = next(q for q in board["clusterQueues"] if q["name"] == "taugrid-cq")
        return board if cq["admittedWorkloads"] >= 2 and cq["pendingWorkloads"] >= 1 else None

    jobs = wait_for("Kueue's counters on the Jobs / Queue board", queue_settled)
    cq = next(q for q in jobs["clusterQueues"] if q["name"] == "taugrid-cq")
    assert cq["gpuQuota"] == 16 and cq["gpuUsed"] >= 1  # the held Job's GPU
    lq = next(q for q in jobs["localQueues"] if (q["namespace"], q["name"]) == (ns, f"{ns}-queue"))
    assert lq["clusterQueue"] == "taugrid-cq" and lq["admittedWorkloads"] >= 2
    pending = {(p["namespace"], p["name"]): p for p in jobs["pending"]}
    assert pending[(ns, pending_wl)]["queue"] == f"{ns}-queue"
    assert "insufficient unused quota" in pending[(ns, pending_wl)]["reason"]

    nodes = {n["name"]: n for n in portal.board("nodes")["nodes"]}
    assert sorted(nodes) == sorted(GPU_NODES)  # the GPU inventory: cpu-0 has no GPU
    for name in GPU_NODES:
        assert (nodes[name]["gpuCapacity"], nodes[name]["gpuAllocatable"]) == (8, 8)
        assert nodes[name]["gpuClass"] == "h100-95gb" and nodes[name]["ready"] is True
    overview = portal.board("overview")
    fleet = overview["cards"]["fleet"]
    all_nodes = admin.list("v1", "Node")
    assert "cpu-0" in [n["metadata"]["name"] for n in all_nodes]
    capacity = [n["status"]["capacity"] for n in all_nodes]
    memory = sum(parse_quantity(c["memory"]) or 0 for c in capacity)
    assert fleet == {
        "totalNodes": len(all_nodes),
        "readyNodes": len(all_nodes),
        "gpuNodes": len(GPU_NODES),
        "totalGPUs": 8 * len(GPU_NODES),
        # cpu-0 counts here: every node's cores and memory.
        "totalCPUCores": sum(int(c["cpu"]) for c in capacity),
        "totalMemoryGiB": round(float(memory) / 2**30, 1),
        "topSKU": None,  # no node carries node.kubernetes.io/instance-type
    }
    assert {r["name"] for r in overview["running"]} >= {HELD, RAY}

    live_clusters = admin.list("ray.io/v1", "RayCluster", ns)
    ray_cluster = next(
        c for c in live_clusters if c["metadata"]["labels"].get("tau.azure.com/run-id") == RAY
    )
    clusters = {(c["namespace"], c["name"]): c for c in portal.board("ray")["clusters"]}
    shown = clusters[(ns, ray_cluster["metadata"]["name"])]
    assert shown["runId"] == RAY and shown["state"] == "ready"
    assert overview["cards"]["ray"]["clusters"] >= 1

    # The page a person opens: every board ready, with the same live objects.
    page = watched.page
    page.goto(portal.url + "/portal")
    for board in ("runs", "jobs", "nodes", "ray"):
        section = page.locator(f'[data-board="{board}"]')
        assert section.locator(".board-state.ready").count() == 1, board
    runs_board = page.locator('[data-board="runs"]')
    for name, state in ((DONE, "succeeded"), (HELD, "running"), (RAY, "running")):
        row = runs_board.locator(f'tbody tr[data-run="{name}"]')
        assert row.count() == 1 and row.locator(f"td.lc-{state}").count() == 1, name
    assert "Kueue admission" in runs_board.locator(f'tr[data-run="{WAITING}"]').inner_text()
    queues = page.locator('[data-board="jobs"]').inner_text()
    assert "taugrid-cq" in queues and f"{ns}/{ns}-queue" in queues
    assert f"{ns}/{pending_wl}" in queues and "insufficient unused quota" in queues
    node_rows = page.locator('[data-board="nodes"] tbody tr')
    assert sorted(r.split("\t")[0] for r in node_rows.all_inner_texts()) == sorted(GPU_NODES)
    for text in node_rows.all_inner_texts():
        assert "h100-95gb" in text and "8 / 8" in text
    fleet_text = page.locator('[data-panel="cards"]').inner_text()
    gpus = f"{len(GPU_NODES)} GPU nodes · {8 * len(GPU_NODES)} GPUs"
    assert f"{gpus} · {len(all_nodes)}/{len(all_nodes)} ready" in fleet_text
    ray_text = page.locator('[data-board="ray"]').inner_text()
    assert f"{ns}/{ray_cluster['metadata']['name']}" in ray_text and RAY in ray_text

    shot = tmp_path / "portal-live.png"
    page.screenshot(path=str(shot), full_page=True)
    width, height = png_size(shot)
    assert width == 1280 and height >= 900, (width, height)
    assert shot.stat().st_size > 30_000, shot.stat().st_size  # a rendered page, not a blank one
    assert all(r.startswith(portal.url) for r in watched.requests), watched.requests
    watched.assert_clean()


def store_json(repo: Shell, store: Path, *argv: str) -> Any:
    """A `taugrid-portal experiment` verb on the store, as the researcher, its JSON parsed."""
    return json.loads(portal_ok(repo.env, repo.cwd, "experiment", *argv, "--store", str(store)))


def store_sql(repo: Shell, store: Path, query: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = store_json(repo, store, "sql", query, "--format", "json")
    return rows


@pytest.fixture(scope="module")
def captured(
    repo: Shell, store: Path, done: str, held: str, ray: str, researcher: Any
) -> dict[str, Any]:
    """The researcher records the finished run (`capture run-profile`), then reconciles the
    namespace once (`autocapture`): the held Job and the RayJob, whose two pods get the same
    Kubernetes Event message in the same second, are recorded too."""
    ns = researcher.namespace
    profile = store_json(
        repo, store, "capture", "run-profile", DONE, "-n", ns, "--group", GROUP, "-o", "json"
    )
    auto = store_json(repo, store, "autocapture", "-n", ns, "--group", GROUP, "-o", "json")
    return {"profile": profile, "autocapture": auto}


def test_capture_run_profile_records_the_finished_runs_outcome_with_its_kueue_and_pod_facts(
    captured: dict[str, Any], repo: Shell, store: Path, admin: Api, researcher: Any
) -> None:
    ns = researcher.namespace
    doc = captured["profile"]
    run = doc["run"]
    workload = workloads_of(admin, ns, DONE)[0]["metadata"]["name"]
    (pod,) = job_pods(admin, ns, DONE)
    assert (run["run_id"], run["state"]) == (DONE, "succeeded")
    assert run["completed_at"] and run["config_hash"]
    ctx = run["context"]
    assert ctx["namespace"] == ns
    assert ctx["local_queue"] == f"{ns}-queue" and ctx["cluster_queue"] == "taugrid-cq"
    assert ctx["kueue_workload"] == workload
    assert ctx["pod_uid"] == pod["metadata"]["uid"]
    assert ctx["node_names"] == pod["spec"]["nodeName"]
    assert doc["counts"]["created_runs"] == 1
    assert doc["history"]["action"] == "none"  # no storage.output: no metrics history to pull

    # The durable record, read back through the store's own verbs.
    status = store_json(repo, store, "status", DONE, "--json")
    assert status["target_type"] == "run"
    assert status["run"]["state"] == "succeeded" and status["run"]["run_group_id"] == GROUP
    assert status["state_counts"] == {"succeeded": 1}
    assert status["lifecycle_counts"] == {"succeeded": 1}
    context = store_sql(
        repo,
        store,
        "SELECT local_queue, cluster_queue, kueue_workload, pod_uid, node_names "
        f"FROM run_context WHERE run_id = '{DONE}'",
    )
    assert context == [
        {
            "local_queue": f"{ns}-queue",
            "cluster_queue": "taugrid-cq",
            "kueue_workload": workload,
            "pod_uid": pod["metadata"]["uid"],
            "node_names": pod["spec"]["nodeName"],
        }
    ]
    events = store_sql(repo, store, f"SELECT type, message FROM events WHERE run_id = '{DONE}'")
    messages: dict[str, list[str]] = {}
    for e in events:
        messages.setdefault(e["type"], []).append(e["message"])
    assert messages["submitted"] == [f"Job {ns}/{DONE} was submitted"]
    assert messages["succeeded"] == [f"Job {ns}/{DONE} succeeded"]
    assert messages["kueue-admitted"] == [f"Workload {workload} was admitted to queue {ns}-queue"]
    assert messages["kueue-finished"] == [f"Workload {workload} finished"]
    assert messages["pod-scheduled"] == [
        f"Pod {pod['metadata']['name']} scheduled on {pod['spec']['nodeName']}"
    ]
    # Kueue's and the scheduler's own Events about the run are kept as they were written.
    assert any(
        m.startswith("Quota reserved in ClusterQueue taugrid-cq")
        for m in messages["kubernetes-event"]
    )


def test_one_autocapture_pass_records_the_live_runs_and_keeps_the_finished_one(
    captured: dict[str, Any], repo: Shell, store: Path, admin: Api, researcher: Any
) -> None:
    ns = researcher.namespace
    auto = captured["autocapture"]
    assert auto["namespace"] == ns and auto["runs"] >= 3 and auto["warnings"] == [], auto
    assert store_json(repo, store, "status", HELD, "--json")["run"]["state"] == "running"
    assert store_json(repo, store, "status", DONE, "--json")["run"]["state"] == "succeeded"
    ray_run = store_json(repo, store, "status", RAY, "--json")
    assert ray_run["run"]["state"] == "running"
    # The RayJob's head and worker pods: one row per pod for the same message and second.
    started = store_sql(
        repo,
        store,
        f"SELECT payload FROM events WHERE run_id = '{RAY}' AND type = 'kubernetes-event' "
        "AND message = 'Started container (fake node)'",
    )
    pods = sorted(json.loads(r["payload"])["object"] for r in started)
    live = sorted(
        p["metadata"]["name"]
        for p in admin.list("v1", "Pod", ns, label_selector=f"tau.azure.com/run-id={RAY}")
        if p["metadata"]["name"] in pods
    )
    assert len(pods) >= 2 and pods == live, (pods, live)
    # Reconciling again finds the same runs: nothing new to create.
    again = store_json(repo, store, "autocapture", "-n", ns, "--group", GROUP, "-o", "json")
    assert (again["created_runs"], again["created_contexts"]) == (0, 0), again


def test_the_runs_board_links_a_run_to_its_captured_evidence_in_stellar(
    portal: Portal, watched: Watched, captured: dict[str, Any]
) -> None:
    # The running portal serves the store as Stellar, no restart needed: the run's experiment
    # link on the Runs board leads to the captured runs.
    page = watched.page
    page.goto(portal.url + "/portal")
    page.locator(f'[data-board="runs"] tr[data-run="{DONE}"] a').click()
    page.wait_for_url(f"{portal.url}/stellar?target={GROUP}")
    done_row = page.locator(f'#runs-table tbody tr[data-run="{DONE}"]')
    done_row.wait_for(timeout=15_000)
    assert "succeeded" in done_row.inner_text()
    assert "running" in page.locator(f'#runs-table tbody tr[data-run="{HELD}"]').inner_text()
    watched.assert_clean()


def test_the_researchers_portal_keeps_its_namespace_boards_and_names_what_is_forbidden(
    repo: Shell, researcher: Any, done: str, tmp_path: Path
) -> None:
    ns = researcher.namespace
    with serve_portal(repo.env, repo.cwd, tmp_path, "-n", ns) as served:
        runs = served.board("runs")
        assert runs["namespace"] == ns
        assert DONE in {r["name"] for r in runs["runs"]}
        assert all(r["namespace"] == ns for r in runs["runs"])
        assert served.json("/api/portal/ray")[0] == 200
        status, body = served.json("/api/portal/nodes")
        assert status == 503 and body["code"] == "SOURCE_UNAVAILABLE"
        # What the role lacks is named with who has it, never as the API server's 403.
        nodes_line = "Node capacity and health need read access to Node objects across the cluster"
        assert body["detail"].startswith(nodes_line), body
        assert "platform operator" in body["detail"], body
        status, body = served.json("/api/portal/jobs")
        assert status == 200, body  # its LocalQueues and workloads, without ClusterQueues
        assert body["clusterQueuesUnavailable"].startswith("ClusterQueue quota and usage need")
        overview = served.board("overview")
        assert overview["cards"]["fleet"] is None
        assert overview["cards"]["fleetUnavailable"].startswith(nodes_line)
        status, page = served.get("/portal")
        assert status == 200 and f'data-run="{DONE}"'.encode() in page
        assert nodes_line.encode() in page and b"forbidden" not in page.lower()
        process = served.process
    assert process.returncode == 0, served.log()  # SIGTERM drains and exits cleanly
