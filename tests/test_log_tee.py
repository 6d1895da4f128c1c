"""tau's own copy of a watched attempt's logs: which containers it follows, what it keeps."""

from __future__ import annotations

import pytest

from tau.runs import log_tee


class Counting(log_tee.Tee):
    """A tee whose follows copy nothing: what `watch` starts is what is counted."""

    def _copy(self, uid: str, pod: str, container: str) -> None:
        return None


def pod(name: str, owner: str, *states: tuple[str, str]) -> dict:
    return {
        "metadata": {"name": name, "ownerReferences": [{"uid": owner}]},
        "status": {"containerStatuses": [{"name": c, "state": {state: {}}} for c, state in states]},
    }


JOB = {"metadata": {"uid": "job-1"}}


def test_it_follows_the_started_containers_of_the_workloads_own_pods_once():
    tee = Counting(None, "team", "train")
    pods = [
        pod("train-0", "job-1", ("main", "running"), ("side", "waiting")),
        pod("train-1", "job-1", ("main", "terminated")),
        pod("train-old", "job-0", ("main", "running")),  # an earlier attempt's
    ]
    tee.watch(JOB, pods)
    tee.watch(JOB, pods)
    assert sorted(tee._followed) == [("job-1", "train-0", "main"), ("job-1", "train-1", "main")]


def test_a_big_job_has_its_first_pods_followed_not_all():
    tee = Counting(None, "team", "train")
    pods = [pod(f"train-{i:03d}", "job-1", ("main", "running")) for i in range(40)]
    tee.watch(JOB, reversed(pods))
    followed = sorted(p for _, p, _ in tee._followed)
    assert followed == [f"train-{i:03d}" for i in range(log_tee.MAX_FOLLOWED)]


def test_a_workload_without_a_uid_is_not_followed():
    tee = Counting(None, "team", "train")
    tee.watch({"metadata": {}}, [pod("train-0", "", ("main", "running"))])
    assert tee._followed == {}


def test_the_copy_gives_its_last_lines_and_goes_when_discarded(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    folder = log_tee.spool_dir("team", "train", "job-1") / "train-0"
    folder.mkdir(parents=True)
    (folder / "main.log").write_text("a\nb\nc\n")
    assert log_tee.spooled("team", "train", "job-1", "train-0", "main", 2) == b"b\nc\n"
    assert log_tee.spooled("team", "train", "job-1", "train-0", "side", 2) is None
    log_tee.discard("team", "train", "job-1")
    assert not folder.exists()


@pytest.mark.parametrize(
    ("text", "removed"),
    [
        ("unable to retrieve container logs for containerd://5f0c\n", True),
        ("unable to retrieve container logs for containerd://5f0c", True),
        ("step 1\nunable to retrieve container logs for containerd://5f0c\n", False),
        ("2026-01-02T03:04:05Z unable to retrieve container logs for x\n", False),
        ("", False),
    ],
)
def test_the_kubelets_removed_log_line_is_told_from_a_log(text, removed):
    assert log_tee.log_removed(text) is removed
