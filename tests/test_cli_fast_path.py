"""The hand-parsed hot path (tau.cli.fast) answers exactly as the full cyclopts app would.

Every command line below runs twice in this process: through the full app, as `tau` ran it
before the hot path existed, and through `tau.cli.main`, which takes the hot path when
`fast.parse` understands the line. Stdout, stderr and the exit code must be byte-identical,
for renders and for errors alike; each line also states which path main must take.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tau import cli
from tau.cli import fast
from tau.cli.verbs import SUBCOMMANDS
from tau.errors import run_command

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "golden"
GOLDEN_CASES = sorted(
    p.parent for p in [*GOLDEN.glob("*/tau.yaml"), *(GOLDEN / "invalid").glob("*/tau.yaml")]
)

Cap = pytest.CaptureFixture[str]
Outcome = tuple[int, str, str]


def full_app(argv: list[str], capsys: Cap) -> Outcome:
    """`tau ARGV` through the cyclopts app only, as tau.cli.main ran every line before."""
    cli._INVOCATION[:] = argv
    code = run_command(lambda: cli.build_app()(argv))
    out, err = capsys.readouterr()
    return code, out, err


def main(argv: list[str], capsys: Cap) -> Outcome:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def both(argv: list[str], capsys: Cap, *, fast_path: bool) -> Outcome:
    """Run `argv` both ways, check they agree and that main takes the expected path."""
    assert (fast.parse(argv) is not None) == fast_path, argv
    expected = full_app(argv, capsys)
    assert main(argv, capsys) == expected, argv
    return expected


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    """No topology policy from the environment, and one code-sha for both runs of a line."""
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    monkeypatch.setattr("tau.provenance.code_sha", lambda _directory: "c0de" * 10)


# ----------------------------------------------------------------- lines the hot path takes

EXAMPLE_LINES = [
    "run finetune --dry-run=client",
    "run train --dry-run client",
    "run train --dry-run=client -o json",
    "run eval --dry-run=client --output yaml",
    "run --dry-run=client --config tau/sft.yaml",
    "run --config=tau/finetune.yaml --dry-run=client --output=json",
    "run -c tau/train.yaml renamed --dry-run=client",
    "run finetune --dry-run=client --service-account trainer",
    "run finetune --service-account=trainer --dry-run=client",
    "run --dry-run client finetune",
    "run -o json --dry-run=client eval",
    "run finetune -c tau/train.yaml --dry-run=client --output json",
    "run --dry-run=client --config tau/manifests/sft.yaml",
    # Errors: each one is the full app's message and exit code.
    "run missing --dry-run=client",
    "run Not_A_Name --dry-run=client",
    "run tau/train.yaml --dry-run=client",
    "run --dry-run=client --config nowhere.yaml",
    "run finetune --dry-run=client --project vision",
    "run --dry-run=client",
]


@pytest.mark.parametrize("line", EXAMPLE_LINES)
def test_the_hot_path_prints_what_the_full_app_prints_for_the_examples(
    line: str, capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    monkeypatch.chdir(EXAMPLES)
    both(shlex.split(line), capsys, fast_path=True)


def test_the_example_renders_really_render(
    capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    """The matrix above compares renders, not only errors."""
    monkeypatch.chdir(EXAMPLES)
    code, out, _ = both(["run", "finetune", "--dry-run=client"], capsys, fast_path=True)
    assert code == 0
    assert "kind: Job" in out
    assert "tau.azure.com/code-sha: " + "c0de" * 10 in out


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=[c.name for c in GOLDEN_CASES])
def test_the_hot_path_agrees_with_the_full_app_on_every_golden_case(
    case: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    """The corpus's valid and invalid configs: warnings, renders and located errors."""
    monkeypatch.chdir(case)
    extra = case / "args"
    args = shlex.split(extra.read_text()) if extra.exists() else []
    argv = ["run", *args, "--config", "tau.yaml", "--dry-run=client"]
    takes = fast.parse(argv) is not None
    both(argv, capsys, fast_path=takes)
    assert takes or any(a.startswith("--key-vault") for a in args), args


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


CONFIG = "name: {name}\nengine: job\nentrypoint: train.py\ncompute:\n  gpus: 0\n"


@pytest.mark.parametrize(
    ("files", "line"),
    [
        # A config that fails validation: every problem, located.
        (
            {"tau/bad.yaml": "name: bad\nengine: job\nentrypoint: train.py\ncompute:\n  gpu: 1\n"},
            "run bad --dry-run=client",
        ),
        # Not YAML at all.
        ({"tau/broken.yaml": "name: [unclosed\n"}, "run broken --dry-run=client"),
        # The entrypoint the config names does not exist.
        ({"tau/train.yaml": CONFIG.format(name="train")}, "run train --dry-run=client"),
        # Both extensions of one target.
        (
            {"tau/two.yaml": CONFIG.format(name="two"), "tau/two.yml": CONFIG.format(name="two")},
            "run two --dry-run=client",
        ),
        # The default file, with its entrypoint: renders.
        (
            {"tau.yaml": CONFIG.format(name="deflt"), "train.py": "print(1)\n"},
            "run --dry-run=client",
        ),
        # A deprecated alias: a warning on stderr, then the render.
        (
            {
                "tau/old.yaml": "name: old\nengine: ray\nentrypoint: train.py\n",
                "tau/train.py": "print(1)\n",
            },
            "run old --dry-run=client -o json",
        ),
        # A directory where the config should be.
        ({"tau/dir.yaml/keep": ""}, "run --config tau/dir.yaml --dry-run=client"),
    ],
    ids=[
        "invalid",
        "not-yaml",
        "no-entrypoint",
        "two-extensions",
        "default-file",
        "warning",
        "dir",
    ],
)
def test_the_hot_path_agrees_on_bad_input_and_defaults(
    files: dict[str, str],
    line: str,
    tmp_path: Path,
    capsys: Cap,
    monkeypatch: pytest.MonkeyPatch,
    pinned: None,
) -> None:
    for name, text in files.items():
        write(tmp_path / name, text)
    monkeypatch.chdir(tmp_path)
    both(shlex.split(line), capsys, fast_path=True)


