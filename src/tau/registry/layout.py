"""Where each registry document lives, relative to the registry root (the PVC's ``/data``).

Pure. Both backends store the same relative paths, so a ``file://DIR`` registry is a faithful
copy of the PVC layout and can be synced either way.
"""

from __future__ import annotations

from tau.k8s import paths

DATASETS = "dataset-registry/datasets"
MODELS = "model-registry/models"
FINETUNES = "checkpoints/finetunes"
#: Where the registry PVC is mounted in workloads and helper pods.
PVC_MOUNT = paths.DATA_ROOT


def dataset_dir(name: str) -> str:
    """The directory holding every version and alias of one dataset."""
    return f"{DATASETS}/{name}"


def dataset_record(name: str, version: str) -> str:
    """The immutable record of one dataset version."""
    return f"{DATASETS}/{name}/{version}/dataset.json"


def dataset_aliases(name: str) -> str:
    """The directory of a dataset's alias pointers."""
    return f"{DATASETS}/{name}/aliases"


def dataset_alias(name: str, alias: str) -> str:
    """One dataset alias pointer."""
    return f"{DATASETS}/{name}/aliases/{alias}.json"


def model_runs(model: str) -> str:
    """The directory of a model's per-run records."""
    return f"{MODELS}/{model}/runs"


def model_run(model: str, run: str) -> str:
    """One model run record."""
    return f"{MODELS}/{model}/runs/{run}.json"


def model_alias(model: str, alias: str) -> str:
    """One model alias pointer."""
    return f"{MODELS}/{model}/aliases/{alias}.json"


def finetune_file(run: str, filename: str) -> str:
    """A file in a run's durable checkpoint directory (``artifacts.json``, ``model.json``...)."""
    return f"{FINETUNES}/{run}/{filename}"
