"""Render the examples and the golden corpus offline in this interpreter; print the outputs as JSON.

Run by tests/test_payload_bytes.py under each Python that `requires-python` admits, with
PYTHONPATH at this checkout's src and generated, so each version renders the same tree. The
code-sha annotation is pinned (as tests/test_golden.py pins it) so a golden's bytes compare
exactly.

Usage: python tests/render_matrix.py  (prints {"<key>": {"code", "out", "err"}} on stdout)
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN_CODE_SHA = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
#: The README's first renders: `tau run TARGET --dry-run=client` in examples/.
EXAMPLE_TARGETS = ("train", "finetune", "sft", "eval")


def cases() -> list[tuple[str, Path, list[str]]]:
    """(key, working directory, argv) of every render this module runs."""
    found = [
        (f"examples/{target}", ROOT / "examples", ["run", target, "--dry-run=client"])
        for target in EXAMPLE_TARGETS
    ]
    for config in sorted((ROOT / "golden").glob("*/tau.yaml")):
        case = config.parent
        extra = case / "args"
        args = shlex.split(extra.read_text()) if extra.exists() else []
        argv = ["run", *args, "--config", "tau.yaml", "--dry-run=client"]
        found.append((f"golden/{case.name}", case, argv))
    return found


def render_all() -> dict[str, dict[str, object]]:
    import tau.provenance
    from tau.cli import main

    tau.provenance.code_sha = lambda _directory: GOLDEN_CODE_SHA  # type: ignore[assignment]
    results: dict[str, dict[str, object]] = {}
    for key, directory, argv in cases():
        out, err = io.StringIO(), io.StringIO()
        os.chdir(directory)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        results[key] = {"code": code, "out": out.getvalue(), "err": err.getvalue()}
    return results


if __name__ == "__main__":
    os.environ.pop("TAU_TOPOLOGY_POLICY", None)
    json.dump(render_all(), sys.stdout, sort_keys=True)
