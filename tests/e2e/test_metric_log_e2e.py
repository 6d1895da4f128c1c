"""`tau.log` in a real pod: a torchrun Job whose image has no tau logs through the shim tau ships
with the payload, only rank 0 writes, and `tau run get` reads the history it wrote.

The runtime image built here (tests/e2e/controlplane/image.toml) has torch and Ray but not tau,
which is the case the shim exists for.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.test_real_pods import job_config, ray_config, state, write_target

pytestmark = pytest.mark.e2e

#: Two processes in one pod; each logs 20 steps, rank 0's rows are the history. A NaN step
#: shows the non-finite token survives the pod.
LOGS = """\
import math, os
import torch.distributed as dist
import tau

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank}: tau from {tau.__file__}", flush=True)
for step in range(20):
    tau.log({"loss": 1.0 / (step + 1), "rank_seen": rank}, step=step)
tau.log({"loss": math.nan}, step=20)
dist.barrier()
dist.destroy_process_group()
"""


def test_a_torchrun_job_logs_with_tau_log_where_the_image_has_no_tau(
    real_repo: Shell, researcher: Any
) -> None:
    config = job_config(
        "taulog",
        researcher.image,
        execution={"launcher": "torchrun", "nodes": 1, "processes_per_node": 2},
        metrics={"history": ["metrics.jsonl"]},
    )
    write_target(real_repo, config, LOGS)
    real_repo.ok("run", "taulog")
    wait_for("the run to succeed", lambda: state(real_repo, "taulog") == "succeeded", timeout=900)

    logs = real_repo.ok("run", "logs", "taulog")
    for rank in (0, 1):
        assert f"rank {rank}: tau from /script/tau.py" in logs, logs[-3000:]

    history = real_repo.tau("run", "get", "taulog", "--artifact", "metrics.jsonl")
    assert history.returncode == 0, history.stderr
    lines = [line for line in history.stdout.splitlines() if line.strip()]
    assert lines[-1].endswith('"loss":NaN}'), lines[-1]
    rows = [json.loads(line) for line in lines]
    assert [r["_step"] for r in rows] == list(range(21))
    assert {r.get("rank_seen", 0) for r in rows} == {0}  # only rank 0 wrote
    assert all(isinstance(r["_timestamp"], float) for r in rows)


#: A Ray task on the worker imports tau: Ray put the driver's /script on the worker's path
#: (the worker pod mounts the payload too), and the rows land on the data claim.
RAY_LOGS = """\
import ray

ray.init()

@ray.remote(num_cpus=1)
def train():
    import tau
    for step in range(5):
        tau.log({"loss": 1.0 / (step + 1)}, step=step)
    tau.log_flush()
    return tau.__file__

print(f"worker tau from {ray.get(train.remote())}", flush=True)
"""


def test_a_ray_task_on_a_worker_logs_with_the_shipped_tau_log(
    real_repo: Shell, researcher: Any
) -> None:
    config = ray_config(
        "ray-taulog",
        researcher.image,
        storage={"data_pvc": "training-data"},
        metrics={"history": ["metrics.jsonl"]},
    )
    write_target(real_repo, config, RAY_LOGS)
    real_repo.ok("run", "ray-taulog")
    wait_for(
        "the driver to succeed", lambda: state(real_repo, "ray-taulog") == "succeeded", timeout=900
    )
    logs = real_repo.ok("run", "logs", "ray-taulog")
    assert "worker tau from /script/tau.py" in logs, logs[-3000:]
    history = real_repo.tau("run", "get", "ray-taulog", "--artifact", "metrics.jsonl")
    assert history.returncode == 0, history.stderr
    rows = [json.loads(line) for line in history.stdout.splitlines() if line.strip()]
    assert [r["_step"] for r in rows] == [0, 1, 2, 3, 4]
