"""Ray Train driver: each worker runs train_loop_per_worker on its GPUs."""

import json
import os

from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer


def train_loop_per_worker(config):
    for epoch in range(int(os.environ.get("EPOCHS", "1"))):
        print(json.dumps({"epoch": epoch}))


if __name__ == "__main__":
    workers = int(os.environ["TAU_NUM_WORKERS"])
    TorchTrainer(train_loop_per_worker, scaling_config=ScalingConfig(num_workers=workers)).fit()
