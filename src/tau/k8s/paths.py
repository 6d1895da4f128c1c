"""The storage layout every tau pod sees: where the durable PVC and the node-local scratch mount.

Pure. One spelling of each root, so the renderer, the registry helper pods, serving, results
and the validation rules cannot disagree about where `/data` is.
"""

from __future__ import annotations

import posixpath

#: The durable PVC (runs, checkpoints, datasets, the registries).
DATA_ROOT = "/data"
#: Node-local scratch for hot datasets and checkpoints.
HOT_ROOT = "/mnt"
#: Where the payload init container writes the entrypoint and the scripts shipped with it.
SCRIPT_ROOT = "/script"
DURABLE_CHECKPOINTS = DATA_ROOT + "/checkpoints"
DURABLE_DATASETS = DATA_ROOT + "/datasets"


def under_data(path: str) -> bool:
    """True when `path` is the data root or lies below it (after normalising `..`)."""
    norm = posixpath.normpath(path)
    return norm == DATA_ROOT or norm.startswith(DATA_ROOT + "/")
