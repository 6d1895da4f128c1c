"""Stellar at scale: a group of 100 runs × 5 metrics × 10,000 steps.

    .venv/bin/python bench/portal_web_stellar.py [--runs 100] [--steps 10000] [--seconds 20]

1. `taugrid-portal experiment stellar GROUP -o html --out F` as a cold process (targets: ≤ 2 s,
   ≤ 2 MB), median of 3;
2. a bounded load test on 127.0.0.1: 20 concurrent clients for 20 s against
   `/api/v2/stellar/snapshot` of `experiment serve` (target: p95 ≤ 200 ms), p50/p95/errors;
3. the served page in headless Chromium: time to interactive (target ≤ 1.5 s), when Chromium is
   installed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
PORTAL = [sys.executable, "-c", "import sys; from tau.portal.cli import main; sys.exit(main())"]
METRICS = ("train/loss", "train/lr", "eval/score", "gpu/util", "throughput/tokens_per_sec")
GROUP = "bench-group"


def build_store(root: Path, runs: int, steps: int) -> None:
    """Through the store's own importer (in-process: 100 cold processes would dominate)."""
    from tau.portal.capture.jsonl import ImportRequest, import_jsonl
    from tau.portal.store.core import Store

    store, _ = Store.init(root, project="bench", experiment_id="bench")
    histories = root.parent / "histories"
    histories.mkdir()
    for r in range(runs):
        path = histories / f"run-{r:03d}.jsonl"
        with path.open("w") as f:
            for s in range(steps):
                loss = 2.0 / (1 + s / 300) + 0.001 * r + 0.01 * math.sin(s / 9 + r)
                row = {
                    "_step": s,
                    "_timestamp": 1760000000 + s,
                    "train/loss": loss,
                    "train/lr": 3e-4,
                    "eval/score": 1 - loss / 2,
                    "gpu/util": 0.9,
                    "throughput/tokens_per_sec": 1000.0 + r,
                }
                f.write(json.dumps(row) + "\n")
        import_jsonl(
            store,
            ImportRequest(
                run=f"run-{r:03d}",
                history=[str(path)],
                project="bench",
                experiment="bench",
                group=GROUP,
            ),
        )
    store.close()


def html_figures(root: Path) -> None:
    out = root.parent / "stellar.html"
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(
            [
                *PORTAL,
                "experiment",
                "stellar",
                GROUP,
                "--store",
                str(root),
                "-o",
                "html",
                "--out",
                str(out),
            ],
            check=True,
            stderr=subprocess.DEVNULL,
        )
        times.append(time.perf_counter() - start)
    size = out.stat().st_size
    print(
        f"stellar -o html: median {statistics.median(times):.2f} s (target ≤ 2 s), "
        f"{size / 1e6:.2f} MB (target ≤ 2 MB)"
    )


def serve(root: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*PORTAL, "experiment", "serve", "--store", str(root), "--addr", "127.0.0.1:0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()
    url = line.split(" at ", 1)[1].split(" ", 1)[0]
    return proc, url


def load_test(url: str, clients: int, seconds: float) -> None:
    target = f"{url}/api/v2/stellar/snapshot?target={GROUP}"
    urllib.request.urlopen(target, timeout=60).read()  # the first build is not a latency sample
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            try:
                with urllib.request.urlopen(target, timeout=30) as r:
                    r.read()
                    ok = r.status == 200
            except OSError:
                ok = False
            with lock:
                if ok:
                    latencies.append(time.perf_counter() - start)
                else:
                    errors[0] += 1

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    p50 = latencies[len(latencies) // 2] * 1000
    p95 = latencies[int(len(latencies) * 0.95)] * 1000
    print(
        f"load: {clients} clients × {seconds:.0f} s: {len(latencies)} requests, "
        f"p50 {p50:.0f} ms, p95 {p95:.0f} ms (target ≤ 200 ms), errors {errors[0]}"
    )


def interactive(url: str) -> None:
    chromium = "/usr/bin/chromium"
    if not os.path.exists(chromium):
        print("page interactive: skipped (no Chromium)")
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium, args=["--no-sandbox", "--disable-gpu"]
        )
        samples = []
        for _ in range(3):
            page = browser.new_page()
            page.goto(f"{url}/stellar?target={GROUP}")
            samples.append(
                page.evaluate("performance.getEntriesByType('navigation')[0].domInteractive")
            )
            page.close()
        browser.close()
    print(f"served page interactive: median {statistics.median(samples):.0f} ms (target ≤ 1500 ms)")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--keep", type=Path, help="build the store here once and reuse it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "store"
        start = time.perf_counter()
        if not (root / "manifest.json").exists():
            root.parent.mkdir(parents=True, exist_ok=True)
            build_store(root, args.runs, args.steps)
        print(
            f"store: {args.runs} runs × {len(METRICS)} metrics × {args.steps} steps "
            f"(built in {time.perf_counter() - start:.0f} s)"
        )
        html_figures(root)
        proc, url = serve(root)
        try:
            load_test(url, args.clients, args.seconds)
            interactive(url)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
