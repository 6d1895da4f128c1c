"""Loading a user's module and finding its handles (tau.sdk.discover), and the staged-module
helpers (tau.load_staged_module / load_staged_function / call_staged_function).

A bad module is one located line pointing into the user's file, never a traceback.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import tau
from tau.sdk.discover import INSPECT_MODULE, discover, load_module
from tau.sdk.errors import SdkError


def write(folder: Path, name: str, source: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def test_discover_finds_each_kind_in_attribute_order_once_per_object(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "flow.py",
        """
        import tau

        @tau.train(name="b-train")
        def zeta(ctx):
            return ctx

        alias = zeta

        @tau.eval(name="e")
        def beta(ctx):
            return ctx

        endpoint = tau.serve(name="api", profile="p", from_finetune=zeta)
        TrainHandle = type(zeta)
        """,
    )
    handles = discover(path)
    assert [(f.attribute, f.handle.name) for f in handles.train] == [("alias", "b-train")]
    assert [f.attribute for f in handles.eval] == ["beta"]
    assert [(f.attribute, f.handle.name) for f in handles.serve] == [("endpoint", "api")]
    assert handles.module_path == path
    assert sys.modules[INSPECT_MODULE].__file__ == str(path.resolve())


def test_a_module_without_handles_gives_empty_handles(tmp_path: Path) -> None:
    handles = discover(write(tmp_path, "empty.py", "import tau\nX = 1\n"))
    assert handles.train == handles.eval == handles.serve == ()


def test_sibling_imports_work_while_the_module_runs_and_sys_path_is_restored(
    tmp_path: Path,
) -> None:
    write(tmp_path, "helpers_for_flow.py", "NAME = 'from-sibling'\n")
    path = write(
        tmp_path,
        "flow.py",
        """
        import tau
        from helpers_for_flow import NAME

        @tau.train(name=NAME)
        def fit(ctx):
            return ctx
        """,
    )
    before = list(sys.path)
    assert discover(path).train[0].handle.name == "from-sibling"
    assert sys.path == before


def test_a_syntax_error_is_located_at_its_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.py", "import tau\n\ndef f(:\n    pass\n")
    with pytest.raises(SdkError) as caught:
        load_module(path)
    err = caught.value
    assert err.message.startswith(f"cannot import {path}: SyntaxError: ")
    assert (err.location.file, err.location.line, err.location.col) == (str(path), 3, 7)
    assert err.format().startswith(f"{path}:3:7: error: cannot import {path}: SyntaxError")
    assert "Traceback" not in err.format()


def test_a_decorator_error_points_at_the_decorator_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "flow.py",
        """
        import tau


        @tau.eval(name="e", cpu_workers=0)
        def score(ctx):
            return ctx
        """,
    )
    with pytest.raises(SdkError) as caught:
        load_module(path)
    err = caught.value
    assert err.location is not None and err.location.file == str(path)
    assert err.location.line in (4, 5)  # the decorator (3.11 reports the decorated def on 5)
    assert err.message.startswith(f"cannot import {path}: tau-py: @tau.eval cpu_workers must be")
    assert len(err.format().splitlines()) == 1


def test_a_top_level_exception_is_located_at_the_innermost_line_of_the_users_file(
    tmp_path: Path,
) -> None:
    write(tmp_path, "lib_for_flow.py", "def boom():\n    raise ValueError('bad value')\n")
    path = write(
        tmp_path,
        "flow.py",
        """
        import tau
        import lib_for_flow

        X = 1
        lib_for_flow.boom()
        """,
    )
    with pytest.raises(SdkError) as caught:
        load_module(path)
    err = caught.value
    assert err.message == f"cannot import {path}: ValueError: bad value"
    assert (err.location.file, err.location.line) == (str(path), 5)
    assert err.location.col == 1
    assert INSPECT_MODULE not in sys.modules or sys.modules[INSPECT_MODULE].__file__ != str(
        path.resolve()
    )


def test_an_import_error_is_one_located_line(tmp_path: Path) -> None:
    path = write(tmp_path, "flow.py", "import tau\nimport no_such_module_anywhere\n")
    with pytest.raises(SdkError) as caught:
        load_module(path)
    assert caught.value.message == (
        f"cannot import {path}: ModuleNotFoundError: No module named 'no_such_module_anywhere'"
    )
    assert caught.value.location.line == 2


def test_a_type_error_from_a_missing_decorator_argument_is_located(tmp_path: Path) -> None:
    path = write(tmp_path, "flow.py", "import tau\n\n@tau.eval()\ndef f(ctx):\n    pass\n")
    with pytest.raises(SdkError) as caught:
        load_module(path)
    assert "TypeError" in caught.value.message and caught.value.location.line in (3, 4)


def test_sys_exit_at_top_level_is_reported_not_obeyed(tmp_path: Path) -> None:
    path = write(tmp_path, "flow.py", "import sys\nsys.exit(4)\n")
    with pytest.raises(SdkError, match="SystemExit: 4"):
        load_module(path)


@pytest.mark.parametrize("stem", ["tau", "config", "workloads"])
def test_a_module_named_like_tau_itself_is_refused(tmp_path: Path, stem: str) -> None:
    path = write(tmp_path, f"{stem}.py", "X = 1\n")
    with pytest.raises(SdkError) as caught:
        load_module(path)
    assert caught.value.message == f"cannot import {path}: module name {stem!r} is reserved by Tau"
    assert caught.value.location.file == str(path)


def test_a_missing_module_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(SdkError, match="tau staged module not found"):
        load_module(tmp_path / "absent.py")


# --- staged modules -------------------------------------------------------------------------


def test_call_staged_function_loads_and_calls(tmp_path: Path) -> None:
    path = write(tmp_path, "job.py", "def main(a, b=0):\n    return a + b\n")
    assert tau.call_staged_function(path, "main", 1, b=2) == 3
    assert tau.load_staged_function(path, "main")(4) == 4
    module = tau.load_staged_module(path)
    assert module.__name__.startswith("_tau_staged_job_") and module.__name__ in sys.modules


@pytest.mark.parametrize(
    ("function", "words"), [("nope", "has no attribute 'nope'"), ("VALUE", "is not callable")]
)
def test_load_staged_function_refuses_a_missing_or_non_callable_name(
    tmp_path: Path, function: str, words: str
) -> None:
    path = write(tmp_path, "job.py", "VALUE = 1\n")
    with pytest.raises(SdkError, match=words):
        tau.load_staged_function(path, function)


@pytest.mark.parametrize("name", ["tau", "config", "workloads"])
def test_staged_modules_may_not_take_tau_reserved_names(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, "job.py", "X = 1\n")
    with pytest.raises(SdkError, match=f"staged module name '{name}' is reserved by Tau"):
        tau.load_staged_module(path, module_name=name)


def test_a_failed_staged_import_leaves_no_module_behind(tmp_path: Path) -> None:
    path = write(tmp_path, "job.py", "raise RuntimeError('x')\n")
    with pytest.raises(RuntimeError):
        tau.load_staged_module(path, module_name="_tau_test_failing")
    assert "_tau_test_failing" not in sys.modules


def test_an_unimportable_file_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "my-job.py", "X = 1\n")
    with pytest.raises(SdkError, match="importable Python module name"):
        tau.load_staged_module(path)
