"""Registry names, references and record documents: building them and checking them.

Pure. Records are plain JSON-ready dicts (the on-disk format is the contract, so the dict *is*
the type); this module owns their field sets, the name rules and every validation message.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tau.k8s.names import DNS_1123_LABEL
from tau.registry.errors import RegistryError

SCHEMA_VERSION = 1
MODEL_KIND = "tau.model"

PURPOSES = ("pretrain", "rl", "eval")
ASSURANCES = ("verified", "manifest-supplied", "trusted")
SPLITS = ("train", "validation", "test")
RL_KINDS = ("prompts", "preferences", "trajectories")
#: The keys each purpose section may carry (reference `record.go`).
PURPOSE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "pretrain": ("tokenizer", "format", "total_tokens", "sequence_packing"),
    "rl": ("kind", "policy_run", "reward_model", "schema"),
    "eval": ("task", "split", "metric"),
}
#: A format whose files are raw uint16 token ids, so a verified file has bytes/2 tokens.
UINT16_FORMAT = "tokenized-bin-uint16"

#: A bare dataset name resolves through this alias; a bare model through DEFAULT_MODEL_ALIAS.
LATEST_ALIAS = "latest"
DEFAULT_MODEL_ALIAS = "default"

_MAX_LEN = 63
_DOTTED_SLUG = re.compile(r"^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$")

_NAME_HINT = "use lowercase letters, digits and inner hyphens, at most 63 characters"
_VERSION_HINT = "use lowercase letters, digits, inner hyphens and dots, at most 63 characters"


def check_slug(kind: str, value: str, *, dots: bool = False) -> str:
    """Return `value` when it is a valid registry name of `kind`, else raise.

    Args:
        kind: what the value names (``dataset name``, ``version``, ``alias`` ...), for the message.
        value: the candidate.
        dots: allow inner dots too (versions and run names).

    Raises:
        RegistryError: the value is empty, too long or not DNS-label-like.
    """
    pattern = _DOTTED_SLUG if dots else DNS_1123_LABEL
    if len(value) <= _MAX_LEN and pattern.match(value) and ".." not in value:
        return value
    raise RegistryError(f'invalid {kind} "{value}"', hint=_VERSION_HINT if dots else _NAME_HINT)


@dataclass(frozen=True)
class Ref:
    """A parsed ``NAME[@TOKEN]`` or ``MODEL[:ALIAS|@RUN|/RUN]`` reference.

    Attributes:
        name: the dataset or model name.
        token: the version, run or alias after the separator, or None for a bare name.
        sep: the separator used (``@``, ``:``, ``/``), or "" for a bare name.
    """

    name: str
    token: str | None = None
    sep: str = ""


def parse_dataset_ref(text: str) -> Ref:
    """Parse ``NAME``, ``NAME@VERSION`` or ``NAME@ALIAS`` (which one is decided at lookup)."""
    name, sep, token = text.partition("@")
    check_slug("dataset name", name)
    if not sep:
        return Ref(name)
    check_slug("dataset version or alias", token, dots=True)
    return Ref(name, token, "@")


def parse_dataset_version(text: str) -> Ref:
    """Parse ``NAME@VERSION`` where the version is required (``register``)."""
    ref = parse_dataset_ref(text)
    if ref.token is None:
        raise RegistryError(
            f'"{text}" names no version', hint=f"write it as {ref.name}@VERSION, e.g. {ref.name}@v1"
        )
    return ref


def parse_model_ref(text: str) -> Ref:
    """Parse ``MODEL``, ``MODEL:ALIAS``, ``MODEL@RUN`` or ``MODEL/RUN``."""
    for sep in ("@", ":", "/"):
        if sep in text:
            name, _, token = text.partition(sep)
            check_slug("model name", name)
            if sep == ":":
                check_slug("model alias", token)
            else:
                check_slug("run name", token, dots=True)
            return Ref(name, token, sep)
    check_slug("model name", text)
    return Ref(text)


def parse_tags(pairs: Iterable[str]) -> dict[str, str]:
    """Parse repeated ``k=v`` flags into a dict; a repeated key keeps its last value."""
    tags: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise RegistryError(f'invalid tag "{pair}"', hint="write tags as key=value")
        tags[key.strip()] = value.strip()
    return tags


def tags_match(tags: Mapping[str, Any], wanted: Mapping[str, str]) -> bool:
    """True when every wanted tag is present with the same value."""
    return all(k in tags and str(tags[k]) == v for k, v in wanted.items())


def is_clean_relpath(path: str) -> bool:
    """True for a normalized relative POSIX path with no ``..``, ``.`` or empty segments."""
    if not path or path.startswith("/") or "\\" in path:
        return False
    return posixpath.normpath(path) == path and not path.startswith("..") and path != "."


# --- dataset records -------------------------------------------------------------------------


def check_purpose_section(purpose: str, section: Mapping[str, Any]) -> list[str]:
    """Problems with one purpose section (unknown keys, bad enum values); [] when fine."""
    if purpose not in PURPOSES:
        return [f'purpose "{purpose}" must be one of: {", ".join(PURPOSES)}']
    allowed = PURPOSE_FIELDS[purpose]
    problems = [
        f"{purpose}.{key} is not a field of the {purpose} section (fields: {', '.join(allowed)})"
        for key in sorted(section)
        if key not in allowed
    ]
    if purpose == "rl" and section.get("kind") not in RL_KINDS:
        problems.append(f"rl.kind must be one of: {', '.join(RL_KINDS)}")
    if purpose == "eval" and section.get("split") not in (None, "", *SPLITS):
        problems.append(f'eval.split "{section["split"]}" must be one of: {", ".join(SPLITS)}')
    return problems


def validate_dataset_record(rec: Mapping[str, Any]) -> list[str]:
    """Every problem with a dataset record, in field order; [] when the record is valid."""
    problems: list[str] = []
    for kind, key, dots in (("dataset name", "name", False), ("version", "version", True)):
        try:
            check_slug(kind, str(rec.get(key, "")), dots=dots)
        except RegistryError as exc:
            problems.append(exc.message)
    purpose = rec.get("purpose", "")
    sections = [p for p in PURPOSES if rec.get(p) is not None]
    if sections != [purpose]:
        problems.append(
            f'a record has exactly one purpose section matching purpose "{purpose}" '
            f"(found: {', '.join(sections) or 'none'})"
        )
    problems += check_purpose_section(purpose, rec.get(purpose) or {})
    if rec.get("assurance") not in ASSURANCES:
        problems.append(f"assurance must be one of: {', '.join(ASSURANCES)}")
    files = rec.get("files") or []
    problems += [
        f'file path "{f["path"]}" must be clean and relative'
        for f in files
        if not is_clean_relpath(str(f.get("path", "")))
    ]
    if rec.get("total_bytes") != sum(int(f.get("bytes", 0)) for f in files):
        problems.append("total_bytes must equal the sum of the file sizes")
    section = rec.get("pretrain") or {}
    if section.get("format") == UINT16_FORMAT and rec.get("assurance") == "verified":
        problems += [
            f"{f['path']}: token_count must be bytes/2 for {UINT16_FORMAT}"
            for f in files
            if f.get("token_count") != int(f.get("bytes", 0)) // 2 or int(f.get("bytes", 0)) % 2
        ]
    return problems


def build_dataset_record(
    *,
    name: str,
    version: str,
    purpose: str,
    section: Mapping[str, Any],
    files: list[dict[str, Any]],
    digest: str,
    created_at: str,
    tags: Mapping[str, str],
    source: Mapping[str, str],
    location: Mapping[str, str],
    assurance: str = "verified",
) -> dict[str, Any]:
    """Assemble a dataset record (schema_version 1); raises when it would be invalid.

    Args:
        name: dataset name.
        version: dataset version.
        purpose: ``pretrain``, ``rl`` or ``eval``.
        section: the purpose section's fields.
        files: ``{path, bytes, sha256[, token_count]}`` entries, sorted by path.
        digest: the ``sha256:`` digest over the files.
        created_at: RFC3339 time.
        tags: free-form labels.
        source: ``{kind, repo, revision, config}`` provenance.
        location: ``{account, container, prefix}`` pointer at the bytes.
        assurance: how the file facts were obtained.

    Raises:
        RegistryError: the record breaks a validation rule; the message lists every problem.
    """
    section = dict(section)
    if purpose == "pretrain" and section.get("format") == UINT16_FORMAT:
        # Raw uint16 token files: the token counts are a fact of the bytes, so derive them.
        for entry in files:
            entry["token_count"] = entry["bytes"] // 2
        section["total_tokens"] = sum(e["token_count"] for e in files)
    rec: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "name": name,
        "version": version,
        "purpose": purpose,
        "source": {k: source.get(k, "") for k in ("kind", "repo", "revision", "config")},
        "account": location.get("account", ""),
        "container": location.get("container", ""),
        "prefix": location.get("prefix", ""),
        "files": files,
        "total_bytes": sum(e["bytes"] for e in files),
        "digest": digest,
        "assurance": assurance,
        "created_at": created_at,
        "tags": dict(tags),
        "components": [],
        purpose: section,
    }
    problems = validate_dataset_record(rec)
    if problems:
        raise RegistryError(f"dataset {name}@{version} is invalid: " + "; ".join(problems))
    return rec


def dataset_alias_record(
    rec: Mapping[str, Any], alias: str, record_path: str, updated_at: str
) -> dict[str, Any]:
    """The movable pointer ``aliases/<alias>.json`` for a dataset version."""
    return {
        "schema_version": SCHEMA_VERSION,
        "name": rec["name"],
        "alias": alias,
        "version": rec["version"],
        "digest": rec["digest"],
        "record_path": record_path,
        "updated_at": updated_at,
    }


# --- model records ---------------------------------------------------------------------------

#: The primary metric is the first of these present in a run's metrics (reference order).
PRIMARY_METRIC_ORDER = ("loss", "eval.loss", "workload.loss", "train.loss", "score", "accuracy")
DIRECTIONS = ("lower", "higher")


def metric_direction(name: str) -> str:
    """The default direction of a metric: names containing "loss" go lower, others higher."""
    return "lower" if "loss" in name.lower() else "higher"


def flatten_metrics(metrics: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Flatten nested metric dicts into dotted keys, keeping only numeric leaves."""
    flat: dict[str, float] = {}
    for key, value in metrics.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_metrics(value, dotted + "."))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            flat[dotted] = float(value)
    return dict(sorted(flat.items()))


def primary_metric(metrics: Mapping[str, float]) -> dict[str, Any] | None:
    """The ``{name, value, direction}`` of the first present metric of PRIMARY_METRIC_ORDER."""
    for name in PRIMARY_METRIC_ORDER:
        if name in metrics:
            return {"name": name, "value": metrics[name], "direction": metric_direction(name)}
    return None


def model_alias_record(
    model: str, alias: str, run: str, record_path: str, updated_at: str
) -> dict[str, Any]:
    """The movable pointer ``models/<model>/aliases/<alias>.json``."""
    return {
        "schema_version": SCHEMA_VERSION,
        "model": model,
        "alias": alias,
        "run": run,
        "record_path": record_path,
        "updated_at": updated_at,
    }
