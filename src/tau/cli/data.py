"""`tau data`: the dataset and model registry, wired to `tau.registry`.

Performs I/O (terminal, environment). Each command parses its flags, opens the backend named by
``--registry``, calls one registry operation and prints the result; the work and every message
about bad input live in `tau.registry`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from cyclopts import App, Parameter

from tau.cli._common import ContextFlag, check_output
from tau.registry import format as fmt
from tau.registry import records
from tau.registry.backend import Backend, open_backend
from tau.registry.datasets import DatasetRegistry, Registration, env_lines
from tau.registry.errors import RegistryError, VerificationFailed
from tau.registry.models import ModelRegistry

#: The registry a command uses without --registry. The reference default is the shared PVC; a
#: local default would silently fork the team's catalog, so local use opts in through this.
REGISTRY_ENV = "TAU_REGISTRY"
DEFAULT_REGISTRY = "pvc"

app = App(name="data", help="The dataset and model registry.")
dataset = App(name="dataset", help="The curated dataset registry.")
model = App(name="model", help="Durable checkpoints and their aliases.")
dataset_alias = App(name="alias", help="Movable dataset aliases (the only mutable part).")
model_alias = App(name="alias", help="Movable model aliases.")
model_index = App(name="index", help="The model index built from run artifacts.")
dataset.command(dataset_alias)
model.command(model_alias)
model.command(model_index)
app.command(dataset)
app.command(model)

Output = Annotated[str, Parameter(name=["--output", "-o"])]
Tags = Annotated[list[str] | None, Parameter(name="--tag", negative="")]
Flag = Parameter(negative="")


@Parameter(name="*")
@dataclass
class Where:
    """Which registry to use; shared by every verb."""

    registry: Annotated[
        str | None,
        Parameter(
            help=f"pvc, file://DIR or az://ACCOUNT/CONTAINER (default: ${REGISTRY_ENV} or pvc)."
        ),
    ] = None
    namespace: Annotated[
        str | None,
        Parameter(name=["--namespace", "-n"], help="Namespace of the registry PVC (pvc only)."),
    ] = None
    context: ContextFlag = None

    def backend(self) -> Backend:
        """Open the selected backend."""
        spec = self.registry or os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY
        return open_backend(spec, cluster=self._cluster)

    def listing(self) -> Backend:
        """The backend for a list: says so when a file:// registry does not exist, since an
        empty listing from a mistyped path would look like an empty registry.
        """
        from tau.registry.backend import FileBackend

        backend = self.backend()
        if isinstance(backend, FileBackend) and not backend.root.is_dir():
            print(
                f"note: registry directory {backend.root} does not exist yet; "
                "nothing is registered there",
                file=sys.stderr,
            )
        return backend

    def _cluster(self) -> tuple[Any, str]:
        """The session's client and namespace for the pvc registry: -n, else the workspace's."""
        from tau.errors import ClusterError, UsageError
        from tau.session import connect

        try:
            session = connect(self.context, lookup=False)
        except (ClusterError, UsageError) as exc:
            raise ClusterError(
                f"cannot load kubeconfig for the pvc registry: {exc.message}",
                hint=exc.hint or "pass --context, or use --registry file://DIR",
            ) from None
        return session.api, session.resolve(self.namespace).namespace


_HERE = Where()


def _emit(text: str) -> None:
    print(text, end="")


# --- datasets --------------------------------------------------------------------------------


@dataset.command(name="list")
def dataset_list(
    *, purpose: str | None = None, tag: Tags = None, output: Output = "table", where: Where = _HERE
) -> int:
    """List registered dataset versions.

    Args:
        purpose: Only this purpose: pretrain, rl or eval.
        tag: Only records with this tag (k=v); repeatable, all must match.
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    found = DatasetRegistry(where.listing()).list(purpose, records.parse_tags(tag or []))
    _emit(fmt.to_json(found) if output == "json" else fmt.dataset_table(found))
    return 0


