"""tau: turn a checked-in workload intent (tau.yaml) into Kubernetes Jobs or KubeRay RayJobs.

The package is layered as load → validate → resolve → render → dump (pure) and
submit → observe (I/O). Nothing here imports the Kubernetes client at import time,
so offline commands stay fast.

`import tau` is also the Python SDK a researcher writes against (`@tau.train`, `@tau.eval`,
`tau.serve`, ...): those names resolve on first access (PEP 562), so `tau --help` never
imports tau.sdk. Two of them, `config` and `serve`, are also the names of subpackages; as
attributes of `tau` they always mean the SDK functions, and the subpackages are reached
through imports (`from tau.config import ...`), which read sys.modules, never this attribute.
"""

import sys as _sys
import types as _types

__version__ = "0.1.0"

#: The SDK's public names (tau.sdk.PUBLIC says where each is defined).
SDK_NAMES = frozenset(
    {
        "train",
        "eval",
        "serve",
        "ServeHandle",
        "Ctx",
        "config",
        "load_config",
        "secret_ref",
        "secret",
        "secret_from_env",
        "secret_from_file",
        "SecretRef",
        "SecretSource",
        "pvc_mount",
        "load_staged_module",
        "load_staged_function",
        "call_staged_function",
    }
)
_SUBPACKAGE_CLASHES = frozenset({"config", "serve"})


class _Package(_types.ModuleType):
    """`tau` itself: importing tau.config or tau.serve does not rebind tau.config / tau.serve
    (the SDK functions a user module calls) to those subpackages.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if name in _SUBPACKAGE_CLASHES and isinstance(value, _types.ModuleType):
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> object:
    if name in SDK_NAMES:
        from tau.sdk import public

        value = public(name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tau' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | SDK_NAMES)
