"""A researcher's model services, end to end on the real control plane: `tau serve deploy`,
`status`, `scale` and `delete` of a Deployment service (pods on the fake GPU nodes) and of a
RayService (KubeRay makes its RayCluster, talks to the fake Ray head and reports it Ready), as
the researcher identity that RBAC confines to its namespace.

Serving does not activate tau/workspace.connection.yaml (the seed): every command names the
namespace and the context explicitly, even though it runs inside the connected repository.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Shell, wait_for
from tests.e2e.controlplane.objects import Api

pytestmark = pytest.mark.e2e

RAY = "ray.io/v1"
KUEUE = "kueue.x-k8s.io/v1beta2"
IMAGE = "ghcr.io/example/api:3.1.0"
#: A catalog preset with one GPU per replica: its pods tolerate the GPU nodes' taints.
GPU_PROFILE = "azure.research.eval.gpu"
SERVICE_LABEL = "tau.azure.com/service"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


@pytest.fixture
def cleanup(admin: Api, researcher) -> Iterator[list[tuple[str, str, str]]]:
    """Objects a test made (api version, kind, name): removed as admin even when it failed,
    so no GPU stays taken outside Kueue's accounting for the tests that follow."""
    made: list[tuple[str, str, str]] = []
    yield made
    for api_version, kind, name in made:
        admin.delete(api_version, kind, name, researcher.namespace)


