"""The files a managed workflow ships beside its trainer: extra scripts and the secret payload.

Performs I/O (reads the files named by `workflow.extra_scripts` and `workflow.secret_payload`;
relative paths resolve against the config's folder). Every problem of a list is gathered and
raised together as `WorkflowInputError`, each at its config path
(`workflow.extra_scripts[i]`, `workflow.secret_payload`), in the reference's words
(`--extra-script ...`, `--secret-payload: ...`). Secret values never appear in a message: the
payload's JSON errors name a line and column, never the text there.
"""

# No `from __future__ import annotations`: see tau.intent.runconfig.
import json
import re
from collections.abc import Collection, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from tau.intent.load import PathKey
from tau.intent.workflow.problems import Problem, WorkflowInputError, quote, raise_any
from tau.k8s.names import DNS_1123_SUBDOMAIN, SECRET_KEY

#: Where the trainer (the main script) lands in /script; an extra script may not take it.
MAIN_SCRIPT = "train.py"
EXTRA_SCRIPTS: PathKey = ("workflow", "extra_scripts")
SECRET_PAYLOAD: PathKey = ("workflow", "secret_payload")
#: A payload file name: the payload's decoder writes only plain names into /script.
_DEST = re.compile(r"^[A-Za-z0-9._-]+$")
#: A Windows drive (`C:\` or `C:/`): its colon is not the SRC:DEST separator.
_DRIVE = re.compile(r"^[A-Za-z]:(?=[\\/])")
_SECRET_NAME_MAX = 253


class SecretPayload(NamedTuple):
    """`workflow.secret_payload`: the Secret created before the workload, values as written."""

    name: str
    #: (key, value), sorted by key.
    string_data: tuple[tuple[str, str], ...]


def split_extra_script(spec: str) -> tuple[str, str]:
    r"""`SRC[:DEST]` → (SRC, DEST or ""): split on the last ':' after any drive letter.

    The last colon, so a source path with a colon in it still works; the drive letter is set
    aside first, or `C:\x\a.py` alone would split into `C` and `\x\a.py`.
    """
    drive = _DRIVE.match(spec)
    head = drive.group(0) if drive else ""
    rest = spec[len(head) :]
    src, sep, dest = rest.rpartition(":")
    if not sep:
        return spec, ""
    return head + src, dest


def _basename(src: str) -> str:
    """The file name of SRC, either separator; "." when there is none (a root or `.`)."""
    return PurePosixPath(src.replace("\\", "/")).name or "."


def _os_reason(exc: OSError) -> str:
    """Go's wording of an OS error ("no such file or directory"), as the reference prints it."""
    text = exc.strerror or type(exc).__name__
    return text[:1].lower() + text[1:]


def _resolve(path: str, base_dir: Path | None) -> Path:
    candidate = Path(path)
    return candidate if candidate.is_absolute() or base_dir is None else base_dir / candidate


def _dest_problem(
    spec: str, dest: str, reserved: Collection[str], seen: set[str]
) -> tuple[str, str] | None:
    """(message, hint) for what is wrong with DEST as a file name in /script, or None."""
    if dest in (".", "/") or "/" in dest or "\\" in dest:
        return (
            f"--extra-script {quote(spec)}: DEST must be a single filename mounted under /script",
            "name a file, not a path: SRC:helpers.py lands as /script/helpers.py",
        )
    if not _DEST.match(dest):
        return (
            f"extra script {quote(dest)}: destination must be a payload file name using only "
            "letters, digits, '.', '_' or '-'",
            "rename it with SRC:DEST, e.g. SRC:my_helpers.py",
        )
    if dest == "..":
        return f"extra script {quote(dest)}: invalid destination", "name a file, e.g. helpers.py"
    if dest in reserved:
        return (
            f"extra script {quote(dest)} collides with an existing script entry "
            "(use a different destination name)",
            f"/script/{dest} is the workflow's main script; ship this one as SRC:OTHER_NAME",
        )
    if dest in seen:
        return (
            f"--extra-script {quote(spec)}: duplicate destination {quote(dest)}",
            "give each extra script its own DEST (SRC:DEST)",
        )
    return None


def _read_script(src: Path) -> bytes | tuple[str, str]:
    """The file's bytes, or (the reference's message, a hint) for why they cannot be read."""
    try:
        if src.is_dir():
            return (
                f"--extra-script {src}: directories are not supported; pass files explicitly",
                "list each file of the folder as its own extra script",
            )
        return src.read_bytes()
    except OSError as exc:
        verb = "open" if src.exists() else "stat"
        return (
            f"--extra-script {src}: {verb} {src}: {_os_reason(exc)}",
            "relative paths resolve against the config's folder",
        )


