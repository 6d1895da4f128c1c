"""A render's bytes are a function of its inputs alone, whatever Python runs tau.

The RayJob payload is gzipped; `gzip.compress` wrote a different header byte on 3.13 than on
3.11, so payloads and digests changed with the interpreter. Each Python `requires-python`
admits renders the examples and the whole golden corpus here (tests/render_matrix.py), and
every byte must equal the golden and the other versions' output.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import zlib
from pathlib import Path

import pytest

from tau.render.payload import GZIP_HEADER, encode, gzip_bytes
from tests.python_matrix import admitted_minors, render_python

ROOT = Path(__file__).resolve().parents[1]


def test_gzip_member_has_the_fixed_header_and_decodes() -> None:
    data = b'{"version":2,"files":[]}' * 40
    raw = gzip_bytes(data)
    assert raw[:10] == GZIP_HEADER == bytes.fromhex("1f8b0800000000000203")
    assert gzip.decompress(raw) == data
    # The body is zlib's raw deflate at level 9; the trailer its CRC-32 and length.
    assert raw[-8:] == zlib.crc32(data).to_bytes(4, "little") + len(data).to_bytes(4, "little")


def test_payload_digest_is_the_sha256_of_the_fixed_bytes() -> None:
    _encoded, digest = encode({"train.py": b"print('hi')\n"})
    # Pinned: the digest `gzip.compress(..., mtime=0)` gave on 3.11 and 3.12, so renders
    # reviewed before the framing moved here keep their bytes; a change shows here first.
    assert digest == "2b53d981ca90d4fdedc326f3618ee4a9fc8c8b4db7890762a5c25320a4099ba5"


def test_requires_python_is_capped_at_the_proven_versions() -> None:
    # The matrix below renders on exactly the admitted minors; an uncapped spec would admit
    # versions nothing has rendered on (admitted_minors refuses a spec without a cap).
    assert admitted_minors() == [11, 12, 13]


def _render(minor: int) -> dict[str, dict[str, object]]:
    try:
        python = render_python(minor)
    except subprocess.CalledProcessError as error:  # no package index reachable
        if os.environ.get("CI"):
            raise
        pytest.skip(f"could not build the Python 3.{minor} render venv: {error}")
    if python is None:
        if os.environ.get("CI"):
            pytest.fail(f"requires-python admits 3.{minor} but no such interpreter is installed")
        pytest.skip(f"no Python 3.{minor} installed (pyenv install 3.{minor})")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TAU_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT / "generated")])
    proc = subprocess.run(
        [str(python), str(ROOT / "tests" / "render_matrix.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def renders() -> dict[int, dict[str, dict[str, object]]]:
    return {minor: _render(minor) for minor in admitted_minors()}


def test_every_admitted_python_renders_the_goldens_byte_for_byte(renders) -> None:
    for minor, results in renders.items():
        for key, result in results.items():
            assert result["code"] == 0, f"3.{minor} {key}: {result['err']}"
            if key.startswith("golden/"):
                golden = ROOT / key / "rendered.yaml"
                assert result["out"] == golden.read_text(), f"3.{minor} {key} differs from golden"


def test_every_admitted_python_renders_the_examples_identically(renders) -> None:
    minors = sorted(renders)
    first = renders[minors[0]]
    assert {k for k in first if k.startswith("examples/")} == {
        "examples/train",
        "examples/finetune",
        "examples/sft",
        "examples/eval",
    }
    payloads = [k for k, r in first.items() if "TAU_PAYLOAD_DIGEST" in str(r["out"])]
    assert "examples/train" in payloads and "examples/sft" in payloads
    for minor in minors[1:]:
        for key, result in renders[minor].items():
            assert result == first[key], f"{key}: 3.{minor} differs from 3.{minors[0]}"
