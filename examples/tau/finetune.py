"""torchrun fine-tune: one process per GPU, rendezvous set up by tau.

`tau.log` writes each step's metrics to the run's metrics.history (TAU_METRICS_HISTORY, set
by tau in the pod; metrics.jsonl here when run on a laptop); only rank 0 writes.
"""

import os

import torch.distributed as dist

import tau

if __name__ == "__main__":
    dist.init_process_group("nccl")
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} on {os.environ['MASTER_ADDR']}")
    for step in range(100):
        loss = 2.0 / (step + 1)  # the training step goes here
        tau.log({"loss": loss, "lr": 1e-4}, step=step)
    dist.destroy_process_group()
