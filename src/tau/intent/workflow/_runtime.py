"""runtime.* of a manifest: the pip list, the image, env entries, Key Vault refs, RDMA.

Pure. runtime.env is a list of Kubernetes env entries here (the run config's is a map);
literal values obey the run config's size limits, because Kubernetes repeats them in the
Job, the Workload and every Pod, and Linux counts them against the argv+environment budget.
runtime.env_kv is only shaped here: its references are checked where the Key Vault spec is
built.
"""

from __future__ import annotations

from typing import Any

from tau.intent.load import PathKey, dotted
from tau.intent.validate.env import MAX_TOTAL_BYTES, MAX_VALUE_BYTES
from tau.intent.workflow._read import Reader
from tau.intent.workflow.model import EnvVar, ManifestRuntime
from tau.intent.workflow.problems import quote
from tau.k8s.names import DNS_1123_SUBDOMAIN, ENV_NAME, SECRET_KEY

PIP_REQUIRED = (
    "runtime.pip: required (declare the per-pod Python environment your trainer needs; tau "
    'ships no default). Example: runtime: {pip: ["torch==2.4.0", "transformers"]}'
)
#: The reference's remedy for oversize literal env values, kept verbatim.
_SIZE_REMEDY = (
    "publish source or artifacts once and reference a digest-pinned OCI image with run.source "
    "instead of embedding content in environment variables"
)
_SIZE_HINT = (
    "a managed workflow ships files as workflow.extra_scripts or on the data PVC "
    "(storage.data_pvc); read large inputs from there"
)
_REF_HINT = "write valueFrom: {secretKeyRef: {name: SECRET, key: KEY}}"
RDMA_UNSUPPORTED = "runtime.rdma: RDMA devices are not rendered by this tau; remove runtime.rdma"


def read_runtime(r: Reader) -> ManifestRuntime:
    r.mapping(("runtime",))
    image = (r.string(("runtime", "image")) or "").strip()
    _reject_rdma(r)
    return ManifestRuntime(
        pip=_pip(r),
        image=image or None,
        env=_env(r),
        env_kv=r.string_map(("runtime", "env_kv")),
    )


def _pip(r: Reader) -> tuple[str, ...]:
    path: PathKey = ("runtime", "pip")
    entries = r.sequence(path, "a list of pip requirements")
    if entries is None and r.raw(path) is not None:
        return ()  # the wrong type is reported already
    if not entries:
        r.error(path, PIP_REQUIRED, "list every package the trainer imports, pinned")
        return ()
    out: list[str] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, str):
            r.wrong_type((*path, i), "a string", entry)
        elif not entry.strip():
            r.error((*path, i), f"runtime.pip[{i}]: blank entry", "remove the empty entry")
        else:
            out.append(entry)
    return tuple(out)


def _reject_rdma(r: Reader) -> None:
    # Out of scope (the reference's Azure-internal extras): say so instead of dropping it,
    # since a silently dropped RDMA request would run the job without its devices.
    if r.raw(("runtime", "rdma")) not in (None, {}):
        r.error(
            ("runtime", "rdma"),
            RDMA_UNSUPPORTED,
            "NCCL then uses TCP sockets; request RDMA through the cluster's own device setup",
            key=True,
        )


def _env(r: Reader) -> tuple[EnvVar, ...]:
    path: PathKey = ("runtime", "env")
    entries = r.sequence(
        path, "a list of {name, value} or {name, valueFrom: {secretKeyRef: {name, key}}} entries"
    )
    out: list[EnvVar] = []
    seen: dict[str, int] = {}
    for i, _ in enumerate(entries or ()):
        var = _env_entry(r, (*path, i))
        if var is None:
            continue
        if var.name in seen:
            r.error(
                (*path, i),
                f"runtime.env[{i}]: duplicate env var name {quote(var.name)} (also "
                f"runtime.env[{seen[var.name]}])",
                "keep one entry per name",
                at=(*path, i, "name"),
            )
            continue
        seen[var.name] = i
        out.append(var)
    _check_sizes(r, out, seen)
    return tuple(out)


