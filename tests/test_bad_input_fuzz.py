"""Bad input never crashes tau: every hostile or mangled config ends in exit 1 and located text.

A fixed corpus of inputs that once raised (self-referencing aliases, deep nesting, alias
bombs, over-long paths, an oversize RayJob payload) plus a bounded, derandomized fuzz that
mangles real configs, all through `tau.cli.main` as a user would run them. The same for
`taugrid-portal`: hostile and mangled metrics.history files through its `main`, and any Host
header through the servers' guard.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau.cli import main

ROOT = Path(__file__).resolve().parents[1]
JOB = "name: demo\nengine: job\nentrypoint: train.py\ncompute:\n  gpus: 0\n"
RAY = "name: demo\nengine: rayjob\nentrypoint: train.py\n"
BOMB = "".join(
    f"{a}: &{a} [{', '.join([f'*{b}'] * 10)}]\n"
    for b, a in zip("abcdefgh", "bcdefghi", strict=True)
)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().err


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("print('train')\n")
    return tmp_path


HOSTILE = {
    "self-alias": (JOB + "x: &a [*a]\n", "self-referencing alias"),
    "self-merge": (JOB + "runtime: &r\n  <<: *r\n", "merges a mapping into itself"),
    "deep-list": (
        JOB + "run:\n  working_dir_excludes: " + "[" * 5000 + "]" * 5000 + "\n",
        "deeper",
    ),
    "deep-map": (JOB + "runtime:\n  env: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", "deeper"),
    "alias-bomb": (JOB + "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + BOMB, "expands to more"),
    "long-working-dir": (RAY + "run:\n  working_dir: " + "w" * 300 + "\n", "run.working_dir"),
    "long-entrypoint": (RAY.replace("train.py", "e" * 300 + ".py"), "entrypoint"),
    "python-tag": (JOB + "image: !!python/object:os.system echo\n", "invalid YAML"),
    "nul-byte": (JOB + "image: a\x00b\n", "invalid YAML"),
    "huge-int": (JOB.replace("gpus: 0", "gpus: " + "9" * 5000), "compute.gpus"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_config_is_a_located_error_at_every_stage(
    repo: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, expected = HOSTILE[case]
    (repo / "tau.yaml").write_text(text)
    for argv in (("run", "validate"), ("run", "demo", "--config", "tau.yaml", "--dry-run=client")):
        code, err = _run(capsys, *argv)
        if code == 0:  # validate passes; the client stage must then catch it
            assert argv[1] == "validate", err
            continue
        assert code == 1, err
        assert expected in err, err
        assert "Traceback" not in err
        assert err.startswith(("tau.yaml:", "error:")), err


def test_an_oversize_rayjob_payload_is_a_diagnostic_at_the_entrypoint(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Incompressible bytes well over the 64 KiB env-var payload.
    noise = b"".join(hashlib.sha256(str(i).encode()).digest() for i in range(4000))
    (repo / "train.py").write_text("DATA = " + repr(noise) + "\n")
    (repo / "tau.yaml").write_text(RAY.replace("entrypoint:", "script:"))
    code, err = _run(capsys, "run", "demo", "--config", "tau.yaml", "--dry-run=client")
    assert code == 1
    assert err.startswith('tau.yaml:3:9: error: script "train.py": the RayJob script payload'), err
    assert "at most 65536" in err and "hint: ship the project with run.working_dir" in err


SEEDS = [
    p.read_text()
    for p in [
        *sorted((ROOT / "golden").glob("*/tau.yaml")),
        *sorted(ROOT.glob("examples/tau/*.yaml")),
    ]
    if "connection" not in p.name
][:12]
NOISE = [
    "[",
    "]",
    "{",
    "}",
    ":",
    "&a",
    "*a",
    "!",
    "|",
    ">",
    "'",
    '"',
    "\t",
    "- ",
    "\n  ",
    "<<: ",
    "é",
    "\x85",
]


@st.composite
def mangled(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "truncate", "repeat"]))
        if op == "insert":
            text = text[:at] + draw(st.sampled_from(NOISE)) + text[at:]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
        elif op == "truncate":
            text = text[:at]
        else:
            line_start = text.rfind("\n", 0, at) + 1
            line = text[line_start : text.find("\n", at) + 1 or len(text)]
            text = text[:line_start] + line + text[line_start:]
    return text


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=mangled())
def test_mangled_configs_exit_0_or_1_and_never_raise(
    repo: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    (repo / "tau.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    code, err = _run(capsys, "run", "validate")
    assert code in (0, 1), err
    if code == 0:
        code, err = _run(capsys, "run", "x", "--config", "tau.yaml", "--dry-run=client")
        # 2: a feature refused as not built (e.g. staged publishing) is not a crash.
        assert code in (0, 1, 2), err
    assert "Traceback" not in err


# -- taugrid-portal: metrics.history lines and Host headers (issue 25) -----------------------

DEEP = 1_100  # past the line-by-line parser's recursion limit
HOSTILE_HISTORIES = {
    "deep-list": ('{"_step": 0, "x": ' + "[" * DEEP + "]" * DEEP + "}\n", ":1: nested"),
    "deep-object": (
        '{"_step": 0, "x": ' + '{"a": ' * DEEP + "1" + "}" * (DEEP + 1) + "\n",
        ":1: nested",
    ),
    "deep-unclosed": ('{"_step": 0, "loss": 1}\n{"x": ' + "[" * 30_000 + "\n", ":2: nested"),
    "deep-after-blank": ('{"_step": 0, "loss": 1}\n\n' + "[" * 20_001 + "\n", ":3: nested"),
    "long-line": ('{"_step": 0, "s": "' + "x" * (16 << 20) + '"}\n', ":1: line is"),
    "not-an-object": ('{"_step": 0, "loss": 1}\n[1, 2]\n', ":2: expected a JSON object"),
    "bad-utf8": ('{"_step": 0, "loss": 1}\n{"s": "\udcff"}\n', ":2: not valid UTF-8"),
    "cut-short": ('{"_step": 0, "loss": 1}\n{"_step": 1, "loss"\n', ":2: malformed JSON"),
}


def _portal(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from tau.portal.cli import main as portal_main

    code = portal_main(list(argv))
    return code, capsys.readouterr().err


@pytest.fixture
def exp_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert _portal(capsys, "experiment", "init", "demo", "--store", str(root))[0] == 0
    return root


def _files(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", sorted(HOSTILE_HISTORIES))
def test_hostile_history_is_a_located_error_and_the_store_is_untouched(
    exp_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    text, expected = HOSTILE_HISTORIES[case]
    history = tmp_path / f"{case}.jsonl"
    history.write_text(text, encoding="utf-8", errors="surrogateescape")
    before = _files(exp_store)
    code, err = _portal(
        capsys,
        "experiment",
        "import",
        "jsonl",
        "--store",
        str(exp_store),
        "--run",
        "r1",
        "--history",
        str(history),
    )
    assert code == 1, err[:500]
    assert err.startswith(f"error: {history}{expected}"), err[:500]
    assert "Traceback" not in err
    assert _files(exp_store) == before


HISTORY_NOISE = [
    "[",
    "]",
    "{",
    "}",
    '"',
    "\\",
    ",",
    ":",
    "\n",
    "\r\n",
    " ",
    "NaN",
    "1e999",
    "[" * 2_000,
    "{" * 2_000,
    '"_step": -1',
    '"_step": null',
    "\x00",
    "é",
]
HISTORY_SEED = "".join(
    f'{{"_step": {i}, "_timestamp": {1760000000 + i}, "loss": {1 / (i + 1)}, "tag": "t{i}"}}\n'
    for i in range(6)
)


@st.composite
def mangled_history(draw: st.DrawFn) -> str:
    text = HISTORY_SEED
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(st.sampled_from(HISTORY_NOISE)) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 12)) :]
    return text


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=mangled_history())
def test_mangled_histories_exit_0_or_1_and_never_raise(
    exp_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text(text, encoding="utf-8")
    code, err = _portal(
        capsys,
        "experiment",
        "import",
        "jsonl",
        "--store",
        str(exp_store),
        "--run",
        "r1",
        "--history",
        str(history),
        "--dry-run",
    )
    assert code in (0, 1), err
    assert "Traceback" not in err
    if code == 1:
        assert err.startswith((f"error: {history}:", "error: JSONL history files")), err


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    host=st.one_of(
        st.text(max_size=40),
        st.builds(lambda p: f"127.0.0.1:{p}", st.text(alphabet=st.characters(), max_size=8)),
        st.builds(lambda n: f"localhost:{'9' * n}", st.integers(0, 6_000)),
    )
)
def test_any_host_header_is_served_or_a_400_reason(host: str) -> None:
    from tau.portal.web.security import HostGuard, host_problem

    problem = host_problem(HostGuard(["127.0.0.1", "localhost", "::1"], 8080), host)
    assert problem is None or problem.startswith('Host header "')
