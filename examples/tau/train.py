"""Ray Train driver: each worker runs train_loop_per_worker on its GPUs.

`tau.log` writes to the run's metrics.history; only Ray Train's rank 0 writes.
"""

import os

from ray.train import ScalingConfig
from ray.train.torch import TorchTrainer

import tau


def train_loop_per_worker(config):
    for epoch in range(int(os.environ.get("EPOCHS", "1"))):
        loss = 1.0 / (epoch + 1)  # the epoch's training goes here
        tau.log({"epoch": epoch, "loss": loss}, step=epoch)


if __name__ == "__main__":
    workers = int(os.environ["TAU_NUM_WORKERS"])
    TorchTrainer(train_loop_per_worker, scaling_config=ScalingConfig(num_workers=workers)).fit()
