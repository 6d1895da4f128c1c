"""torchrun fine-tune: one process per GPU, rendezvous set up by tau."""

import os

import torch.distributed as dist

if __name__ == "__main__":
    dist.init_process_group("nccl")
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} on {os.environ['MASTER_ADDR']}")
    dist.destroy_process_group()
