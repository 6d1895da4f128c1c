"""The Python SDK's train → eval chain under a real Ray Train, on the real node.

`tau python submit` renders a train RayJob whose head runs the cluster wrapper with
`TAU_NUM_WORKERS` Ray Train workers, then an eval RayJob whose head gets the train's checkpoint
as `TAU_UPSTREAM_CHECKPOINT`. The reference's managed head asks for 2 CPUs, more than the real
node's two cores hold beside anything else, so the full RayJob chain runs only on a node with at
least 4 CPUs (`test_the_whole_chain_through_kuberay`). Everywhere, the pod-side half runs for
real: each rendered head (its init containers, volumes, env and entrypoint, exactly as
rendered) becomes one pod in the runtime image that starts a real `ray start --head` and then
runs the RayJob's entrypoint against it, as KubeRay's submitter would. The train function's
TorchTrainer starts CPU workers (gloo) that save the checkpoint; the eval function loads it.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.node import NODE_NAME
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.researcher import DATA_CLAIM

pytestmark = pytest.mark.e2e

MODULE = """
import tau

# The runtime image has this PyYAML already: pip needs no index (pods reach none here).
RUNTIME = {{"runtime": {{"image": "{image}", "pip": ["PyYAML==6.0.4"]}}}}


@tau.train(
    name="rtchain",
    gpus=0,
    workers=2,
    data_pvc="{claim}",
    checkpoint_artifact="model.pt",
    extra_manifest=RUNTIME,
)
def fit(ctx):
    import os
    import pathlib

    import ray.train
    import torch
    import torch.distributed as dist

    context = ray.train.get_context()
    rank, world = context.get_world_rank(), context.get_world_size()
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)  # the workers really form one gloo group
    print(f"train rank {{rank}} of {{world}}: sum {{int(total.item())}}", flush=True)
    if rank == 0:
        out = pathlib.Path(ctx.checkpoints_dir)
        out.mkdir(parents=True, exist_ok=True)
        torch.save({{"weights": torch.full((3,), float(total.item()))}}, out / "model.pt")
    return str(pathlib.Path(ctx.checkpoints_dir) / "model.pt")


@tau.eval(
    name="rtchain-eval", after="rtchain", cpu_workers=1, data_pvc="{claim}", extra_manifest=RUNTIME
)
def score(ctx):
    import torch

    state = torch.load(ctx.upstream_checkpoint)
    print(f"eval loaded {{ctx.upstream_checkpoint}}: {{state['weights'].tolist()}}", flush=True)
"""

#: What the pods' CPU time is capped at: the node has two cores.
HEAD_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "2Gi"},
    "limits": {"cpu": "2", "memory": "6Gi"},
}


def rendered_rayjobs(shell: Shell, module: Path) -> list[dict[str, Any]]:
    """The chain's RayJobs as `tau python submit --dry-run=client` renders them (train, eval)."""
    out = shell.ok("python", "submit", module.name, "--dry-run=client", timeout=300)
    docs = [d for d in yaml.safe_load_all(out) if d and d.get("kind") == "RayJob"]
    assert [d["metadata"]["name"] for d in docs] == ["tau-rtchain", "tau-rtchain-eval"], out
    return docs