def serve(
    repo: Shell, researcher, verb: str, name: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """`tau serve VERB NAME ARGS -n NS --context CTX`, the way the seed says to call it."""
    return repo.tau(
        "serve", verb, name, *args, "-n", researcher.namespace, "--context", researcher.context
    )


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, (
        f"{proc.args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    )
    assert proc.stderr == ""
    return proc.stdout


def pods(admin: Api, ns: str, service: str) -> list[dict[str, Any]]:
    return admin.list("v1", "Pod", ns, label_selector=f"{SERVICE_LABEL}={service}")


def running(pod: dict[str, Any]) -> bool:
    meta = pod["metadata"]
    return not meta.get("deletionTimestamp") and (pod.get("status") or {}).get("phase") == "Running"


def status_json(repo: Shell, researcher, name: str, kind: str) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(
        ok(serve(repo, researcher, "status", name, "--kind", kind, "-o", "json"))
    )
    return doc


def table(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()]


def workloads_of(admin: Api, ns: str, owners: set[str]) -> list[dict[str, Any]]:
    return [
        w
        for w in admin.list(KUEUE, "Workload", ns)
        if any(o["name"] in owners for o in w["metadata"].get("ownerReferences") or [])
    ]


# ------------------------------------------------------------------------------- deployment


def test_a_deployment_service_deploys_scales_and_deletes(
    repo: Shell, admin: Api, researcher, cleanup
) -> None:
    ns, name = researcher.namespace, "serve-e2e-api"
    cleanup += [("apps/v1", "Deployment", name), ("v1", "Service", name)]
    out = ok(
        serve(
            repo,
            researcher,
            "deploy",
            name,
            "--kind=deployment",
            "--profile",
            GPU_PROFILE,
            "--image",
            IMAGE,
        )
    )
    assert out == (
        f"deployed service {name} (kind=deployment, profile={GPU_PROFILE}, image={IMAGE}, "
        f"ns={ns})\ntrack: tau serve status {name} -n {ns} --kind deployment\n"
    )

    deployment = admin.get("apps/v1", "Deployment", name, ns)
    service = admin.get("v1", "Service", name, ns)
    assert deployment is not None and service is not None
    assert deployment["spec"]["replicas"] == 1
    assert service["spec"]["selector"] == {SERVICE_LABEL: name}
    # A service is not queued: tau names no LocalQueue, so Kueue leaves its pods alone.
    template = deployment["spec"]["template"]["metadata"]
    assert QUEUE_LABEL not in deployment["metadata"]["labels"]
    assert QUEUE_LABEL not in template["labels"]

    first = wait_for("a Running pod", lambda: [p for p in pods(admin, ns, name) if running(p)])[0]
    assert first["spec"]["nodeName"].startswith("gpu-h100-")
    assert not first["spec"].get("schedulingGates")
    assert workloads_of(admin, ns, {first["metadata"]["name"], name}) == []

    # status reads the live Deployment: once the controller counts the Ready pod, so does tau.
    doc = wait_for(
        "tau serve status to count an available replica",
        lambda: (d := status_json(repo, researcher, name, "deployment"))["available"] == 1 and d,
    )
    live = admin.get("apps/v1", "Deployment", name, ns) or {}
    assert (doc["name"], doc["namespace"], doc["kind"]) == (name, ns, "deployment")
    assert (doc["ready"], doc["desired"], doc["available"]) == (1, 1, 1)
    assert doc["raw"]["observedGeneration"] == live["metadata"]["generation"]
    rows = table(ok(serve(repo, researcher, "status", name, "--kind", "deployment")))
    assert rows[0] == ["NAME", "READY", "DESIRED", "AVAILABLE", "AGE"]
    assert rows[1][:4] == [name, "1", "1", "1"] and re.fullmatch(r"\d+[smhd]", rows[1][4])

    out = ok(serve(repo, researcher, "scale", name, "--kind", "deployment", "--replicas", "2"))
    assert out == f"scaled deployment {name} to 2 replicas (ns={ns})\n"
    assert (admin.get("apps/v1", "Deployment", name, ns) or {})["spec"]["replicas"] == 2
    both = wait_for(
        "two Running pods",
        lambda: len(r := [p for p in pods(admin, ns, name) if running(p)]) == 2 and r,
    )
    assert all(p["spec"]["nodeName"].startswith("gpu-h100-") for p in both)
    assert first["metadata"]["name"] in {p["metadata"]["name"] for p in both}
    wait_for(
        "tau serve status to show 2 of 2",
        lambda: (
            table(ok(serve(repo, researcher, "status", name, "--kind", "deployment")))[1][:4]
            == [name, "2", "2", "2"]
        ),
    )

    out = ok(serve(repo, researcher, "delete", name, "--kind", "deployment"))
    assert out == f"deleted service {name} (Deployment/{name}, Service/{name}, ns={ns})\n"
    assert admin.get("apps/v1", "Deployment", name, ns) is None
    assert admin.get("v1", "Service", name, ns) is None
    wait_for("its pods to go", lambda: pods(admin, ns, name) == [])
    # Deleting what is gone succeeds and says so; status then reports it missing.
    out = ok(serve(repo, researcher, "delete", name, "--kind", "deployment"))
    assert out == f"service {name} (kind=deployment) not found in ns={ns}: nothing to delete\n"
    gone = serve(repo, researcher, "status", name, "--kind", "deployment")
    assert (gone.returncode, gone.stdout) == (1, "")
    assert f'Deployment "{name}" not found in namespace "{ns}"' in gone.stderr


# ------------------------------------------------------------------------------- rayservice


def ray_cluster_of(admin: Api, ns: str, name: str) -> list[dict[str, Any]]:
    return [
        c
        for c in admin.list(RAY, "RayCluster", ns)
        if any(
            (o["kind"], o["name"]) == ("RayService", name)
            for o in c["metadata"].get("ownerReferences") or []
        )
    ]


def test_a_rayservice_deploys_through_kuberay_refuses_scale_and_deletes(
    repo: Shell, admin: Api, researcher, cleanup
) -> None:
    ns, name = researcher.namespace, "serve-e2e-chat"
    cleanup.append((RAY, "RayService", name))
    # The default kind is a RayService: no --kind.
    out = ok(serve(repo, researcher, "deploy", name, "--profile", GPU_PROFILE, "--image", IMAGE))
    assert out == (
        f"deployed service {name} (kind=rayservice, profile={GPU_PROFILE}, image={IMAGE}, "
        f"ns={ns})\ntrack: tau serve status {name} -n {ns} --kind rayservice\n"
    )
    stored = admin.get(RAY, "RayService", name, ns)
    assert stored is not None and "import_path: serve:app" in stored["spec"]["serveConfigV2"]

    # KubeRay makes the RayCluster; its head and its GPU worker run on the fake nodes.
    cluster = wait_for("KubeRay's RayCluster", lambda: ray_cluster_of(admin, ns, name))[0]
    cluster_name = cluster["metadata"]["name"]
    live = wait_for(
        "a Running head and worker",
        lambda: (
            len(
                r := [
                    p
                    for p in admin.list(
                        "v1", "Pod", ns, label_selector=f"ray.io/cluster={cluster_name}"
                    )
                    if running(p)
                ]
            )
            == 2
            and r
        ),
    )
    by_type = {p["metadata"]["labels"]["ray.io/node-type"]: p for p in live}
    assert by_type["worker"]["spec"]["nodeName"].startswith("gpu-h100-")
    assert by_type["head"]["spec"]["nodeName"] == "cpu-0"

    # KubeRay deploys the Serve app to the (fake) head and reports the service Ready: so does tau.
    doc = wait_for(
        "tau serve status to say Running",
        lambda: (
            (d := status_json(repo, researcher, name, "rayservice"))["status"] == "Running" and d
        ),
        timeout=180,
    )
    assert (doc["name"], doc["namespace"], doc["kind"]) == (name, ns, "rayservice")
    assert doc["raw"]["activeServiceStatus"]["rayClusterName"] == cluster_name
    rows = table(ok(serve(repo, researcher, "status", name)))
    assert rows[0] == ["NAME", "STATUS", "READY", "AGE"]
    assert rows[1][:3] == [name, "Running", str(doc["ready"])]

    # Direct scale is for Deployments only: refused before any API call, the service unchanged.
    refused = serve(repo, researcher, "scale", name, "--replicas", "3")
    assert (refused.returncode, refused.stdout) == (1, "")
    assert refused.stderr.startswith(
        "error: serve scale --kind=rayservice: not yet implemented (serveConfigV2 is a string "
        "blob; redeploy with --replicas for now)\n  hint: "
    )
    assert "--min-replicas/--max-replicas" in refused.stderr
    after = admin.get(RAY, "RayService", name, ns) or {}
    assert after["metadata"]["generation"] == stored["metadata"]["generation"]
    assert after["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] == 1

    # What the refusal says to do instead: redeploy with the new size. KubeRay rolls out a
    # RayCluster of that size (zero downtime) and moves the service to it.
    out = ok(
        serve(
            repo,
            researcher,
            "deploy",
            name,
            "--profile",
            GPU_PROFILE,
            "--image",
            IMAGE,
            "--replicas",
            "2",
        )
    )
    assert out.startswith(f"deployed service {name} (kind=rayservice, ")
    redeployed = admin.get(RAY, "RayService", name, ns) or {}
    assert redeployed["metadata"]["uid"] == stored["metadata"]["uid"]

    def active_with_two_workers() -> dict[str, Any] | None:
        doc = status_json(repo, researcher, name, "rayservice")
        active = (doc["raw"].get("activeServiceStatus") or {}).get("rayClusterName")
        if doc["status"] != "Running" or not active or active == cluster_name:
            return None
        workers = [
            p
            for p in admin.list(
                "v1", "Pod", ns, label_selector=f"ray.io/cluster={active},ray.io/node-type=worker"
            )
            if running(p)
        ]
        return doc if len(workers) == 2 else None

    resized = wait_for(
        "the service on a RayCluster of 2 workers", active_with_two_workers, timeout=180
    )
    new_cluster = resized["raw"]["activeServiceStatus"]["rayClusterName"]
    assert resized["raw"]["activeServiceStatus"]["rayClusterStatus"]["desiredWorkerReplicas"] == 2

    out = ok(serve(repo, researcher, "delete", name))
    assert out == f"deleted service {name} (RayService/{name}, ns={ns})\n"
    wait_for("the RayService to go", lambda: admin.get(RAY, "RayService", name, ns) is None)
    wait_for("its RayClusters to go", lambda: ray_cluster_of(admin, ns, name) == [])
    clusters = f"ray.io/cluster in ({cluster_name},{new_cluster})"
    wait_for("the pods of both to go", lambda: admin.list("v1", "Pod", ns, clusters) == [])
    out = ok(serve(repo, researcher, "delete", name))
    assert out == f"service {name} (kind=rayservice) not found in ns={ns}: nothing to delete\n"


# ------------------------------------------------------------------- redeploy, rules, refusals


def test_redeploying_a_deployment_service_replaces_it_in_place_and_rolls_its_pods(
    repo: Shell, admin: Api, researcher, cleanup
) -> None:
    ns, name = researcher.namespace, "serve-e2e-roll"
    cleanup += [("apps/v1", "Deployment", name), ("v1", "Service", name)]
    deploy = ("deploy", name, "--kind=deployment", "--profile", GPU_PROFILE)
    ok(serve(repo, researcher, *deploy, "--image", IMAGE))
    first = admin.get("apps/v1", "Deployment", name, ns) or {}
    service = admin.get("v1", "Service", name, ns) or {}
    wait_for("a Running pod", lambda: [p for p in pods(admin, ns, name) if running(p)])

    newer = "ghcr.io/example/api:3.2.0"
    out = ok(serve(repo, researcher, *deploy, "--image", newer, "--replicas", "2"))
    assert out.startswith(f"deployed service {name} (kind=deployment, ") and f"image={newer}" in out
    # The same objects, updated: a replace keeps the Deployment and the Service's cluster IP.
    second = admin.get("apps/v1", "Deployment", name, ns) or {}
    again = admin.get("v1", "Service", name, ns) or {}
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["metadata"]["generation"] > first["metadata"]["generation"]
    assert second["metadata"]["annotations"]["tau.azure.com/image"] == newer
    assert (again["metadata"]["uid"], again["spec"]["clusterIP"]) == (
        service["metadata"]["uid"],
        service["spec"]["clusterIP"],
    )
    wait_for(
        "two Running pods of the new image, and none of the old",
        lambda: (
            sorted(p["spec"]["containers"][0]["image"] for p in pods(admin, ns, name) if running(p))
            == [newer, newer]
            and len(pods(admin, ns, name)) == 2
        ),
    )
    wait_for(
        "tau serve status to show 2 of 2",
        lambda: status_json(repo, researcher, name, "deployment")["available"] == 2,
    )
    ok(serve(repo, researcher, "delete", name, "--kind=deployment"))
    wait_for("its pods to go", lambda: pods(admin, ns, name) == [])


def test_a_server_dry_run_is_checked_by_the_api_server_and_persists_nothing(
    repo: Shell, admin: Api, researcher
) -> None:
    ns, name = researcher.namespace, "serve-e2e-dry"
    for kind in ("deployment", "rayservice"):
        out = ok(
            serve(
                repo,
                researcher,
                "deploy",
                name,
                f"--kind={kind}",
                "--profile",
                GPU_PROFILE,
                "--image",
                IMAGE,
                "--dry-run=server",
            )
        )
        assert out == (
            f"deployed service {name} (kind={kind}, profile={GPU_PROFILE}, image={IMAGE}, "
            f"ns={ns}) [server dry run: validated, nothing persisted]\n"
        )
    assert admin.get("apps/v1", "Deployment", name, ns) is None
    assert admin.get("v1", "Service", name, ns) is None
    assert admin.get(RAY, "RayService", name, ns) is None


def test_serving_takes_no_namespace_from_the_connected_repository(repo: Shell) -> None:
    # The repository's tau/workspace.connection.yaml names the workspace; serving ignores it.
    for verb in ("status", "delete"):
        proc = repo.tau("serve", verb, "serve-e2e-any")
        assert (proc.returncode, proc.stdout) == (1, "")
        assert proc.stderr == (
            f"error: tau serve {verb} needs --namespace (-n)\n"
            "  hint: serving does not read tau/workspace.connection.yaml: pass -n NAMESPACE "
            "(and --context or $TAU_CONTEXT for the cluster)\n"
        )


def test_a_name_taken_by_an_object_tau_did_not_deploy_is_refused_and_nothing_is_created(
    repo: Shell, admin: Api, researcher, cleanup
) -> None:
    ns, name = researcher.namespace, "serve-e2e-taken"
    cleanup += [("apps/v1", "Deployment", name), ("v1", "Service", name)]
    labels = {"app": name}
    theirs = admin.apply(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
                },
            },
        }
    )
    proc = serve(
        repo,
        researcher,
        "deploy",
        name,
        "--kind=deployment",
        "--profile",
        GPU_PROFILE,
        "--image",
        IMAGE,
    )
    assert (proc.returncode, proc.stdout) == (3, "")
    assert proc.stderr == (
        f"error: Deployment {ns}/{name} exists and was not deployed by tau serve\n"
        "  hint: choose another service name, or remove that object yourself if it is really "
        "unused\n"
    )
    # Theirs is untouched, and no Service of tau's was left behind selecting nothing.
    after = admin.get("apps/v1", "Deployment", name, ns) or {}
    assert after["metadata"]["generation"] == theirs["metadata"]["generation"]
    assert after["metadata"].get("labels") == theirs["metadata"].get("labels")
    assert admin.get("v1", "Service", name, ns) is None


def test_rbac_confines_serving_to_the_researchers_namespace(repo: Shell, researcher) -> None:
    ctx = researcher.context
    denied = (
        f'on context "{ctx}" (403 Forbidden)\n  hint: ask your platform operator (the '
        "TauWorkspace owner) to grant your identity access\n"
    )
    cases = [
        (
            (
                "deploy",
                "serve-e2e-out",
                "--kind=deployment",
                "--profile",
                GPU_PROFILE,
                "--image",
                IMAGE,
            ),
            'create services "serve-e2e-out"',
        ),
        (("status", "serve-e2e-out"), 'get rayservices.ray.io "serve-e2e-out"'),
        (
            ("delete", "serve-e2e-out", "--kind=deployment"),
            'delete deployments.apps "serve-e2e-out"',
        ),
    ]
    for argv, what in cases:
        proc = repo.tau("serve", *argv, "-n", "default", "--context", ctx)
        assert (proc.returncode, proc.stdout) == (3, "")
        assert proc.stderr == (
            f'error: you are not allowed to {what} in namespace "default" ' + denied
        )