@dataset.command(name="show")
def dataset_show(ref: str, /, *, output: Output = "table", where: Where = _HERE) -> int:
    """Show one dataset version: NAME (alias latest), NAME@VERSION or NAME@ALIAS.

    Args:
        ref: NAME[@VERSION|@ALIAS].
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    rec = DatasetRegistry(where.backend()).resolve(ref)
    _emit(fmt.to_json(rec) if output == "json" else fmt.dataset_detail(rec))
    return 0


@dataclass
class PurposeFlags:
    """Fields of the purpose section; only the chosen purpose's flags may be given."""

    tokenizer: Annotated[str | None, Parameter(help="pretrain: tokenizer name.")] = None
    format: Annotated[
        str | None, Parameter(help="pretrain: file format, e.g. tokenized-bin-uint16.")
    ] = None
    total_tokens: Annotated[int | None, Parameter(help="pretrain: total tokens.")] = None
    sequence_packing: Annotated[str | None, Parameter(help="pretrain: packing mode.")] = None
    rl_kind: Annotated[str | None, Parameter(help="rl: prompts, preferences or trajectories.")] = (
        None
    )
    policy_run: Annotated[str | None, Parameter(help="rl: the policy run.")] = None
    reward_model: Annotated[str | None, Parameter(help="rl: the reward model.")] = None
    schema: Annotated[str | None, Parameter(help="rl: record schema.")] = None
    task: Annotated[str | None, Parameter(help="eval: task name.")] = None
    split: Annotated[str | None, Parameter(help="eval: train, validation or test.")] = None
    metric: Annotated[str | None, Parameter(help="eval: metric name.")] = None

    def section(self, purpose: str) -> dict[str, Any]:
        """The section for `purpose`; a flag of another purpose is an error."""
        owners = {
            "tokenizer": "pretrain",
            "format": "pretrain",
            "total_tokens": "pretrain",
            "sequence_packing": "pretrain",
            "rl_kind": "rl",
            "policy_run": "rl",
            "reward_model": "rl",
            "schema": "rl",
            "task": "eval",
            "split": "eval",
            "metric": "eval",
        }
        given = {k: v for k, v in vars(self).items() if v is not None}
        wrong = sorted(f"--{k.replace('_', '-')}" for k in given if owners[k] != purpose)
        if wrong:
            mine = ", ".join(f"--{k.replace('_', '-')}" for k, p in owners.items() if p == purpose)
            raise RegistryError(
                f"{', '.join(wrong)} cannot be used with --purpose {purpose}",
                hint=f"the {purpose} section takes: {mine}",
            )
        return {("kind" if k == "rl_kind" else k): v for k, v in given.items()}


