"""The cluster-side wrapper a `tau python` workload ships: its bytes and staged names.

Pure (reads one packaged file). The wrapper itself is `_cluster_wrapper.py`, a real module of
this package so it is linted, type-checked and tested like the rest; it is shipped verbatim, so
builds stay byte-stable (no template, no timestamp) and its digest changes only with tau.
"""

from __future__ import annotations

from importlib import resources

#: The wrapper's name in a build's workload folder; `run.entrypoint` names it.
FILENAME = "tau_py_wrapper.py"
#: What the renderer stages the entrypoint as in /script.
STAGED_AS = "train.py"
#: The user's module, staged under a fixed name the wrapper imports.
USER_MODULE_FILENAME = "tau_user_module.py"

_SOURCE = "_cluster_wrapper.py"


def source() -> bytes:
    """The bytes of tau_py_wrapper.py, as packaged with this tau."""
    return resources.files(__package__ or "tau.sdk").joinpath(_SOURCE).read_bytes()
