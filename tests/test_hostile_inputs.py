"""Hostile inputs to `taugrid-portal` end in one located line and exit 1, never a crash.

Each case once crashed or misled (issue 25): a history line nested 20,000 deep segfaulted
pyarrow's JSON reader, ~1,100 deep raised RecursionError from the line-by-line parser; a Host
header with a Unicode-digit or 5,000-digit port was a 500 with a logged traceback; a row
without `_step` was imported silently; a glob into an unreadable folder said "no files match".
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tau.portal.capture import jsonl_limits
from tau.portal.capture.jsonl_limits import MAX_DEPTH, MAX_LINE_BYTES, check_lines, depth
from tau.portal.errors import UsageError
from tau.portal.web.app import create_app
from tau.portal.web.security import HostGuard, host_problem, split_host
from tau.portal.web.stellar_routes import Stellar
from tests.portal_helpers import portal
from tests.portal_web_support import Served, demo_source, serve_app

ROOT = Path(__file__).resolve().parents[1]


def nested(levels: int) -> str:
    """A history row whose `x` value brings the line to `levels` levels (the row is level 1)."""
    inner = levels - 1
    return '{"_step": 0, "loss": 1.0, "x": ' + "[" * inner + "]" * inner + "}"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the store and its bytes (the writer lock file aside)."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".tau-exp.lock"
    }


@pytest.fixture
def store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", root).code == 0
    return root


def import_jsonl(capsys: pytest.CaptureFixture[str], store: Path, *history: Path | str):
    args: list[str | Path] = ["experiment", "import", "jsonl", "--store", store, "--run", "r1"]
    for h in history:
        args += ["--history", h]
    return portal(capsys, *args)


# -- nesting depth and line size, before any parser ------------------------------------


def test_a_line_nested_20000_deep_is_a_located_error_not_a_segfault(
    store: Path, tmp_path: Path
) -> None:
    # In a child process: a regression would segfault, which must fail this test, not pytest.
    history = tmp_path / "deep.jsonl"
    history.write_text(nested(20_001) + "\n")
    before = snapshot(store)
    done = subprocess.run(
        [
            *(sys.executable, "-m", "tau.portal.cli", "experiment", "import", "jsonl"),
            *("--store", str(store), "--run", "r1", "--history", str(history)),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.startswith(
        f"error: {history}:1: nested 20001 levels deep; the limit is {MAX_DEPTH}\n"
    ), done.stderr
    assert "hint: a metrics.history row is one flat JSON object" in done.stderr
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("text", "line"),
    [
        # Fast-path shape: one object per line.
        ('{"_step": 0, "loss": 1}\n' + nested(1_101) + "\n", 2),
        # Line-by-line shape (a form feed, blank only to that parser, sends the file there)
        # after blank lines.
        ('{"_step": 0, "loss": 1}\n\x0c\n\n' + nested(1_101) + "\n", 4),
        # CRLF line ends (the trimmed-lines path), and a deep object rather than a list.
        (
            '{"_step": 0, "loss": 1}\r\n{"_step": 1, "x": '
            + '{"a": ' * 1_100
            + "1"
            + "}" * 1_101
            + "\r\n",
            2,
        ),
        # Unclosed: the parsers recurse before they find the line is cut short.
        ('{"_step": 0, "loss": 1}\n{"x": ' + "[" * 5_000 + "\n", 2),
    ],
    ids=["fast", "line-by-line", "crlf-objects", "unclosed"],
)
def test_deep_lines_are_refused_with_their_line_and_the_store_is_untouched(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int
) -> None:
    good = tmp_path / "a-good.jsonl"
    good.write_text('{"_step": 0, "loss": 1}\n')
    bad = tmp_path / "b-bad.jsonl"
    bad.write_text(text)
    before = snapshot(store)
    result = import_jsonl(capsys, store, good, bad)
    assert result.code == 1, result.err
    assert result.err.startswith(f"error: {bad}:{line}: nested "), result.err
    assert f"levels deep; the limit is {MAX_DEPTH}" in result.err
    assert "Traceback" not in result.err and "RecursionError" not in result.err
    assert snapshot(store) == before


def test_a_line_over_the_size_limit_is_refused_before_parsing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "big.jsonl"
    filler = "x" * MAX_LINE_BYTES
    history.write_text('{"_step": 0, "loss": 1}\n{"_step": 1, "note": "' + filler + '"}\n')
    before = snapshot(store)
    result = import_jsonl(capsys, store, history)
    assert result.code == 1
    size = len(filler) + len('{"_step": 1, "note": ""}')
    assert result.err.startswith(
        f"error: {history}:2: line is {size} bytes; the limit is {MAX_LINE_BYTES} bytes (16 MiB)"
    ), result.err[:300]
    assert "hint: a metrics.history row holds scalar metrics" in result.err
    assert snapshot(store) == before


def test_rows_at_the_limits_and_brackets_inside_strings_are_imported(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "ok.jsonl"
    rows = [
        nested(MAX_DEPTH),
        '{"_step": 1, "loss": 2, "note": "' + "[{" * 5_000 + '"}',
        '{"_step": 2, "loss": 3, "quoted": "\\"[[[[", "x": [[1]]}',
    ]
    history.write_text("\n".join(rows) + "\n")
    result = import_jsonl(capsys, store, history)
    assert result.code == 0, result.err
    assert "imported  r1   3" in result.out


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (b"", 0),
        (b'{"a": 1}', 1),
        (b'{"a": "[[[", "b": [1]}', 2),
        (b'{"a": "\\"[[[", "b": [[1]]}', 3),  # an escaped quote does not end the string
        (b'{"a": "x\\\\", "b": [1]}', 2),  # an escaped backslash does
        (b'{"a": "[[[[', 1),  # brackets after an unterminated string are inside it
        (b"[[[", 3),
    ],
)
def test_depth_counts_brackets_outside_strings(line: bytes, want: int) -> None:
    assert depth(line) == want


def test_check_lines_names_the_first_offending_line_of_many(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = b'{"_step": 1, "x": [[1, 2], [3, 4]]}\n' * 3_000
    check_lines(rows, "f")  # many nested rows, none too deep
    with pytest.raises(UsageError, match=r"^f:3002: nested 101 levels deep"):
        check_lines(rows + b"\n" + b"{" * 101 + b"\n", "f")
    monkeypatch.setattr(jsonl_limits, "MAX_LINE_BYTES", 10)
    with pytest.raises(UsageError, match=r"^f:3: line is 11 bytes"):
        check_lines(b"0123456789\n\n0123456789a\n", "f")
    check_lines(b"0123456789\n0123456789", "f")  # the last line, without a newline, fits


def test_capture_run_profile_names_the_line_on_the_pvc_and_keeps_the_store(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `capture run-profile` imports through the same code: the deep line is refused with the
    # path the workload wrote, not the temporary copy.
    from tau.k8s import meta
    from tau.portal.capture.cluster import Scope
    from tau.portal.capture.history import pull_history
    from tau.portal.store.core import Store

    class Volume:
        def __init__(self) -> None:
            self.files = {
                "metrics.jsonl": ('{"_step": 0, "loss": 1}\n' + nested(1_101) + "\n").encode()
            }

        def list(self, path: str) -> list[str]:
            return sorted(self.files)

        def read(self, path: str) -> bytes:
            return self.files[path.rsplit("/", 1)[-1]]

    job = {
        "metadata": {
            "namespace": "ns",
            "name": "train",
            "annotations": {
                meta.ANNOTATION_RESULT_PATH: "/data/results/train",
                meta.ANNOTATION_RESULT_PVC: "results",
            },
        }
    }
    before = snapshot(store)
    opened = Store.open(store)
    scope = Scope(project="demo", experiment="", group="default", owner="o", cluster="c")
    with pytest.raises(UsageError) as caught:
        pull_history(opened, None, job, "train", scope, backend=Volume())
    assert caught.value.message == (
        f"/data/results/train/metrics.jsonl:2: nested 1101 levels deep; the limit is {MAX_DEPTH}"
    )
    opened.close()
    assert snapshot(store) == before


# -- rows without a step -----------------------------------------------------------------


def test_rows_without_a_step_are_imported_with_a_counted_warning(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The metric row's step is optional (contract §3.4) and the reference keeps such rows, so
    # this is a warning that counts them and names the first, not an error.
    history = tmp_path / "h.jsonl"
    history.write_text(
        '{"_step": 0, "loss": 1.0}\n{"loss": 2.0}\n{"_timestamp": 1760000000, "note": "x"}\n'
        '{"loss": 3.0, "acc": 0.5}\n'
    )
    result = import_jsonl(capsys, store, history)
    assert result.code == 0, result.err
    assert result.err == (
        f"warning: {history}:2: 2 of 4 rows have no _step; their metrics are kept without a "
        "step (add _step to every row, or name the step's field with --step-field)\n"
    )
    as_json = portal(
        capsys,
        "experiment",
        "import",
        "jsonl",
        "--store",
        store,
        "--run",
        "r2",
        "--history",
        history,
        "--dry-run",
        "-o",
        "json",
    )
    assert as_json.code == 0 and as_json.err == ""
    body = json.loads(as_json.out)
    assert body["action"] == "planned" and len(body["warnings"]) == 1
    assert "2 of 4 rows have no _step" in body["warnings"][0]


def test_a_history_where_every_row_has_its_step_says_nothing(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text('{"_step": 0, "loss": 1.0}\n{"_timestamp": 5, "note": "no metric"}\n')
    result = import_jsonl(capsys, store, history)
    assert result.code == 0 and result.err == ""


# -- unreadable folders ------------------------------------------------------------------


@pytest.fixture
def locked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of histories this user may not list (simulated: the tests may run as root)."""
    folder = tmp_path / "runs" / "locked"
    folder.mkdir(parents=True)
    (folder / "h.jsonl").write_text('{"_step": 0, "loss": 1}\n')
    (tmp_path / "runs" / "open").mkdir()
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if Path(os.fsdecode(path)).resolve() == folder.resolve():  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    return folder


