"""Capture and autocapture never write the user's kubeconfig, also while a watch refreshes
credentials on every request (expired tokens, as `test_kubeconfig_untouched` sets them up).
"""

from __future__ import annotations

from typing import Any

from tau.k8s import meta
from tau.portal.capture.follow import Pass
from tau.portal.cli import watch_output
from tests import test_kubeconfig_untouched
from tests.kubeapi.fixtures import EMULATOR_CONTEXT
from tests.kubeapi.kubelet import FakeKubelet
from tests.portal_capture_seed import NS, job, new_store
from tests.portal_helpers import portal, write_history

#: The user's kubeconfig (an exec plugin, or OIDC with a refresh token) in a Git repository.
user_kubeconfig = test_kubeconfig_untouched.user_kubeconfig
oidc_issuer = test_kubeconfig_untouched.oidc_issuer


def test_capture_commands_leave_the_users_kubeconfig_byte_identical(
    user_kubeconfig, kube_api, tmp_path, capsys, monkeypatch
):
    kube_api.register_kueue_kuberay_tau_kinds()
    results = tmp_path / "pvc" / "results" / "train"
    results.mkdir(parents=True)
    write_history(results / "metrics.jsonl", 3)
    kube_api.put(
        job("train", **{meta.ANNOTATION_RESULT_PATH: "/data/results/train",
                        meta.ANNOTATION_RESULT_PVC: "results-pvc"})
    )  # fmt: skip
    store = new_store(tmp_path, capsys)
    before = (user_kubeconfig.read_bytes(), user_kubeconfig.stat().st_mtime_ns)
    ctx = ["--context", EMULATOR_CONTEXT, "-n", NS, "--store", str(store)]
    with FakeKubelet(kube_api, tmp_path / "pvc"):
        profile = portal(capsys, "experiment", "capture", "run-profile", "train", *ctx)
        assert profile.code == 0, profile.err
        assert "history_rows:   6" in profile.out
        once = portal(capsys, "experiment", "autocapture", *ctx)
        assert once.code == 0, once.err
    printed = watch_output.WatchPrinter.__call__

    def then_interrupt(self: Any, done: Pass) -> None:
        printed(self, done)
        raise KeyboardInterrupt

    monkeypatch.setattr(watch_output.WatchPrinter, "__call__", then_interrupt)
    assert portal(capsys, "experiment", "autocapture", "--watch", *ctx).code == 130
    assert "Traceback" not in capsys.readouterr().err
    assert (user_kubeconfig.read_bytes(), user_kubeconfig.stat().st_mtime_ns) == before
    assert list(user_kubeconfig.parent.iterdir()) == [user_kubeconfig]
