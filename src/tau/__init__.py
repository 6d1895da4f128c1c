"""tau: turn a checked-in workload intent (tau.yaml) into Kubernetes Jobs or KubeRay RayJobs.

The package is layered as load → validate → resolve → render → dump (pure) and
submit → observe (I/O). Nothing here imports the Kubernetes client at import time,
so offline commands stay fast.

`import tau` is also the Python SDK a researcher writes against (`@tau.train`, `@tau.eval`,
`tau.serve`, `tau.config`, ...): those names resolve on first access (PEP 562), so `tau --help`
never imports tau.sdk. No module of the package shares a name with them (tau.yaml is read by
tau.intent, model services are deployed by tau.serving), so each `tau.<name>` has one meaning.
`tau.log` and `tau.log_flush` come from tau.metric_log (stdlib only, cheap to import): training
code calls them in its loop, often where nothing else of tau is installed (see that module).
"""

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

#: The metric logging call for training code (tau.metric_log).
LOG_NAMES = frozenset({"log", "log_flush"})


def __getattr__(name: str) -> object:
    if name in LOG_NAMES:
        from tau import metric_log

        value = getattr(metric_log, name)
        globals()[name] = value
        return value
    if name in SDK_NAMES:
        from tau.sdk import public

        value = public(name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tau' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | SDK_NAMES | LOG_NAMES)
