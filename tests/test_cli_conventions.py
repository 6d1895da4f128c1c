"""CLI conventions: usage errors in the error:/hint: form, shell completion, NO_COLOR, flags."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau.cli import build_app
from tau.cli import main as tau_main
from tau.portal.cli import main as portal_main

Cap = pytest.CaptureFixture[str]


@pytest.mark.parametrize(
    ("argv", "error", "hint"),
    [
        # A required flag never typed: cyclopts said "parameter --config requires an argument".
        (
            ["run", "resume", "x"],
            "error: tau run resume x: --config is required",
            "pass --config PATH; see `tau run resume --help`",
        ),
        (
            ["run", "resume", "x", "--config"],
            "error: tau run resume x --config: --config needs a value",
            "see `tau run resume --help`",
        ),
        # A missing positional: cyclopts named it "--name".
        (["run", "logs"], "error: tau run logs: missing NAME", "see `tau run logs --help`"),
        # An extra word: cyclopts said "Unused Tokens: ['b']".
        (
            ["run", "validate", "a", "b"],
            'error: tau run validate a b: unexpected argument "b": `tau run validate` takes no '
            "more",
            "see `tau run validate --help`",
        ),
        (
            ["run", "list", "--limit", "5"],
            'error: tau run list --limit 5: unknown option "--limit"',
            "did you mean --history-limit? see `tau run list --help`",
        ),
        (
            ["serve", "nope"],
            'error: tau serve nope: unknown command "nope"',
            "commands: deploy, status, scale, delete; see `tau serve --help`",
        ),
        (
            ["run", "list", "--history-limit", "many"],
            "error: tau run list --history-limit many: invalid value for --history-limit: unable "
            'to convert "many" into int',
            "see `tau run list --help`",
        ),
        (
            ["--completion", "tcsh"],
            'error: tau --completion tcsh: invalid value "tcsh" for SHELL. Choose from: "bash", '
            '"zsh", "fish"',
            "see `tau --completion --help`",
        ),
    ],
)
def test_framework_usage_errors_name_what_was_typed(
    capsys: Cap, argv: list[str], error: str, hint: str
) -> None:
    assert tau_main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"{error}\n  hint: {hint}\n"


def test_tau_run_retry_with_a_run_name_says_retry_is_a_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Cap
) -> None:
    # cyclopts said "Unused Tokens"; the seed: anything but the ten subcommands is a target.
    monkeypatch.chdir(tmp_path)
    assert tau_main(["run", "retry", "my-run"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: tau run takes one TARGET, got 2: retry my-run\n")
    assert "`retry` is not a subcommand" in err


def test_the_portal_prints_its_usage_errors_the_same_way(capsys: Cap) -> None:
    assert portal_main(["experiment", "list", "--bogus"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (
        'error: taugrid-portal experiment list --bogus: unknown option "--bogus"\n'
        "  hint: see `taugrid-portal experiment list --help`\n"
    )


def _commands(app, chain: list[str]) -> Iterator[list[str]]:
    for name in app:
        if name.startswith("-"):
            continue
        yield [*chain, name]
        yield from _commands(app[name], [*chain, name])


def test_no_help_page_offers_a_double_negative() -> None:
    pages = 0
    for chain in _commands(build_app(), []):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            build_app()([*chain, "--help"])
        pages += 1
        assert "--no-no-" not in text.getvalue(), chain
        assert "--no-yes" not in text.getvalue(), chain
    assert pages > 40  # every command's page was read


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_bash_completion_completes_subcommands_and_flags(tmp_path: Path) -> None:
    script = tmp_path / "tau.bash"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    with script.open("w") as out:
        subprocess.run([sys.executable, "-m", "tau", "--completion", "bash"], stdout=out,
                       check=True, env=env)  # fmt: skip

    def complete(*words: str) -> list[str]:
        probe = (
            f"source {script}; COMP_WORDS=({' '.join(words)}); "
            f"COMP_CWORD={len(words) - 1}; _tau; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        )
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert complete("tau", "ru") == ["run"]
    assert complete("tau", "run", "st") == ["status"]
    assert complete("tau", "run", "--ren") == ["--render"]
    assert complete("tau", "cluster", "uninstall", "--no-h") == ["--no-hooks"]


@pytest.mark.parametrize(("shell", "start"), [("zsh", "#compdef tau\n"), ("fish", "# Fish")])
def test_zsh_and_fish_completion_scripts(capsys: Cap, shell: str, start: str) -> None:
    assert tau_main(["--completion", shell]) == 0
    out = capsys.readouterr().out
    assert out.startswith(start) and "explain-config" in out and "--render" in out


def _help(extra_env: dict[str, str]) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env |= {"PYTHONPATH": os.pathsep.join(sys.path), **extra_env}
    done = subprocess.run([sys.executable, "-m", "tau", "run", "--help"], capture_output=True,
                          text=True, env=env, check=True)  # fmt: skip
    return done.stdout


def test_no_color_is_honoured() -> None:
    assert "\x1b[3" in _help({"FORCE_COLOR": "1"})  # colour is visible to this test
    assert "\x1b[3" not in _help({"FORCE_COLOR": "1", "NO_COLOR": "1"})


def test_the_stellar_tui_honours_no_color() -> None:
    from tau.portal.stellar.output import wants_color

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert wants_color(Terminal(), {}) and wants_color(Terminal(), {"NO_COLOR": ""})
    assert not wants_color(Terminal(), {"NO_COLOR": "1"})
    assert not wants_color(io.StringIO(), {})


def test_the_portal_prints_its_completion_too(capsys: Cap) -> None:
    assert portal_main(["--completion", "bash"]) == 0
    out = capsys.readouterr().out
    assert "taugrid-portal" in out and "autocapture" in out
