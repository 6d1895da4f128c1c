"""The metrics collector (`experiment offload metrics`) into the team store: rows per second,
and the delay from a row appended to a history to that row visible in the store.

    python bench/portal_offload.py                   # 20,000 steps x 10 metrics; 6 delays
    python bench/portal_offload.py --steps 100000 --samples 10

Against a real PostgreSQL and versitygw started on 127.0.0.1 (tests/teamstore/servers.py;
install them with tests/teamstore/install.sh). Without them it says so and exits 0.

Rows/s: one pass of the command (no --watch) over a history of STEPS x METRICS rows, as a
recovery import or a collector catching up after an outage runs it: parse, spool, deliver
(Parquet to the object store, the index rows and summaries in one transaction), the process's
start included. The delay: the collector runs as the sidecar does (`--watch --interval 10s`);
a row is appended at a random moment of its interval and the store is read every 50 ms until
the row's step is there (a read as Stellar's makes it). It is one interval at most plus one
delivery; the issue's bound is 15 s from the first call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = 10
RUN = "bench-offload"


def history(path: Path, steps: int) -> int:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(steps):
            row = {"_step": i, "_timestamp": 1.76e9 + i}
            row.update({f"m{k}": (i + k) / steps for k in range(METRICS)})
            fh.write(json.dumps(row) + "\n")
    return steps * METRICS


def collector(url: str, out: Path, hist: Path, run: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "tau.portal.cli", "experiment", "offload", "metrics",
        "--store", url, "--out", str(out), "--history", str(hist), "--run", run,
        "--project", "bench", "--experiment", "bench", *extra,
    ]  # fmt: skip


def visible_step(store: object) -> int:
    found = store.scalar(  # type: ignore[attr-defined]
        "SELECT max_step FROM metric_summaries WHERE run_id = ? AND metric_name = 'probe'",
        (RUN + "-live",),
    )
    return -1 if found is None else int(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/portal_offload.py")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--samples", type=int, default=6)
    parser.add_argument("--interval", default="10s")
    args = parser.parse_args(argv)
    from tau.portal.store.location import parse_team_url
    from tau.portal.store.team import TeamStore
    from tests.teamstore import build as vgw
    from tests.teamstore.servers import postgres_bin, running_objects, running_postgres

    binary = vgw.cached()
    if postgres_bin() is None or binary is None:
        print("skipped: PostgreSQL or versitygw missing (run tests/teamstore/install.sh)")
        return 0
    work = Path(tempfile.mkdtemp(prefix="portal-offload-bench-"))
    work.chmod(0o755)
    try:
        with running_postgres(work) as pg, running_objects(work, binary) as objects:
            objects.create_bucket("team")
            pg.create_db("team")
            url = f"{pg.url('team')}?objects=s3://team/bench"
            env = dict(os.environ) | pg.env() | objects.env()
            subprocess.run([sys.executable, "-m", "tau.portal.cli", "experiment", "init",
                            "--store", url], env=env, check=True, capture_output=True)  # fmt: skip

            rows = history(work / "big.jsonl", args.steps)
            started = time.perf_counter()
            command = collector(url, work / "out-big", work / "big.jsonl", RUN, "-o", "json")
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
            seconds = time.perf_counter() - started
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            report = json.loads(done.stdout)
            assert report["delivered_rows"] == rows, report
            print(f"offload metrics into the team store: {rows:,} rows ({args.steps:,} steps x "
                  f"{METRICS} metrics) in {seconds:.1f} s = {rows / seconds:,.0f} rows/s "
                  f"({report['deliveries']} deliveries; load {os.getloadavg()[0]:.1f})",
                  flush=True)  # fmt: skip

            live = work / "live.jsonl"
            live.write_text("")
            watch = ("--watch", "--interval", args.interval)
            proc = subprocess.Popen(
                collector(url, work / "out-live", live, RUN + "-live", *watch),
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            os.environ.update(pg.env() | objects.env())  # this process reads the store too
            store = TeamStore.open(parse_team_url(url))
            delays = []
            try:
                for step in range(args.samples):
                    # Rows land at spread moments of the collector's interval (the bench's own
                    # schedule, not a wait for a condition): 0.0, 1.7, 3.4... s after the last.
                    time.sleep(step * 1.7 % 5.0)
                    with open(live, "a", encoding="utf-8") as fh:
                        fh.write(json.dumps({"_step": step, "probe": float(step)}) + "\n")
                    appended = time.perf_counter()
                    while visible_step(store) < step:
                        if time.perf_counter() - appended > 120:
                            raise TimeoutError(f"step {step} not visible after 120 s")
                        time.sleep(0.05)
                    delays.append(time.perf_counter() - appended)
            finally:
                store.close()
                proc.terminate()
                proc.wait(timeout=60)
            print(f"append to visible in the team store (--interval {args.interval}), "
                  f"{len(delays)} rows: median {statistics.median(delays):.1f} s, max "
                  f"{max(delays):.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
