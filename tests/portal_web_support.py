"""Shared test support for the Stellar and portal web tests: a fake store source built from
hand-written records, and a real uvicorn server on 127.0.0.1:0 in a thread."""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau.portal.stellar.evidence import Evidence, Record, Series

XSS = "<script>alert(1)</script>"


def metric_points(
    run_index: int, metric: str, steps: int
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Deterministic curves: loss falls, score rises, each run offset by its index."""
    xs = tuple(range(0, steps))
    if "loss" in metric:
        ys = tuple(2.0 / (1 + s / 50) + 0.05 * run_index + 0.02 * math.sin(s / 7) for s in xs)
    else:
        ys = tuple(0.9 * (1 - math.exp(-s / 80)) - 0.03 * run_index for s in xs)
    return xs, ys


@dataclass
class FakeSource:
    """A StellarSource over in-memory records (the store's column names)."""

    store_path: str
    runs: list[dict[str, Any]]
    metrics: tuple[str, ...] = ("eval/score", "train/loss")
    steps: int = 200
    events: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)
    configs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    stamp: str = "v1"
    calls: int = 0

    def version(self) -> str:
        return self.stamp

    def _series(self, metric: str, run_ids: Sequence[str]) -> list[Series]:
        index = {r["run_id"]: i for i, r in enumerate(self.runs)}
        return [
            Series(
                rid,
                metric,
                *metric_points(index[rid], metric, self.steps),
                # One step a second from 2026-01-01T00:00Z, each run starting a minute later.
                tuple((1_767_225_600 + 60 * index[rid] + s) * 1_000_000 for s in range(self.steps)),
            )
            for rid in run_ids
            if metric in self.metrics
        ]

    def summaries(self) -> list[Record]:
        out = []
        for i, r in enumerate(self.runs):
            for m in self.metrics:
                xs, ys = metric_points(i, m, self.steps)
                out.append(
                    {
                        "run_id": r["run_id"],
                        "metric_name": m,
                        "count": len(xs),
                        "finite_count": len(xs),
                        "non_finite_count": 0,
                        "min_step": xs[0],
                        "max_step": xs[-1],
                        "latest_step": xs[-1],
                        "latest_value": ys[-1],
                        "min_value": min(ys),
                        "max_value": max(ys),
                        "latest_wall_time": "2026-01-01T01:00:00Z",
                    }
                )
        return out

    def evidence(self, target: str, *, max_runs: int, kind: str = "") -> Evidence:
        """Resolved as the store does: a group, then a run, then the experiment `exp`; `kind`
        asks for one of them only."""
        self.calls += 1
        groups = [r for r in self.runs if r["run_group_id"] == target]
        by_id = [r for r in self.runs if r["run_id"] == target]
        if kind == "run_group" or (not kind and groups):
            runs, kind = groups, "run_group"
        elif kind == "run" or (not kind and by_id):
            runs, kind = by_id, "run"
        else:
            runs, kind = (list(self.runs) if target == "exp" else []), "experiment"
        if not runs:
            raise LookupError(target)
        ids = {r["run_id"] for r in runs}
        return Evidence(
            store_path=self.store_path,
            target=target,
            target_type=kind,
            manifest={"kind": "tau.exp.store", "schema_version": "expstore.v5"},
            status=self.status(target),
            experiment={"experiment_id": "exp", "name": "exp", "project": "demo"},
            run_groups=[],
            runs=runs[:max_runs],
            total_runs=len(runs),
            configs={k: v for k, v in self.configs.items() if k in ids},
            summaries=[s for s in self.summaries() if s["run_id"] in ids],
            events=[e for e in self.events if e["run_id"] in ids],
            artifacts=[a for a in self.artifacts if a["run_id"] in ids],
            observations=self.observations,
            load_series=self._series,
        )

    def status(self, target: str) -> Mapping[str, Any]:
        runs = [r for r in self.runs if target in (r["run_group_id"], r["run_id"], "exp")]
        if not runs:
            raise LookupError(target)
        counts: dict[str, int] = {}
        for r in runs:
            counts[r["state"]] = counts.get(r["state"], 0) + 1
        return {
            "target": target,
            "runs": len(runs),
            "state_counts": counts,
            "metric_files": len(runs),
        }

    def search_runs(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]:
        runs = self.runs
        if filters.get("target"):
            runs = [r for r in runs if filters["target"] in (r["run_group_id"], r["run_id"])]
        return {
            "schema_version": "tau.exp.run_search.v0",
            "total": len(runs),
            "truncated": len(runs) > limit,
            "runs": runs[:limit],
        }

    def search_experiments(self, filters: Mapping[str, str], limit: int) -> Mapping[str, Any]:
        return {
            "schema_version": "tau.exp.experiment_search.v0",
            "experiments": [
                {
                    "experiment_id": "exp",
                    "name": "exp",
                    "project": "demo",
                    "run_count": len(self.runs),
                }
            ][:limit],
        }


def demo_runs(groups: int = 2, per_group: int = 3) -> list[dict[str, Any]]:
    runs = []
    for g in range(groups):
        for k in range(per_group):
            runs.append(
                {
                    "run_id": f"run-{g}-{k}",
                    "project": "demo",
                    "experiment_id": "exp",
                    "run_group_id": f"lr-{g}",
                    "state": "succeeded",
                    "created_at": f"2026-01-01T00:0{g}:0{k}Z",
                    "completed_at": "2026-01-01T01:00:00Z",
                    "result_uri": f"pvc://results/run-{g}-{k}",
                    "tags": {},
                    "context": {"gpu_class": "a100", "gpu_count": "8" if g else "4"},
                }
            )
    return runs


def demo_source(tmp_path: Path) -> FakeSource:
    runs = demo_runs()
    runs.append({**runs[0], "run_id": XSS, "state": "running", "completed_at": ""})
    (tmp_path / "artifacts").mkdir(exist_ok=True)
    (tmp_path / "artifacts" / "report.txt").write_text("hello\n")
    (tmp_path.parent / "secret.txt").write_text("outside the store\n")
    return FakeSource(
        store_path=str(tmp_path),
        runs=runs,
        events=[
            {
                "event_id": "event-1",
                "run_id": "run-0-0",
                "time": "2026-01-01T00:10:00Z",
                "type": "running",
                "source": "kubernetes/job",
                "severity": "info",
                "message": "Job team/run-0-0 started running",
            },
            {
                "event_id": "event-2",
                "run_id": "run-0-1",
                "time": "2026-01-01T00:20:00Z",
                "type": "pod-failed",
                "source": "kubernetes/pod",
                "severity": "warning",
                "message": f"Pod {XSS} failed: OOMKilled",
            },
        ],
        artifacts=[
            {
                "artifact_id": "a-report",
                "run_id": "run-0-0",
                "type": "report",
                "uri": "artifacts/report.txt",
                "name": "report",
            },
            {
                "artifact_id": "a-escape",
                "run_id": "run-0-0",
                "type": "report",
                "uri": "../secret.txt",
                "name": "escape",
            },
            {
                "artifact_id": "a-abs",
                "run_id": "run-0-0",
                "type": "report",
                "uri": "file:///etc/passwd",
                "name": "abs",
            },
            {
                "artifact_id": "a-ckpt",
                "run_id": "run-0-1",
                "type": "checkpoint",
                "uri": "pvc://ckpt/run-0-1",
                "name": "ckpt",
            },
        ],
        configs={
            r["run_id"]: [
                {
                    "config_hash": f"h{i}",
                    "format": "json",
                    "uri": "cfg.json",
                    "normalized_json": json.dumps({"lr": 0.1 * (1 + i % 2), "seed": i}),
                }
            ]
            for i, r in enumerate(runs[:6])
        },
    )


class Served:
    def __init__(self, url: str, port: int) -> None:
        self.url = url
        self.port = port

    def get(
        self, path: str, headers: Mapping[str, str] | None = None, method: str = "GET"
    ) -> tuple[int, dict[str, str], bytes]:
        request = urllib.request.Request(
            self.url + path, headers=dict(headers or {}), method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, dict(response.headers.items()), response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, dict(exc.headers.items()), exc.read()

    def json(self, path: str, **kw: Any) -> tuple[int, Any]:
        status, _, body = self.get(path, **kw)
        return status, json.loads(body) if body else None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


urllib.request.install_opener(urllib.request.build_opener(_NoRedirect))


@contextmanager
def serve_app(build: Any, host: str = "127.0.0.1") -> Iterator[Served]:
    """Run `build(guard)`'s app on a real socket at host:0 in a thread."""
    import uvicorn

    from tau.portal.web.server import Address, bind, bound_address, guard_for

    sock = bind(Address(host, 0))
    address = bound_address(sock, Address(host, 0))
    app = build(guard_for(address))
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="error", lifespan="off", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield Served(f"http://{address.shown_host}:{address.port}", address.port)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
