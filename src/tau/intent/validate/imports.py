"""The local-import check: a script that imports sibling modules which will not be shipped.

Performs I/O (reads the entrypoint and lists its directory). Only the entrypoint file is
embedded in a run; a sibling `utils.py` it imports would fail at start-up on the cluster,
minutes later and after queueing, so it is caught here.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tau.intent.probe import is_file
from tau.intent.validate.context import Context, canonical

#: The stage that runs these rules: `tau run validate` (schema and offline rules).
STAGE = "offline"


def local_imports(script: Path, content: bytes | None = None) -> list[tuple[str, int]]:
    """Top-level module names the script imports that exist next to it, with their lines.

    Args:
        content: the script's bytes when already read; read from `script` otherwise.
    """
    try:
        source = script.read_bytes() if content is None else content
        tree = ast.parse(source, filename=str(script))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []
    here = script.parent
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module.split(".")[0]]
        for name in names:
            if name in sys.stdlib_module_names or name == script.stem:
                continue
            if is_file(here / f"{name}.py") or is_file(here / name / "__init__.py"):
                found.setdefault(name, getattr(node, "lineno", 0))
    return sorted(found.items())


def _shipped(ctx: Context) -> set[str]:
    """Module names a managed workflow ships beside its main script (workflow.extra_scripts)."""
    from tau.intent.workflow.files import split_extra_script

    names = set()
    for spec in ctx.get("workflow.extra_scripts") or ():
        if isinstance(spec, str):
            src, dest = split_extra_script(spec)
            name = dest or src.replace("\\", "/").rsplit("/", 1)[-1]
            names.add(name.removesuffix(".py"))
    return names


def check(ctx: Context, *, managed: bool = False) -> None:
    """Reject imports of unshipped local modules (skipped when a project tree is shipped).

    A managed workflow (`managed`, or a config with workflow.file) runs its main script with
    the extra scripts beside it: those imports are shipped.
    """
    if ctx.has("run.working_dir") or ctx.has("run.source"):
        return
    entry_path, entry = ctx.entry_path, ctx.entrypoint
    shipped: set[str] = set()
    if managed or ctx.get("workflow.file"):
        main_path, main = canonical(ctx.data, "run.main_script")
        if main:
            entry_path, entry = main_path, main
        shipped = _shipped(ctx)
    if not isinstance(entry, str) or not entry.endswith(".py"):
        return
    script = (ctx.config_dir / entry) if not entry.startswith("/") else Path(entry)
    if not is_file(script):
        return  # a missing entrypoint is reported by --dry-run=client, which reads it
    try:
        content = script.read_bytes()
    except OSError:
        return  # unreadable: the client stage reports it where it reads the file
    if entry_path == ctx.entry_path:
        # Kept on the validated config so the client stage does not read the file again.
        ctx.entry_bytes = content
    for name, line in local_imports(script, content):
        if name in shipped:
            continue
        ship = (
            "set run.working_dir to ship the project directory"
            if ctx.engine == "rayjob"
            else "ship the project with run.source (a digest-pinned source image)"
        )
        ctx.error(
            entry_path,
            f'entrypoint "{entry}" imports local module "{name}" (line {line}), '
            "which is not shipped: only the entrypoint file is embedded in the run",
            f"{ship}, install the module in the image, or inline it",
        )
