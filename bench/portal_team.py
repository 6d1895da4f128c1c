"""The team store at scale, beside the folder store: push throughput, `experiment search` with
a metric filter, and the first view of Stellar served for one member's experiment.

    python bench/portal_team.py                       # 2,000 runs: 20 members x 100 runs
    python bench/portal_team.py --members 100 --runs-per-member 1000   # the 100,000-run store

Every run has 5 metrics x 1,000 steps in a real Parquet file (what push copies and Stellar
reads) and the summaries the importer would write. The store is generated into one folder (the
members are its run groups and owners, one experiment each; one process per core writes the
files) and pushed with the real command to a real PostgreSQL and versitygw started on
127.0.0.1 (tests/teamstore/servers.py; install them with tests/teamstore/install.sh). Without
them it says so and exits 0.

Figures: search is the median of 5 cold processes per store, the two stores taking turns, with
bytecode cached as an installed tau has it. Stellar's first view is what a browser loads to
draw a member's page from `taugrid-portal experiment serve --store ...`: the page, then at once
its stylesheet, its script and the series of the charts shown when it opens that the page did
not embed; the median over 5 members (each a first load: nothing of it cached yet). The load
average is printed beside each figure: a busy machine slows both stores.
Targets: search under 300 ms; Stellar of a 1,000-run experiment under 2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = ("loss", "accuracy", "lr", "grad_norm", "tokens_per_s")
STEPS = 1000
REPEAT = 5
CLI = str(Path(sys.executable).parent / "taugrid-portal")


def build(root: Path, members: int, per_member: int) -> int:
    """The folder store; returns the bytes of metric files written.

    Members are generated in parallel (one process per core writes their Parquet files) and
    indexed here, in one SQLite transaction, as each member's rows come back.
    """
    from concurrent.futures import ProcessPoolExecutor

    from tau.portal.store.core import Store

    store, _ = Store.init(root, project="bench", experiment_id="bench")
    total = 0
    with store.writer() as w, ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        conn, stamp = w.conn, w.stamp
        jobs = [(root, m, per_member, stamp) for m in range(members)]
        for member, rows, size in pool.map(_member, jobs):
            total += size
            conn.execute(
                "insert into experiments values (?, 'bench', ?, '', 'explicit', ?, ?)",
                (member, member, stamp, stamp),
            )
            conn.execute(
                "insert into run_groups values (?, 'bench', ?, ?, ?)",
                (member, member, stamp, stamp),
            )
            conn.executemany(
                "insert into runs (run_id, project, experiment_id, run_group_id, state, owner, "
                "created_at) values (?, ?, ?, ?, ?, ?, ?)",
                rows["runs"],
            )
            conn.executemany("insert into tags values (?, ?, ?, ?)", rows["tags"])
            conn.executemany(
                "insert into metric_files values (" + ", ".join("?" * 13) + ")", rows["files"]
            )
            conn.executemany(
                "insert into metric_summaries values (" + ", ".join("?" * 16) + ")",
                rows["summaries"],
            )
            conn.executemany(
                "insert into metric_summary_files values (?, ?, ?)", rows["summarized"]
            )
    store.close()
    return total


def _member(job: tuple[Path, int, int, str]) -> tuple[str, dict[str, list[tuple]], int]:
    """One member's runs: their Parquet files written, their index rows returned."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from tau.portal.store import schema

    root, m, per_member, stamp = job
    member = f"member-{m:03d}"
    n = STEPS * len(METRICS)
    curve = pa.array([2.0 * (STEPS - s) / STEPS for s in range(STEPS)], pa.float64())
    fixed = {
        "project": pa.array(["bench"] * n),
        "run_group_id": pa.array([member] * n),
        "metric_name": pa.array([name for name in METRICS for _ in range(STEPS)]),
        "step": pa.array(list(range(STEPS)) * len(METRICS), pa.int64()),
        "wall_time": pa.nulls(n, pa.int64()),
        **{c: pa.nulls(n, pa.string()) for c in ("unit", "source", "split", "tags")},
    }
    rows: dict[str, list[tuple]] = {
        k: [] for k in ("runs", "tags", "files", "summaries", "summarized")
    }
    size = 0
    for i in range(per_member):
        run = f"{member}-run-{i:04d}"
        created = f"2026-01-{1 + i % 28:02d}T{m % 24:02d}:{i % 60:02d}:00Z"
        rows["runs"].append((run, "bench", member, member, "succeeded", member, created))
        rows["tags"].append(("run", run, "seed", str(i % 5)))
        finals = [(i % 100) / 100 + k for k in range(len(METRICS))]
        columns = {
            **fixed,
            "run_id": pa.array([run] * n),
            "value": pa.concat_arrays([pc.add(curve, f) for f in finals]),
        }
        table = pa.table({c: columns[c] for c in schema.METRIC_COLUMNS})
        rel = f"{schema.METRICS}/{run}/bench.parquet"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        size += path.stat().st_size
        for name, final in zip(METRICS, finals, strict=True):
            last, first = final + 2.0 / STEPS, final + 2.0
            rows["summaries"].append(
                (run, name, "bench", member, STEPS, STEPS, 0, 0, STEPS - 1, STEPS - 1,
                 created, last, last, first, stamp, run)
            )  # fmt: skip
        rows["files"].append(
            (run, rel, "parquet", schema.METRIC_SCHEMA_VERSION, schema.metric_schema_hash(),
             "bench", member, run, n, "", 0, STEPS - 1, stamp)
        )  # fmt: skip
        rows["summarized"].append((run, run, stamp))
    return member, rows, size


