"""`tau serve deploy|status|scale|delete` end to end against the local Kubernetes API emulator.

Each test drives the real CLI (`tau.cli.main`) with $KUBECONFIG pointing at the emulator, so
flags, the client factory, the API calls over HTTP and the printed lines are all exercised.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tau.cli import main
from tau.k8s import meta
from tests.kubeapi.fixtures import EMULATOR_CONTEXT

NS = "serving"
IMAGE = "ghcr.io/example/chat:1.4.2"
RAY = "ray.io/v1"


@pytest.fixture
def tau(kube_api, kubeconfig_file, monkeypatch, capsys):
    """Run `tau ARGS...` against the emulator; returns (exit code, stdout, stderr)."""
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    monkeypatch.delenv("TAU_CONTEXT", raising=False)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return code, out, err

    return run


@pytest.fixture
def kuberay(kube_api):
    kube_api.register_kueue_kuberay_tau_kinds()
    return kube_api


def _deploy(tau, name: str = "chat", *extra: str) -> tuple[int, str, str]:
    return tau(
        "serve",
        "deploy",
        name,
        "--profile",
        "serve-cpu",
        "--image",
        IMAGE,
        "-n",
        NS,
        "--context",
        EMULATOR_CONTEXT,
        *extra,
    )


# ------------------------------------------------------------------------------------ deploy


def test_deploy_creates_the_rayservice_and_says_how_to_track_it(tau, kuberay):
    code, out, err = _deploy(tau)
    assert (code, err) == (0, "")
    assert out == (
        f"deployed service chat (kind=rayservice, profile=serve-cpu, image={IMAGE}, "
        f"ns={NS})\ntrack: tau serve status chat -n {NS} --kind rayservice\n"
    )
    stored = kuberay.get_object(RAY, "RayService", "chat", namespace=NS)
    assert stored["metadata"]["labels"][meta.LABEL_SERVICE] == "chat"
    assert "import_path: serve:app" in stored["spec"]["serveConfigV2"]


def test_the_deployed_object_is_the_client_dry_run_with_real_namespace_and_secrets(tau, kuberay):
    secret = ("--env-secret", "HF_TOKEN=hf-credentials:token")
    code, shown, _ = _deploy(tau, "chat", *secret, "--dry-run=client", "-o", "json")
    assert code == 0
    assert _deploy(tau, "chat", *secret)[0] == 0
    stored = kuberay.get_object(RAY, "RayService", "chat", namespace=NS)
    expected = json.loads(shown.replace('"<redacted>"', '"@"'))
    head = stored["spec"]["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]
    ref = next(e for e in head["containers"][0]["env"] if e["name"] == "HF_TOKEN")
    assert ref["valueFrom"]["secretKeyRef"] == {"name": "hf-credentials", "key": "token"}
    assert stored["spec"]["serveConfigV2"] == expected["spec"]["serveConfigV2"]
    assert stored["metadata"]["labels"] == expected["metadata"]["labels"]


def test_redeploying_replaces_the_service_in_place(tau, kuberay):
    assert _deploy(tau)[0] == 0
    first = kuberay.get_object(RAY, "RayService", "chat", namespace=NS)
    code, _, _ = tau(
        "serve",
        "deploy",
        "chat",
        "--profile",
        "serve-cpu",
        "--image",
        "ghcr.io/example/chat:1.5.0",
        "-n",
        NS,
        "--context",
        EMULATOR_CONTEXT,
    )
    assert code == 0
    second = kuberay.get_object(RAY, "RayService", "chat", namespace=NS)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["metadata"]["annotations"][meta.ANNOTATION_IMAGE] == "ghcr.io/example/chat:1.5.0"
    assert len(kuberay.list_objects(RAY, "RayService", namespace=NS)) == 1


def test_a_server_dry_run_sends_dry_run_all_and_persists_nothing(tau, kuberay):
    code, out, _ = _deploy(tau, "chat", "--dry-run=server")
    assert code == 0 and "server dry run" in out and "track:" not in out
    assert kuberay.list_objects(RAY, "RayService", namespace=NS) == []
    posts = [r for r in kuberay.requests if r.method == "POST"]
    assert posts and all(r.query.get("dryRun") == "All" for r in posts)


def test_a_deployment_service_creates_the_deployment_and_its_service(tau, kube_api):
    code, out, _ = _deploy(
        tau,
        "api",
        "--kind",
        "deployment",
        "--replicas",
        "2",
        "--port",
        "8080",
        "--service-port",
        "80",
    )
    assert code == 0 and "kind=deployment" in out
    deployment = kube_api.get_object("apps/v1", "Deployment", "api", namespace=NS)
    service = kube_api.get_object("v1", "Service", "api", namespace=NS)
    assert deployment["spec"]["replicas"] == 2
    assert service["spec"]["ports"][0]["port"] == 80
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


def test_redeploying_a_deployment_keeps_the_service(tau, kube_api):
    assert _deploy(tau, "api", "--kind", "deployment")[0] == 0
    assert _deploy(tau, "api", "--kind", "deployment", "--replicas", "3")[0] == 0
    assert (
        kube_api.get_object("apps/v1", "Deployment", "api", namespace=NS)["spec"]["replicas"] == 3
    )
    assert kube_api.get_object("v1", "Service", "api", namespace=NS) is not None


def test_redeploying_a_deployment_without_a_service_removes_the_earlier_service(tau, kube_api):
    assert _deploy(tau, "api", "--kind", "deployment")[0] == 0
    assert _deploy(tau, "api", "--kind", "deployment", "--service-port", "0")[0] == 0
    assert kube_api.get_object("v1", "Service", "api", namespace=NS) is None
    assert kube_api.get_object("apps/v1", "Deployment", "api", namespace=NS) is not None


def test_a_name_taken_by_an_object_tau_did_not_deploy_is_a_conflict(tau, kube_api):
    kube_api.put(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "api", "namespace": NS},
            "spec": {"replicas": 1},
        }
    )
    code, out, err = _deploy(tau, "api", "--kind", "deployment", "--service-port", "0")
    assert code == 3 and out == ""
    assert f"Deployment {NS}/api exists and was not deployed by tau serve" in err


def test_a_refused_deployment_creates_no_service_either(tau, kube_api):
    kube_api.put(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "api", "namespace": NS},
            "spec": {"replicas": 1},
        }
    )
    code, out, err = _deploy(tau, "api", "--kind", "deployment")
    assert code == 3 and out == ""
    assert f"Deployment {NS}/api exists and was not deployed by tau serve" in err
    # The Service comes first in apply order: it must not be left behind, selecting nothing.
    assert kube_api.get_object("v1", "Service", "api", namespace=NS) is None
    assert [r.method for r in kube_api.requests if r.method not in ("GET",)] == []


def test_deploy_needs_an_explicit_namespace(tau, kuberay):
    code, _, err = tau("serve", "deploy", "chat", "--profile", "serve-cpu", "--image", IMAGE)
    assert code == 1
    assert "tau serve deploy needs --namespace (-n)" in err
    assert "does not read tau/workspace.connection.yaml" in err


def test_the_context_defaults_to_tau_context(tau, kuberay, monkeypatch):
    monkeypatch.setenv("TAU_CONTEXT", EMULATOR_CONTEXT)
    code, _, _ = tau(
        "serve", "deploy", "chat", "--profile", "serve-cpu", "--image", IMAGE, "-n", NS
    )
    assert code == 0
    assert kuberay.get_object(RAY, "RayService", "chat", namespace=NS) is not None


def test_without_context_or_tau_context_the_current_context_is_used(tau, kuberay):
    code, _, _ = tau(
        "serve", "deploy", "chat", "--profile", "serve-cpu", "--image", IMAGE, "-n", NS
    )
    assert code == 0
    assert kuberay.get_object(RAY, "RayService", "chat", namespace=NS) is not None


def test_a_tau_context_naming_a_missing_context_says_where_the_name_came_from(
    tau, kuberay, monkeypatch
):
    monkeypatch.setenv("TAU_CONTEXT", "prod")
    code, _, err = tau("serve", "status", "chat", "-n", NS)
    assert code == 3 and 'kubeconfig context "prod" ($TAU_CONTEXT) is not in' in err


def test_an_unknown_context_is_a_clear_error(tau, kuberay):
    code, _, err = tau("serve", "status", "chat", "-n", NS, "--context", "nope")
    assert code == 3 and 'kubeconfig context "nope" (--context) is not in' in err
    assert f"available contexts: {EMULATOR_CONTEXT}" in err


def test_a_rayservice_without_kuberay_names_the_missing_operator(tau, kube_api):
    code, _, err = _deploy(tau)
    assert code == 3
    assert "RayService CRD not installed: is KubeRay installed?" in err


def _finetune_volume(tmp_path, status: str = "ready"):
    import json

    volume = tmp_path / "pvc"
    run = volume / "checkpoints" / "finetunes" / "run-7"
    run.mkdir(parents=True)
    (run / "artifacts.json").write_text(
        json.dumps(
            {
                "run": "run-7",
                "artifacts": [
                    {
                        "name": "final",
                        "status": status,
                        "durable_path": "/data/checkpoints/finetunes/run-7/final",
                    }
                ],
            }
        )
    )
    return volume


def test_serving_from_a_finetune_mounts_its_ready_artifact(tau, kuberay, kube_api, tmp_path):
    from tests.kubeapi.kubelet import FakeKubelet

    with FakeKubelet(kube_api, _finetune_volume(tmp_path)):
        code, _, err = _deploy(tau, "chat", "--from-finetune", "run-7")
    assert code == 0, err
    service = kube_api.get_object("ray.io/v1", "RayService", "chat", namespace=NS)
    assert "/data/checkpoints/finetunes/run-7/final" in json.dumps(service)


def test_a_finetune_whose_upload_is_not_ready_is_not_served(tau, kuberay, kube_api, tmp_path):
    from tests.kubeapi.kubelet import FakeKubelet

    with FakeKubelet(kube_api, _finetune_volume(tmp_path, status="uploading")):
        code, _, err = _deploy(tau, "chat", "--from-finetune", "run-7")
    assert code == 1 and "finetune run run-7 has no ready artifact" in err


# ------------------------------------------------------------------------------------ status


def test_status_of_a_rayservice_reads_serve_status_and_endpoints(tau, kuberay):
    _deploy(tau)
    kuberay.set_status(
        RAY,
        "RayService",
        "chat",
        {"serviceStatus": "Running", "numServeEndpoints": 2},
        namespace=NS,
    )
    code, out, _ = tau("serve", "status", "chat", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert code == 0
    header, line = out.splitlines()
    assert header.split() == ["NAME", "STATUS", "READY", "AGE"]
    assert re.fullmatch(r"chat +Running +2 +\d+s", line)


def test_status_as_json_carries_the_row_and_the_raw_status(tau, kuberay):
    _deploy(tau)
    kuberay.set_status(RAY, "RayService", "chat", {"numServeEndpoints": 0}, namespace=NS)
    code, out, _ = tau(
        "serve", "status", "chat", "-n", NS, "--context", EMULATOR_CONTEXT, "-o", "json"
    )
    doc = json.loads(out)
    assert code == 0
    assert (doc["name"], doc["status"], doc["ready"]) == ("chat", "<none>", 0)
    assert doc["raw"] == {"numServeEndpoints": 0}


def test_status_of_a_deployment_shows_ready_desired_available(tau, kube_api):
    _deploy(tau, "api", "--kind", "deployment", "--replicas", "3")
    kube_api.set_status(
        "apps/v1", "Deployment", "api", {"readyReplicas": 2, "availableReplicas": 1}, namespace=NS
    )
    code, out, _ = tau(
        "serve", "status", "api", "--kind", "deployment", "-n", NS, "--context", EMULATOR_CONTEXT
    )
    header, line = out.splitlines()
    assert code == 0 and header.split() == ["NAME", "READY", "DESIRED", "AVAILABLE", "AGE"]
    assert line.split()[:4] == ["api", "2", "3", "1"]


def _pod(name: str, status: dict) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "labels": {meta.LABEL_SERVICE: "api"}},
        "spec": {"containers": [{"name": "server", "image": "srv:1"}]},
        "status": status,
    }


def test_status_of_a_deployment_says_why_its_pods_are_not_ready(tau, kube_api):
    """Replica counts say how many; the pods say why not: a crash loop with its restarts and
    last exit code, a readiness probe the kubelet reports failing, a pod still unplaced."""
    _deploy(tau, "api", "--kind", "deployment", "--replicas", "3")
    crash = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {
                "name": "server",
                "ready": False,
                "restartCount": 4,
                "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 1m20s"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}},
            }
        ],
    }
    probe = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [
            {"name": "server", "ready": False, "restartCount": 0, "state": {"running": {}}}
        ],
    }
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    for name, status in (("api-a", crash), ("api-b", probe), ("api-c", ready)):
        kube_api.put(_pod(name, status))
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "api-b.1", "namespace": NS},
            "involvedObject": {"kind": "Pod", "name": "api-b", "namespace": NS},
            "reason": "Unhealthy",
            "type": "Warning",
            "message": "Readiness probe failed: HTTP probe failed with statuscode: 503",
            "lastTimestamp": "2026-12-06T10:00:00Z",
        }
    )
    flags = ("--kind", "deployment", "-n", NS, "--context", EMULATOR_CONTEXT)
    code, out, _ = tau("serve", "status", "api", *flags)
    assert code == 0
    assert out.splitlines()[2:] == [
        "pod api-a: CrashLoopBackOff, restarted 4 times, last exit 1: back-off 1m20s",
        "pod api-b: running, not ready: Readiness probe failed: HTTP probe failed with "
        "statuscode: 503",
    ]
    code, out, _ = tau("serve", "status", "api", *flags, "-o", "json")
    problems = json.loads(out)["not_ready"]
    assert [(p["pod"], p["reason"], p["restarts"], p["last_exit_code"]) for p in problems] == [
        ("api-a", "CrashLoopBackOff", 4, 1),
        ("api-b", "NotReady", 0, None),
    ]


def test_status_of_a_deployment_names_a_ready_pod_that_restarted_lately(tau, kube_api):
    """A server that crashes without a readiness probe is Ready for the moments it runs:
    the counts read healthy, so the restart of the last minutes is said under them."""
    _deploy(tau, "api", "--kind", "deployment", "--replicas", "2")
    now = dt.datetime.now(dt.UTC)

    def restarted(ago: dt.timedelta) -> dict:
        finished = (now - ago).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {
                    "name": "server",
                    "ready": True,
                    "restartCount": 3,
                    "state": {"running": {}},
                    "lastState": {
                        "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished}
                    },
                }
            ],
        }

    kube_api.put(_pod("api-a", restarted(dt.timedelta(seconds=40))))
    # A restart of hours ago is history, not news.
    kube_api.put(_pod("api-b", restarted(dt.timedelta(hours=2))))
    flags = ("--kind", "deployment", "-n", NS, "--context", EMULATOR_CONTEXT)
    code, out, _ = tau("serve", "status", "api", *flags)
    assert code == 0
    (line,) = out.splitlines()[2:]
    assert re.fullmatch(
        r"pod api-a: ready, but restarted 3 times, last exit 1 \(Error\) 4\ds ago", line
    )
    code, out, _ = tau("serve", "status", "api", *flags, "-o", "json")
    document = json.loads(out)
    assert document["not_ready"] == []
    assert [(r["pod"], r["restarts"], r["last_exit_code"]) for r in document["restarting"]] == [
        ("api-a", 3, 1)
    ]


def test_status_of_a_missing_service_says_it_is_not_found(tau, kuberay):
    code, out, err = tau("serve", "status", "ghost", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert (code, out) == (1, "")
    assert f'RayService "ghost" not found in namespace "{NS}"' in err


def test_status_rejects_an_unknown_output(tau, kuberay):
    code, _, err = tau("serve", "status", "chat", "-n", NS, "-o", "yaml")
    assert code == 1 and "--output must be one of: table, json" in err


# ------------------------------------------------------------------------------------- scale


def test_scale_sets_a_deployments_replicas(tau, kube_api):
    _deploy(tau, "api", "--kind", "deployment")
    code, out, _ = tau(
        "serve",
        "scale",
        "api",
        "--kind",
        "deployment",
        "--replicas",
        "4",
        "-n",
        NS,
        "--context",
        EMULATOR_CONTEXT,
    )
    assert code == 0 and out == f"scaled deployment api to 4 replicas (ns={NS})\n"
    assert (
        kube_api.get_object("apps/v1", "Deployment", "api", namespace=NS)["spec"]["replicas"] == 4
    )


def test_scale_refuses_a_rayservice_and_explains_why(tau, kuberay):
    code, _, err = tau("serve", "scale", "chat", "--replicas", "3", "-n", NS)
    assert code == 1
    assert (
        "serve scale --kind=rayservice: not yet implemented (serveConfigV2 is a string "
        "blob; redeploy with --replicas for now)" in err
    )
    assert "--min-replicas/--max-replicas" in err
    assert kuberay.requests == []


def test_scaling_a_missing_deployment_is_not_found(tau, kube_api):
    code, _, err = tau(
        "serve",
        "scale",
        "ghost",
        "--kind",
        "deployment",
        "--replicas",
        "2",
        "-n",
        NS,
        "--context",
        EMULATOR_CONTEXT,
    )
    assert code == 1 and f'Deployment "ghost" not found in namespace "{NS}"' in err


# ------------------------------------------------------------------------------------ delete


def test_delete_removes_the_rayservice_and_a_second_delete_succeeds(tau, kuberay):
    _deploy(tau)
    code, out, _ = tau("serve", "delete", "chat", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert code == 0 and out == f"deleted service chat (RayService/chat, ns={NS})\n"
    assert kuberay.get_object(RAY, "RayService", "chat", namespace=NS) is None
    code, out, _ = tau("serve", "delete", "chat", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert code == 0
    assert out == f"service chat (kind=rayservice) not found in ns={NS}: nothing to delete\n"


def test_deleting_a_deployment_removes_its_service_too(tau, kube_api):
    _deploy(tau, "api", "--kind", "deployment")
    code, out, _ = tau(
        "serve", "delete", "api", "--kind", "deployment", "-n", NS, "--context", EMULATOR_CONTEXT
    )
    assert code == 0 and "Deployment/api, Service/api" in out
    assert kube_api.get_object("v1", "Service", "api", namespace=NS) is None


def test_delete_leaves_a_service_of_the_same_name_that_tau_did_not_create(tau, kube_api):
    _deploy(tau, "api", "--kind", "deployment", "--service-port", "0")
    kube_api.put(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "api", "namespace": NS},
            "spec": {"ports": [{"port": 1}]},
        }
    )
    code, out, _ = tau(
        "serve", "delete", "api", "--kind", "deployment", "-n", NS, "--context", EMULATOR_CONTEXT
    )
    assert code == 0 and "Service/api" not in out
    assert kube_api.get_object("v1", "Service", "api", namespace=NS) is not None


def test_delete_without_kuberay_is_an_error_not_a_silent_success(tau, kube_api):
    code, _, err = tau("serve", "delete", "chat", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert code == 3 and "RayService CRD not installed" in err


# -------------------------------------------------------------------------------- transport


def test_an_unreachable_cluster_is_a_clear_error(tau, kube_api):
    kube_api.stop()
    code, _, err = tau("serve", "status", "chat", "-n", NS, "--context", EMULATOR_CONTEXT)
    assert code == 3 and "connection to the Kubernetes API server for context" in err


def test_importing_the_serve_cli_does_not_import_the_kubernetes_client():
    root = Path(__file__).resolve().parents[1]
    code = (
        "import sys; import tau.cli.serve, tau.serving.apply, tau.serving.observe; "
        "sys.exit('kubernetes' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=root, check=False)
    assert done.returncode == 0
