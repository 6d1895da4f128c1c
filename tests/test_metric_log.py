"""`tau.log`: the row format, chunks and appends a reader never sees half of, the exit and
SIGTERM flushes, ranks, and a history `taugrid-portal experiment import jsonl` takes.

Cases that exit, get signalled or run as another rank run in a fresh interpreter; the rest use
the module in this process, reset between cases (tau.metric_log._close).
"""

from __future__ import annotations

import glob
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tau
from tau import metric_log
from tests.portal_helpers import portal

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TAU_METRICS_HISTORY names a plain file in tmp_path; the writer starts afresh."""
    path = tmp_path / "out" / "metrics.jsonl"
    monkeypatch.setenv("TAU_METRICS_HISTORY", str(path))
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TAU_LOG_ALL_RANKS"):
        monkeypatch.delenv(name, raising=False)
    metric_log._close()
    yield path
    metric_log._close()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class FakeNumpyScalar:
    """What numpy.float32(0.5) looks like to tau.log, which never imports numpy."""

    __module__ = "numpy"
    ndim = 0

    def __init__(self, value: Any) -> None:
        self.value = value

    def item(self) -> Any:
        return self.value


def test_a_row_is_the_reference_format(history: Path) -> None:
    before = time.time()
    tau.log({"loss": 0.3, "acc": 0.9}, step=100)
    tau.log_flush()
    text = history.read_text()
    assert text.startswith('{"_step":100,"_timestamp":') and text.endswith(
        ',"loss":0.3,"acc":0.9}\n'
    )
    (row,) = rows(history)
    assert list(row) == ["_step", "_timestamp", "loss", "acc"]
    assert before <= row["_timestamp"] <= time.time()
    assert isinstance(row["_timestamp"], float)


def test_steps_count_on_from_the_last_one_as_wandb_does(history: Path) -> None:
    tau.log({"a": 1})
    tau.log({"a": 2})
    tau.log({"a": 3}, step=10)
    tau.log({"a": 4})
    tau.log({})  # nothing to log: no row, the step stays
    tau.log({"a": 5})
    tau.log_flush()
    assert [r["_step"] for r in rows(history)] == [0, 1, 10, 11, 12]


def test_values_ints_floats_bools_and_numpy_scalars(history: Path) -> None:
    tau.log(
        {
            "i": 3,
            "f": 0.25,
            "t": True,
            "b": False,
            "big": 2**70,
            "np_f": FakeNumpyScalar(0.5),
            "np_i": FakeNumpyScalar(7),
            "np_b": FakeNumpyScalar(True),
        },
        step=FakeIndex(4),  # a numpy integer step works through __index__
    )
    tau.log_flush()
    (row,) = rows(history)
    assert row == {
        "_step": 4,
        "_timestamp": row["_timestamp"],
        "i": 3,
        "f": 0.25,
        "t": 1,
        "b": 0,
        "big": 2**70,
        "np_f": 0.5,
        "np_i": 7,
        "np_b": 1,
    }


class FakeIndex:
    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


def test_nan_and_infinity_are_kept_as_pythons_json_writes_them(history: Path) -> None:
    tau.log({"loss": math.nan, "grad": math.inf, "low": -math.inf, "ok": 1.5})
    tau.log_flush()
    line = history.read_text()
    assert '"loss":NaN,"grad":Infinity,"low":-Infinity,"ok":1.5}' in line
    assert line.split(',"_timestamp"')[0] == json.dumps({"_step": 0}, separators=(",", ":"))[:-1]
    (row,) = rows(history)
    assert math.isnan(row["loss"]) and row["grad"] == math.inf and row["low"] == -math.inf


def test_names_are_escaped_as_json_escapes_them(history: Path) -> None:
    names = ['quote"d', "back\\slash", "tab\tnew\nline", "é", "emoji 😀", "train/loss"]
    tau.log(dict.fromkeys(names, 1))
    tau.log_flush()
    (row,) = rows(history)
    assert [k for k in row if not k.startswith("_")] == names
    for name in names:
        # The fallback (for a Python without _json) writes what json reads back the same.
        assert json.loads(metric_log._quote_py(name)) == name


@pytest.mark.parametrize(
    ("data", "kind", "words"),
    [
        ({"loss": "0.3"}, TypeError, "tau.log: 'loss' is a str ('0.3'), not a number"),
        ({"loss": None}, TypeError, "tau.log: 'loss' is a NoneType (None), not a number"),
        ({"loss": [1.0]}, TypeError, "'loss' is a list"),
        ({"loss": 1 + 2j}, TypeError, "'loss' is a complex"),
        ({3: 1.0}, TypeError, "metric names must be strings, got 3"),
        ({"_step": 1.0}, ValueError, "'_step' starts with '_'"),
        ({"_hidden": 1}, ValueError, "rename the metric"),
    ],
)
def test_a_bad_value_or_name_is_a_clear_error_naming_the_key(
    history: Path, data: dict[Any, Any], kind: type[Exception], words: str
) -> None:
    with pytest.raises(kind) as caught:
        tau.log(data)
    assert words in str(caught.value)
    tau.log_flush()
    assert not history.exists()  # nothing half-logged


def test_a_torch_like_tensor_gets_the_item_hint(history: Path) -> None:
    tensor = type("Tensor", (), {"__module__": "torch", "__repr__": lambda self: "tensor(0.3)"})
    with pytest.raises(TypeError, match=r"'loss' is a torch\.Tensor .* \(log value\.item\(\)\)"):
        tau.log({"loss": tensor()})


@pytest.mark.parametrize(
    ("step", "kind", "words"),
    [
        (-1, ValueError, "step must be 0 or more, got -1"),
        (1.5, TypeError, "step must be an integer, got float 1.5"),
        (True, TypeError, "step must be an integer, got True"),
        ("3", TypeError, "step must be an integer, got str '3'"),
    ],
)
def test_a_bad_step_is_a_clear_error(
    history: Path, step: Any, kind: type[Exception], words: str
) -> None:
    with pytest.raises(kind, match=words):
        tau.log({"a": 1}, step=step)


def test_not_a_mapping_is_a_clear_error(history: Path) -> None:
    with pytest.raises(TypeError, match="pass a mapping of metric name to number, got list"):
        tau.log([("loss", 1.0)])  # type: ignore[arg-type]


def test_without_the_env_it_writes_metrics_jsonl_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAU_METRICS_HISTORY", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.chdir(tmp_path)
    metric_log._close()
    try:
        tau.log({"loss": 1.0})
        monkeypatch.chdir("/")  # a later chdir does not move the history
        tau.log({"loss": 0.5})
        tau.log_flush()
    finally:
        metric_log._close()
    assert [r["loss"] for r in rows(tmp_path / "metrics.jsonl")] == [1.0, 0.5]


def test_a_folder_as_history_is_a_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TAU_METRICS_HISTORY", str(tmp_path))
    metric_log._close()
    try:
        with pytest.raises(ValueError, match="is a folder; name a file"):
            tau.log({"a": 1})
    finally:
        metric_log._close()


@pytest.mark.parametrize(
    "pattern", ["/data/*/metrics.jsonl", "/data/out/metrics.jsonl?", "/data/out/[ab].jsonl"]
)
def test_a_glob_tau_log_cannot_name_chunks_for_is_a_clear_error(pattern: str, monkeypatch) -> None:
    monkeypatch.setenv("TAU_METRICS_HISTORY", pattern)
    metric_log._close()
    try:
        with pytest.raises(ValueError, match=r"TAU_METRICS_HISTORY='.*': tau.log .*\*"):
            tau.log({"a": 1})
    finally:
        metric_log._close()


def test_a_glob_gets_one_chunk_per_flush_matching_it(tmp_path: Path, monkeypatch) -> None:
    pattern = str(tmp_path / "metrics" / "**" / "*.jsonl")
    monkeypatch.setenv("TAU_METRICS_HISTORY", pattern)
    monkeypatch.delenv("RANK", raising=False)
    metric_log._close()
    try:
        for step in range(3):
            tau.log({"loss": 1.0 / (step + 1)})
            tau.log_flush()
        tau.log_flush()  # nothing waits: no empty chunk
    finally:
        metric_log._close()
    chunks = sorted(glob.glob(pattern, recursive=True))
    assert len(chunks) == 3
    assert sorted(os.listdir(tmp_path / "metrics")) == [Path(c).name for c in chunks]  # no dotfile
    assert [rows(Path(c))[0]["_step"] for c in chunks] == [0, 1, 2]  # names sort in write order


def test_a_full_disk_keeps_the_rows_and_says_so_once(history: Path, monkeypatch, capsys) -> None:
    calls = []

    def full(data: bytes) -> None:
        calls.append(data)
        raise OSError(28, "No space left on device")

    tau.log({"a": 1})  # the writer exists now
    writer = metric_log._writer
    assert writer is not None
    real = writer.sink.write
    monkeypatch.setattr(writer.sink, "write", full)
    tau.log_flush()
    tau.log({"a": 2})
    tau.log_flush()
    err = capsys.readouterr().err
    assert err.count("tau.log: cannot write metrics to") == 1 and "No space left" in err
    monkeypatch.setattr(writer.sink, "write", real)
    tau.log_flush()
    assert [r["a"] for r in rows(history)] == [1, 2]
    assert len(calls) == 2


def test_the_background_thread_flushes_every_n_rows_without_a_call(history: Path, monkeypatch):
    monkeypatch.setattr(metric_log, "FLUSH_ROWS", 5)
    for step in range(5):
        tau.log({"a": step})
    deadline = time.monotonic() + 10
    while not history.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(rows(history)) == 5


def test_the_background_thread_flushes_after_the_interval(history: Path, monkeypatch) -> None:
    monkeypatch.setattr(metric_log, "FLUSH_SECONDS", 0.05)
    tau.log({"a": 1})
    deadline = time.monotonic() + 10
    while not history.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(rows(history)) == 1


# ----------------------------------------------------------------- in a fresh interpreter


def run(code: str, env: dict[str, str], cwd: Path, **kw: Any) -> subprocess.CompletedProcess[str]:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "TAU_LOG_ALL_RANKS")
    }
    full.update(env, PYTHONPATH=str(SRC))
    return subprocess.run(
        [sys.executable, "-c", code], env=full, cwd=cwd, capture_output=True, text=True,
        timeout=60, check=False, **kw,
    )  # fmt: skip


def test_rows_still_queued_at_exit_are_written(tmp_path: Path) -> None:
    code = (
        "import tau, tau.metric_log as m\nm.FLUSH_SECONDS = 3600\n"
        "for s in range(2500): tau.log({'loss': 1 / (s + 1)})\n"
    )
    proc = run(code, {"TAU_METRICS_HISTORY": str(tmp_path / "m.jsonl")}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert [r["_step"] for r in rows(tmp_path / "m.jsonl")] == list(range(2500))


SIGNALLED = """
import os, signal, sys, time, tau, tau.metric_log as m
m.FLUSH_SECONDS = 3600
{before}
for s in range(10): tau.log({{'loss': 1 / (s + 1)}})
print('ready', flush=True)
time.sleep(60)
"""


def _terminate(code: str, history: Path, tmp_path: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "TAU_METRICS_HISTORY": str(history)}
    env.pop("RANK", None)
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, out


def test_sigterm_writes_the_queue_and_the_process_still_dies_by_it(tmp_path: Path) -> None:
    history = tmp_path / "m.jsonl"
    code, _ = _terminate(SIGNALLED.format(before=""), history, tmp_path)
    assert code == -signal.SIGTERM
    assert len(rows(history)) == 10


def test_sigterm_calls_the_handler_installed_before(tmp_path: Path) -> None:
    before = (
        "def mine(signum, frame):\n"
        "    print('mine', len(open(os.environ['TAU_METRICS_HISTORY']).readlines()), flush=True)\n"
        "    sys.exit(3)\n"
        "signal.signal(signal.SIGTERM, mine)"
    )
    history = tmp_path / "m.jsonl"
    code, out = _terminate(SIGNALLED.format(before=before), history, tmp_path)
    assert code == 3
    assert "mine 10" in out  # the rows were written before the user's handler ran
    assert len(rows(history)) == 10


def test_a_first_call_off_the_main_thread_installs_no_handler(tmp_path: Path) -> None:
    code = (
        "import signal, threading, tau\n"
        "t = threading.Thread(target=tau.log, args=({'a': 1},)); t.start(); t.join()\n"
        "print(signal.getsignal(signal.SIGTERM) == signal.SIG_DFL)\n"
    )
    proc = run(code, {"TAU_METRICS_HISTORY": str(tmp_path / "m.jsonl")}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
    assert len(rows(tmp_path / "m.jsonl")) == 1  # the exit flush still wrote it


RANKS = "import tau\ntau.log({'loss': 0.5}, step=3, all_ranks=ALL)\n"


def test_only_rank_zero_writes_by_default(tmp_path: Path) -> None:
    history = tmp_path / "m.jsonl"
    code = RANKS.replace("ALL", "False")
    for rank in ("1", "2"):
        proc = run(code, {"TAU_METRICS_HISTORY": str(history), "RANK": rank}, tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert list(tmp_path.iterdir()) == []
    proc = run(code, {"TAU_METRICS_HISTORY": str(history), "RANK": "0"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (row,) = rows(history)
    assert row == {"_step": 3, "_timestamp": row["_timestamp"], "loss": 0.5}


@pytest.mark.parametrize("how", ["argument", "env"])
def test_all_ranks_each_write_their_own_file_and_rows_carry_the_rank(tmp_path: Path, how: str):
    history = tmp_path / "m.jsonl"
    for rank in ("0", "1", "2"):
        env = {"TAU_METRICS_HISTORY": str(history), "RANK": rank, "WORLD_SIZE": "3"}
        code = RANKS.replace("ALL", "True" if how == "argument" else "False")
        if how == "env":
            env["TAU_LOG_ALL_RANKS"] = "1"
        proc = run(code, env, tmp_path)
        assert proc.returncode == 0, proc.stderr
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["m.jsonl", "m.rank-1.jsonl", "m.rank-2.jsonl"]
    for name, rank in zip(names, (0, 1, 2), strict=True):
        (row,) = rows(tmp_path / name)
        assert list(row) == ["_step", "_timestamp", "_rank", "loss"] and row["_rank"] == rank


def test_all_ranks_under_a_glob_write_chunks_of_their_own(tmp_path: Path) -> None:
    pattern = str(tmp_path / "chunks" / "*.jsonl")
    for rank in ("0", "1"):
        env = {"TAU_METRICS_HISTORY": pattern, "RANK": rank}
        proc = run(RANKS.replace("ALL", "True"), env, tmp_path)
        assert proc.returncode == 0, proc.stderr
    found = sorted(glob.glob(pattern))
    assert len(found) == 2
    by_rank = {rows(Path(p))[0]["_rank"]: Path(p).name for p in found}
    assert "-r0-" in by_rank[0] and "-r1-" in by_rank[1]


def test_a_garbled_rank_is_a_clear_error(tmp_path: Path) -> None:
    proc = run(RANKS.replace("ALL", "False"), {"RANK": "zero"}, tmp_path)
    assert proc.returncode == 1
    assert "tau.log: RANK='zero' is not an integer" in proc.stderr


WRITER = """
import sys, time, tau, tau.metric_log as m
m.FLUSH_ROWS = int(sys.argv[1]); m.FLUSH_SECONDS = 0.001
for s in range(int(sys.argv[2])):
    tau.log({'loss': 1 / (s + 1), 'name_' + str(s % 7): s, 'half': s * 1.5})
    if s % 97 == 0:
        time.sleep(0.001)
