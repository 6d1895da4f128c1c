"""Which Python imports the user's module for `tau python inspect|build|submit`. Performs I/O.

tau installed as a command of its own (pipx, `uv tool`) runs in its own virtual environment,
where the user's module cannot import the project's packages (numpy, torch, ...). So the module
is imported by the project's interpreter: `--python PATH`, else the active virtual environment
($VIRTUAL_ENV), else a `.venv` in the module's folder or a parent (up to the Git root). When that
interpreter is not the one running, the same command line is run again by it (`PATH -m tau ...`),
which needs tau installed there too, since the module itself does `import tau`. Without one,
the module is imported here, and an import it cannot satisfy says how to choose the project's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tau.errors import UsageError

#: Set in the environment of the re-run, so it never looks for another interpreter.
HOPPED = "TAU_PYTHON_PROJECT_INTERPRETER"


def _python_of(venv: Path) -> Path | None:
    for name in ("bin/python", "bin/python3", "Scripts/python.exe"):
        if (venv / name).is_file():
            return venv / name
    return None


def _is_running(python: Path) -> bool:
    """Whether `python` is this process's interpreter: the same environment (its folder, not
    the binary, which in every virtual environment links to the same base interpreter).
    """
    try:
        return python.absolute().parent.parent.resolve() == Path(sys.prefix).resolve()
    except OSError:
        return False


def project_python(
    module: Path, flag: Path | None, environ: Mapping[str, str]
) -> tuple[Path, str] | None:
    """(the project's interpreter, how it was found), or None to import MODULE here.

    Raises:
        UsageError: --python names no interpreter.
    """
    if environ.get(HOPPED):
        return None
    if flag is not None:
        python = _python_of(flag) if flag.is_dir() else flag
        if python is None or not python.is_file():
            raise UsageError(
                f"--python {flag}: no such interpreter",
                hint="pass the project's Python, e.g. --python .venv/bin/python",
            )
        return None if _is_running(python) else (python, "--python")
    venv = environ.get("VIRTUAL_ENV")
    if venv:
        python = _python_of(Path(venv))
        if python is not None:
            return None if _is_running(python) else (python, f"$VIRTUAL_ENV ({venv})")
    folder = module.resolve().parent
    for candidate in (folder, *folder.parents):
        python = _python_of(candidate / ".venv")
        if python is not None:
            return None if _is_running(python) else (python, f"{candidate / '.venv'}")
        if (candidate / ".git").exists():
            break
    return None


def has_tau(python: Path) -> bool:
    """Whether `python` can run this package's SDK commands (tau and its dependencies, not a
    `tau/` config folder).
    """
    probe = "import tau.sdk.cli"
    try:
        done = subprocess.run([str(python), "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def without_python_flag(args: Sequence[str]) -> list[str]:
    """`args` without `--python PATH` / `--python=PATH`."""
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg == "--python":
            skip = True
        elif not arg.startswith("--python="):
            out.append(arg)
    return out


def rerun(python: Path, args: Sequence[str]) -> int:
    """Run `tau ARGS` with `python` (the terminal passed through) and return its exit code."""
    env = dict(os.environ, **{HOPPED: str(python)})
    command = [str(python), "-m", "tau", *without_python_flag(args)]
    return subprocess.run(command, env=env, check=False).returncode


def how_to_choose() -> str:
    """The hint for a module that cannot import its packages with tau's own interpreter."""
    return (
        f"tau imported it with its own interpreter ({sys.executable}); import it with your "
        "project's instead: pass --python PATH (a Python with the project's packages and tau "
        "installed), or activate that environment, or keep it in a .venv beside the module"
    )
