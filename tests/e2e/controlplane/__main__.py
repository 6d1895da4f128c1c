"""`python -m tests.e2e.controlplane build|up|down|status`: the control plane for manual use.

`up` starts it in a background process of its own, with everything a researcher needs (the
test chart installed with real helm, queues, fake GPU nodes, a Ready TauWorkspace and a
namespaced researcher identity, the team store its runs offload to), and returns once it is
ready; it prints `IMAGE=…`, `STORE=…` and `STORE_ENV=…` (a file of the store's credentials to
source), and its last three lines are `KUBECONFIG=…`, `CONTEXT=…` and `WORKSPACE=…`. `down`
stops it (the team store too) and removes its data.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.e2e.controlplane.build import build_all, cache_root
from tests.e2e.controlplane.processes import StartError

#: Run by `make e2e-faults` (named), not by `make e2e`.
FAULT_SUITE = "tests/e2e/test_faults_e2e.py"


def state_dir() -> Path:
    return cache_root() / "cluster-up"


def state_file() -> Path:
    return state_dir() / "state.json"


def _serve(root: Path) -> int:
    """The background process of `up`: run the control plane until SIGTERM."""
    from tests.e2e.controlplane import session

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    try:
        current = session.start(root)
    except BaseException as err:
        (root / "failed").write_text(f"{err}\n")
        return 1
    plane, env = current.plane, current.researcher
    state = {
        "pid": os.getpid(),
        "summary": plane.summary_line(),
        "kubeconfig": str(env.kubeconfig),
        "context": env.context,
        # A researcher's runs land on the real node; the KWOK workspace stays for simulations.
        "workspace": env.real_workspace or env.workspace,
        "namespace": env.real_workspace or env.namespace,
        "simulated_workspace": env.workspace,
        "image": env.image or "",
        "store": current.store.local_url if current.store else "",
        "store_env": str(current.store.write_env_file(root / "store.env")) if current.store else "",
        "offload_image": env.offload_image or "",
        "admin_kubeconfig": str(plane.admin_kubeconfig),
        "logs": str(plane.supervisor.logs),
    }
    (root / "state.json.tmp").write_text(json.dumps(state, indent=2))
    (root / "state.json.tmp").rename(root / "state.json")
    done.wait()
    current.stop()
    with contextlib.suppress(FileNotFoundError):
        (root / "state.json").unlink()
    return 0


def up(timeout: float) -> int:
    root = state_dir()
    if state_file().exists():
        state = json.loads(state_file().read_text())
        if _alive(state["pid"]):
            print(f"already running (pid {state['pid']}); `make cluster-down` stops it")
            _print_lines(state)
            return 0
    build_all()
    from tests.e2e.controlplane.session import runtime_images

    runtime_images()
    root.mkdir(parents=True, exist_ok=True)
    for stale in ("state.json", "failed"):
        with contextlib.suppress(FileNotFoundError):
            (root / stale).unlink()
    log = (root / "cluster-up.log").open("ab")
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.controlplane", "_serve", str(root)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    deadline = time.monotonic() + timeout
    while not state_file().exists():
        if child.poll() is not None or (root / "failed").exists():
            reason = (root / "failed").read_text().strip() if (root / "failed").exists() else ""
            print(f"error: the control plane did not start: {reason}", file=sys.stderr)
            print(f"logs: {root / 'data' / 'logs'}", file=sys.stderr)
            return 1
        if time.monotonic() > deadline:
            child.terminate()
            print(f"error: the control plane was not ready after {timeout:.0f}s", file=sys.stderr)
            return 1
        time.sleep(0.5)
    _print_lines(json.loads(state_file().read_text()))
    return 0


def _print_lines(state: dict[str, str]) -> None:
    print(state["summary"])
    print(f"admin kubeconfig: {state['admin_kubeconfig']}")
    print(f"logs: {state['logs']}")
    if state.get("image"):
        print(f"IMAGE={state['image']}")
    if state.get("store"):
        print(f"offload image (the workspace names it): {state['offload_image']}")
        print(f"STORE={state['store']}")
        print(f"STORE_ENV={state['store_env']}")
    elif state.get("image"):
        print("no team store: PostgreSQL or versitygw is missing (tests/teamstore/install.sh)")
    print(f"KUBECONFIG={state['kubeconfig']}")
    print(f"CONTEXT={state['context']}")
    print(f"WORKSPACE={state['workspace']}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def down(timeout: float) -> int:
    if not state_file().exists():
        print("no control plane is running")
        return 0
    pid = int(json.loads(state_file().read_text())["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(state_dir(), ignore_errors=True)
    from tests.e2e.controlplane.node import host_leftovers

    left = host_leftovers(state_dir())
    if left:
        print("error: the control plane left these behind:", file=sys.stderr)
        for line in left:
            print(f"  {line}", file=sys.stderr)
        return 1
    print("control plane stopped; its data is removed")
    return 0


#: Held while a control plane runs: the real node's network namespace, cgroups and mounts have
#: fixed names, so two planes on one machine would tear each other down.
PLANE_LOCK = Path(os.environ.get("TAU_E2E_PLANE_LOCK", "/tmp/tau-e2e-plane.lock"))


def _one_plane_at_a_time() -> None:
    """Wait for any other control plane on this machine to stop (the lock is released when
    this process exits)."""
    import fcntl

    handle = PLANE_LOCK.open("a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"waiting for the other control plane of this machine ({PLANE_LOCK})", flush=True)
        fcntl.flock(handle, fcntl.LOCK_EX)
    _HELD.append(handle)


_HELD: list[object] = []


def e2e(pytest_args: list[str]) -> int:
    """`make e2e`: start the control plane, say what answered, run the e2e suite, stop it all."""
    import tempfile

    import pytest

    from tests.e2e.controlplane import session

    build_all(quiet=True)
    _one_plane_at_a_time()

    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupted)
    root = Path(tempfile.mkdtemp(prefix="tau-e2e-"))
    current = None
    code = 1
    try:
        current = session.start(root)
        print(current.plane.summary_line(), flush=True)
        # The whole suite unless a test path (or node id) is named; options pass as given,
        # values included (`-k "a or b"`).
        named = any(Path(a.split("::")[0]).exists() for a in pytest_args)
        # The fault suite has a target of its own (`make e2e-faults`): it restarts the
        # control plane's components, which the rest of the suite should not sit through.
        suite = [] if named else ["tests/e2e", f"--ignore={FAULT_SUITE}"]
        code = int(pytest.main(["-m", "e2e", "-p", "no:cacheprovider", *pytest_args, *suite]))
        if code not in (0, 5):
            # What each component said last: the failure's other half, before it is removed.
            for proc in current.plane.supervisor.processes:
                print(f"--- {proc.name} (last lines of {proc.log.name})\n{proc.tail(15)}")
    except KeyboardInterrupt:
        print("error: interrupted; the control plane is stopped", file=sys.stderr)
        code = 130
    finally:
        # session.start stops what it started when it fails: only a started session is ours.
        if current is not None:
            current.stop()
        if os.environ.get("TAU_E2E_KEEP"):
            print(f"kept (TAU_E2E_KEEP): {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    # A teardown that leaves anything behind fails the run, whatever the tests said.
    return 1 if _leftovers(root) and code in (0, 5) else code


def _leftovers(root: Path) -> list[str]:
    """What the stopped control plane left on the host (its real node's processes, mounts,
    link, routes, cgroups, iptables rules); each is said, and fails the run."""
    from tests.e2e.controlplane.node import host_leftovers

    left = host_leftovers(root)
    for line in left:
        print(f"error: the control plane left this behind: {line}", file=sys.stderr)
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.controlplane")
    sub = parser.add_subparsers(dest="verb", required=True)
    sub.add_parser("build", help="build the binaries the control plane needs")
    up_p = sub.add_parser("up", help="start it in the background, ready for a researcher")
    up_p.add_argument("--timeout", type=float, default=900.0)
    down_p = sub.add_parser("down", help="stop it and remove its data")
    down_p.add_argument("--timeout", type=float, default=60.0)
    sub.add_parser(
        "e2e", help="run the e2e suite against a fresh control plane (extra args: pytest's)"
    )
    serve_p = sub.add_parser("_serve")
    serve_p.add_argument("root", type=Path)
    args, extra = parser.parse_known_args(argv)
    if extra and args.verb != "e2e":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.verb == "build":
            from concurrent.futures import ThreadPoolExecutor

            from tests.e2e.controlplane.session import runtime_images

            # The images and the binaries share no input: built side by side, the images'
            # downloads (Debian's mirror, PyPI) overlap the Go builds' compiling.
            with ThreadPoolExecutor(max_workers=1) as pool:
                images = pool.submit(runtime_images)
                build_all()
                for image in images.result().values():
                    print(f"image: {image.name}", file=sys.stderr)
            return 0
        if args.verb == "up":
            return up(args.timeout)
        if args.verb == "down":
            return down(args.timeout)
        if args.verb == "e2e":
            return e2e(extra)
        return _serve(args.root)
    except (StartError, subprocess.CalledProcessError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
