"""The capture commands check their flags before they connect: a bad value is named at once,
even when no cluster could be reached (the context below does not exist)."""

from __future__ import annotations

import pytest

from tests.portal_capture_seed import new_store
from tests.portal_helpers import portal

NO_CLUSTER = ("--context", "no-such-context")


@pytest.fixture
def store(tmp_path, capsys):
    return new_store(tmp_path, capsys)


@pytest.mark.parametrize("command", [["autocapture"], ["capture", "run-profile", "train"]])
@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-n", "Bad_NS"], 'namespace "Bad_NS" is not a valid namespace name'),
        (["-n", "x" * 64], "is not a valid namespace name"),
        (["--group", "BAD/x"], 'group "BAD/x" is invalid'),
        (["--project", "Proj"], 'project "Proj" is invalid'),
    ],
)
def test_a_bad_flag_is_named_before_any_connection(store, capsys, command, flags, message):
    result = portal(capsys, "experiment", *command, *flags, *NO_CLUSTER, "--store", store)
    assert result.code == 1, result.err
    assert message in result.err
    assert "kubeconfig" not in result.err and "Traceback" not in result.err


def test_run_profile_refuses_all_namespaces_before_connecting(store, capsys):
    args = ["capture", "run-profile", "train", "-n", "*", *NO_CLUSTER, "--store", store]
    result = portal(capsys, "experiment", *args)
    assert result.code == 1 and "needs the run's namespace" in result.err
