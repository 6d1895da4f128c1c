"""Wall-clock medians of the offline CLI paths and in-process render throughput.

    .venv/bin/python bench/cli_speed.py [--runs N]

Targets: `tau --help` ≤ 200 ms, `tau run validate` ≤ 250 ms, `tau run --dry-run=client`
≤ 300 ms (each a cold process), in-process render ≥ 2,000 configs/s, and `tau run TARGET
--dry-run=client` within 2.5× of `kubectl create --dry-run=client -o yaml -f` on the same
objects. That last one is measured paired (the two commands alternate run by run, and the
median of the per-pair ratios is reported), so a machine busy with other work slows both sides
of each pair alike instead of skewing one median.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
TAU = [sys.executable, "-m", "tau"]


def _cached_bytecode_env() -> dict[str, str]:
    """The environment without PYTHONDONTWRITEBYTECODE: any value of it (even "0") stops .pyc
    writing, and every process would then compile tau from source; measure what an installed
    tau does, with its bytecode cached.
    """
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def wall(argv: list[str], runs: int) -> float:
    """Median wall time in ms of a fresh process running argv (in examples/)."""
    env = _cached_bytecode_env()
    subprocess.run(argv, cwd=EXAMPLES, capture_output=True, check=True, env=env)  # warm the disk
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, cwd=EXAMPLES, capture_output=True, check=True, env=env)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def paired(
    first: list[str], second: list[str], runs: int, env: dict[str, str]
) -> tuple[float, float, float]:
    """(median ms of first, median ms of second, median of first/second per pair): each
    pair runs the two commands back to back, alternating which goes first.
    """
    for argv in (first, second):  # warm the disk and any cache
        subprocess.run(argv, cwd=EXAMPLES, capture_output=True, check=True, env=env)
    times: dict[int, list[float]] = {0: [], 1: []}
    ratios = []
    for i in range(runs):
        pair = {}
        for which in (0, 1) if i % 2 == 0 else (1, 0):
            start = time.perf_counter()
            argv = first if which == 0 else second
            subprocess.run(argv, cwd=EXAMPLES, capture_output=True, check=True, env=env)
            pair[which] = (time.perf_counter() - start) * 1000
        times[0].append(pair[0])
        times[1].append(pair[1])
        ratios.append(pair[0] / pair[1])
    return statistics.median(times[0]), statistics.median(times[1]), statistics.median(ratios)


@contextlib.contextmanager
def kubectl_env(workdir: Path) -> Iterator[dict[str, str]]:
    """An environment in which `kubectl create --dry-run=client` works without a cluster.

    kubectl still maps each object's kind to its resource through API discovery, even for a
    client dry run, so a throwaway KUBECONFIG points it at the API emulator of the tests
    (serving the built-in, Kueue, KubeRay and Tau kinds) and a throwaway --cache-dir keeps the
    discovery documents after the first call, as a user's ~/.kube/cache does. The user's own
    kubeconfig and cache are never read or written.
    """
    sys.path[:0] = [str(ROOT)]
    from tests.kubeapi.server import KubeApiServer

    server = KubeApiServer().start()
    try:
        server.register_kueue_kuberay_tau_kinds()
        kubeconfig = workdir / "kubeconfig"
        cluster = {"name": "bench", "cluster": {"server": server.url}}
        context = {"name": "bench", "context": {"cluster": "bench", "user": "bench"}}
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [cluster],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [context],
            "current-context": "bench",
        }
        kubeconfig.write_text(json.dumps(document))  # JSON is YAML
        yield _cached_bytecode_env() | {"KUBECONFIG": str(kubeconfig)}
    finally:
        server.stop()


def versus_kubectl(target: str, runs: int) -> tuple[float, float, float] | None:
    """(tau ms, kubectl ms, median ratio) of `tau run TARGET --dry-run=client` against
    `kubectl create --dry-run=client -o yaml -f` on the objects it prints; None without kubectl.
    """
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    tau = [*TAU, "run", target, "--dry-run=client"]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        objects = workdir / "objects.yaml"
        env = _cached_bytecode_env()
        rendered = subprocess.run(tau, cwd=EXAMPLES, capture_output=True, check=True, env=env)
        objects.write_bytes(rendered.stdout)
        # --validate=false: client-side schema validation downloads the cluster's OpenAPI
        # document, which the emulator does not serve; tau's own validation is in its time.
        theirs = [kubectl, "create", "--dry-run=client", "-o", "yaml", "--validate=false"]
        theirs += ["--cache-dir", str(workdir / "cache"), "-f", str(objects)]
        with kubectl_env(workdir) as env:
            return paired(tau, theirs, runs, env)


def import_ms(module: str, runs: int, *, preloaded: str = "") -> float:
    """Median ms to import `module` in a fresh interpreter (its own imports included), after
    `preloaded` (e.g. "typing") when given.
    """
    code = (
        (f"import {preloaded}; " if preloaded else "")
        + "import time; t = time.perf_counter(); import "
        + module
        + "; print((time.perf_counter() - t) * 1000)"
    )
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                check=True,
                text=True,
                env=_cached_bytecode_env(),
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def render_rates(seconds: float = 2.0) -> tuple[float, float, float]:
    """Configs per second in-process over the examples and golden inputs.

    Returns (render, render + canonical YAML, the whole pipeline from the file): render is
    the pure function config + catalog → manifests (resolve and render).
    """
    sys.path[:0] = [str(ROOT / "src")]
    from tau import pipeline, render
    from tau.intent import load, validate
    from tau.intent.workflow import probe
    from tau.plan import resolve
    from tau.render import manifests

    examples = [p for p in sorted(EXAMPLES.glob("tau/*.yaml")) if "connection" not in p.name]
    paths = [*examples, *sorted((ROOT / "golden").glob("*/tau.yaml"))]
    inputs = []
    for path in paths:
        doc = load.load(path)
        # Managed workflows are translated before they render (tau.intent.workflow.dispatch):
        # the rates are of direct configs, as `tau run validate` reads them.
        if (path.parent / "args").exists() or probe.applies(doc.data):
            continue
        valid = validate.validate(doc)
        inputs.append((valid, pipeline.catalog_for(valid, {}), pipeline.read_script(valid)))

    def rate(step) -> float:
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            for item in inputs:
                step(item)
                count += 1
        return count / (time.perf_counter() - start)

    def pure(item):
        valid, catalog, script = item
        return render.render(resolve.resolve(valid, catalog, script).plan, redact=True)

    def whole(item):
        valid = validate.validate(load.load(item[0].path))
        return manifests.dump_yaml(pipeline.client_preview(valid, {}).documents)

    return rate(pure), rate(lambda item: manifests.dump_yaml(pure(item))), rate(whole)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    rows = [
        ("tau --help", wall([*TAU, "--help"], args.runs), 200),
        ("tau run validate train", wall([*TAU, "run", "validate", "train"], args.runs), 250),
        (
            "tau run train --dry-run=client",
            wall([*TAU, "run", "train", "--dry-run=client"], args.runs),
            300,
        ),
        (
            "tau run finetune --dry-run=client",
            wall([*TAU, "run", "finetune", "--dry-run=client"], args.runs),
            300,
        ),
    ]
    for label, median, target in rows:
        verdict = "ok" if median <= target else "SLOW"
        print(f"{label:40s} median {median:7.1f} ms   target ≤ {target} ms   {verdict}")
    for target in ("finetune", "train"):
        compared = versus_kubectl(target, max(args.runs, 21))
        label = f"tau run {target} vs kubectl create"
        if compared is None:
            print(f"{label:40s} skipped: kubectl not on PATH")
            continue
        ours, theirs, ratio = compared
        print(
            f"{label:40s} paired median ratio {ratio:4.2f}×   target ≤ 2.5×   "
            f"{'ok' if ratio <= 2.5 else 'SLOW'}   (tau {ours:.1f} ms, kubectl {theirs:.1f} ms)"
        )
    # The typed config's own cost: every tau process has `typing` loaded before it reads a
    # config (the CLI framework imports it), so the target is on the import after `typing`;
    # the cold figure, `typing` included, is printed beside it.
    typed = import_ms("tau.intent.runconfig", args.runs, preloaded="typing")
    cold = import_ms("tau.intent.runconfig", args.runs)
    print(
        f"{'import tau.intent.runconfig':40s} median {typed:7.1f} ms   target ≤ 10 ms   "
        f"{'ok' if typed <= 10 else 'SLOW'}   (cold, typing included: {cold:.1f} ms)"
    )
    pure, dumped, whole = render_rates()
    print(
        f"{'in-process render (resolve+render)':40s} {pure:9.0f} configs/s target ≥ 2000  "
        f"{'ok' if pure >= 2000 else 'SLOW'}"
    )
    print(f"{'  + canonical YAML':40s} {dumped:9.0f} configs/s")
    print(f"{'  whole pipeline from the file':40s} {whole:9.0f} configs/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
