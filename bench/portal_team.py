"""The team store at scale, beside the folder store: push throughput, `experiment search` with
a metric filter, and Stellar of one member's experiment served over HTTP.

    python bench/portal_team.py                       # 2,000 runs: 20 members x 100 runs
    python bench/portal_team.py --members 100 --runs-per-member 1000   # the 100,000-run store

Every run has 5 metrics x 1,000 steps in a real Parquet file (what push copies and Stellar
reads) and the summaries the importer would write. The store is generated into one folder (the
members are its run groups and owners, one experiment each) and pushed with the real command
to a real PostgreSQL and versitygw started on 127.0.0.1 (tests/teamstore/servers.py; install
them with tests/teamstore/install.sh). Without them it says so and exits 0. Figures are
medians of 5 cold processes (search) or 5 requests after a cold first one (Stellar).
Targets: search under 300 ms; Stellar of a 1,000-run experiment under 2 s.
"""

from __future__ import annotations

import argparse
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

METRICS = ("loss", "accuracy", "lr", "grad_norm", "tokens_per_s")
STEPS = 1000
REPEAT = 5
CLI = str(Path(sys.executable).parent / "taugrid-portal")


def build(root: Path, members: int, per_member: int) -> int:
    """The folder store; returns the bytes of metric files written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tau.portal.store import schema
    from tau.portal.store.core import Store

    store, _ = Store.init(root, project="bench", experiment_id="bench")
    steps = pa.array(range(STEPS), pa.int64())
    total = 0
    with store.writer() as w:
        conn, stamp = w.conn, w.stamp
        for m in range(members):
            member = f"member-{m:03d}"
            conn.execute(
                "insert into experiments values (?, 'bench', ?, '', 'explicit', ?, ?)",
                (member, member, stamp, stamp),
            )
            conn.execute(
                "insert into run_groups values (?, 'bench', ?, ?, ?)",
                (member, member, stamp, stamp),
            )
            runs, summaries, files, summarized, tags = [], [], [], [], []
            for i in range(per_member):
                run = f"{member}-run-{i:04d}"
                created = f"2026-01-{1 + i % 28:02d}T{m % 24:02d}:{i % 60:02d}:00Z"
                runs.append((run, "bench", member, member, "succeeded", member, created))
                tags.append(("run", run, "seed", str(i % 5)))
                rel = f"{schema.METRICS}/{run}/bench.parquet"
                columns: dict[str, list[pa.Array]] = {c: [] for c in schema.METRIC_COLUMNS}
                for k, name in enumerate(METRICS):
                    final = (i % 100) / 100 + k
                    values = [final + 2.0 * (STEPS - s) / STEPS for s in range(STEPS)]
                    columns["project"].append(pa.array(["bench"] * STEPS))
                    columns["run_group_id"].append(pa.array([member] * STEPS))
                    columns["run_id"].append(pa.array([run] * STEPS))
                    columns["metric_name"].append(pa.array([name] * STEPS))
                    columns["step"].append(steps)
                    columns["wall_time"].append(pa.array([None] * STEPS, pa.int64()))
                    columns["value"].append(pa.array(values, pa.float64()))
                    for c in ("unit", "source", "split", "tags"):
                        columns[c].append(pa.array([None] * STEPS, pa.string()))
                    summaries.append(
                        (run, name, "bench", member, STEPS, STEPS, 0, 0, STEPS - 1, STEPS - 1,
                         created, values[-1], values[-1], values[0], stamp, run)
                    )  # fmt: skip
                table = pa.table({c: pa.concat_arrays(v) for c, v in columns.items()})
                path = root / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                pq.write_table(table, path)
                size = path.stat().st_size
                total += size
                files.append(
                    (run, rel, "parquet", schema.METRIC_SCHEMA_VERSION, schema.metric_schema_hash(),
                     "bench", member, run, STEPS * len(METRICS), "", 0, STEPS - 1, stamp)
                )  # fmt: skip
                summarized.append((run, run, stamp))
            conn.executemany(
                "insert into runs (run_id, project, experiment_id, run_group_id, state, owner, "
                "created_at) values (?, ?, ?, ?, ?, ?, ?)",
                runs,
            )
            conn.executemany("insert into tags values (?, ?, ?, ?)", tags)
            conn.executemany("insert into metric_files values (" + ", ".join("?" * 13) + ")", files)
            conn.executemany(
                "insert into metric_summaries values (" + ", ".join("?" * 16) + ")", summaries
            )
            conn.executemany("insert into metric_summary_files values (?, ?, ?)", summarized)
    store.close()
    return total


def timed(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([CLI, *args], check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def served_stellar(where: object, target: str) -> tuple[float, float]:
    """(first request, median of 5 more) seconds for Stellar's page of `target`."""
    from tau.portal.stellar.source import StoreSource
    from tau.portal.web.app import create_app
    from tau.portal.web.stellar_routes import Stellar
    from tests.portal_web_support import serve_app

    source = StoreSource(where)  # type: ignore[arg-type]
    with serve_app(lambda guard: create_app(guard=guard, stellar=Stellar(source))) as served:
        started = time.perf_counter()
        status, _, _ = served.get(f"/stellar?target={target}")
        first = time.perf_counter() - started
        assert status == 200, status
        again = []
        for _ in range(REPEAT):
            started = time.perf_counter()
            served.get(f"/stellar?target={target}")
            again.append(time.perf_counter() - started)
    return first, statistics.median(again)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/portal_team.py")
    parser.add_argument("--members", type=int, default=20)
    parser.add_argument("--runs-per-member", type=int, default=100)
    args = parser.parse_args(argv)
    from tests.teamstore import build as vgw
    from tests.teamstore.servers import postgres_bin, running_objects, running_postgres

    binary = vgw.cached()
    if postgres_bin() is None or binary is None:
        print("skipped: PostgreSQL or versitygw missing (run tests/teamstore/install.sh)")
        return 0
    runs = args.members * args.runs_per_member
    work = Path(tempfile.mkdtemp(prefix="portal-team-bench-"))
    work.chmod(0o755)
    try:
        folder = work / "store"
        started = time.perf_counter()
        size = build(folder, args.members, args.runs_per_member)
        built = time.perf_counter() - started
        print(f"generated {runs:,} runs ({args.members} members x {args.runs_per_member}, "
              f"{len(METRICS)} metrics x {STEPS} steps, {size / 1e6:.0f} MB Parquet) "
              f"in {built:.1f} s")  # fmt: skip
        with running_postgres(work) as pg, running_objects(work, binary) as objects:
            objects.create_bucket("team")
            pg.create_db("team")
            url = f"{pg.url('team')}?objects=s3://team/bench"
            env = dict(os.environ) | pg.env() | objects.env()
            timed(env, "experiment", "init", "--store", url)
            pushed = timed(env, "experiment", "push", "--all", "--store", str(folder), "--to", url,
                           "--batch", "200")  # fmt: skip
            print(f"push: {runs:,} runs in {pushed:.1f} s = {runs / pushed:,.0f} runs/s, "
                  f"{size / 1e6 / pushed:.1f} MB/s")  # fmt: skip
            again = timed(env, "experiment", "push", "--all", "--store", str(folder), "--to", url)
            print(f"second push (nothing to copy): {again:.1f} s")
            query = ("experiment", "search", "--metric-filter", "loss@min<0.5")
            for name, store in (("folder", str(folder)), ("team", url)):
                times = [timed(env, *query, "--store", store) for _ in range(REPEAT)]
                median = statistics.median(times) * 1000
                print(f"{name:6} search --metric-filter 'loss@min<0.5' over {runs:,} runs: "
                      f"median {median:.0f} ms (target < 300 ms)")  # fmt: skip
            os.environ.update(pg.env() | objects.env())
            from tau.portal.store.location import parse_team_url

            member = "member-000"
            for name, where in (("folder", folder), ("team", parse_team_url(url))):
                first, warm = served_stellar(where, member)
                print(f"{name:6} Stellar of a {args.runs_per_member:,}-run experiment: first "
                      f"{first * 1000:.0f} ms, then median {warm * 1000:.0f} ms "
                      "(target < 2 s)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