def _env_entry(r: Reader, path: PathKey) -> EnvVar | None:
    item = r.raw(path)
    if not isinstance(item, dict):
        r.wrong_type(path, "a mapping with name and value or valueFrom", item)
        return None
    head = dotted(path)
    name = r.raw((*path, "name"))
    if name is not None and not isinstance(name, str):
        r.wrong_type((*path, "name"), "a string", name)
        return None
    name = name or ""
    if not ENV_NAME.fullmatch(name):
        r.error(
            path,
            f"{head}: env var name {quote(name)} is invalid (use C_IDENTIFIER format)",
            "letters, digits and '_', not starting with a digit",
            at=(*path, "name"),
        )
        return None
    value = _literal(r, (*path, "value"))
    if value is None and r.raw((*path, "value")) is not None:
        return None  # the wrong type is reported already
    has_from = r.raw((*path, "valueFrom")) is not None
    if value is not None and has_from:
        r.error(
            path,
            f"{head}: env var {name} must set either value or valueFrom.secretKeyRef, not both",
            "keep value for a literal, or valueFrom for a Secret key",
            at=(*path, "valueFrom"),
        )
        return None
    if not has_from:
        if value is None:
            r.error(
                path,
                f"{head}: env var {name} must set value or valueFrom.secretKeyRef",
                'write `value: ""` for an empty value',
            )
            return None
        return EnvVar(name, value)
    secret = _secret_ref(r, path, name)
    if secret is None:
        return None
    ref, optional = secret
    return EnvVar(name, secret=ref, optional=optional)


def _literal(r: Reader, path: PathKey) -> str | None:
    value: Any = r.raw(path)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)  # `value: 3` means "3", as Go's YAML decoder reads it
    r.wrong_type(path, "a string", value)
    return None


def _secret_ref(r: Reader, path: PathKey, name: str) -> tuple[tuple[str, str], bool] | None:
    head = dotted(path)
    source = r.mapping((*path, "valueFrom"))
    ref_path = (*path, "valueFrom", "secretKeyRef")
    if r.raw(ref_path) is None:
        if source:  # a configMapKeyRef or fieldRef, say
            r.error(
                path,
                f"{head}: env var {name} has unsupported valueFrom; only secretKeyRef is supported",
                _REF_HINT,
                at=(*path, "valueFrom"),
            )
        return None
    r.mapping(ref_path)
    secret = r.string((*ref_path, "name"))
    key = r.string((*ref_path, "key"))
    optional = r.boolean((*ref_path, "optional")) or False
    if not secret or not key:
        message = f"{head}: env var {name} secretKeyRef requires name and key"
        r.error(path, message, _REF_HINT, at=ref_path)
        return None
    if not DNS_1123_SUBDOMAIN.fullmatch(secret) or len(secret) > 253:
        r.error(
            path,
            f"{head}: secret name {quote(secret)} is not a valid Kubernetes name (lowercase "
            "letters, digits, '-' and '.')",
            "name a Secret of the run's namespace, e.g. the one of workflow.secret_payload",
            at=(*ref_path, "name"),
        )
        return None
    if not SECRET_KEY.fullmatch(key):
        r.error(
            path,
            f"{head}: secret key {quote(key)} is not a valid Secret data key (letters, digits, "
            "'-', '_' and '.')",
            "name a key of the Secret's data",
            at=(*ref_path, "key"),
        )
        return None
    return (secret, key), optional


def _check_sizes(r: Reader, env: list[EnvVar], index: dict[str, int]) -> None:
    """The reference's literal-payload limits (64 KiB a value, 128 KiB in all)."""
    total = 0
    for var in env:
        if var.value is None:
            continue  # Secret references cost nothing in the pod spec
        size = len(var.value.encode())
        total += len(var.name.encode()) + 1 + size + 1
        if size > MAX_VALUE_BYTES:
            r.error(
                ("runtime", "env", index[var.name], "value"),
                f"literal environment variable {quote(var.name)} is {size} bytes; maximum is "
                f"{MAX_VALUE_BYTES} bytes: {_SIZE_REMEDY}",
                _SIZE_HINT,
            )
    if total > MAX_TOTAL_BYTES:
        r.error(
            ("runtime", "env"),
            f"literal environment payload is {total} bytes; maximum is {MAX_TOTAL_BYTES} "
            f"bytes: {_SIZE_REMEDY}",
            _SIZE_HINT,
        )
