"""Parse and validate a `schema_version: 1` managed-workflow manifest, all problems at once.

Pure apart from reading the file's bytes when the caller has not. The rules and their wording
are the reference's (`manifest.Validate`, in its order), each located at its value; unlike the
reference, every problem of the file is reported in one ConfigError. The parse is lenient:
keys the manifest and the run config do not know are warnings (`tau.intent.workflow.unknown`),
not errors. Whether the workload name fits KubeRay's shorter limit depends on the kind, which
is known only after dispatch: `rayjob_name_problem` answers that.
"""

from __future__ import annotations

from pathlib import Path

from tau.errors import ConfigError, Diagnostic, Location
from tau.intent.load import RawDocument
from tau.intent.validate.findings import Findings
from tau.intent.validate.structure import describe
from tau.intent.workflow import unknown
from tau.intent.workflow._compute import read_compute
from tau.intent.workflow._read import FIELDS, Reader
from tau.intent.workflow._runtime import read_runtime
from tau.intent.workflow._storage import read_checkpoint, read_storage
from tau.intent.workflow.model import (
    DEFAULT_PREFIX,
    RAYJOB_NAME_LIMIT,
    SCHEMA_VERSION,
    Eval,
    Manifest,
    ManifestCompute,
    Model,
    ParsedManifest,
)
from tau.intent.workflow.problems import quote
from tau.k8s.names import DNS_1123_LABEL

__all__ = ["FIELDS", "parse", "rayjob_name_problem", "read_manifest"]

#: Kubernetes object names (the Job, the RayJob, the Secret) are at most 63 characters.
NAME_LIMIT = 63
#: The registry's model-name rule (tau.registry.records.check_slug): a DNS label of ≤ 63.
MODEL_NAME_LIMIT = 63
_NAME_RULE = "use lowercase alphanumerics with internal hyphens"
METRIC_DIRECTIONS = ("lower", "higher")
_MODEL_HINT = "the registry's model names are DNS labels, e.g. llama-sft"


def parse(
    doc: RawDocument, text: bytes | None = None
) -> tuple[ParsedManifest, tuple[Diagnostic, ...]]:
    """Validate a manifest document and return it with every default applied.

    Args:
        doc: the parsed file (`tau.intent.load.load`/`parse`): a standalone manifest or a
            managed tau.yaml, which is the manifest and the run config at once.
        text: the file's bytes as read; read from `doc.path` when not given.

    Returns:
        The parsed manifest, and the warnings: one per key neither the manifest nor the run
        config knows (`tau.intent.workflow.unknown.unknown_keys`, so callers must not add
        those again), sorted by place.

    Raises:
        ConfigError: every problem of the file (its YAML problems too), each at its value;
            the warnings ride along.
    """
    if text is None:
        text = _read_bytes(doc.path)
    findings = Findings(doc.source, list(doc.problems))
    manifest = read_manifest(doc, findings)
    findings.out.extend(unknown.unknown_keys(doc))
    findings.raise_errors()
    return ParsedManifest(manifest, text, doc.source), findings.warnings


def read_manifest(doc: RawDocument, findings: Findings) -> Manifest:
    """Read and check every field of the manifest into `findings`; the result is meaningful
    only when no error was found.
    """
    r = Reader(doc.data, findings)
    name, prefix = _identity(r)
    compute = read_compute(r)
    evaluation = _eval(r, compute)
    runtime = read_runtime(r)
    storage = read_storage(r)
    checkpoint = read_checkpoint(r)
    r.mapping(("research",))
    experiment = (r.string(("research", "experiment")) or "").strip() or None
    return Manifest(
        name=name,
        prefix=prefix,
        compute=compute,
        eval=evaluation,
        runtime=runtime,
        storage=storage,
        checkpoint=checkpoint,
        experiment=experiment,
        model=_model(r),
    )


def rayjob_name_problem(manifest: Manifest) -> str | None:
    """The reference's error when the workload name is too long for a RayJob, else None.

    KubeRay derives Service names from a RayJob's name and rejects names over 47 characters,
    though Kubernetes allows 63; only the RayJob kinds need this.
    """
    name = manifest.resource_name
    if len(name) <= RAYJOB_NAME_LIMIT:
        return None
    head = (
        f"RayJob name {quote(name)} is too long ({len(name)} chars; KubeRay limit is "
        f"{RAYJOB_NAME_LIMIT})."
    )
    budget = RAYJOB_NAME_LIMIT - len(manifest.prefix) - 1
    if budget < 1:
        return (
            f"{head} resource_naming.prefix={quote(manifest.prefix)} leaves no room for "
            "manifest.name; shorten the prefix"
        )
    return (
        f"{head} With resource_naming.prefix={quote(manifest.prefix)}, manifest name must be "
        f"at most {budget} chars; shorten name or prefix"
    )


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            [Diagnostic("", f"cannot read manifest: {exc}", location=Location(str(path)))]
        ) from None


