"""Import a Python file by path: the user's module, a staged entrypoint script.

Performs I/O (reads and executes the file). The file's folder is on `sys.path` only while it
runs, so its sibling imports work without leaving the path changed; the module stays in
`sys.modules` under its name (a failed import removes it). Names Tau itself answers to
(`tau`, `config`, `workloads`) are refused: such a module would shadow the SDK.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from tau.sdk.errors import SdkError

RESERVED_MODULE_NAMES = frozenset({"tau", "config", "workloads"})


def load_staged_module(script_path: str | Path, *, module_name: str | None = None) -> ModuleType:
    """Execute the file at `script_path` as a module and return it.

    Exceptions raised by the file's own top-level code propagate unchanged (the caller decides
    how to report them); a missing file or an unusable module name is an SdkError.
    """
    path = Path(script_path).expanduser().resolve(strict=False)
    if not path.is_file():
        raise SdkError(f"tau staged module not found: {path}")
    name = module_name or _name_for(path)
    check_module_name(name, path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise SdkError(f"could not import staged module from {path}")
    module = importlib.util.module_from_spec(spec)
    saved_path = list(sys.path)
    sys.modules[name] = module
    try:
        if str(path.parent) not in sys.path:
            sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    except BaseException:
        if sys.modules.get(name) is module:
            del sys.modules[name]
        raise
    finally:
        sys.path[:] = saved_path
    return module


def load_staged_function(
    script_path: str | Path, function_name: str, *, module_name: str | None = None
) -> Callable[..., Any]:
    """The callable `function_name` of the file at `script_path`."""
    if not function_name:
        raise SdkError("function_name must not be empty")
    module = load_staged_module(script_path, module_name=module_name)
    fn = getattr(module, function_name, None)
    if fn is None:
        raise SdkError(f"tau staged module {Path(script_path)} has no attribute {function_name!r}")
    if not callable(fn):
        raise SdkError(
            f"tau staged module {Path(script_path)} attribute {function_name!r} is not callable"
        )
    return fn


def call_staged_function(
    script_path: str | Path,
    function_name: str,
    *args: Any,
    module_name: str | None = None,
    **kwargs: Any,
) -> Any:
    """Load `function_name` from the file at `script_path` and call it with the arguments."""
    return load_staged_function(script_path, function_name, module_name=module_name)(
        *args, **kwargs
    )


def _name_for(path: Path) -> str:
    """A module name unique to the file's path, so two scripts named alike never collide."""
    if not path.stem.isidentifier():
        raise SdkError(
            f"staged module filename must be an importable Python module name: {path.name!r}"
        )
    digest = hashlib.sha1(str(path).encode("utf-8")).hexdigest()[:12]
    return f"_tau_staged_{path.stem}_{digest}"


def check_module_name(name: str, path: Path) -> None:
    """Refuse a name that is not an identifier or that Tau reserves."""
    if not name.isidentifier():
        raise SdkError(f"staged module name must be a Python identifier for {path}: {name!r}")
    if name in RESERVED_MODULE_NAMES:
        raise SdkError(f"staged module name {name!r} is reserved by Tau")
