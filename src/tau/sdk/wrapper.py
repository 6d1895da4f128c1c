"""The cluster-side wrapper a `tau python` workload ships: its bytes (tau.sdk.generate names it
and stages it).

Pure (reads one packaged file). The wrapper itself is `_cluster_wrapper.py`, a real module of
this package so it is linted, type-checked and tested like the rest; it is shipped verbatim, so
builds stay byte-stable (no template, no timestamp) and its digest changes only with tau.
"""

from __future__ import annotations

from importlib import resources

_SOURCE = "_cluster_wrapper.py"


def source() -> bytes:
    """The bytes of tau_py_wrapper.py, as packaged with this tau."""
    return resources.files(__package__ or "tau.sdk").joinpath(_SOURCE).read_bytes()
