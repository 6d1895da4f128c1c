"""The Python SDK: workflows written as decorated functions (`@tau.train`, `@tau.eval`).

A researcher writes `import tau` and reaches these names as `tau.<name>` (tau/__init__.py
resolves them lazily, so `tau --help` imports none of the SDK). `tau python inspect|build|submit`
imports the researcher's module, finds its handles (discover), turns them into generated run
configs (generate) and writes or submits those through the `tau run` path.

Importing this package is cheap: it holds only the table of public names.
"""

from __future__ import annotations

#: Public name → the module that defines it.
PUBLIC: dict[str, str] = {
    "train": "tau.sdk.workloads",
    "eval": "tau.sdk.workloads",
    "serve": "tau.sdk.serve",
    "ServeHandle": "tau.sdk.serve",
    "Ctx": "tau.sdk.ctx",
    "config": "tau.sdk.config",
    "load_config": "tau.sdk.config",
    "secret_ref": "tau.sdk.secrets",
    "secret": "tau.sdk.secrets",
    "secret_from_env": "tau.sdk.secrets",
    "secret_from_file": "tau.sdk.secrets",
    "SecretRef": "tau.sdk.secrets",
    "SecretSource": "tau.sdk.secrets",
    "pvc_mount": "tau.sdk.mounts",
    "load_staged_module": "tau.sdk.staging",
    "load_staged_function": "tau.sdk.staging",
    "call_staged_function": "tau.sdk.staging",
}


def public(name: str) -> object:
    """The object behind the public name `name` (imports its module on first use)."""
    import importlib

    return getattr(importlib.import_module(PUBLIC[name]), name)
