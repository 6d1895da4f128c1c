"""examples/ci/tau-review.yaml: a GitHub Actions workflow that gates and comments on a PR.

Its shape only: the YAML parses, it runs on pull requests, and its steps run the render check
and post the markdown diff against origin/main. Nothing here runs the workflow or calls out.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "ci" / "tau-review.yaml"


def workflow() -> dict[Any, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    return doc


def commands() -> list[list[str]]:
    """Every `tau ...` command line of the workflow's run steps, split as a shell would."""
    steps = [s for job in workflow()["jobs"].values() for s in job["steps"]]
    lines = [line.strip() for s in steps for line in str(s.get("run", "")).splitlines()]
    return [shlex.split(line.split(">")[0]) for line in lines if line.startswith("tau ")]


def test_the_workflow_runs_on_pull_requests_with_the_history_the_diff_needs() -> None:
    doc = workflow()
    assert "pull_request" in doc[True]  # YAML 1.1 reads the key `on` as true
    [job] = doc["jobs"].values()
    checkout = next(
        s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout")
    )
    assert checkout["with"]["fetch-depth"] == 0
    assert doc["permissions"]["pull-requests"] == "write"


def test_the_workflow_checks_the_renders_and_posts_the_markdown_diff() -> None:
    found = commands()
    assert ["tau", "run", "--render", "--all", "--check"] in found
    assert ["tau", "run", "--diff", "--all", "--against", "origin/main", "-o", "markdown"] in found
    text = WORKFLOW.read_text()
    assert "gh pr comment" in text and "--body-file tau-diff.md" in text


def test_the_commands_it_runs_are_real_tau_commands() -> None:
    for argv in commands():
        assert argv[1] == "run" and argv[2] in ("--render", "--diff"), argv