def head_pod(rayjob: dict[str, Any], name: str, image: str) -> dict[str, Any]:
    """The RayJob's head as one pod on the real node: the rendered init containers, volumes,
    env and entrypoint; the image is the runtime image and its command starts a real Ray head
    before it runs the entrypoint (KubeRay's submitter does that part on a cluster)."""
    template = copy.deepcopy(rayjob["spec"]["rayClusterSpec"]["headGroupSpec"]["template"])
    spec = template["spec"]
    head = spec["containers"][0]
    head["image"] = image
    head["imagePullPolicy"] = "Never"
    head["resources"] = HEAD_RESOURCES
    script = (
        "set -e\n"
        "ray start --head --num-cpus=3 --num-gpus=0 --disable-usage-stats "
        "--include-dashboard=false >/tmp/ray-start.log 2>&1 || "
        "{ cat /tmp/ray-start.log; exit 1; }\n"
        "export RAY_ADDRESS=auto\n"
        f"bash -c {_quote(rayjob['spec']['entrypoint'])}\n"
    )
    head["command"] = ["bash", "-lc", script]
    head.pop("args", None)
    head.pop("readinessProbe", None)
    head.pop("livenessProbe", None)
    spec["containers"] = [head]  # the driver-log sidecar needs KubeRay's head; not here
    for init in spec.get("initContainers") or ():
        init["image"] = image
        init["imagePullPolicy"] = "Never"
    # A client dry run names no service account; the namespace's default runs the pod.
    for key in (
        "affinity",
        "nodeSelector",
        "tolerations",
        "priorityClassName",
        "subdomain",
        "serviceAccountName",
    ):
        spec.pop(key, None)
    spec["nodeName"] = NODE_NAME
    spec["restartPolicy"] = "Never"
    labels = {"e2e": "sdk-ray-train"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
    }


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def run_pod(admin: Api, namespace: str, pod: dict[str, Any]) -> str:
    """Create the pod, wait for it to end, and return its log; a failure shows the log."""
    from kubernetes import client

    pod["metadata"]["namespace"] = namespace
    name = pod["metadata"]["name"]
    admin.delete("v1", "Pod", name, namespace)
    wait_for(f"no pod {name}", lambda: admin.get("v1", "Pod", name, namespace) is None)
    admin.apply(pod)
    phase = wait_for(
        f"pod {name} to end",
        lambda: (
            (admin.get("v1", "Pod", name, namespace) or {}).get("status", {}).get("phase")
            in ("Succeeded", "Failed")
            and admin.get("v1", "Pod", name, namespace)["status"]["phase"]
        ),
        timeout=900,
        interval=2,
    )
    log = client.CoreV1Api(admin.api_client).read_namespaced_pod_log(
        name, namespace, container=pod["spec"]["containers"][0]["name"]
    )
    assert phase == "Succeeded", f"pod {name} {phase}:\n{log[-6000:]}"
    return str(log)


@pytest.fixture(scope="module")
def chain(real_repo: Shell, researcher: Any) -> list[dict[str, Any]]:
    module = real_repo.cwd / "rtchain.py"
    module.write_text(MODULE.format(image=researcher.image, claim=DATA_CLAIM))
    return rendered_rayjobs(real_repo, module)


def test_the_cluster_wrappers_train_and_eval_run_under_a_real_ray_train(
    chain: list[dict[str, Any]], admin: Api, researcher: Any
) -> None:
    ns = researcher.real_workspace
    train, evaluation = chain
    head_env = {
        e["name"]: e.get("value")
        for e in train["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][
            0
        ].get("env")
        or ()
    }
    assert head_env.get("TAU_NUM_WORKERS") == "2", head_env  # Ray Train, two CPU workers
    upstream = "/data/checkpoints/finetunes/rtchain/artifacts/model.pt"
    eval_head = evaluation["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    eval_env = {e["name"]: e.get("value") for e in eval_head["containers"][0].get("env") or ()}
    assert eval_env.get("TAU_UPSTREAM_CHECKPOINT") == upstream, eval_env
    try:
        log = run_pod(admin, ns, head_pod(train, "sdk-rt-train", researcher.image))
        assert "invoking fit (kind=train" in log, log[-4000:]
        # Both Ray Train workers joined one gloo group: ranks 0 and 1 sum 1 + 2.
        assert "train rank 0 of 2: sum 3" in log and "train rank 1 of 2: sum 3" in log, log[-4000:]
        assert "tau: wrote the artifact index" in log and "(ready)" in log, log[-4000:]
        log = run_pod(admin, ns, head_pod(evaluation, "sdk-rt-eval", researcher.image))
        assert "invoking score (kind=eval" in log, log[-4000:]
        assert f"eval loaded {upstream}: [3.0, 3.0, 3.0]" in log, log[-4000:]
    finally:
        for name in ("sdk-rt-train", "sdk-rt-eval"):
            admin.delete("v1", "Pod", name, ns)


def _node_cpus(admin: Api) -> float:
    node = admin.get("v1", "Node", NODE_NAME) or {}
    value = str((node.get("status") or {}).get("allocatable", {}).get("cpu") or "0")
    return float(value[:-1]) / 1000 if value.endswith("m") else float(value)


def test_the_whole_chain_through_kuberay(
    real_repo: Shell, chain: list[dict[str, Any]], admin: Api
) -> None:
    """The reference's managed head asks for 2 CPUs beside its workers: a node of 4 CPUs."""
    cpus = _node_cpus(admin)
    if cpus < 4 and not os.environ.get("TAU_E2E_FORCE_FULL_CHAIN"):
        pytest.skip(
            f"the real node has {cpus:g} CPUs; the managed RayJob chain needs a node with at "
            "least 4 (its head asks for 2 beside the workers)"
        )
    proc = real_repo.tau(
        "python", "submit", "rtchain.py", "--timeout", "20m", "--poll-interval", "2", timeout=1500
    )
    assert proc.returncode == 0, proc.stderr
    assert "submitted tau-rtchain-eval (" in proc.stdout
