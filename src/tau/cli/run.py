"""`tau run`: TARGET is positional; validate, schema and explain-config are offline.

Performs I/O (terminal, files). Anything that is not one of the subcommands below is a
target name, so `tau run retry` resolves tau/retry.yaml: retry is configuration, not a verb.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from cyclopts import App, Parameter

from tau.cli._common import check_output, not_built
from tau.errors import NotImplementedYet

#: The real subcommands; a test asserts this set.
SUBCOMMANDS = ("validate", "schema", "explain-config", "list", "status", "logs", "get", "cancel",
               "resume", "history")

app = App(name="run", help="Validate, render, submit and follow runs described by tau.yaml.")

ConfigFlag = Annotated[Path | None, Parameter(name=["--config", "-c"])]
OutputFlag = Annotated[str, Parameter(name=["--output", "-o"])]


def _display(path: Path) -> Path:
    """The path as the user would write it: relative to the working directory when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _load_valid(target: str | None, config: Path | None):  # noqa: ANN202 - ValidConfig
    from tau import load, target as targets, validate

    found = targets.resolve(target, config, Path.cwd())
    valid = validate.validate(load.load(_display(found.path)), name=found.name)
    for warning in valid.warnings:
        print(warning.format(), file=sys.stderr)
    return valid


@app.default
def run(
    target: str | None = None,
    *,
    config: ConfigFlag = None,
    dry_run: str | None = None,
    namespace: Annotated[str | None, Parameter(name=["--namespace", "-n"])] = None,
    workspace: str | None = None,
    context: str | None = None,
    output: OutputFlag = "yaml",
    service_account: str | None = None,
    project: str | None = None,
) -> int:
    """Submit a run, or preview it with --dry-run.

    Parameters
    ----------
    target
        Run name: resolves tau/TARGET.yaml; with --config it overrides the run name.
    config
        Explicit config file.
    dry_run
        client (offline render) or server (API-server dry run).
    namespace
        Namespace override.
    workspace
        TauWorkspace name.
    context
        kubeconfig context (default: $TAU_CONTEXT or the repository connection).
    output
        Manifest format of --dry-run: yaml or json.
    service_account
        ServiceAccount override.
    project
        Project of a monorepo catalog (tau.projects.yaml).
    """
    import os

    from tau import manifests, preview
    from tau.errors import UsageError

    fmt = check_output(output, ("yaml", "json"))
    if dry_run not in (None, "client", "server"):
        raise UsageError("--dry-run must be one of: client, server")
    valid = _load_valid(target, config)
    if dry_run != "client":
        raise NotImplementedYet("tau run TARGET without --dry-run=client (submitting to a cluster)")
    result = preview.client_preview(valid, os.environ)
    for line in result.warnings:
        print(line, file=sys.stderr)
    text = manifests.dump_yaml(result.documents) if fmt == "yaml" else manifests.dump_json(
        result.documents)
    sys.stdout.write(text)
    return 0


@app.command
def validate(target: str | None = None, *, config: ConfigFlag = None) -> int:
    """Check a run config offline: schema, engine vocabulary, env, storage; no render.

    Parameters
    ----------
    target
        Run name: resolves tau/TARGET.yaml; with --config it overrides the run name.
    config
        Explicit config file.
    """
    valid = _load_valid(target, config)
    print(f"{valid.path} is valid")
    return 0


@app.command
def schema(*, output: OutputFlag = "json") -> int:
    """Print the JSON Schema of tau.yaml.

    Parameters
    ----------
    output
        Only json.
    """
    from tau.spec import run_config_schema_bytes

    check_output(output, ("json",))
    sys.stdout.buffer.write(run_config_schema_bytes())
    sys.stdout.flush()
    return 0


@app.command(name="explain-config")
def explain_config(*, output: OutputFlag = "markdown") -> int:
    """Print the field reference: path, type, status, values and defaults, description.

    Parameters
    ----------
    output
        markdown or json.
    """
    from tau import explain

    fmt = check_output(output, ("markdown", "json"))
    sys.stdout.write(explain.markdown() if fmt == "markdown" else explain.as_json())
    return 0


for _sub, _help in (
    ("list", "List Tau-managed Jobs and RayJobs"),
    ("status", "The startup phase tree of a run"),
    ("logs", "Driver or pod logs of a run"),
    ("get", "Durable results recorded by storage.output"),
    ("cancel", "Delete a run's workload; Kueue reclaims the quota"),
    ("resume", "Resubmit a failed run from its checkpoint"),
    ("history", "The attempts of a run"),
):
    not_built(app, _sub, _help, f"tau run {_sub}")
