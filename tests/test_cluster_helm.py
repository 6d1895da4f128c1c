"""`tau cluster install|uninstall` drive a fake `helm` on PATH: the exact invocations, Helm 3 vs 4,
dry-run, drain, and the failure paths. The readiness report reads the API emulator."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tau.cli import main
from tau.cluster.helm import HelmMissing, find_helm, parse_version
from tests.cluster_objects import fake_helm_env, helm_calls, install_ready_cluster, operator_shell
from tests.kubeapi.fixtures import EMULATOR_CONTEXT
from tests.kubeapi.server import KubeApiServer

CHART = "oci://mcr.microsoft.com/aks/ai-runtime/helm/taugrid"
DEPLOYED = {"name": "taugrid", "namespace": "tau-system", "chart": "taugrid", "version": "0.3.1"}


@pytest.fixture
def env(kube_api: KubeApiServer, kubeconfig_file: Path, tmp_path: Path, monkeypatch):
    operator_shell(kubeconfig_file, tmp_path, monkeypatch)
    install_ready_cluster(kube_api)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["cluster", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def access_flags(call: list[str], tmp_path: Path) -> tuple[str, str]:
    assert call.count("--kubeconfig") == 1 and call.count("--kube-context") == 1
    kubeconfig = call[call.index("--kubeconfig") + 1]
    assert kubeconfig.startswith(str(tmp_path / "cfg")), "helm gets tau's dedicated kubeconfig"
    return kubeconfig, call[call.index("--kube-context") + 1]


def test_first_install_bootstraps_then_upgrades_then_reports_ready(
    env, monkeypatch, capsys
) -> None:
    log = fake_helm_env(monkeypatch, env)
    code, out, err = run(capsys, "install", "--context", EMULATOR_CONTEXT)
    assert code == 0, err
    assert out.startswith("TauGrid installation plan\n")
    calls = helm_calls(log)
    assert [c[0] for c in calls] == ["version", "list", "upgrade", "upgrade"]
    boot, main_pass = calls[2], calls[3]
    base = [
        "upgrade",
        "--install",
        "taugrid",
        CHART,
        "--namespace",
        "tau-system",
        "--version",
        "0.3.2",
        "--timeout",
        "15m",
        "--create-namespace",
        "--dependency-update",
    ]
    assert boot[: len(base)] == base and main_pass[: len(base)] == base
    assert "--wait" in boot and boot[-6:-4] == ["--set", "baselineQueue.enabled=false"]
    assert "--reset-values" in main_pass and "--wait" not in main_pass
    assert "baselineQueue.enabled=false" not in main_pass
    assert "--server-side=true" not in main_pass and "--atomic" not in main_pass
    for call in calls[1:]:
        assert access_flags(call, env)[1] == EMULATOR_CONTEXT
    assert "Bootstrap:" in out and out.index("Bootstrap:") < out.index("Install:") < out.index(
        "Readiness:"
    )
    assert "  ok kubernetes: v1.33.0-tau-emulator (>= 1.30)" in out
    assert "summary: 7 passed, 0 warnings, 0 errors" in out and "Next:" in out


def test_upgrade_of_an_existing_release_skips_the_bootstrap(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    code, out, _ = run(
        capsys,
        "install",
        "--context",
        EMULATOR_CONTEXT,
        "--version",
        "0.3.3",
        "-f",
        str(write(env / "v.yaml", "nodeHealth:\n  enabled: true\n")),
        "--set",
        "kueue.enabled=true",
        "--set-string",
        "token=s3cret",
        "--atomic",
        "--wait",
        "--no-create-namespace",
        "--timeout",
        "5m",
    )
    assert code == 0
    calls = helm_calls(log)
    assert [c[0] for c in calls] == ["version", "list", "upgrade"]
    upgrade = calls[2]
    assert upgrade[upgrade.index("--version") + 1] == "0.3.3"
    assert upgrade[upgrade.index("--timeout") + 1] == "5m"
    assert {"--atomic", "--wait", "--reset-values"} <= set(upgrade)
    assert "--create-namespace" not in upgrade
    vals = upgrade[upgrade.index("--values") : upgrade.index("--kubeconfig")]
    assert vals == [
        "--values",
        str(env / "v.yaml"),
        "--set",
        "kueue.enabled=true",
        "--set-string",
        "token=s3cret",
    ]
    assert "s3cret" not in out, "--set values are never printed"
    assert "Opt-in:" in out and "nodeHealth" in out.split("Opt-in:")[1].splitlines()[0]


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_helm_4_gets_rollback_on_failure_and_server_side_apply(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, version="v4.0.1+g12500dd", releases=[DEPLOYED])
    assert run(capsys, "install", "--context", EMULATOR_CONTEXT, "--atomic")[0] == 0
    upgrade = helm_calls(log)[-1]
    assert "--rollback-on-failure" in upgrade and "--atomic" not in upgrade
    assert "--server-side=true" in upgrade and "--force-conflicts" in upgrade


def test_refuses_a_release_that_exists_in_another_namespace(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[dict(DEPLOYED, namespace="other")])
    code, out, err = run(capsys, "install", "--context", EMULATOR_CONTEXT)
    assert code == 1 and out.startswith("TauGrid installation plan\n")
    assert 'release "taugrid" already exists in namespace "other"' in err
    assert [c[0] for c in helm_calls(log)] == ["version", "list"], "nothing was applied"


def test_dry_run_is_offline_and_prints_the_render_summary(
    env, monkeypatch, capsys, kube_api
) -> None:
    log = fake_helm_env(monkeypatch, env)
    kube_api.reset_requests()
    code, out, err = run(capsys, "install", "--dry-run")
    assert code == 0, err
    calls = helm_calls(log)
    assert [c[0] for c in calls] == ["version", "template"]
    template = calls[1]
    assert "--include-crds" in template and "--kubeconfig" not in template
    assert (
        json.loads((env / "helm-calls.jsonl").read_text().splitlines()[1])["KUBECONFIG"]
        == "/dev/null"
    )
    assert kube_api.requests == [], "a dry run never contacts the cluster"
    assert "TauGrid render summary (nothing was applied)" in out
    assert "  CustomResourceDefinition: 3" in out and "  Total:" in out
    assert out.rstrip().splitlines()[-1].split() == ["Total:", "14"]


def test_missing_helm_fails_first_naming_the_minimum_version(
    env, monkeypatch, capsys, kube_api
) -> None:
    monkeypatch.setenv("PATH", str(env / "empty"))
    monkeypatch.delenv("TAU_HELM", raising=False)
    kube_api.reset_requests()
    code, out, err = run(capsys, "install", "--context", EMULATOR_CONTEXT)
    assert code == 1 and out == ""
    assert "helm not found on PATH" in err and "Helm 3.14.0 or newer" in err and "helm.sh" in err
    assert kube_api.requests == []
    code, _, err = run(capsys, "uninstall", "--yes")
    assert code == 1 and "helm not found" in err


def test_too_old_helm_is_refused() -> None:
    def runner(argv, **_kw):
        return subprocess.CompletedProcess(argv, 0, "v3.9.4+g1234\n", "")

    with pytest.raises(HelmMissing, match=r"helm 3\.9\.4 .* too old"):
        find_helm({"TAU_HELM": "/opt/helm", "PATH": ""}, runner=runner)
    assert parse_version('version.BuildInfo{Version:"v3.15.4"}') == (3, 15, 4)


def test_helm_failure_exits_three_with_helms_message(env, monkeypatch, capsys) -> None:
    fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    monkeypatch.setenv("FAKE_HELM_FAIL", "upgrade:1")
    code, _, err = run(capsys, "install", "--context", EMULATOR_CONTEXT)
    assert code == 3
    assert "the main pass (helm upgrade --install) failed (helm exited 1)" in err
    assert "fake upgrade failure" in err and "Traceback" not in err


def test_helm_that_hangs_is_stopped(env, monkeypatch, capsys) -> None:
    from tau.cluster import helm as helm_module

    fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    monkeypatch.setenv("FAKE_HELM_SLEEP", "upgrade:30")
    monkeypatch.setattr(helm_module, "KILL_GRACE_SECONDS", 0.0)
    code, _, err = run(capsys, "install", "--context", EMULATOR_CONTEXT, "--timeout", "1s")
    assert code == 3 and "did not finish within 1s" in err


def test_not_ready_after_install_exits_one_with_the_failing_checks(
    env, monkeypatch, capsys, kube_api
) -> None:
    fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    kube_api.delete_object("tau.azure.com/v1alpha1", "TauCluster", "cluster", None)
    code, out, _ = run(capsys, "install", "--context", EMULATOR_CONTEXT, "--timeout", "1s")
    assert code == 1
    assert '  error taucluster: TauCluster "cluster" not found' in out
    assert "summary: 6 passed, 0 warnings, 1 errors" in out and "Next:" not in out


def test_bad_install_flags_are_usage_errors(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env)
    code, _, err = run(capsys, "install", "--timeout", "forever")
    assert code == 1 and "--timeout" in err
    code, _, err = run(capsys, "install", "--set", "novalue")
    assert code == 1 and '--set "novalue": expected KEY=VALUE' in err
    code, _, err = run(capsys, "install", "-f", str(env / "missing.yaml"))
    assert code == 1 and "missing.yaml" in err
    assert [c[0] for c in helm_calls(log)] == ["version"] * 3


# ---------------------------------------------------------------------------- uninstall


def test_uninstall_requires_yes(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    code, out, err = run(capsys, "uninstall", "--context", EMULATOR_CONTEXT)
    assert code == 1 and "without --yes" in err and out == ""
    assert [c[0] for c in helm_calls(log)] == ["version"]


def test_uninstall_drains_pinned_to_the_deployed_version_then_uninstalls(
    env, monkeypatch, capsys
) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    code, out, err = run(capsys, "uninstall", "--context", EMULATOR_CONTEXT, "--yes")
    assert code == 0, err
    calls = helm_calls(log)
    assert [c[0] for c in calls] == ["version", "status", "upgrade", "uninstall"]
    drain = calls[2]
    assert drain[:8] == [
        "upgrade",
        "taugrid",
        CHART,
        "--namespace",
        "tau-system",
        "--version",
        "0.3.1",
        "--reuse-values",
    ]
    assert "baselineQueue.enabled=false" in drain and "--install" not in drain
    uninstall = calls[3]
    assert uninstall[:5] == [
        "uninstall",
        "taugrid",
        "--namespace",
        "tau-system",
        "--ignore-not-found",
    ]
    assert "--wait" in uninstall and "--keep-history" not in uninstall
    for call in calls[1:]:
        access_flags(call, env)
    assert out.startswith("TauGrid uninstall plan\n")
    assert out.index("Phase 1") < out.index("Phase 2")


def test_drain_is_skipped_when_the_chart_name_differs(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[dict(DEPLOYED, chart="other-chart")])
    code, out, _ = run(
        capsys,
        "uninstall",
        "--context",
        EMULATOR_CONTEXT,
        "--yes",
        "--no-wait",
        "--keep-history",
        "--no-hooks",
    )
    assert code == 0
    assert 'skipped: the deployed chart is "other-chart", not "taugrid"' in out
    calls = helm_calls(log)
    assert [c[0] for c in calls] == ["version", "status", "uninstall"]
    assert {"--keep-history", "--no-hooks"} <= set(calls[2]) and "--wait" not in calls[2]


def test_failed_drain_prints_recovery_and_does_not_uninstall(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    monkeypatch.setenv("FAKE_HELM_FAIL", "upgrade:1")
    code, out, err = run(capsys, "uninstall", "--context", EMULATOR_CONTEXT, "--yes")
    assert code == 3 and "draining the queue policy" in err
    assert "Recovery:" in out and "kubectl delete workloads.kueue.x-k8s.io" in out
    assert "kubectl patch clusterqueue taugrid-cq --type=merge" in out and "finalizers" in out
    assert "uninstall" not in [c[0] for c in helm_calls(log)]


def test_uninstall_dry_run_changes_nothing(env, monkeypatch, capsys) -> None:
    log = fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    code, out, _ = run(capsys, "uninstall", "--context", EMULATOR_CONTEXT, "--dry-run")
    assert code == 0 and "(dry run: not run; nothing was changed)" in out
    assert [c[0] for c in helm_calls(log)] == ["version", "status"]


def test_uninstall_never_deletes_pvcs_storageclasses_secrets_or_namespaces(
    env, monkeypatch, capsys, kube_api
) -> None:
    fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    keep = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "blob-training", "namespace": "team-a"},
            "spec": {},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "hf-token", "namespace": "team-a"},
            "data": {},
        },
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "azureblob-fuse"},
            "provisioner": "blob.csi.azure.com",
        },
    ]
    for obj in keep:
        kube_api.put(obj)
    kube_api.reset_requests()
    assert run(capsys, "uninstall", "--context", EMULATOR_CONTEXT, "--yes")[0] == 0
    # tau itself sends no write to the API; only `helm uninstall` of the release runs.
    assert [r.method for r in kube_api.requests if r.method != "GET"] == []
    for obj in keep:
        ns = obj["metadata"].get("namespace")
        assert (
            kube_api.get_object(obj["apiVersion"], obj["kind"], obj["metadata"]["name"], ns)
            is not None
        )


# ---------------------------------------------------------------------------- validate installation


def test_validate_installation_reports_and_exits_by_errors(env, capsys, kube_api) -> None:
    code, out, _ = run(capsys, "validate", "installation", "--context", EMULATOR_CONTEXT)
    assert code == 0 and "summary: 7 passed, 0 warnings, 0 errors" in out
    kube_api.put(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "kuberay-operator",
                "namespace": "tau-system",
                "labels": {"app.kubernetes.io/instance": "taugrid"},
            },
            "spec": {"replicas": 1},
            "status": {"availableReplicas": 0},
        }
    )
    code, out, _ = run(capsys, "validate", "installation", "--context", EMULATOR_CONTEXT)
    assert code == 1 and "  error deployment/kuberay-operator: 0/1 available in tau-system" in out


def test_explain_values_table_and_json(capsys) -> None:
    code, out, _ = run(capsys, "explain-values")
    assert code == 0 and out.splitlines()[0].split()[:4] == ["KEY", "TYPE", "DEFAULT", "TAU"]
    assert "baselineQueue.enabled" in out
    code, out, _ = run(capsys, "explain-values", "-o", "json")
    keys = {v["key"]: v for v in json.loads(out)["values"]}
    assert keys["baselineQueue.enabled"]["default"] == "true" and code == 0
    assert run(capsys, "explain-values", "-o", "yaml")[0] == 1


def test_operator_help_says_cluster_admin(capsys) -> None:
    for argv in (["--help"], ["install", "--help"], ["validate", "--help"]):
        main(["cluster", *argv])
        assert "cluster-admin" in " ".join(capsys.readouterr().out.split())


def test_offline_operator_commands_do_not_import_the_kubernetes_client(
    tmp_path, monkeypatch
) -> None:
    from tests.test_lazy_imports import ROOT, imported, modules_after

    fake_helm_env(monkeypatch, tmp_path)  # os.environ: the child process inherits it
    for argv in (["cluster", "explain-values"], ["cluster", "install", "--dry-run"]):
        code, modules = modules_after(argv, ROOT)
        assert code == 0 and not imported(modules, "kubernetes"), argv


def test_components_turned_off_are_reported_not_waited_for(
    env, monkeypatch, capsys, kube_api
) -> None:
    fake_helm_env(monkeypatch, env, releases=[DEPLOYED])
    kube_api.delete_object("kueue.x-k8s.io/v1beta2", "ClusterQueue", "taugrid-cq", None)
    code, out, _ = run(
        capsys,
        "install",
        "--context",
        EMULATOR_CONTEXT,
        "--set",
        "baselineQueue.enabled=false",
    )
    assert code == 0
    assert "  ok clusterqueue/taugrid-cq: not created (baselineQueue.enabled=false)" in out
