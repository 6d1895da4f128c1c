"""The status view laid out without rich (tau.status.plain) is rich's colourless output, byte for
byte, wherever it lays anything out; elsewhere it steps aside (None) and rich prints.
"""

from __future__ import annotations

import io
import shlex
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from tau.cli import main
from tau.status import plain, text
from tau.status.model import RunStatus
from tests.test_status_interpret import CASES, run

NAMES = [c[0] for c in CASES]
WIDTHS = [20, 23, 31, 40, 57, 64, 79, 80, 81, 100, 133, 200]


def rich_output(status: RunStatus, width: int, *, run_profile: bool = False) -> str:
    """What `tau run status` printed through rich to a colourless console of `width`."""
    out = io.StringIO()
    console = Console(
        file=out, width=width, color_system=None, force_terminal=False, legacy_windows=False
    )
    text.render(status, console, run_profile=run_profile)
    return out.getvalue()


@pytest.mark.parametrize("case", NAMES)
@pytest.mark.parametrize("run_profile", [False, True])
def test_every_reviewed_case_matches_rich_at_every_width(case: str, run_profile: bool) -> None:
    status = run(case)
    for width in WIDTHS:
        shown = plain.render(status, width, run_profile=run_profile)
        assert shown == rich_output(status, width, run_profile=run_profile), (case, width)
    assert plain.render(status, 19) is None  # narrower consoles are left to rich


#: Content this layout lays out (spaces, long words, the em dash, newlines), and content it
#: must leave to rich (brackets, colons, wide and accented characters, tabs).
_WORDS = st.one_of(
    st.text(alphabet=st.sampled_from("abcdefghij  XYZ-_./—\n"), max_size=120),
    st.text(alphabet=st.sampled_from("abcdefghij XYZ-_./—\n[]:é中\t"), max_size=90),
)


@settings(max_examples=300, deadline=None)
@given(
    case=st.sampled_from(NAMES),
    width=st.integers(min_value=1, max_value=160),
    detail=_WORDS,
    hint=_WORDS,
    message=_WORDS,
    reason=_WORDS,
    name=st.text(alphabet="abc-xyz0123456789", min_size=1, max_size=90),
)
def test_any_content_is_rich_output_or_left_to_rich(
    case: str, width: int, detail: str, hint: str, message: str, reason: str, name: str
) -> None:
    status = run(case)
    phases = tuple(replace(p, detail=detail, hint=hint or p.hint) for p in status.phases)
    diagnostics = tuple(replace(d, message=message) for d in status.diagnostics)
    workloads = tuple(replace(w, reason=reason, name=name) for w in status.workloads)
    pods = tuple(replace(p, name=name) for p in status.pods)
    changed = replace(
        status, phases=phases, diagnostics=diagnostics, workloads=workloads, pods=pods
    )
    shown = plain.render(changed, width)
    if shown is not None:
        assert shown == rich_output(changed, width)


class _Stream(io.StringIO):
    def __init__(self, tty: bool, encoding: str = "utf-8") -> None:
        super().__init__()
        self._tty = tty
        self._encoding = encoding

    def isatty(self) -> bool:
        return self._tty

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._encoding


@pytest.mark.parametrize(
    ("tty", "env", "encoding", "width"),
    [
        (False, {"COLUMNS": "97"}, "utf-8", 97),
        (False, {"COLUMNS": "97", "NO_COLOR": "1"}, "UTF-8", 97),
        (False, {"COLUMNS": "97", "FORCE_COLOR": ""}, "utf-8", 97),
        (True, {"COLUMNS": "97", "TTY_COMPATIBLE": "0"}, "utf-8", 97),
        (True, {"COLUMNS": "97"}, "utf-8", None),
        (False, {"COLUMNS": "97", "FORCE_COLOR": "1"}, "utf-8", None),
        (False, {"COLUMNS": "97", "TTY_COMPATIBLE": "1"}, "utf-8", None),
        (False, {"COLUMNS": "97"}, "ascii", None),
        (False, {"COLUMNS": "12"}, "utf-8", None),
    ],
)
def test_the_width_is_richs_and_only_for_a_colourless_console(
    tty: bool, env: dict[str, str], encoding: str, width: int | None
) -> None:
    assert plain.colourless_width(_Stream(tty, encoding), env) == width


def test_without_columns_the_terminal_or_80_decides(monkeypatch) -> None:
    def no_terminal(_fd: int) -> None:
        raise OSError("not a terminal")

    monkeypatch.setattr(plain.os, "get_terminal_size", no_terminal)
    assert plain.colourless_width(_Stream(False), {}) == 80
    monkeypatch.setattr(
        plain.os, "get_terminal_size", lambda _fd: plain.os.terminal_size((133, 40))
    )
    assert plain.colourless_width(_Stream(False), {}) == 133


def test_the_cli_prints_what_rich_would(kube_api, emulator_env, monkeypatch, capsys):
    """`tau run status` to a pipe: the same bytes whether plain lays the view out or rich."""
    monkeypatch.setenv("COLUMNS", "90")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    kube_api.put(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "a", "namespace": "t"}}
    )
    argv = shlex.split("run status a -n t --context emulator")
    assert main(argv) == 0
    fast = capsys.readouterr().out
    monkeypatch.setattr(plain, "render", lambda *_a, **_k: None)
    assert main(argv) == 0
    assert capsys.readouterr().out == fast


def test_a_long_last_cell_wraps_in_a_narrowed_last_column_as_rich_wraps_it() -> None:
    status = run("quota-pending")
    reason = "couldn't assign flavors to pod set main: insufficient unused quota " * 3
    changed = replace(status, workloads=(replace(status.workloads[0], reason=reason.strip()),))
    reason_free = replace(changed, workloads=(replace(changed.workloads[0], reason="x " * 80),))
    for case in (changed, reason_free):
        for width in (80, 100, 120):
            shown = plain.render(case, width)
            assert shown is not None and shown == rich_output(case, width), width
