"""The pure probe-output parser and health assessment, on recorded nvidia-smi / ibstat outputs."""

from __future__ import annotations

import pytest

from tau.cluster.probe import DEGRADED, HEALTHY, SCRIPT, UNHEALTHY, assess, parse
from tests.cluster_objects import probe_log


def test_healthy_node_reads_every_gpu_link_and_port() -> None:
    result = parse(probe_log("healthy"))
    assert result.complete and result.smi_error is None
    assert [g.index for g in result.gpus] == list(range(8))
    assert {g.driver for g in result.gpus} == {"550.54.15"}
    assert len(result.nvlinks) == 8 * 18 and all(up for _, _, up in result.nvlinks)
    # The Ethernet port of the frontend NIC is not counted as InfiniBand.
    assert result.ib_ports is not None and len(result.ib_ports) == 8
    a = assess(result, 8)
    assert (a.status, a.reasons) == (HEALTHY, ())
    assert (a.nvlink, a.ib, a.ecc, a.driver) == ("ok 144", "ok 8", "ok", "550.54.15")


@pytest.mark.parametrize(
    ("fixture", "status", "reason", "cells"),
    [
        ("ecc-errors", UNHEALTHY, "uncorrectable ECC errors on GPU 3 (2)", {"ecc": "2 uncorr"}),
        ("nvlink-down", DEGRADED, "NVLink down: GPU 2 link 5", {"nvlink": "down 1/144"}),
        ("driver-mismatch", UNHEALTHY, "driver/library version mismatch", {"driver": "mismatch"}),
        ("ib-down", DEGRADED, "IB mlx5_ib6 port 1 Down (Polling)", {"ib": "down 1/8"}),
    ],
)
def test_recorded_failures_are_classified_with_their_reason(fixture, status, reason, cells) -> None:
    a = assess(parse(probe_log(fixture)), 8)
    assert a.status == status
    assert reason in a.reasons
    for cell, value in cells.items():
        assert getattr(a, cell) == value


def test_ecc_errors_also_report_pending_page_retirement() -> None:
    a = assess(parse(probe_log("ecc-errors")), 8)
    assert "page retirement pending on GPU 3" in a.reasons


def test_a_node_without_infiniband_or_nvlink_is_healthy() -> None:
    result = parse(probe_log("no-ib"))
    assert result.ib_ports is None and result.nvlinks == ()
    a = assess(result, 2)
    assert (a.status, a.ib, a.nvlink, a.driver) == (HEALTHY, "none", "n/a", "535.183.01")


def test_fewer_gpus_than_the_node_advertises_is_degraded() -> None:
    a = assess(parse(probe_log("healthy")), 16)
    assert a.status == DEGRADED and "nvidia-smi sees 8 of 16 GPUs" in a.reasons


def test_truncated_or_garbage_output_never_raises() -> None:
    cut = probe_log("healthy")[:300]
    assert assess(parse(cut), 8).status == DEGRADED
    assert "probe output incomplete" in assess(parse(cut), 8).reasons
    assert parse("").gpus == () and assess(parse("\x00garbage"), 8).status == UNHEALTHY


def test_the_probe_script_prints_every_section_the_parser_reads() -> None:
    for section in ("nvidia-smi", "nvlink", "ibstat", "end"):
        assert f"### tau-probe {section}" in SCRIPT
    assert SCRIPT.rstrip().endswith("exit 0")