def load_extra_scripts(
    specs: Sequence[str],
    base_dir: Path | None = None,
    *,
    reserved: Collection[str] = (MAIN_SCRIPT,),
    path: PathKey = EXTRA_SCRIPTS,
) -> tuple[tuple[str, bytes], ...]:
    """(DEST, bytes) per `SRC[:DEST]`, in the order given; DEST defaults to SRC's file name.

    Args:
        specs: `workflow.extra_scripts`.
        base_dir: the folder relative SRC paths resolve against (the config's).
        reserved: names already in /script (the trainer's `train.py`).
        path: the config path of the list; problems sit at `path[i]`.

    Raises:
        WorkflowInputError: every bad spec, destination and unreadable file, each at its index.
    """
    problems: list[Problem] = []
    out: list[tuple[str, bytes]] = []
    seen: set[str] = set()
    for index, spec in enumerate(specs):
        at = (*path, index)
        src, dest = split_extra_script(spec)
        if not src:
            problems.append(
                Problem(at, "--extra-script: source path is required", "write SRC or SRC:DEST")
            )
            continue
        dest = dest or _basename(src)
        wrong = _dest_problem(spec, dest, reserved, seen)
        if wrong:
            problems.append(Problem(at, *wrong))
            continue
        seen.add(dest)
        data = _read_script(_resolve(src, base_dir))
        if not isinstance(data, bytes):
            problems.append(Problem(at, *data))
            continue
        out.append((dest, data))
    raise_any(problems)
    return tuple(out)


def _kind(value: Any) -> str:
    """The JSON type of a parsed value, for messages that must not show the value."""
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string" if isinstance(value, str) else "number"


def _fail(message: str, hint: str | None = None) -> WorkflowInputError:
    return WorkflowInputError([Problem(SECRET_PAYLOAD, f"--secret-payload: {message}", hint)])


def _read_json(file: Path) -> Any:
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise _fail(
            f"open {file}: {_os_reason(exc)}",
            "relative paths resolve against the config's folder",
        ) from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _fail("the file is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        # exc.msg names what was expected, never the text found: the text may be a secret.
        raise _fail(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


_SHAPE = 'write {"name": "SECRET-NAME", "stringData": {"KEY": "value", ...}}'


def _string_data(data: Any) -> list[str] | tuple[tuple[str, str], ...]:
    """The sorted pairs of stringData, or what is wrong with it (keys only, never values)."""
    if not isinstance(data, dict):
        return [f"stringData must be an object of strings (got {_kind(data)})"]
    problems = []
    for key, value in sorted(data.items()):
        if not isinstance(value, str):
            problems.append(f"stringData.{key} must be a string (got {_kind(value)})")
        if not SECRET_KEY.match(key):
            problems.append(
                f"stringData key {quote(key)} is not a valid Secret key "
                "(letters, digits, '-', '_' and '.')"
            )
    return problems or tuple(sorted(data.items()))


def load_secret_payload(path: str | None, base_dir: Path | None = None) -> SecretPayload | None:
    """The secret payload JSON (`{"name": ..., "stringData": {...}}`); None when no path.

    Raises:
        WorkflowInputError: at `workflow.secret_payload`: unreadable, not JSON, or not a
            named Secret with string data.
    """
    if path is None or not path.strip():
        return None
    doc = _read_json(_resolve(path, base_dir))
    if not isinstance(doc, dict):
        raise _fail(f"expected a JSON object (got {_kind(doc)})", _SHAPE)
    name, data = doc.get("name"), doc.get("stringData")
    if not name or not data:
        raise _fail("requires name and stringData", _SHAPE)
    problems = _name_problems(name)
    pairs = _string_data(data)
    if isinstance(pairs, list):
        problems += pairs
    if problems or not isinstance(name, str) or isinstance(pairs, list):
        raise WorkflowInputError(
            [Problem(SECRET_PAYLOAD, f"--secret-payload: {p}", _SHAPE) for p in problems]
        )
    return SecretPayload(name, pairs)


def _name_problems(name: Any) -> list[str]:
    """What keeps `name` from naming a Secret (the API server's rule, checked before submit)."""
    if not isinstance(name, str):
        return [f"name must be a string (got {_kind(name)})"]
    if len(name) > _SECRET_NAME_MAX or not DNS_1123_SUBDOMAIN.match(name):
        return [
            f"name {quote(name)} is not a valid Secret name (lowercase letters, digits, "
            "'-' and '.', at most 253 characters)"
        ]
    return []
