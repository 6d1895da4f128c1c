"""A train → eval workflow written as two Python functions: fit a line, then score it.

Pure Python on purpose: `python examples/python/regression.py` runs both steps on this
machine (a local, cwd-rooted context), and `tau python submit` runs the very same functions as
RayJobs, the eval after the train with the train's checkpoint.

    tau python inspect examples/python/regression.py
    tau python build examples/python/regression.py -o dist/regression
    tau python submit examples/python/regression.py --dry-run=client
"""

from __future__ import annotations

import json
import random

import tau

CHECKPOINT = "line/model.json"


def _samples(seed: int, count: int) -> list[tuple[float, float]]:
    """Noisy points of y = 3x + 1: the data both steps agree on, without a dataset download."""
    rng = random.Random(seed)
    return [(x, 3.0 * x + 1.0 + rng.gauss(0.0, 0.1)) for x in (rng.random() for _ in range(count))]


@tau.train(
    name="regression",
    gpus=1,
    runtime_pip=["pyyaml==6.0.3"],
    data_pvc="project-data",
    checkpoint_artifact=CHECKPOINT,
    env={"EPOCHS": "200", "HF_TOKEN": tau.secret_ref("hf-token", "token")},
)
def fit(ctx):
    """Gradient descent on (slope, intercept); the checkpoint is the fitted line."""
    import os

    slope = intercept = 0.0
    points = _samples(seed=1, count=256)
    for _ in range(int(os.environ.get("EPOCHS", "200"))):
        grad_s = sum(2 * (slope * x + intercept - y) * x for x, y in points) / len(points)
        grad_i = sum(2 * (slope * x + intercept - y) for x, y in points) / len(points)
        slope, intercept = slope - 0.5 * grad_s, intercept - 0.5 * grad_i
    out = ctx.checkpoints_dir / CHECKPOINT
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"slope": slope, "intercept": intercept}))
    return out


@tau.eval(
    name="regression-eval",
    after="regression",
    cpu_workers=2,
    data_pvc="project-data",  # the train's checkpoint is read from this PVC, at /data
    extra_manifest={"runtime": {"pip": ["pyyaml==6.0.3"]}},
)
def score(ctx):
    """Mean squared error of the trained line on held-out points."""
    line = json.loads(ctx.upstream_checkpoint.read_text())
    held_out = _samples(seed=2, count=64)
    mse = sum((line["slope"] * x + line["intercept"] - y) ** 2 for x, y in held_out)
    return {"mse": mse / len(held_out)}


if __name__ == "__main__":
    import os
    import tempfile

    # A local call's context is rooted at the working directory (its checkpoints/ folder):
    # run in a scratch folder, so trying the example leaves nothing in your work tree.
    with tempfile.TemporaryDirectory(prefix="tau-regression-") as scratch:
        os.chdir(scratch)
        checkpoint = fit()
        print(score(upstream_checkpoint=checkpoint))