@dataset.command(name="register")
def dataset_register(
    ref: str,
    /,
    *,
    from_: Annotated[Path, Parameter(name="--from")],
    purpose: str,
    tag: Tags = None,
    source_kind: str = "local",
    source_repo: str = "",
    source_revision: str = "",
    source_config: str = "",
    account: str = "",
    container: str = "",
    prefix: str = "",
    fields: Annotated[PurposeFlags, Parameter(name="*")] = PurposeFlags(),  # noqa: B008
    output: Output = "table",
    where: Where = _HERE,
) -> int:
    """Register an immutable dataset version, hashing every file under --from.

    Args:
        ref: NAME@VERSION to create; an existing version is refused.
        from_: Directory holding the dataset's files.
        purpose: pretrain, rl or eval.
        tag: Label k=v; repeatable.
        source_kind: Provenance kind (e.g. huggingface, local).
        source_repo: Provenance repository.
        source_revision: Provenance revision.
        source_config: Provenance config name.
        account: Storage account holding the bytes (default: the local --from directory).
        container: Blob container holding the bytes.
        prefix: Prefix of the bytes in the container.
        fields: Purpose section fields.
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    if purpose not in records.PURPOSES:
        raise RegistryError(f"--purpose must be one of: {', '.join(records.PURPOSES)}")
    if bool(account) != bool(container):
        raise RegistryError(
            "--account and --container go together",
            hint="give both to record an az:// location, or neither",
        )
    location = {"account": account, "container": container, "prefix": prefix} if account else {}
    reg = Registration(
        purpose=purpose,
        section=fields.section(purpose),
        tags=records.parse_tags(tag or []),
        source={
            "kind": source_kind,
            "repo": source_repo,
            "revision": source_revision,
            "config": source_config,
        },
        location=location,
    )
    rec = DatasetRegistry(where.backend()).register(ref, from_, reg)
    if output == "json":
        _emit(fmt.to_json(rec))
    else:
        _emit(
            f"registered {rec['name']}@{rec['version']}: {len(rec['files'])} file(s), "
            f"{fmt.human_bytes(rec['total_bytes'])}, {rec['digest']}\n"
        )
    return 0


@dataset.command(name="ref")
def dataset_ref(
    ref: str,
    /,
    *,
    output: Output = "json",
    env_prefix: str = "FINEWEB_DATASET",
    staged_root: str | None = None,
    base_url: str | None = None,
    where: Where = _HERE,
) -> int:
    """Print what a run needs to consume a dataset version.

    Args:
        ref: NAME[@VERSION|@ALIAS].
        output: json or env.
        env_prefix: Variable prefix for -o env.
        staged_root: Directory the files are staged under (e.g. on the mounted PVC).
        base_url: URL prefix the files are served from.
        where: Registry selection.
    """
    check_output(output, ("json", "env"))
    doc = DatasetRegistry(where.backend()).ref(ref, staged_root=staged_root, base_url=base_url)
    _emit(fmt.to_json(doc) if output == "json" else env_lines(doc, env_prefix))
    return 0


@dataset_alias.command(name="set")
def dataset_alias_set(
    name: str,
    alias: str,
    version: str,
    /,
    *,
    expect: str | None = None,
    expect_absent: Annotated[bool, Flag] = False,
    output: Output = "table",
    where: Where = _HERE,
) -> int:
    """Point an alias at a registered version.

    Args:
        name: Dataset name.
        alias: Alias to move (e.g. latest).
        version: Registered version to point at.
        expect: Only move the alias if it currently points at this version.
        expect_absent: Only create the alias if it does not exist.
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    doc = DatasetRegistry(where.backend()).set_alias(
        name, alias, version, expect=expect, expect_absent=expect_absent
    )
    _emit(fmt.to_json(doc) if output == "json" else f"{name}:{alias} -> {doc['version']}\n")
    return 0


@dataset_alias.command(name="get")
def dataset_alias_get(
    name: str, alias: str, /, *, output: Output = "ref", where: Where = _HERE
) -> int:
    """Print the version an alias points at.

    Args:
        name: Dataset name.
        alias: Alias to read.
        output: ref (NAME@VERSION) or json.
        where: Registry selection.
    """
    check_output(output, ("ref", "json"))
    records.check_slug("dataset name", name)
    doc = DatasetRegistry(where.backend()).alias(name, alias)
    _emit(fmt.to_json(doc) if output == "json" else f"{name}@{doc['version']}\n")
    return 0


