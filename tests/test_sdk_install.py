"""The SDK from an isolated install: the project's interpreter imports the module, `import tau`
beside a `tau/` config folder, the package's typing (py.typed, the lazy names, tau.train's docs).
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import tau
from tau.cli import main

ROOT = Path(__file__).resolve().parents[1]
JOB = """\
import numpy_stand_in
import tau


@tau.train(name="fit", gpus=1)
def fit(ctx):
    return numpy_stand_in.VALUE
"""


def project_venv(where: Path, *, with_tau: bool = True) -> Path:
    """A project's virtual environment: its own package (numpy_stand_in), and tau unless not."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = Path(purelib)
    (site / "numpy_stand_in.py").write_text("VALUE = 1\n")
    if with_tau:  # tau and its dependencies, as `pip install tau` would give the project
        paths = [str(ROOT / "src"), str(ROOT / "generated"), sysconfig.get_paths()["purelib"]]
        (site / "tau_under_test.pth").write_text("\n".join(paths) + "\n")
    return python


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with a tau/ config folder (and an entrypoint in it) and an SDK module."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "tau").mkdir()
    (tmp_path / "tau" / "train.yaml").write_text("name: train\nengine: job\nentrypoint: train.py\n")
    (tmp_path / "tau" / "train.py").write_text("print('train')\n")
    (tmp_path / "job.py").write_text(JOB)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("PYTHONPATH", raising=False)  # each interpreter has only its own
    monkeypatch.delenv("TAU_PYTHON_PROJECT_INTERPRETER", raising=False)
    return tmp_path


def test_inspect_imports_the_module_with_the_projects_venv(repo: Path, capfd) -> None:
    project_venv(repo / ".venv")
    assert main(["python", "inspect", "job.py"]) == 0
    out, err = capfd.readouterr()
    assert "# fit (kind=train" in out and "name: fit" in out, err


def test_the_python_flag_chooses_the_interpreter(repo: Path, tmp_path_factory, capfd) -> None:
    python = project_venv(tmp_path_factory.mktemp("elsewhere") / "env")
    assert main(["python", "inspect", "job.py", "--python", str(python)]) == 0
    assert "name: fit" in capfd.readouterr().out


def test_without_the_projects_interpreter_the_error_says_how(repo: Path, capsys) -> None:
    assert main(["python", "inspect", "job.py"]) == 1
    err = capsys.readouterr().err
    assert "No module named 'numpy_stand_in'" in err
    assert "pass --python PATH" in err and sys.executable in err


def test_a_python_without_tau_is_refused_by_name(repo: Path, tmp_path_factory, capsys) -> None:
    python = project_venv(tmp_path_factory.mktemp("bare") / "env", with_tau=False)
    assert main(["python", "inspect", "job.py", "--python", str(python)]) == 1
    err = capsys.readouterr().err
    assert f"error: --python {python}: tau is not installed for that interpreter" in err


@pytest.mark.parametrize("where", [".", "tau"])
def test_import_tau_beside_a_tau_config_folder_is_the_package(repo: Path, where: str) -> None:
    # The config folder tau/ (no __init__.py, scripts in it) is a namespace-package candidate;
    # the installed package must win, from the repository's root and from inside the folder.
    python = project_venv(repo / ".venv")
    probe = "import tau; print(tau.__file__); print(callable(tau.train))"
    env = dict(os.environ)
    for command in (["-c", probe], ["job.py"]):
        done = subprocess.run([str(python), *command], cwd=repo / where, env=env,
                              capture_output=True, text=True)  # fmt: skip
        if command[0] == "job.py":
            if where == ".":
                assert done.returncode == 0, done.stderr
            continue
        assert done.returncode == 0, done.stderr
        file, is_callable = done.stdout.split()
        assert Path(file) == ROOT / "src" / "tau" / "__init__.py" and is_callable == "True"


def test_the_package_is_typed() -> None:
    assert (Path(tau.__file__).parent / "py.typed").is_file()


def test_type_checkers_see_the_lazy_names(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(
        "import tau\n\nreveal_type(tau.train)\nreveal_type(tau.Ctx)\nreveal_type(tau.secret_ref)\n"
    )
    env = dict(os.environ, MYPYPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT / "generated")]))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(user)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    notes = [line for line in done.stdout.splitlines() if "Revealed type" in line]
    assert len(notes) == 3, done.stdout
    assert "gpus: int | None" in notes[0] and "tau.sdk.ctx.Ctx" in notes[1]
    assert not any('"builtins.object"' in n for n in notes)


def test_every_parameter_of_train_and_eval_is_documented() -> None:
    from tau.sdk.workloads import eval as eval_
    from tau.sdk.workloads import train

    for function in (train, eval_):
        doc = inspect.getdoc(function) or ""
        args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
        for name in inspect.signature(function).parameters:
            assert f"\n    {name}: " in "\n" + args, f"{function.__name__}: {name} undocumented"


def test_the_type_stub_names_every_public_sdk_name() -> None:
    import ast

    from tau.sdk import PUBLIC

    stub = ast.parse((Path(tau.__file__).parent / "__init__.pyi").read_text())
    imported = {
        alias.asname: (node.module, alias.name)
        for node in stub.body
        if isinstance(node, ast.ImportFrom) and node.module != "typing"
        for alias in node.names
    }
    logging = {name: "tau.metric_log" for name in tau.LOG_NAMES}
    assert {name: module for name, (module, _) in imported.items()} == {**PUBLIC, **logging}
    assert set(PUBLIC) == tau.SDK_NAMES