@pytest.mark.parametrize("pattern", ["locked/*.jsonl", "*/*.jsonl", "**/*.jsonl"])
def test_a_glob_into_an_unreadable_folder_names_the_permission_problem(
    store: Path, locked: Path, capsys: pytest.CaptureFixture[str], pattern: str
) -> None:
    given = str(locked.parent / pattern)
    result = import_jsonl(capsys, store, given)
    assert result.code == 1
    assert result.err == (
        f"error: --history '{given}': cannot read folder {locked}: permission denied\n"
        "  hint: make the folder readable by this user (chmod/chown), or copy the histories "
        "somewhere readable and pass that glob\n"
    )


def test_a_glob_that_matches_nothing_in_readable_folders_still_says_so(
    store: Path, locked: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = str(locked.parent / "open" / "*.jsonl")
    result = import_jsonl(capsys, store, given)
    assert result.code == 1
    assert result.err == f"error: --history '{given}': no files match\n"


def test_an_unreadable_history_file_is_named_with_the_fix(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text('{"_step": 0, "loss": 1}\n')
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == history:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = import_jsonl(capsys, store, history)
    assert result.code == 1
    assert result.err.startswith(f"error: --history {history}: permission denied reading the file")


# -- the Host header ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "parsed"),
    [
        ("127.0.0.1", ("127.0.0.1", None)),
        ("LocalHost.:8080", ("localhost", 8080)),
        ("[::1]:65535", ("::1", 65535)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
    ],
)
def test_split_host_reads_well_formed_headers(header: str, parsed: tuple) -> None:
    assert split_host(header) == parsed


@pytest.mark.parametrize(
    "header",
    [
        "127.0.0.1:\u00b2",
        "127.0.0.1:\u0663",
        "127.0.0.1:" + "9" * 5_000,
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "127.0.0.1: 80",
        "[::1]:x",
    ],
)
def test_a_malformed_port_is_a_400_reason_not_an_exception(header: str) -> None:
    problem = host_problem(HostGuard(["127.0.0.1", "::1"], 8080), header)
    assert problem is not None and problem.startswith('Host header "')
    assert "is malformed: its port is not a number from 0 to 65535" in problem
    assert len(problem) < 300  # a 5,000-digit header is not echoed whole


def raw_get(port: int, host: bytes) -> tuple[int, dict]:
    """GET /healthz with exactly these Host bytes (urllib would not send them all)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


@pytest.fixture(params=["experiment serve", "portal serve"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """Both servers' apps: Stellar alone (`experiment serve`) and the portal (`portal serve`)."""
    (tmp_path / "store").mkdir()
    stellar = Stellar(demo_source(tmp_path / "store"))
    if request.param == "experiment serve":
        build = lambda guard: create_app(guard=guard, stellar=stellar)  # noqa: E731
    else:
        build = lambda guard: create_app(guard=guard, stellar=stellar, portal=object())  # noqa: E731
    with serve_app(build) as s:
        yield s


@pytest.mark.parametrize(
    "host", [b"127.0.0.1:\xb2", b"127.0.0.1:" + b"9" * 5_000, b"localhost:99999"]
)
def test_both_servers_answer_a_malformed_host_with_400(served: Served, host: bytes) -> None:
    status, body = raw_get(served.port, host)
    assert status == 400 and body["code"] == "INVALID_ARGUMENT", body
    assert "is malformed" in body["detail"]
    # ... and keep serving the right name.
    assert raw_get(served.port, f"127.0.0.1:{served.port}".encode())[0] == 200