@dataset.command(name="verify")
def dataset_verify(
    ref: str,
    /,
    *,
    from_: Annotated[Path | None, Parameter(name="--from")] = None,
    output: Output = "table",
    where: Where = _HERE,
) -> int:
    """Re-hash the real files and compare sizes, sha256s and the digest with the record.

    Args:
        ref: NAME@VERSION (or an alias).
        from_: Directory to verify (default: the record's own location).
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    report = DatasetRegistry(where.backend()).verify(ref, from_)
    _emit(fmt.to_json(report) if output == "json" else fmt.verify_text(report))
    if not report["ok"]:
        raise VerificationFailed(f"verification FAILED for {report['name']}@{report['version']}")
    return 0


# --- models ----------------------------------------------------------------------------------


@model.command(name="list")
def model_list(
    *,
    model_: Annotated[str | None, Parameter(name="--model")] = None,
    tag: Tags = None,
    metric: str | None = None,
    sort: str | None = None,
    output: Output = "table",
    where: Where = _HERE,
) -> int:
    """List model runs with a metric.

    Args:
        model_: Only this model.
        tag: Only runs with this tag (k=v); repeatable.
        metric: Metric to show (default: each run's primary metric).
        sort: Sort by the metric: asc or desc.
        output: table or json.
        where: Registry selection.
    """
    check_output(output, ("table", "json"))
    rows = ModelRegistry(where.listing()).list(
        model=model_, tags=records.parse_tags(tag or []), metric=metric, sort=sort
    )
    _emit(
        fmt.to_json([r["record"] for r in rows])
        if output == "json"
        else fmt.model_table(rows, metric)
    )
    return 0


@model.command(name="show")
def model_show(ref: str, /, *, output: Output = "json", where: Where = _HERE) -> int:
    """Show one run record: MODEL/RUN, RUN, MODEL@RUN or MODEL:ALIAS.

    Args:
        ref: Which run.
        output: json or summary.
        where: Registry selection.
    """
    check_output(output, ("json", "summary"))
    rec = ModelRegistry(where.backend()).resolve(ref)
    _emit(fmt.to_json(rec) if output == "json" else fmt.model_summary(rec))
    return 0


@model.command(name="best")
def model_best(
    name: str,
    /,
    *,
    metric: str | None = None,
    direction: str | None = None,
    output: Output = "ref",
    where: Where = _HERE,
) -> int:
    """Print the run with the best metric.

    Args:
        name: Model name.
        metric: Metric to rank by (default: the runs' shared primary metric).
        direction: lower or higher (default: recorded, else "loss" means lower).
        output: ref (MODEL@RUN) or json.
        where: Registry selection.
    """
    check_output(output, ("ref", "json"))
    records.check_slug("model name", name)
    rec = ModelRegistry(where.backend()).best(name, metric=metric, direction=direction)
    _emit(fmt.to_json(rec) if output == "json" else f"{rec['model']}@{rec['run']}\n")
    return 0


@model_alias.command(name="set")
def model_alias_set(
    name: str,
    alias: str,
    run: str,
    /,
    *,
    expect: str | None = None,
    expect_absent: Annotated[bool, Flag] = False,
    output: Output = "ref",
    where: Where = _HERE,
) -> int:
    """Point a model alias at a recorded run.

    Args:
        name: Model name.
        alias: Alias to move (a bare model name resolves through "default").
        run: Recorded run to point at.
        expect: Only move the alias if it currently points at this run.
        expect_absent: Only create the alias if it does not exist.
        output: ref (MODEL@RUN) or json.
        where: Registry selection.
    """
    check_output(output, ("ref", "json"))
    doc = ModelRegistry(where.backend()).set_alias(
        name, alias, run, expect=expect, expect_absent=expect_absent
    )
    _emit(fmt.to_json(doc) if output == "json" else f"{name}@{doc['run']}\n")
    return 0


@model_alias.command(name="get")
def model_alias_get(
    name: str, alias: str, /, *, output: Output = "ref", where: Where = _HERE
) -> int:
    """Print the run a model alias points at.

    Args:
        name: Model name.
        alias: Alias to read.
        output: ref (MODEL@RUN) or json.
        where: Registry selection.
    """
    check_output(output, ("ref", "json"))
    doc = ModelRegistry(where.backend()).alias(name, alias)
    _emit(fmt.to_json(doc) if output == "json" else f"{name}@{doc['run']}\n")
    return 0


@model_index.command(name="rebuild")
def model_index_rebuild(
    *,
    model_: Annotated[str | None, Parameter(name="--model")] = None,
    run: str | None = None,
    where: Where = _HERE,
) -> int:
    """Index run records from checkpoints/finetunes/<run>/artifacts.json.

    A registered record is never rewritten: indexing an unchanged run again is a no-op, and a
    run whose record would change is refused (records are immutable; only aliases move).

    Args:
        model_: Model name for the rebuilt runs (default: recorded, else "unknown").
        run: Only this run.
        where: Registry selection.
    """
    skipped: list[str] = []
    registry = ModelRegistry(where.backend())
    count, refused = registry.rebuild(model=model_, run=run, warn=skipped.append)
    for line in skipped:
        print(f"warning: {line}", file=sys.stderr)
    _emit(f"indexed {count} model run(s)\n")
    if refused:
        # A record that would change is refused (immutable), as one registered dataset
        # version is: the others were indexed, and the exit says not everything was.
        print(
            f"error: {refused} run(s) refused: their records are registered and would change\n"
            "  hint: records are immutable (only aliases move); register the new state under a "
            "new run name",
            file=sys.stderr,
        )
        return 1
    return 0
