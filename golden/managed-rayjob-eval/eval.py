import os

print("evaluating", os.environ["TAU_UPSTREAM_CHECKPOINT"])
