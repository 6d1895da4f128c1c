"""pytest option --update-golden: rewrite golden outputs instead of comparing them."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite golden/ outputs from the current code (make golden)",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def assert_error_golden(code: int, out: str, err: str, path: Path, update: bool) -> None:
    """An invalid case: a non-zero exit, nothing on stdout, exit code and stderr as reviewed."""
    assert code != 0 and out == ""
    assert_golden(f"exit {code}\n{err}", path, update)
    assert "Traceback" not in err


def assert_golden(actual: str, path: Path, update: bool) -> None:
    """Compare `actual` with the golden file, or rewrite it under --update-golden."""
    if update:
        path.write_text(actual)
        return
    expected = path.read_text() if path.exists() else ""
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                actual.splitlines(keepends=True),
                f"{path} (golden)",
                f"{path} (actual)",
            )
        )
        pytest.fail(
            f"{diff}\ngolden out of date: run `make golden` and review the diff", pytrace=False
        )
