"""Streaming hashing and directory scans."""

from __future__ import annotations

import hashlib
import os

import pytest

from tau.registry import digest
from tau.registry.errors import RegistryError


def test_sha256_file_streams_multi_chunk_files(tmp_path):
    data = os.urandom(digest.CHUNK * 2 + 123)
    (tmp_path / "f").write_bytes(data)
    assert digest.sha256_file(tmp_path / "f") == (len(data), hashlib.sha256(data).hexdigest())


def test_empty_file_hashes(tmp_path):
    (tmp_path / "e").write_bytes(b"")
    assert digest.sha256_file(tmp_path / "e") == (0, hashlib.sha256(b"").hexdigest())


def test_scan_lists_nested_files_sorted_with_posix_paths(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.txt").write_bytes(b"z")
    (tmp_path / "a.txt").write_bytes(b"a")
    facts = digest.scan(tmp_path, workers=2)
    assert [f.path for f in facts] == ["a.txt", "b/z.txt"]
    assert facts[1].sha256 == hashlib.sha256(b"z").hexdigest() and facts[1].bytes == 1


def test_scan_refuses_symlinks(tmp_path):
    (tmp_path / "real").write_bytes(b"r")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(RegistryError, match="symlink"):
        digest.scan(tmp_path)


def test_scan_of_a_missing_dir_is_a_clear_error(tmp_path):
    with pytest.raises(RegistryError, match="is not a directory"):
        digest.scan(tmp_path / "nope")
