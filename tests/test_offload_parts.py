"""The collector's parts one by one: tail, spool, checkpoint, marker, system, gpu, options."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from tau.errors import TauError
from tau.portal.errors import NotBuilt, UsageError
from tau.portal.offload import checkpoint, gpu, marker, tail
from tau.portal.offload.options import Flags, resolve
from tau.portal.offload.spool import Spool
from tau.portal.offload.system import CPU, MEMORY, SystemSampler, parse_stat
from tau.portal.store.core import Store

# -- tail ---------------------------------------------------------------------------------


def test_tail_reads_whole_lines_once_and_waits_for_the_rest(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_bytes(b'{"_step":0,"loss":1}\n{"_step":1,"lo')
    state: dict[str, dict[str, int]] = {}
    [piece] = tail.read_new([str(history)], state)
    assert piece.data == b'{"_step":0,"loss":1}\n' and piece.first_line == 1
    state[piece.path] = {"offset": piece.offset, "lines": piece.lines, "inode": piece.inode}
    assert tail.read_new([str(history)], state) == []  # only half a line is new
    with open(history, "ab") as fh:
        fh.write(b'ss":2}\n{"_step":2,"loss":3}')
    [piece] = tail.read_new([str(history)], state)
    assert piece.data == b'{"_step":1,"loss":2}\n' and piece.first_line == 2
    state[piece.path] = {"offset": piece.offset, "lines": piece.lines, "inode": piece.inode}
    # The workload has ended: its last line, newline or not, is whole.
    [last] = tail.read_new([str(history)], state, final=True)
    assert last.data == b'{"_step":2,"loss":3}' and last.first_line == 3 and last.lines == 3


def test_tail_skips_dotfile_chunks_until_renamed(tmp_path: Path) -> None:
    folder = tmp_path / "chunks"
    folder.mkdir()
    (folder / ".part-0001.jsonl").write_text('{"_step":0,"acc":1}\n')
    (folder / "part-0000.jsonl").write_text('{"_step":1,"acc":2}\n')
    pattern = str(folder / "*.jsonl")
    got = tail.read_new([pattern, str(folder / ".*.jsonl")], {})
    assert [Path(p.path).name for p in got] == ["part-0000.jsonl"]
    os.rename(folder / ".part-0001.jsonl", folder / "part-0001.jsonl")
    state = {p.path: {"offset": p.offset, "lines": p.lines, "inode": p.inode} for p in got}
    assert [Path(p.path).name for p in tail.read_new([pattern], state)] == ["part-0001.jsonl"]


def test_tail_reads_a_replaced_file_from_its_start(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text('{"_step":0,"loss":1}\n{"_step":1,"loss":1}\n')
    [piece] = tail.read_new([str(history)], {})
    state = {piece.path: {"offset": piece.offset, "lines": piece.lines, "inode": piece.inode}}
    replacement = tmp_path / "new.jsonl"
    replacement.write_text('{"_step":0,"loss":9}\n')
    os.replace(replacement, history)  # a new inode, shorter
    notes: list[str] = []
    [again] = tail.read_new([str(history)], state, notes=notes)
    assert again.data == b'{"_step":0,"loss":9}\n' and again.first_line == 1
    assert notes and "reading it again" in notes[0]


def test_tail_baseline_starts_at_the_end(tmp_path: Path) -> None:
    history = tmp_path / "h.jsonl"
    history.write_text('{"_step":0,"loss":1}\n')
    state = tail.baseline([str(history)])
    assert tail.read_new([str(history)], state) == []
    assert state[str(history)]["lines"] == 1


# -- spool --------------------------------------------------------------------------------


def test_spool_keeps_non_finite_values_and_cuts_an_unrecorded_tail(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    size = spool.append([{"value": math.nan}, {"value": math.inf}])
    assert spool.count(0, size) == 2
    more = spool.append([{"value": -math.inf}])
    rows = spool.read(0, more)
    assert math.isnan(rows[0]["value"]) and rows[1]["value"] == math.inf
    assert rows[2]["value"] == -math.inf
    spool.cut(size)
    assert spool.size() == size and spool.count(0, spool.size()) == 2


def test_spool_boundary_ends_on_a_whole_line(tmp_path: Path) -> None:
    spool = Spool(tmp_path)
    end = spool.append([{"i": i} for i in range(10)])  # 9 bytes a line: {"i":0}\n
    cut = spool.boundary(0, end, 20)
    assert cut == 16 and len(spool.read(0, cut)) == 2
    assert spool.boundary(0, end, 5) == 8  # a line longer than the limit goes whole
    assert spool.boundary(0, end, 1000) == end


# -- checkpoint ---------------------------------------------------------------------------


def test_checkpoint_round_trip_and_a_damaged_one_is_a_located_error(tmp_path: Path) -> None:
    fresh = checkpoint.load(tmp_path, None)
    assert fresh.session.startswith("local-") and fresh.seq == 0
    fresh.pending = checkpoint.Pending(3, 10, 20, fresh.session, "1")
    fresh.files["/h"] = {"offset": 5, "lines": 1, "inode": 7}
    checkpoint.save(tmp_path, fresh)
    back = checkpoint.load(tmp_path, None)
    assert back.pending == fresh.pending and back.files == fresh.files
    assert checkpoint.load(tmp_path, "sess-1").session == "sess-1"
    assert not list(tmp_path.glob(".*.tmp"))
    (tmp_path / checkpoint.NAME).write_text("{broken")
    with pytest.raises(UsageError, match=r"--out .*checkpoint.json is not readable JSON"):
        checkpoint.load(tmp_path, None)


# -- marker -------------------------------------------------------------------------------


def test_sentinel_states_and_the_marker_row(tmp_path: Path) -> None:
    path = tmp_path / "completion.json"
    assert marker.read_sentinel(path) == (None, None)
    path.write_text(
        json.dumps(
            {
                "state": "failed",
                "reason": "workload-entrypoint-exit",
                "message": "exit 3",
                "completed_at": "2026-12-07T03:00:00Z",
            }
        )
    )
    done, note = marker.read_sentinel(path)
    assert note is None and done == marker.Completion(
        "failed", "workload-entrypoint-exit", "exit 3", "2026-12-07T03:00:00Z"
    )
    assert done is not None
    tags = marker.status_tags(done, attempt="2", artifact_uri="a://x", checkpoint_uri="c://y")
    row = marker.marker_row(done, tags, project="p", group="g", run="r", source="stellar-online")
    assert row["metric_name"] == "tau/run_status" and row["value"] == -1.0
    assert row["wall_time"] == 1796612400_000000
    row_tags = json.loads(row["tags"])
    assert {k: row_tags[k] for k in marker.TAG_KEYS} == {
        "tau.status.state": "failed",
        "tau.status.reason": "workload-entrypoint-exit",
        "tau.status.message": "exit 3",
        "tau.status.artifact_uri": "a://x",
        "tau.status.checkpoint_uri": "c://y",
        "tau.attempt": "2",
    }
    status = marker.status_path(tmp_path, "r", "s", "2")
    assert status.parent.name == "metrics-status" and status.name.startswith("run-status-r-")
    marker.write_status(status, row)
    assert json.loads(status.read_text()) == row


def test_a_sentinel_that_is_not_one_is_recorded_as_failed(tmp_path: Path) -> None:
    path = tmp_path / "completion.json"
    path.write_text("not json")
    done, note = marker.read_sentinel(path)
    assert done is not None and done.state == "failed"
    assert done.reason == "invalid-completion-file" and note and "not a completion" in note
    path.write_text('{"state":"exploded"}')
    done, note = marker.read_sentinel(path)
    assert done is not None and done.state == "failed" and note and "unknown state" in note


def test_marker_values() -> None:
    assert marker.VALUES == {"succeeded": 1.0, "failed": -1.0, "cancelled": -2.0}


# -- system -------------------------------------------------------------------------------


def _proc(root: Path, pid: int, utime: int, stime: int, rss_pages: int, comm: str = "py") -> None:
    folder = root / str(pid)
    folder.mkdir(parents=True, exist_ok=True)
    # Fields 3.. of proc(5): state, then 10 others up to utime (14) and stime (15), start (22).
    fields = ["S"] + ["0"] * 10 + [str(utime), str(stime)] + ["0"] * 6 + ["777", "0"]
    fields += [str(rss_pages)]
    (folder / "stat").write_text(f"{pid} ({comm}) " + " ".join(fields) + "\n")


def test_system_sums_the_pods_processes(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    ticks = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    _proc(proc, 1, 0, 0, 10, "pause")
    _proc(proc, 7, 100, 0, 1000, "python train.py (rank 0)")
    _proc(proc, 9, 5, 5, 100, "taugrid-portal")
    sampler = SystemSampler(proc, tmp_path / "none", {"KUBERNETES_SERVICE_HOST": "x"}, own_pid=9)
    first = sampler.sample(now=100.0)
    assert first == {MEMORY: float(1110 * page)}  # no rate before a second sample
    _proc(proc, 7, 100 + 2 * ticks, ticks, 2000, "python train.py (rank 0)")
    _proc(proc, 12, ticks, 0, 50)  # started during the interval
    second = sampler.sample(now=102.0)
    assert second[CPU] == pytest.approx((3 + 1) / 2)
    assert second[MEMORY] == float((10 + 2000 + 100 + 50) * page)


def test_system_falls_back_to_its_cgroup_when_it_sees_only_itself(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    _proc(proc, 1, 0, 0, 10)
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    (cgroup / "cpu.stat").write_text("usage_usec 1000000\nuser_usec 900000\n")
    (cgroup / "memory.current").write_text("4096\n")
    sampler = SystemSampler(proc, cgroup, {"KUBERNETES_SERVICE_HOST": "x"}, own_pid=1)
    assert sampler.sample(now=10.0) == {MEMORY: 4096.0}
    (cgroup / "cpu.stat").write_text("usage_usec 3000000\n")
    assert sampler.sample(now=14.0)[CPU] == pytest.approx(0.5)
    # Off a pod (no KUBERNETES_SERVICE_HOST) the machine's /proc is not the run's: the cgroup.
    off = SystemSampler(proc, cgroup, {}, own_pid=99)
    assert off.sample(now=1.0) == {MEMORY: 4096.0}
    assert SystemSampler(proc, tmp_path / "missing", {}, own_pid=99).sample() == {}


def test_parse_stat_survives_odd_command_names(tmp_path: Path) -> None:
    _proc(tmp_path, 5, 11, 22, 33, comm="a) b (c")
    assert parse_stat(tmp_path / "5" / "stat") == (11, 22, 777, 33)
    assert parse_stat(tmp_path / "missing") is None


# -- gpu ----------------------------------------------------------------------------------


def test_gpu_parses_the_documented_csv() -> None:
    # nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total
    # --format=csv,noheader,nounits prints one line per GPU like these.
    text = "0, 35, 1024, 81920\n1, 100, 81000, 81920\n2, [N/A], [Not Supported], 16384\n"
    assert gpu.parse(text) == {
        "system/gpu0/utilization_percent": 35.0,
        "system/gpu0/memory_used_bytes": 1024.0 * gpu.MIB,
        "system/gpu1/utilization_percent": 100.0,
        "system/gpu1/memory_used_bytes": 81000.0 * gpu.MIB,
    }
    assert gpu.parse("No devices were found\n") == {}


def test_gpu_without_nvidia_smi_is_silent_and_a_failing_one_is_a_note(tmp_path: Path) -> None:
    assert gpu.sample(binary=None) == ({}, None) or shutil_which_nvidia()
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    fake.chmod(0o755)
    found, note = gpu.sample(binary=str(fake))
    assert found == {} and note == "nvidia-smi exited 9: NVIDIA-SMI has failed"
    good = tmp_path / "ok-smi"
    good.write_text("#!/bin/sh\necho '0, 7, 512, 1024'\n")
    good.chmod(0o755)
    assert gpu.sample(binary=str(good)) == (
        {"system/gpu0/utilization_percent": 7.0, "system/gpu0/memory_used_bytes": 512.0 * gpu.MIB},
        None,
    )


def shutil_which_nvidia() -> bool:
    import shutil

    return shutil.which("nvidia-smi") is not None


# -- options ------------------------------------------------------------------------------


def _flags(**given: object) -> Flags:
    base: dict[str, object] = {"store": "/s", "out": "out", "history": ["h.jsonl"], "run": "r1"}
    base.update(given)
    return Flags(**base)  # type: ignore[arg-type]


def test_options_flags_then_env_with_watch_then_tau_yaml(tmp_path: Path) -> None:
    (tmp_path / "tau.yaml").write_text(
        "name: from-yaml\nexperiment: {project: yproj, name: yexp, group: ygroup}\n"
    )
    env = {
        "TAU_METRICS_OFFLOAD_PROJECT": "envproj",
        "TAU_METRICS_OFFLOAD_INTERVAL": "10s",
        "TAU_METRICS_OFFLOAD_TAGS": "a=1,b=2",
        "TAU_METRICS_HISTORY": "/data/out/metrics.jsonl",
        "TAU_RETRY_ATTEMPT": "2",
        "TAU_METRICS_SESSION_ID": "abc-123",
    }
    watched = resolve(_flags(run=None, history=None, out=None, watch=True),
                      env | {"TAU_METRICS_OFFLOAD_OUT": "out"}, tmp_path)  # fmt: skip
    assert watched.who.run == "from-yaml" and watched.who.project == "envproj"
    assert watched.who.experiment == "yexp" and watched.who.group == "ygroup"
    assert watched.history == ["/data/out/metrics.jsonl"] and watched.interval == 10.0
    assert watched.who.tags == {"a": "1", "b": "2"} and watched.attempt == "2"
    assert watched.who.session == "abc-123" and watched.who.source == "stellar-online"
    assert watched.out == tmp_path / "out"
    # Without --watch the variables are not read (contract: the fallbacks are the sidecar's).
    plain = resolve(_flags(), env, tmp_path)
    assert plain.who.project == "yproj" and plain.interval == 60.0 and plain.who.tags == {}
    flagged = resolve(_flags(project="flagproj", watch=True), env, tmp_path)
    assert flagged.who.project == "flagproj"


@pytest.mark.parametrize(
    ("given", "env", "message"),
    [
        ({"run": None}, {}, "--run is required"),
        ({"history": None}, {}, "--history is required"),
        ({"out": None}, {}, "--out is required"),
        ({"run": "Bad Run"}, {}, '--run: run "Bad Run" is invalid'),
        ({"interval": "10"}, {}, '--interval: missing unit in duration "10"'),
        ({"interval": "-5s"}, {}, '--interval must be a positive duration (got "-5s")'),
        (
            {"watch": True},
            {"TAU_METRICS_OFFLOAD_INTERVAL": "soon"},
            "TAU_METRICS_OFFLOAD_INTERVAL: invalid duration",
        ),
        ({"tag": ["novalue"]}, {}, '--tag: expected key=value, got "novalue"'),
        ({}, {"TAU_RETRY_ATTEMPT": "one"}, 'TAU_RETRY_ATTEMPT="one": must be the attempt number'),
        ({}, {"TAU_METRICS_SESSION_ID": "Has_Caps"}, "must contain only lowercase letters"),
        ({"max_iterations": -1}, {}, "--max-iterations -1: must be 0"),
        ({"store": "postgresql://u:pw@h/db?objects=s3://b/p"}, {}, "must not hold a password"),
    ],
)
def test_options_bad_values_are_located_errors(
    tmp_path: Path, given: dict[str, object], env: dict[str, str], message: str
) -> None:
    with pytest.raises(TauError) as caught:
        resolve(_flags(**given), env, tmp_path)
    assert message in caught.value.message
    assert "pw" not in caught.value.message


def test_options_out_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")
    with pytest.raises(UsageError, match="--out out: is a file, not a folder"):
        resolve(_flags(), {}, tmp_path)


def test_remote_write_is_refused_as_not_built(tmp_path: Path) -> None:
    with pytest.raises(NotBuilt, match="--remote-write-endpoint"):
        resolve(_flags(remote_write_endpoint="http://x"), {}, tmp_path)
    with pytest.raises(NotBuilt, match="TAU_METRICS_OFFLOAD_REMOTE_WRITE_ENDPOINT"):
        resolve(_flags(watch=True), {"TAU_METRICS_OFFLOAD_REMOTE_WRITE_ENDPOINT": "x"}, tmp_path)


def test_a_second_collector_on_the_same_out_is_refused(tmp_path: Path) -> None:
    fd = checkpoint.hold(tmp_path)
    try:
        with pytest.raises(UsageError, match="another collector is using this folder"):
            checkpoint.hold(tmp_path)
    finally:
        os.close(fd)
    os.close(checkpoint.hold(tmp_path))  # free again once the holder is gone


def test_spool_table_is_the_same_through_pyarrow_and_line_by_line(tmp_path: Path) -> None:
    def row(step: int | None, value: float) -> dict[str, object]:
        return {"project": "p", "run_group_id": "g", "run_id": "r", "metric_name": "loss",
                "step": step, "wall_time": 1_000 + (step or 0), "value": value, "unit": None,
                "source": "stellar-online", "split": None, "tags": '{"a": "1"}'}  # fmt: skip

    spool = Spool(tmp_path)
    finite = spool.append([row(0, 1.0), row(None, 2.5), row(2, 1e-30)])
    fast = spool.table(0, finite)  # no NaN token: pyarrow's reader
    assert fast.to_pylist() == [row(0, 1.0), row(None, 2.5), row(2, 1e-30)]
    end = spool.append([row(3, math.nan), row(4, -math.inf)])
    slow = spool.table(0, end)  # a NaN token: line by line, the same columns
    assert slow.schema == fast.schema and slow.num_rows == 5
    assert slow.slice(0, 3).to_pylist() == fast.to_pylist()
    values = slow["value"].to_pylist()
    assert math.isnan(values[3]) and values[4] == -math.inf
    assert spool.table(end, end).num_rows == 0


def test_the_command_reports_bad_input_in_one_located_line(tmp_path: Path, capsys) -> None:
    from tests.portal_helpers import portal

    base = ["experiment", "offload", "metrics", "--store", str(tmp_path / "s"), "--out",
            str(tmp_path / "o"), "--history", str(tmp_path / "h.jsonl"), "--run", "r"]  # fmt: skip
    (tmp_path / "h.jsonl").write_text('{"_step":0,"loss":1}\n')
    bad = portal(capsys, *base, "--interval", "10")
    assert bad.code == 1 and "Traceback" not in bad.err
    assert bad.err.startswith('error: --interval: missing unit in duration "10"')
    missing = portal(capsys, *base)  # no store there: the located store error, exit 1
    assert missing.code == 1 and "rows not delivered" in missing.err
    assert "has no manifest.json" in missing.err and "Traceback" not in missing.err
    remote = portal(capsys, *base, "--remote-write-endpoint", "http://x")
    assert remote.code == 2 and "not built yet" in remote.err


def test_a_history_that_never_appeared_is_named_at_the_end(tmp_path: Path, capsys) -> None:
    from tests.portal_helpers import portal

    store = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    (tmp_path / "c.json").write_text('{"state":"succeeded","reason":"workload-entrypoint-exit"}')
    done = portal(capsys, "experiment", "offload", "metrics", "--store", store, "--out",
                  tmp_path / "o", "--history", tmp_path / "nowhere.jsonl", "--run", "r",
                  "--completion-file", tmp_path / "c.json", "-o", "json")  # fmt: skip
    assert done.code == 0, done.err
    assert f"--history {tmp_path / 'nowhere.jsonl'}: no file matched; no rows read" in done.err
    assert json.loads(done.out)["marker"] == "succeeded"


def test_refused_lines_are_skipped_by_their_line_in_the_file(tmp_path: Path, capsys) -> None:
    from tests.portal_helpers import portal

    store = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    history = tmp_path / "h.jsonl"
    history.write_text('{"_step":0,"loss":1}\n{"_step":1,"loss":2}\n')
    args = ["experiment", "offload", "metrics", "--store", str(store), "--out",
            str(tmp_path / "o"), "--history", str(history), "--run", "r", "-o", "json"]  # fmt: skip
    first = portal(capsys, *args)
    assert first.code == 0 and json.loads(first.out)["rows_read"] == 2
    deep = '{"_step":5,"x":' + "[" * 101 + "]" * 101 + "}"
    with open(history, "a") as fh:
        fh.write('{"_step":2,"loss":3}\n{"_step":3,"loss":\n' + deep + '\n{"_step":4,"loss":5}\n')
    second = portal(capsys, *args)
    assert second.code == 0 and json.loads(second.out)["rows_read"] == 2
    assert f"skipped {history}:4: malformed JSON" in second.err
    assert f"skipped {history}:5: nested 102 levels deep" in second.err
    lines = Store.open(store).query(
        "SELECT count, min_step, max_step FROM metric_summaries WHERE metric_name = 'loss'"
    )
    assert lines == [{"count": 4, "min_step": 0, "max_step": 4}]


def test_a_backlog_larger_than_one_read_is_read_whole_in_one_pass(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.portal_helpers import portal

    monkeypatch.setattr(tail, "MAX_READ", 4096)  # a few dozen lines a read
    store = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps({"_step": i, "loss": 1.0 / (i + 1)}) + "\n"
                               for i in range(2000)))  # fmt: skip
    done = portal(capsys, "experiment", "offload", "metrics", "--store", store, "--out",
                  tmp_path / "o", "--history", history, "--run", "r", "-o", "json")  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["rows_read"] == 2000
    found = Store.open(store).query("SELECT count, max_step FROM metric_summaries")
    assert found == [{"count": 2000, "max_step": 1999}]


def test_a_line_longer_than_a_read_is_read_whole_or_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tail, "MAX_READ", 64)
    monkeypatch.setattr(tail, "LONGEST", 256)
    history = tmp_path / "h.jsonl"
    long_row = '{"_step":0,"loss":1,"note":"' + "x" * 150 + '"}\n'  # over a read, under LONGEST
    history.write_text(long_row + '{"_step":1,"loss":2,"n":"' + "y" * 400 + '"}\n{"_step":2}\n')
    notes: list[str] = []
    [first] = tail.read_new([str(history)], {}, notes=notes)
    assert first.data == long_row.encode() and first.more
    state = {first.path: {"offset": first.offset, "lines": first.lines, "inode": first.inode}}
    [skipped] = tail.read_new([str(history)], state, notes=notes)
    assert skipped.data == b"" and skipped.lines == 2 and skipped.more
    assert notes == [f"{history}:2: line is over 256 bytes; skipped"]
    state[first.path] = {"offset": skipped.offset, "lines": 2, "inode": skipped.inode}
    [last] = tail.read_new([str(history)], state)
    assert last.data == b'{"_step":2}\n' and last.first_line == 3


@pytest.mark.parametrize(
    "lines",
    [
        # pyarrow's reader takes these; the second needs the line-by-line parse (a string
        # rank): both give the same tags.
        ['{"_step":0,"_rank":1,"loss":1}', '{"_step":0,"_rank":0,"loss":2}',
         '{"_step":1,"loss":3}'],
        ['{"_step":0,"_rank":1,"loss":1}', '{"_step":0,"_rank":0,"loss":2}',
         '{"_step":1,"_rank":"x","loss":3}'],
    ],
)  # fmt: skip
def test_rows_keep_their_rank_as_a_tag(lines: list[str]) -> None:
    from tau.portal.capture.jsonl import ImportRequest, metric_rows

    req = ImportRequest(run="r", history=[], project="p", experiment="", group="g")
    table = metric_rows(("\n".join(lines) + "\n").encode(), Path("h.jsonl"), "h.jsonl", req)
    tags = [json.loads(t) for t in table["tags"].to_pylist()]
    assert [t.get("tau.rank") for t in tags] == ["1", "0", None]
    assert [t["jsonl.history_line"] for t in tags] == ["1", "2", "3"]


def _hostile() -> dict[str, tuple[str, str]]:
    from tests.test_bad_input_fuzz import HOSTILE_HISTORIES

    return HOSTILE_HISTORIES


@pytest.mark.parametrize("name", sorted(_hostile()))
def test_hostile_history_lines_are_skipped_by_number_and_never_crash(
    name: str, tmp_path: Path, capsys
) -> None:
    from tests.portal_helpers import portal

    text, where = _hostile()[name]
    store = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    history = tmp_path / "h.jsonl"
    history.write_text(text + '{"_step": 9, "loss": 2}\n', encoding="utf-8",
                       errors="surrogateescape")  # fmt: skip
    done = portal(capsys, "experiment", "offload", "metrics", "--store", store, "--out",
                  tmp_path / "o", "--history", history, "--run", "r", "-o", "json")  # fmt: skip
    assert done.code == 0 and "Traceback" not in done.err, done.err
    assert f"skipped {history}{where}" in done.err
    steps = Store.open(store).query("SELECT max_step FROM metric_summaries")
    assert steps == [{"max_step": 9}]  # the good line after the refused one is kept


def test_a_ready_file_that_cannot_be_written_is_one_located_line(tmp_path: Path, capsys) -> None:
    from tests.portal_helpers import portal

    (tmp_path / "h.jsonl").write_text('{"_step":0,"loss":1}\n')
    (tmp_path / "blocker").write_text("")  # a file where the ready file's folder should be
    done = portal(capsys, "experiment", "offload", "metrics", "--store", tmp_path / "s",
                  "--out", tmp_path / "o", "--history", tmp_path / "h.jsonl", "--run", "r",
                  "--watch", "--ready-file", tmp_path / "blocker" / "ready")  # fmt: skip
    assert done.code == 1 and "Traceback" not in done.err
    assert done.err.startswith(f"error: offload metrics: {tmp_path / 'blocker'}")


def test_a_plain_history_brings_the_rank_files_tau_log_writes_beside_it(tmp_path: Path) -> None:
    plain = tmp_path / "metrics.jsonl"
    plain.write_text('{"_step":0,"loss":1}\n')
    for name in ("metrics.rank-2.jsonl", "metrics.rank-10.jsonl", "metrics.rank-x.jsonl",
                 "metrics.rank-1.json"):  # fmt: skip
        (tmp_path / name).write_text('{"_step":0,"_rank":2,"loss":1}\n')
    got = [(Path(p).name, g) for p, g in tail.files([str(plain)])]
    assert got == [
        ("metrics.jsonl", str(plain)),
        ("metrics.rank-2.jsonl", str(tmp_path / "metrics.rank-2.jsonl")),
        ("metrics.rank-10.jsonl", str(tmp_path / "metrics.rank-10.jsonl")),
    ]


def test_a_delivered_spool_past_its_bound_starts_afresh(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tau.portal.offload import collector
    from tests.portal_helpers import portal

    monkeypatch.setattr(collector, "ROTATE", 1000)
    store = tmp_path / "s"
    assert portal(capsys, "experiment", "init", "demo", "--store", store).code == 0
    history = tmp_path / "h.jsonl"
    args = ["experiment", "offload", "metrics", "--store", str(store), "--out",
            str(tmp_path / "o"), "--history", str(history), "--run", "r",
            "--completion-file", str(tmp_path / "c")]  # fmt: skip
    history.write_text("".join(json.dumps({"_step": i, "loss": i}) + "\n" for i in range(10)))
    assert portal(capsys, *args).code == 0
    spool = tmp_path / "o" / "TauExpMetrics.jsonl"
    point = json.loads((tmp_path / "o" / "checkpoint.json").read_text())
    assert spool.stat().st_size == 0 and point["spool_size"] == point["delivered"] == 0
    with open(history, "a") as fh:
        fh.write(json.dumps({"_step": 10, "loss": 10}) + "\n")
    (tmp_path / "c").write_text('{"state":"succeeded","reason":"workload-entrypoint-exit"}')
    assert portal(capsys, *args).code == 0
    opened = Store.open(store)
    assert opened.query(
        "SELECT count, max_step FROM metric_summaries WHERE metric_name='loss'"
    ) == [{"count": 11, "max_step": 10}]
    assert opened.scalar("SELECT state FROM runs") == "succeeded"
