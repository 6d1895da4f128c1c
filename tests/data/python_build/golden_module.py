"""The contract's golden module: one train, its eval, and a serve handle left out of builds.

tests/test_sdk_build_golden.py builds it with the golden overrides and compares the generated
configs byte for byte with train.yaml and eval.yaml beside this file.
"""

import tau


@tau.train(
    name="train-model",
    gpus=2,
    workers=3,
    namespace="decorator-ns",
    checkpoint_artifact="best/model.safetensors",
    runtime_pip=["torch==2.4.0"],
    env={"MODE": "train"},
    mounts=[
        tau.pvc_mount("model-cache", pvc="model-cache", mount_path="/models", read_only=True),
    ],
)
def train_job(ctx):
    return ctx


@tau.eval(
    name="eval-model",
    after="train-model",
    gpus=1,
    cpu_workers=7,
    namespace="decorator-ns",
    extra_manifest={
        "runtime": {
            "env": [{"name": "MODE", "value": "eval"}],
            "pip": ["torch==2.4.0"],
        },
    },
)
def eval_job(ctx):
    return ctx


endpoint = tau.serve(name="model-api", profile="research-serve", from_finetune=train_job)
