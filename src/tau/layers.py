"""The layers of tau, lowest first: a module may import only from its own layer or below.

Pure data, read by tests/test_layers.py (which fails on any arrow pointing up). Each name is a
package or top-level module under src/tau; names in one tuple are peers and do not import
each other. `render` is used through `pipeline` only (the run's manifests and `tau serve`'s
documents alike).
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    # tau.log and its pod shim import nothing of tau: they ship into pods without it.
    ("usage", "build_info", "metric_log", "_pod_tau", "objectstore"),
    ("errors", "k8s", "layers"),
    ("intent",),
    ("plan",),
    ("render", "provenance"),
    ("pipeline",),
    ("kube",),
    ("connection",),
    ("workspaces",),
    ("session",),
    ("status",),
    ("registry",),
    ("runs",),
    ("serving", "review"),
    ("portal", "cluster"),
    ("cli",),
    ("sdk",),
)

#: Which layers may import `render` (everything else renders through `pipeline`).
RENDER_USERS = frozenset({"render", "pipeline"})
