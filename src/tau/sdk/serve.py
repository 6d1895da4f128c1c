"""`tau.serve(...)`: a model service declared next to the training code, deployed by `tau serve`.

Pure, except `.deploy()` / `.submit()`, which run tau's own `tau serve deploy` in-process (the
SDK is a client of the CLI, as the reference's was of its binary). A service is not a managed
workflow: `tau python build` and `submit` leave it out and say so.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tau.sdk.config import runtime_env_entries
from tau.sdk.errors import SdkError
from tau.sdk.workloads import refuse_literal_secrets

KINDS = ("rayservice", "deployment")


def finetune_name(value: Any) -> str | None:
    """The run name `from_finetune` means: a string as is, or a train handle's name."""
    if value is None:
        return None
    if isinstance(value, str):
        if not value:
            raise SdkError("tau-py: from_finetune cannot be empty")
        return value
    if getattr(value, "_tau_train_handle", False) is True and getattr(value, "name", None):
        return str(value.name)
    raise SdkError(
        "tau-py: from_finetune must be a train handle returned by @tau.train or a finetune run name"
    )


def _env_flags(env: Mapping[str, Any] | Sequence[str] | None) -> list[str]:
    """`--env K=V` / `--env-secret K=SECRET:KEY` for each env entry."""
    argv: list[str] = []
    for entry in runtime_env_entries(env):
        name = str(entry.get("name") or "")
        value_from = entry.get("valueFrom") or {}
        ref = value_from.get("secretKeyRef") if isinstance(value_from, Mapping) else None
        if ref:
            if not ref.get("name") or not ref.get("key"):
                raise SdkError(f"tau.serve: invalid secret env entry for {name!r}")
            argv += ["--env-secret", f"{name}={ref['name']}:{ref['key']}"]
        elif value_from:
            raise SdkError(
                f"tau.serve: env {name} must be a value or tau.secret_ref(...); a service reads "
                "existing Secrets only (tau serve deploy --env-secret)"
            )
        else:
            argv += ["--env", f"{name}={entry.get('value', '')}"]
    return argv