def _identity(r: Reader) -> tuple[str, str]:
    """schema_version, name, resource_naming.prefix and the workload name they make."""
    version = r.raw(("schema_version",))
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        got = "nothing (the key is missing)" if version is None else _got(version)
        r.error(
            ("schema_version",),
            f"schema_version: want {SCHEMA_VERSION}, got {got}",
            f"write `schema_version: {SCHEMA_VERSION}`",
        )
    name = r.string(("name",))
    valid = True
    if not name:
        if r.raw(("name",)) is None or name == "":
            r.error(("name",), "name: required (kebab-case)", "e.g. `name: llama-sft`")
        valid = False
    elif not DNS_1123_LABEL.fullmatch(name):
        r.error(
            ("name",), f"name: {quote(name)} is invalid ({_NAME_RULE})", "e.g. `name: llama-sft`"
        )
        valid = False
    r.mapping(("resource_naming",))
    prefix = (r.string(("resource_naming", "prefix")) or "").strip() or DEFAULT_PREFIX
    if not DNS_1123_LABEL.fullmatch(prefix):
        r.error(
            ("resource_naming", "prefix"),
            f"resource_naming.prefix: {quote(prefix)} is invalid ({_NAME_RULE})",
            "remove it for the default prefix tau",
        )
        valid = False
    resource = f"{prefix}-{name}"
    if valid and len(resource) > NAME_LIMIT:
        r.error(
            ("name",),
            f"resource name {quote(resource)} is too long ({len(resource)} chars; Kubernetes name "
            f"limit is {NAME_LIMIT})",
            "shorten name or resource_naming.prefix",
        )
    return name or "", prefix


def _got(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return describe(value)


def _eval(r: Reader, compute: ManifestCompute) -> Eval:
    r.mapping(("eval",))
    cpu_workers = r.integer(("eval", "cpu_workers")) or 0
    if cpu_workers < 0:
        message = f"eval.cpu_workers: want ≥ 0, got {cpu_workers}"
        r.error(
            ("eval", "cpu_workers"), message, "remove it, or set the CPU worker pods of the eval"
        )
        cpu_workers = 0
    upstream = r.string(("eval", "upstream")) or None
    result = Eval(cpu_workers, upstream)
    if compute.gpus == 0 and result.is_eval:
        r.error(
            ("compute", "gpus"),
            "compute.gpus=0 is CPU-only training and cannot be combined with eval.cpu_workers "
            "or eval.upstream; use compute.gpus > 0 for rayjob-eval",
            "give the eval's GPU worker a GPU (compute.gpus: 1), or drop the eval fields",
        )
    return result


def _model(r: Reader) -> Model:
    """model.*: registry metadata, checked as the reference does."""
    r.mapping(("model",))
    name = _trimmed(r, ("model", "name"))
    if name and not DNS_1123_LABEL.fullmatch(name):
        r.error(
            ("model", "name"), f"model.name: {quote(name)} is invalid ({_NAME_RULE})", _MODEL_HINT
        )
    elif name and len(name) > MODEL_NAME_LIMIT:
        r.error(
            ("model", "name"),
            f"model.name: {quote(name)} is too long ({len(name)} chars; at most "
            f"{MODEL_NAME_LIMIT})",
            _MODEL_HINT,
        )
    tags = r.string_map(("model", "tags"))
    for key, value in tags:
        _check_tag(r, key, value)
    metric = _trimmed(r, ("model", "primary_metric"))
    if metric and ".." in metric:
        message = "model.primary_metric: must not contain '..'"
        r.error(("model", "primary_metric"), message, "name the metric as the trainer logs it")
    direction = r.string(("model", "metric_direction")) or None
    if direction is not None and direction not in METRIC_DIRECTIONS:
        r.error(
            ("model", "metric_direction"),
            f"model.metric_direction: want lower|higher, got {quote(direction)}",
            "lower when a smaller primary_metric is better (a loss), else higher",
        )
    return Model(
        name=name or None,
        base=r.string(("model", "base")) or None,
        task=r.string(("model", "task")) or None,
        tags=tags,
        primary_metric=metric or None,
        metric_direction=direction,
    )


def _trimmed(r: Reader, path: tuple[str, str]) -> str | None:
    """A string that must not carry surrounding whitespace (reported, then read as unset)."""
    value = r.string(path)
    if value is not None and value.strip() != value:
        message = f"{path[0]}.{path[1]}: must not have surrounding whitespace"
        r.error(path, message, "remove the spaces around the value")
        return None
    return value


def _check_tag(r: Reader, key: str, value: str) -> None:
    # Reported about model.tags (a tag key is user data, not a field), at the tag itself.
    tags, at = ("model", "tags"), ("model", "tags", key)
    if not key.strip():
        r.error(tags, "model.tags: tag key must not be empty", at=at, key=True)
    elif key.strip() != key:
        message = f"model.tags[{quote(key)}]: key must not have surrounding whitespace"
        r.error(tags, message, at=at, key=True)
    elif "/" in key or ".." in key:
        r.error(
            tags, f"model.tags[{quote(key)}]: key must not contain '/' or '..'", at=at, key=True
        )
    elif value.strip() != value:
        r.error(
            tags, f"model.tags[{quote(key)}]: value must not have surrounding whitespace", at=at
        )
