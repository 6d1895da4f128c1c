"""The monorepo project catalog `tau.projects.yaml`, and which of its projects a command means.

Performs I/O (reads the catalog, checks which files exist). A monorepo checks in one catalog
at its Git root, schema `tau.projects.v1`:

    projects:
      vision: {path: projects/vision, connection: projects/vision/tau/workspace.connection.yaml}

The catalog is read by the run config's loader and walked against
spec/tau-projects.schema.json by the same walker, so every problem of the file is reported at
once, located and worded like a tau.yaml problem. Only the catalog at the exact Git root
counts, and outside a Git repository there is none: a stray catalog in a parent directory must
never route an unrelated checkout to another project's cluster.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau.errors import ConfigError, Diagnostic, Location, UsageError
from tau.intent import suggest
from tau.intent.gitroot import FILENAME, catalog_file, git_root
from tau.intent.load import PathKey, dotted
from tau.intent.probe import is_dir, is_file
from tau.intent.validate.findings import Findings
from tau.intent.validate.structure import FileWalker

SCHEMA = "tau.projects.v1"
#: What every selection error tells the user to do.
CHOOSE = "rerun with --project NAME"


@dataclass(frozen=True)
class Project:
    """One catalog entry, its paths checked and made absolute.

    Attributes:
        name: the key under `projects:`.
        path: the directory as written, relative to the Git root (used in messages).
        root: that directory, resolved.
        connection: the project's workspace connection descriptor, resolved; it stands in for
            `tau/workspace.connection.yaml` discovery for everything the project runs. Like a
            discovered descriptor, its content is checked when a command connects through it:
            the config layer never reads descriptors, so offline commands stay offline.
        workspace: the TauWorkspace the catalog names for the project, or None (the
            descriptor's).
    """

    name: str
    path: str
    root: Path
    connection: Path
    workspace: str | None = None

    def owns(self, path: Path) -> bool:
        """`path` (a file or directory) lies inside the project's directory."""
        return path.resolve().is_relative_to(self.root)


@dataclass(frozen=True)
class Catalog:
    """A validated `tau.projects.yaml`: where it is and its projects by name."""

    file: Path
    root: Path
    projects: Mapping[str, Project]

    def names(self) -> list[str]:
        return sorted(self.projects)

    def owner(self, path: Path) -> Project | None:
        """The project whose directory holds `path` (directories never overlap), or None."""
        return next((p for p in self.projects.values() if p.owns(path)), None)

    def get(self, name: str) -> Project:
        """The project called `name`.

        Raises:
            UsageError: no such project; the hint offers the nearest name and lists them all.
        """
        if name in self.projects:
            return self.projects[name]
        near = suggest.closest(name, self.projects)
        known = f"projects in {shown(self.file)}: {', '.join(self.names())}"
        hint = f"did you mean `--project {near}`? {known}" if near else known
        raise UsageError(f'unknown project "{name}"', hint=hint)

    def ambiguous(self, why: str, candidates: list[str]) -> UsageError:
        """The error for a selection that cannot choose among `candidates` by itself."""
        return UsageError(
            f"{why}: {', '.join(candidates)}",
            hint=f"{CHOOSE} (projects of {shown(self.file)}), or run from inside a project "
            "directory",
        )


def shown(path: Path) -> str:
    """A path as the user would write it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def find(start: Path) -> Catalog | None:
    """The catalog of the Git repository holding `start`, loaded and validated, or None.

    Raises:
        ConfigError: the catalog exists but is invalid (every problem at once).
    """
    file = catalog_file(start)
    return load(file, file.parent) if file is not None else None


def missing(start: Path) -> UsageError:
    """The error for --project where there is no catalog; it says where tau looked."""
    root = git_root(start)
    if root is None:
        return UsageError(
            f"--project needs {FILENAME} at the Git root, but {start} is not inside a Git "
            "repository",
            hint="run from the monorepo's checkout, or drop --project",
        )
    return UsageError(
        f"--project needs a project catalog, but there is no {FILENAME} at the Git root {root}",
        hint=f"add {FILENAME} (schema: {SCHEMA}) there, or drop --project",
    )


def load(file: Path, root: Path) -> Catalog:
    """Read and validate one catalog; `root` is the Git root its paths are relative to.

    Raises:
        ConfigError: with every problem of the catalog.
    """
    where = Location(shown(file))
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = Diagnostic("", f"cannot read the project catalog: {exc}", None, where)
        raise ConfigError([problem]) from None
    return parse(text, Path(where.file), root)


def parse(text: str, file: Path, root: Path) -> Catalog:
    """Validate catalog text; `file` locates problems, `root` anchors the project paths.

    Raises:
        ConfigError: with every problem found.
    """
    from tau.intent import load as loader
    from tau.intent.spec import projects_schema

    schema = projects_schema()
    doc = loader.parse(text, file, kind="project catalog")
    findings = Findings(doc.source, list(doc.problems))
    data = _Walker(findings, schema).walk(schema, doc.data, ())
    data = data if isinstance(data, dict) else {}
    # Required keys are looked up in the document as written: a value of the wrong type is
    # reported once, as a type error, not again as missing.
    _check_top(schema, doc.data, data, findings)
    entries = data.get("projects")
    written = doc.data.get("projects")
    projects: dict[str, Project] = {}
    if isinstance(entries, dict) and isinstance(written, dict):
        entry_schema = schema["properties"]["projects"]
        for name in sorted(entries):
            if not _check_name(entry_schema["propertyNames"], name, findings):
                continue
            entry = _Entry(entry_schema["additionalProperties"], name, entries[name], root)
            checked = entry.check(set(written[name]), findings)
            if checked is not None:
                projects[name] = checked
        _check_disjoint(list(projects.values()), findings)
    findings.raise_errors()
    return Catalog(file, root.resolve(), projects)


class _Walker(FileWalker):
    """The schema walker, worded for the catalog (its keys are few: list them)."""

    def unknown(self, node: dict[str, Any], key: str, path: PathKey) -> None:
        keys = list(node.get("properties", {}))
        near = suggest.closest(key, keys)
        known = f"known keys here: {', '.join(keys)}"
        hint = f"did you mean `{near}`? {known}" if near else known
        self.error(path, f'unknown key "{key}"', hint, key=True)


def _check_top(
    schema: dict[str, Any], written: dict[str, Any], data: dict[str, Any], findings: Findings
) -> None:
    """The rules of the top level the walker does not apply: required keys, the schema name."""
    for key in schema["required"]:
        if key not in written:
            findings.error("", f"`{key}` is required", f"add `{key}:` at the top of the catalog")
    wanted = schema["properties"]["schema"]["const"]
    if "schema" in data and data["schema"] != wanted:
        findings.error(
            ("schema",), f'unsupported schema "{data["schema"]}"', f"use `schema: {wanted}`"
        )
    entries = data.get("projects")
    if isinstance(entries, dict) and not entries:
        findings.error(
            ("projects",),
            "lists no project",
            "add one entry per project: `NAME: {path: DIR, connection: FILE}`",
        )


def _check_name(rule: dict[str, Any], name: str, findings: Findings) -> bool:
    """A project name is what --project takes; the schema's propertyNames words the rule."""
    if len(name) <= rule["maxLength"] and re.search(rule["pattern"], name):
        return True
    message = rule["x-tau-pattern-message"].format(value=name)
    findings.error(("projects", name), message, rule["x-tau-pattern-hint"], key=True)
    return False


@dataclass(frozen=True)
class _Entry:
    """A catalog entry as written, before its paths are checked against the repository."""

    schema: dict[str, Any]
    name: str
    data: dict[str, Any]
    root: Path

    def check(self, written: set[str], findings: Findings) -> Project | None:
        """The project, or None after recording why it is not one; `written` are its keys as
        the file has them (wrongly typed ones included).
        """
        ok = True
        for key in self.schema["required"]:
            if key not in written:
                findings.error(
                    ("projects", self.name),
                    f'project "{self.name}" has no `{key}`',
                    f"add `{key}:`, the {_what(self.schema, key)}",
                    key=True,
                )
                ok = False
        paths: dict[str, Path] = {}
        for key, node in self.schema["properties"].items():
            kind = node.get("x-tau-repository-path")
            if kind is None or key not in self.data:
                continue
            found = self._path(key, kind, findings)
            if found is None:
                ok = False
            else:
                paths[key] = found
        # A wrongly typed required value was left out by the walker, which reported it.
        if not ok or any(key not in self.data for key in self.schema["required"]):
            return None
        return Project(
            self.name,
            self.data["path"],
            paths["path"],
            paths["connection"],
            self.data.get("workspace"),
        )

    def _path(self, key: str, kind: str, findings: Findings) -> Path | None:
        """The entry's `key` as an existing `kind` ("directory"/"file") inside the repository."""
        value: str = self.data[key]
        at = ("projects", self.name, key)
        fix = f"write it relative to the Git root {self.root}, e.g. {_example(key, self.name)}"
        parts = value.split("/")
        if not value.strip():
            findings.error(at, f"{dotted(at)} is empty", fix)
            return None
        if value != value.strip():
            findings.error(at, f"{dotted(at)} {value!r} has surrounding whitespace", fix)
            return None
        if value.startswith("/") or re.match(r"^[A-Za-z]:", value):
            findings.error(at, f'{dotted(at)} "{value}" must be relative to the Git root', fix)
            return None
        if "\\" in value or any(p in ("", ".", "..") for p in parts):
            findings.error(
                at,
                f'{dotted(at)} "{value}" must be a plain slash-separated path (no `.`, `..` or '
                "empty parts)",
                fix,
            )
            return None
        try:
            target = (self.root / value).resolve()
        except (OSError, RuntimeError):  # a symlink loop
            findings.error(at, f'{dotted(at)} "{value}" cannot be resolved (a symlink loop?)', fix)
            return None
        if not target.is_relative_to(self.root.resolve()):
            findings.error(at, f'{dotted(at)} "{value}" resolves outside the repository', fix)
            return None
        exists = is_dir(target) if kind == "directory" else is_file(target)
        if not exists:
            findings.error(
                at,
                f'{dotted(at)} "{value}" is not an existing {kind} under {self.root}',
                f"create it, or point `{key}` at the {_what(self.schema, key)}",
            )
            return None
        return target


def _what(schema: dict[str, Any], key: str) -> str:
    """The first clause of a field's description, for hints."""
    text: str = schema["properties"][key]["description"]
    return text.split(",")[0].split(" (")[0].removeprefix("The ")


def _example(key: str, name: str) -> str:
    return f"projects/{name}" if key == "path" else f"projects/{name}/tau/workspace.connection.yaml"


def _check_disjoint(projects: list[Project], findings: Findings) -> None:
    """Project directories never nest: a file must belong to exactly one project."""
    for i, first in enumerate(projects):
        for second in projects[i + 1 :]:
            if first.root.is_relative_to(second.root) or second.root.is_relative_to(first.root):
                findings.error(
                    ("projects", second.name, "path"),
                    f'project "{second.name}" ({second.path}) overlaps project "{first.name}" '
                    f"({first.path})",
                    "give each project its own directory; project directories do not nest",
                )


def _has_target(project: Project, target: str) -> bool:
    return any(is_file(project.root / "tau" / f"{target}.{ext}") for ext in ("yaml", "yml"))


def choose(
    catalog: Catalog, *, name: str | None, config: Path | None, cwd: Path, target: str | None
) -> Project:
    """The project a `tau run` (submit, dry run, validate, resume) means, in the contract's order:
    --project, then the explicit config's owner, then the project holding the working
    directory, then the only project with tau/TARGET.yaml, then the only project.

    Raises:
        UsageError: an unknown name, a config outside every project or in another project than
            --project names, or an ambiguity (the error lists the candidates).
    """
    named = catalog.get(name) if name is not None else None
    if config is not None:
        owner = catalog.owner(config)
        if owner is None:
            places = ", ".join(f"{p.name}={p.path}" for p in map(catalog.get, catalog.names()))
            raise UsageError(
                f"--config {shown(config)} is not inside any project of {shown(catalog.file)}",
                hint=f"move it into a project directory ({places}), or add its project there",
            )
        if named is not None and owner.name != named.name:
            raise UsageError(
                f'--config {shown(config)} belongs to project "{owner.name}", not "{named.name}"',
                hint=f"drop --project, or pass --project {owner.name}",
            )
        return owner
    if named is not None:
        return named
    here = catalog.owner(cwd)
    if here is not None:
        return here
    if target is not None and target != "smoke":
        having = [n for n in catalog.names() if _has_target(catalog.projects[n], target)]
        if len(having) == 1:
            return catalog.projects[having[0]]
        if having:
            raise catalog.ambiguous(f'run target "{target}" exists in several projects', having)
    return _only(catalog, "the project is ambiguous")


def choose_for_lifecycle(catalog: Catalog, *, name: str | None, cwd: Path) -> Project:
    """The project a lifecycle verb (status, logs, list, get, cancel, history) means: --project,
    then the project holding the working directory, then the only project. A run name is never
    read as a target name here: it names a run on the cluster, not a file.

    Raises:
        UsageError: an unknown name, or an ambiguity.
    """
    if name is not None:
        return catalog.get(name)
    return catalog.owner(cwd) or _only(catalog, "the project is ambiguous")


def _only(catalog: Catalog, why: str) -> Project:
    names = catalog.names()
    if len(names) == 1:
        return catalog.projects[names[0]]
    raise catalog.ambiguous(why, names)


def for_lifecycle(name: str | None, cwd: Path, *, explicit_context: bool) -> Project | None:
    """The project whose connection a lifecycle verb run in `cwd` uses, or None (no catalog).

    An explicit context (--context, $TAU_CONTEXT) is used directly (contract §1.4), so without
    --project no project is chosen then, and a monorepo root is not an ambiguity.

    Raises:
        UsageError: --project without a catalog, an unknown project, or an ambiguity.
        ConfigError: the catalog is invalid.
    """
    if name is None and explicit_context:
        return None
    catalog = find(cwd)
    if catalog is None:
        if name is not None:
            raise missing(cwd)
        return None
    return choose_for_lifecycle(catalog, name=name, cwd=cwd)