@dataclass(frozen=True)
class ServeHandle:
    """A deployable service: `.deploy()` runs `tau serve deploy` with these settings."""

    _tau_serve_handle = True

    name: str
    profile: str
    from_finetune: Any = None
    from_model: str | None = None
    model_ref: str | None = None
    checkpoint: str | None = None
    checkpoint_pvc: str | None = None
    namespace: str | None = None
    kind: str = "rayservice"
    image: str | None = None
    replicas: int | None = None
    import_path: str | None = None
    env: Mapping[str, Any] | Sequence[str] | None = None
    runtime_pip: tuple[str, ...] = ()
    args: str | Sequence[str] | None = None
    port: int | None = None
    volumes: tuple[str, ...] = field(default_factory=tuple)
    mounts: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if not self.name:
            raise SdkError("tau-py: tau.serve(name=...) is required")
        if not self.profile:
            raise SdkError("tau-py: tau.serve(profile=...) is required")
        if self.kind not in KINDS:
            raise SdkError("tau-py: tau.serve(kind=...) must be one of: rayservice, deployment")
        if self.replicas is not None and self.replicas < 0:
            raise SdkError("tau-py: tau.serve(replicas=...) must be >= 0")
        if self.port is not None and self.port <= 0:
            raise SdkError("tau-py: tau.serve(port=...) must be positive")
        if self.kind == "deployment" and self.runtime_pip:
            raise SdkError("tau-py: runtime_pip is only supported for kind='rayservice'")
        sources = (
            finetune_name(self.from_finetune),
            self.from_model,
            self.model_ref,
            self.checkpoint,
        )
        if sum(bool(s) for s in sources) > 1:
            raise SdkError(
                "tau-py: tau.serve accepts at most one of from_finetune, from_model, model_ref, "
                "or checkpoint"
            )
        refuse_literal_secrets(runtime_env_entries(self.env), self.name)

    def deploy_argv(
        self,
        *,
        namespace: str | None = None,
        dry_run: str | None = None,
        kube_context: str | None = None,
        extra_args: Sequence[str] | None = None,
    ) -> list[str]:
        """The `tau` arguments of this deployment: `serve deploy NAME --kind ... --profile ...`."""
        if dry_run is not None and dry_run not in ("client", "server"):
            raise SdkError("dry_run must be 'client' or 'server'")
        argv = ["serve", "deploy", self.name, "--kind", self.kind, "--profile", self.profile]
        source = finetune_name(self.from_finetune)
        if source:
            argv += ["--from-finetune", source]
        if self.from_model:
            argv += ["--from-model", self.from_model]
        if self.model_ref:
            argv += ["--model-ref", self.model_ref]
        if self.checkpoint:
            argv += ["--checkpoint", self.checkpoint]
        if self.checkpoint_pvc and (source or self.from_model or self.model_ref or self.checkpoint):
            argv += ["--checkpoint-pvc", self.checkpoint_pvc]
        if self.image:
            argv += ["--image", self.image]
        if self.replicas is not None:
            argv += ["--replicas", str(int(self.replicas))]
        if self.import_path:
            argv += ["--import-path", self.import_path]
        if self.port is not None:
            argv += ["--port", str(self.port)]
        for volume in self.volumes:
            argv += ["--volume", volume]
        for mount in self.mounts:
            argv += ["--mount", mount]
        argv += _env_flags(self.env)
        for package in self.runtime_pip:
            argv += ["--runtime-pip", package]
        if self.args:
            text = self.args if isinstance(self.args, str) else shlex.join(map(str, self.args))
            argv += ["--args", text]
        for flag, value in (
            ("-n", namespace or self.namespace),
            ("--dry-run", dry_run),
            ("--context", kube_context),
        ):
            if value:
                argv += [flag, value]
        return argv + list(extra_args or ())

    def deploy(
        self,
        *,
        namespace: str | None = None,
        dry_run: str | None = None,
        kube_context: str | None = None,
        extra_args: Sequence[str] | None = None,
    ) -> int:
        """Run `tau serve deploy` for this service in this process; returns its exit code."""
        from tau.cli import main
        from tau.sdk.submission import refuse_inside_job

        refuse_inside_job(os.environ, "deploy", hint=None)

        return main(
            self.deploy_argv(
                namespace=namespace,
                dry_run=dry_run,
                kube_context=kube_context,
                extra_args=extra_args,
            )
        )

    #: The same as `.deploy()`: the reference offered both names.
    submit = deploy


def serve(
    *,
    name: str,
    profile: str,
    from_finetune: Any = None,
    from_model: str | None = None,
    model_ref: str | None = None,
    checkpoint: str | None = None,
    checkpoint_pvc: str | None = None,
    namespace: str | None = None,
    kind: str = "rayservice",
    image: str | None = None,
    replicas: int | None = None,
    import_path: str | None = None,
    env: Mapping[str, Any] | Sequence[str] | None = None,
    runtime_pip: Sequence[str] | None = None,
    args: str | Sequence[str] | None = None,
    port: int | None = None,
    volumes: Sequence[str] | None = None,
    mounts: Sequence[str] | None = None,
) -> ServeHandle:
    """Declare a service; `from_finetune` may be a @tau.train handle of the same file."""
    return ServeHandle(
        name=name,
        profile=profile,
        from_finetune=from_finetune,
        from_model=from_model,
        model_ref=model_ref,
        checkpoint=checkpoint,
        checkpoint_pvc=checkpoint_pvc,
        namespace=namespace,
        kind=kind,
        image=image,
        replicas=replicas,
        import_path=import_path,
        env=env,
        runtime_pip=tuple(str(p) for p in runtime_pip or ()),
        args=args,
        port=port,
        volumes=tuple(volumes or ()),
        mounts=tuple(mounts or ()),
    )