def cached_bytecode(env: dict[str, str]) -> dict[str, str]:
    """`env` without PYTHONDONTWRITEBYTECODE: any value of it stops .pyc writing, and every
    process would then compile tau from source; measure what an installed tau does.
    """
    return {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(env: dict[str, str], *args: str, quiet: bool = False) -> float:
    """Seconds of one `taugrid-portal ARGS` process (`quiet`: its warnings not shown)."""
    started = time.perf_counter()
    subprocess.run(
        [CLI, *args],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL if quiet else None,
        env=env,
    )
    return time.perf_counter() - started


def search_medians(env: dict[str, str], stores: dict[str, str]) -> dict[str, float]:
    """Median seconds of `experiment search --metric-filter` per store, cold processes taking
    turns (a machine busy with other work then slows each store's runs alike).
    """
    query = ("experiment", "search", "--metric-filter", "loss@min<0.5")
    for store in stores.values():  # warm the disk and the bytecode cache
        timed(env, *query, "--store", store, quiet=True)
    times: dict[str, list[float]] = {name: [] for name in stores}
    for _ in range(REPEAT):
        for name, store in stores.items():
            times[name].append(timed(env, *query, "--store", store, quiet=True))
    return {name: statistics.median(t) for name, t in times.items()}


@contextlib.contextmanager
def serving(env: dict[str, str], store: str) -> Iterator[str]:
    """`taugrid-portal experiment serve --store STORE` on a free port; its base URL once up."""
    proc = subprocess.Popen(
        [CLI, "experiment", "serve", "--store", store, "--addr", "127.0.0.1:0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"at (http://\S+)", line)
        assert found, f"no URL in {line!r}"
        yield found.group(1)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def fetch(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=120) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return bytes(body)


def first_view(base: str, target: str) -> tuple[float, int, int]:
    """(seconds, requests, bytes) of what a browser loads to draw `target`'s Stellar page: the
    page, then at once (6 connections, as a browser opens) its stylesheet, its script and the
    series of every chart shown when the page opens that the page did not embed.
    """
    started = time.perf_counter()
    page = fetch(f"{base}/stellar?target={urllib.parse.quote(target)}").decode()
    found = re.search(r'id="stellar-charts-data">(.*?)</script>', page, re.S)
    assert found, "the page carries no chart data"
    charts = json.loads(found.group(1))
    visible = set(charts["default_visible"])
    budget = charts["budget"]["series_points"]
    urls = [base + u for u in re.findall(r'(?:href|src)="(/stellar/assets/[^"]+)"', page)]
    urls += [
        f"{base}{charts['served']['series_url']}&format=columns"
        f"&metric={urllib.parse.quote(m['name'])}&max_points={budget}"
        for m in charts["metrics"]
        if m.get("deferred") and m["name"] in visible
    ]
    with ThreadPoolExecutor(max_workers=6) as pool:
        sizes = list(pool.map(lambda u: len(fetch(u)), urls))
    return time.perf_counter() - started, 1 + len(urls), len(page) + sum(sizes)


def stellar_medians(env: dict[str, str], store: str, targets: list[str]) -> tuple[float, int]:
    """Median seconds of the first view of each of `targets` (each a first load: nothing of
    it is cached yet) on one server of `store`, and the requests of one view.
    """
    with serving(env, store) as base:
        views = [first_view(base, t) for t in targets]
    return statistics.median(v[0] for v in views), views[0][1]


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
              f"in {built:.1f} s", flush=True)  # fmt: skip
        with running_postgres(work) as pg, running_objects(work, binary) as objects:
            objects.create_bucket("team")
            pg.create_db("team")
            url = f"{pg.url('team')}?objects=s3://team/bench"
            env = cached_bytecode(dict(os.environ) | pg.env() | objects.env())
            timed(env, "experiment", "init", "--store", url)
            pushed = timed(env, "experiment", "push", "--all", "--store", str(folder), "--to", url,
                           "--batch", "200")  # fmt: skip
            print(f"push: {runs:,} runs in {pushed:.1f} s = {runs / pushed:,.0f} runs/s, "
                  f"{size / 1e6 / pushed:.1f} MB/s", flush=True)  # fmt: skip
            again = timed(env, "experiment", "push", "--all", "--store", str(folder), "--to", url)
            print(f"second push (nothing to copy): {again:.1f} s", flush=True)
            stores = {"folder": str(folder), "team": url}
            found = search_medians(env, stores)
            print(f"search --metric-filter 'loss@min<0.5' over {runs:,} runs, median of {REPEAT} "
                  f"cold processes: folder {found['folder'] * 1000:.0f} ms, team "
                  f"{found['team'] * 1000:.0f} ms (target < 300 ms; load "
                  f"{os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
            targets = [f"member-{m:03d}" for m in range(min(REPEAT, args.members))]
            for name, store in stores.items():
                median, requests = stellar_medians(env, store, targets)
                print(f"{name:6} Stellar first view of a {args.runs_per_member:,}-run experiment "
                      f"(page + {requests - 1} requests it makes), median of {len(targets)} "
                      f"experiments: {median * 1000:.0f} ms (target < 2 s; load "
                      f"{os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