def test_the_hot_path_agrees_in_a_monorepo(
    tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    from tests.projects_helpers import monorepo

    root = monorepo(tmp_path / "repo")
    monkeypatch.chdir(root)
    for line in (
        "run detect --dry-run=client",
        "run train --dry-run=client --project vision",
        "run train --dry-run=client",  # ambiguous: two projects have it
        "run train --dry-run=client --project nope",
    ):
        both(shlex.split(line), capsys, fast_path=True)


# --------------------------------------------------------------- lines the full app must read

FALLBACK_LINES = [
    "run finetune --dry-run=client -o table",  # bad -o value: the full app refuses it
    "run finetune --dry-run=client --bogus",  # unknown flag
    "run finetune --dry-run=client --help",
    "run --help",
    "run finetune --dry-run=client -n team",  # a flag outside the grammar
    "run finetune --dry-run=client --dry-run=client",  # repeated
    "run finetune train --dry-run=client",  # two positionals
    "run finetune --dry-run=client -ojson",  # glued short option
    "run finetune --dry-run=client --config",  # missing value
    "run finetune --dry-run=client --config=",  # empty value
    "run finetune --dry-run=client -- x",
    "run validate finetune",
    "run validate finetune --dry-run=client",
    "run finetune",  # a submit
    "run finetune --dry-run=bogus",
    "--help",
    "version",
]


@pytest.mark.parametrize("line", FALLBACK_LINES)
def test_lines_outside_the_grammar_go_to_the_full_app(
    line: str, capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    monkeypatch.chdir(EXAMPLES)
    argv = shlex.split(line)
    assert fast.parse(argv) is None
    if argv[:2] != ["run", "finetune"] or "--dry-run=client" in argv:  # never submit
        both(argv, capsys, fast_path=False)


@pytest.mark.parametrize("verb", SUBCOMMANDS)
@pytest.mark.parametrize(
    "shape", ["run {verb} --dry-run=client", "run --dry-run=client {verb}", "run x -c {verb}"]
)
def test_a_subcommand_name_is_never_taken_for_a_target(verb: str, shape: str) -> None:
    """render and diff too, whichever of them the run app registers."""
    assert fast.parse(shlex.split(shape.format(verb=verb) + " --dry-run=client")) is None


def test_the_dry_run_server_and_submit_paths_are_the_full_apps() -> None:
    for line in ("run x --dry-run=server", "run x --dry-run server", "run x", "run x -o json"):
        assert fast.parse(shlex.split(line)) is None, line


def test_parse_reads_every_value_of_the_grammar() -> None:
    request = fast.parse(
        shlex.split(
            "run sweep --dry-run=client -c cfg/tau.yaml -o json --project vision "
            "--service-account runner"
        )
    )
    assert request == fast.Request(
        target="sweep",
        config=Path("cfg/tau.yaml"),
        output="json",
        project="vision",
        service_account="runner",
    )
    assert fast.parse(["run", "--dry-run=client"]) == fast.Request(None, None, "yaml", None, None)


# ------------------------------------------------------------- errors keep run_command's rules


def test_ctrl_c_on_the_hot_path_says_interrupted_and_exits_130(
    capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr("tau.pipeline.client_preview", interrupted)
    assert main(["run", "finetune", "--dry-run=client"], capsys) == (
        130,
        "",
        "error: interrupted\n",
    )


def test_a_config_that_cannot_be_read_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    (tmp_path / "tau").mkdir()
    (tmp_path / "tau" / "binary.yaml").write_bytes(b"name: x\xff\n")
    monkeypatch.chdir(tmp_path)
    code, out, err = both(["run", "binary", "--dry-run=client"], capsys, fast_path=True)
    assert (code, out) == (1, "")
    assert err.startswith("tau/binary.yaml: error: cannot read config") and err.count("\n") == 1


def test_the_hot_path_records_the_command_line_it_ran(
    capsys: Cap, monkeypatch: pytest.MonkeyPatch, pinned: None
) -> None:
    monkeypatch.chdir(EXAMPLES)
    code, out, _ = main(["run", "finetune", "--dry-run=client", "-o", "json"], capsys)
    assert code == 0
    assert '"tau run finetune --dry-run=client -o json"' in out
    assert cli.invocation() == ["run", "finetune", "--dry-run=client", "-o", "json"]