"""


@pytest.mark.parametrize("shape", ["file", "glob"])
def test_a_concurrent_reader_never_sees_a_partial_line_or_chunk(tmp_path: Path, shape: str):
    total = 6000
    target = tmp_path / "h" / ("*.jsonl" if shape == "glob" else "m.jsonl")
    env = {**os.environ, "PYTHONPATH": str(SRC), "TAU_METRICS_HISTORY": str(target)}
    env.pop("RANK", None)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, "37", str(total)], env=env, stderr=subprocess.PIPE
    )
    reads = 0
    seen = 0

    def read_all() -> int:
        count = 0
        if shape == "file":
            if not target.exists():
                return 0
            data = target.read_bytes()
            complete, _, _ = data.rpartition(b"\n")  # a tailer stops at the last newline
            lines = complete.splitlines() if complete else []
            for line in lines:
                json.loads(line)
            return len(lines)
        for name in glob.glob(str(target)):
            try:
                data = Path(name).read_bytes()
            except FileNotFoundError:
                continue
            assert data.endswith(b"\n"), name  # a renamed chunk is whole
            for line in data.splitlines():
                json.loads(line)
                count += 1
        return count

    while writer.poll() is None:
        seen = max(seen, read_all())
        reads += 1
    assert writer.returncode == 0, writer.stderr.read() if writer.stderr else ""
    assert read_all() == total
    assert reads > 5  # the reader really ran beside the writer


def test_a_history_it_writes_imports_with_nan_and_infinity(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pyarrow.parquet as pq

    for step in range(5):
        tau.log({"loss": 1.0 / (step + 1), "acc": step / 10})
    tau.log({"loss": math.nan, "gnorm": math.inf})
    tau.log({"loss": -math.inf, "ok": True})
    tau.log_flush()
    store = tmp_path / "store"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    result = portal(
        capsys, "experiment", "import", "jsonl", "--store", store, "--run", "r1",
        "--history", history, "-o", "json",
    )  # fmt: skip
    assert result.code == 0, result.err
    body = result.json()
    assert body["metric_names"] == ["acc", "gnorm", "loss", "ok"]
    table = pq.read_table(store / body["metric_file"]).to_pylist()
    loss = {r["step"]: r["value"] for r in table if r["metric_name"] == "loss"}
    assert loss[0] == 1.0 and math.isnan(loss[5]) and loss[6] == -math.inf
    assert [r["value"] for r in table if r["metric_name"] == "gnorm"] == [math.inf]


def test_tau_log_has_one_meaning_the_function() -> None:
    """No module of the package is named like the two names (tau.log would then be ambiguous)."""
    assert tau.log is metric_log.log and tau.log_flush is metric_log.log_flush
    assert {"log", "log_flush"} <= set(dir(tau))
    names = {p.stem for p in (SRC / "tau").iterdir() if p.suffix == ".py" or p.is_dir()}
    assert names & tau.LOG_NAMES == set()
