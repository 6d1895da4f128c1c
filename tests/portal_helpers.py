"""Helpers of the taugrid-portal tests: run the CLI in-process, write histories."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tau.portal.cli import main


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> object:
        return json.loads(self.out)


def portal(capsys: pytest.CaptureFixture[str], *args: str | Path) -> Result:
    """`taugrid-portal ARGS` in this process; exit code and captured output."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def write_history(path: Path, steps: int, *, start: int = 0, scale: float = 1.0) -> Path:
    """A metrics.history JSONL file with `loss` and `acc` for steps [start, start+steps)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(start, start + steps):
            row = {"_step": i, "_timestamp": 1760000000 + i, "loss": scale / (i + 1), "acc": i}
            fh.write(json.dumps(row) + "\n")
    return path
