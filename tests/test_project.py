"""The run.working_dir project archive: deterministic, bounded, excluding what is not code."""

from __future__ import annotations

import io
import os
import zipfile

import pytest

from tau.intent.project import MAX_ARCHIVE_BYTES, ProjectError, archive, module_of


def _tree(root):
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "main.py").write_text("print('hi')\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "pkg" / "__pycache__").mkdir()
    (root / "pkg" / "__pycache__" / "main.cpython-311.pyc").write_bytes(b"\0")
    (root / "weights.ckpt").write_bytes(b"x" * 100)


def test_the_same_tree_gives_the_same_bytes_whatever_the_mtimes(tmp_path):
    _tree(tmp_path)
    first = archive(tmp_path)
    os.utime(tmp_path / "pkg" / "main.py", (1, 1))
    assert archive(tmp_path) == first


def test_vcs_caches_and_excluded_globs_are_left_out(tmp_path):
    _tree(tmp_path)
    names = zipfile.ZipFile(io.BytesIO(archive(tmp_path, ("*.ckpt",)))).namelist()
    assert names == ["pkg/__init__.py", "pkg/main.py"]


def test_an_archive_over_the_payload_limit_is_refused_with_the_fix(tmp_path):
    (tmp_path / "data.bin").write_bytes(os.urandom(MAX_ARCHIVE_BYTES + 1))
    with pytest.raises(ProjectError, match=r"run\.working_dir_excludes"):
        archive(tmp_path)


def test_the_entrypoint_module_is_its_path_inside_the_project(tmp_path):
    _tree(tmp_path)
    assert module_of(tmp_path / "pkg" / "main.py", tmp_path) == "pkg.main"
    assert module_of(tmp_path.parent / "elsewhere.py", tmp_path) is None
