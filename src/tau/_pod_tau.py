"""tau.py: the `tau` a run's training code imports in its pod, installed tau or not.

The render ships this file as /script/tau.py, and tau/metric_log.py beside it as
/script/_tau_metric_log.py, whenever the run sets `metrics.history` (tau.plan.metrics_history).
/script is first on the entrypoint's sys.path, so `import tau` finds this file first; then:

- where the image has tau installed (anywhere else on sys.path), that tau is loaded in this
  module's place and wins; should it predate `tau.log`, the shipped logger is added to it;
- otherwise this module is the tau training code needs: `tau.log` and `tau.log_flush`.

Self-contained like the logger: the standard library only, valid on the pod's Python (3.10
or newer), byte-stable (it is shipped and hashed as it is).
"""

import importlib.machinery
import importlib.util
import os
import sys

_LOGGER = "_tau_metric_log"
_NAMES = ("log", "log_flush")


def _installed() -> "importlib.machinery.ModuleSpec | None":
    """The spec of a `tau` elsewhere on sys.path than this file's folder, if any.

    A bare `tau/` folder (a project's config folder in the working directory) is a namespace
    package, not an installed tau: it does not count.
    """
    here = os.path.dirname(os.path.realpath(__file__))
    elsewhere = [p for p in sys.path if os.path.realpath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec(__name__, elsewhere)
    if spec is None or spec.origin in (None, "namespace"):
        return None
    return spec


def _shipped_logger() -> object:
    """The shipped tau/metric_log.py, loaded from this file's folder."""
    if _LOGGER in sys.modules:
        return sys.modules[_LOGGER]
    path = os.path.join(os.path.dirname(os.path.realpath(__file__)), _LOGGER + ".py")
    spec = importlib.util.spec_from_file_location(_LOGGER, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_LOGGER] = module
    spec.loader.exec_module(module)
    return module


def _become_installed_tau() -> bool:
    """Load the installed tau as `tau` (import returns what sys.modules then holds)."""
    spec = _installed()
    if spec is None or spec.loader is None:
        return False
    shim = sys.modules[__name__]
    module = importlib.util.module_from_spec(spec)
    sys.modules[__name__] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules[__name__] = shim
        raise
    for name in _NAMES:
        if not hasattr(module, name):  # a tau from before tau.log
            setattr(module, name, getattr(_shipped_logger(), name))
    return True


if __name__ == "tau" and not _become_installed_tau():
    _logger = _shipped_logger()
    log = _logger.log  # type: ignore[attr-defined]
    log_flush = _logger.log_flush  # type: ignore[attr-defined]
    __all__ = list(_NAMES)
