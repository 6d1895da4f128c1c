"""A tiny training entrypoint used by golden cases."""
import os

print("training", os.environ.get("TAU_OUTPUT_DIR", "-"))
