"""Rules for `tau serve deploy` that hold beyond the goldens: flag checks, paths, render shape."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
import yaml

from tau.errors import ConfigError
from tau.intent.presets import load_catalog
from tau.k8s import meta
from tau.plan.model import REDACTED
from tau.plan.service import DeployFlags, build_spec, checkpoint_path, image_problem
from tau.render import pod
from tau.render import service as render
from tau.serving import observe
from tests.manifest_check import validate_document

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog(None, None)
IMAGE = "ghcr.io/example/chat:1.4.2"


def _spec(**flags):
    base = {"name": "chat", "profile": "serve-cpu", "image": IMAGE, "namespace": "serving"}
    return build_spec(DeployFlags(**{**base, **flags}), CATALOG)


def _problems(**flags) -> list[str]:
    with pytest.raises(ConfigError) as err:
        _spec(**flags)
    return [d.message for d in err.value.diagnostics]


def _containers(doc):
    if doc["kind"] == "RayService":
        cluster = doc["spec"]["rayClusterConfig"]
        yield cluster["headGroupSpec"]["template"]["spec"]
        for group in cluster["workerGroupSpecs"]:
            yield group["template"]["spec"]
    elif doc["kind"] == "Deployment":
        yield doc["spec"]["template"]["spec"]


# ------------------------------------------------------------------------------ flag values


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("finetunes/run-7/best", "/data/checkpoints/finetunes/run-7/best"),
        ("run-7", "/data/checkpoints/run-7"),
        ("projects/nlp/ckpt", "/data/projects/nlp/ckpt"),
        ("projectsx/a", "/data/checkpoints/projectsx/a"),
        ("/models/llama", "/models/llama"),
        ("/data/checkpoints/a/", "/data/checkpoints/a"),
        ("./a//b", "/data/checkpoints/a/b"),
    ],
)
def test_checkpoint_paths_resolve_like_the_reference(raw, path):
    assert checkpoint_path(raw) == path


@pytest.mark.parametrize("raw", ["", " ", "..", "a/../b", "/data/../etc"])
def test_checkpoint_paths_with_dotdot_or_empty_are_rejected(raw):
    with pytest.raises(ValueError):
        checkpoint_path(raw)


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/example/chat:1.4.2",
        "localhost:5000/chat:v1",
        "chat:2024-01-01",
        "ghcr.io/example/chat@sha256:" + "a" * 64,
        "ghcr.io/example/chat:latest@sha256:" + "b" * 64,
    ],
)
def test_pinned_images_are_accepted(image):
    assert image_problem(image) is None


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("ghcr.io/example/chat", "no tag"),
        ("chat", "no tag"),
        ("localhost:5000/chat", "no tag"),
        ("ghcr.io/example/chat:latest", ":latest"),
        ("chat@sha256:abc", "64 hex"),
        ("chat@md5:" + "a" * 32, "64 hex"),
        ("chat: 1", "not an image"),
    ],
)
def test_unpinned_images_are_rejected_with_the_reason(image, why):
    problem = image_problem(image)
    assert problem is not None and why in problem[0] and "@sha256" in problem[1]


def test_every_flag_problem_is_reported_at_once_in_flag_order():
    messages = _problems(name="Chat", image="chat", replicas=0, env=("x y",))
    assert [m.split(" ")[0] for m in messages] == ["service", "--image", "--replicas", "--env"]


def test_a_preset_profile_gives_the_gpu_count_and_a_free_profile_gives_none():
    assert _spec(profile="azure.research.training.4x").gpus == 4
    assert _spec(profile="serve-cpu").gpus == 0
    assert _spec(profile="serve-cpu", gpus=2).gpus == 2


def test_a_disabled_preset_or_an_invalid_profile_name_is_rejected():
    disabled = [p for p in CATALOG.presets.values() if p.disabled]
    if disabled:
        assert "disabled" in _problems(profile=disabled[0].name)[0]
    assert "neither a catalog preset" in _problems(profile="Not A Profile")[0]


def test_checkpoint_env_cannot_also_be_set_with_env():
    messages = _problems(checkpoint="run-7", env=("TAU_MODEL_PATH=/x",))
    assert messages == ["--env TAU_MODEL_PATH conflicts with --checkpoint, which sets it"]


def test_autoscaling_starts_at_the_minimum():
    spec = _spec(min_replicas=2, max_replicas=5)
    assert (spec.autoscaling, spec.replicas, spec.min_replicas, spec.max_replicas) == (
        True,
        2,
        2,
        5,
    )


# ------------------------------------------------------------------------------ render shape


def test_render_is_deterministic_and_valid_for_both_kinds():
    for kind in ("rayservice", "deployment"):
        spec = _spec(
            kind=kind,
            gpus=1,
            checkpoint="run-7",
            readiness_path="/ready",
            env_secret=("HF_TOKEN=hf:token",),
        )
        first, second = render.render(spec, redact=True), render.render(spec, redact=True)
        assert first == second
        for doc in first:
            assert validate_document(doc) == [], doc["kind"]


def test_secret_names_are_redacted_only_for_a_client_dry_run():
    spec = _spec(env_secret=("HF_TOKEN=hf-credentials:token",))
    shown = json.dumps(render.render(spec, redact=True))
    sent = json.dumps(render.render(spec, redact=False))
    assert "hf-credentials" not in shown and REDACTED in shown
    assert "hf-credentials" in sent and REDACTED not in sent


def test_no_gpu_key_or_gpu_toleration_on_a_cpu_service():
    for kind in ("rayservice", "deployment"):
        for pod_spec in _containers(render.render(_spec(kind=kind), redact=True)[-1]):
            assert pod.GPU_RESOURCE not in json.dumps(pod_spec["containers"])
            assert pod.GPU_TOLERATIONS[1] not in pod_spec.get("tolerations", [])


def test_gpu_pods_request_and_limit_the_gpus_and_tolerate_gpu_nodes():
    doc = render.render(_spec(kind="deployment", gpus=2), redact=True)[-1]
    pod_spec = doc["spec"]["template"]["spec"]
    resources = pod_spec["containers"][0]["resources"]
    assert resources["requests"][pod.GPU_RESOURCE] == resources["limits"][pod.GPU_RESOURCE] == "2"
    assert list(pod.GPU_TOLERATIONS) == pod_spec["tolerations"]
    assert doc["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0


def test_a_service_lands_on_the_nodes_a_run_of_the_same_preset_does():
    run = next(
        d
        for d in yaml.safe_load_all(
            (ROOT / "golden" / "job-preset-large-memory-nvlink" / "rendered.yaml").read_text()
        )
        if d["kind"] == "Job"
    )
    preset = run["metadata"]["labels"][meta.LABEL_PRESET]
    doc = render.render(_spec(kind="deployment", profile=preset), redact=True)[-1]
    pod_spec = doc["spec"]["template"]["spec"]
    assert pod_spec["nodeSelector"] == run["spec"]["template"]["spec"]["nodeSelector"]
    assert (
        doc["metadata"]["labels"][meta.LABEL_GPU_CLASS]
        == run["metadata"]["labels"][meta.LABEL_GPU_CLASS]
    )


def test_the_ray_head_holds_no_gpu_and_no_serve_replica():
    doc = render.render(_spec(gpus=1), redact=True)[0]
    head = doc["spec"]["rayClusterConfig"]["headGroupSpec"]
    assert head["rayStartParams"]["num-gpus"] == "0" and head["rayStartParams"]["num-cpus"] == "0"
    assert pod.GPU_RESOURCE not in json.dumps(head)


def test_the_checkpoint_pvc_is_mounted_read_only_at_data_with_the_model_path():
    doc = render.render(
        _spec(kind="deployment", checkpoint="run-7", checkpoint_pvc="ckpts"), redact=True
    )[-1]
    pod_spec = doc["spec"]["template"]["spec"]
    container = pod_spec["containers"][0]
    assert pod_spec["volumes"] == [
        {"name": "tau-data", "persistentVolumeClaim": {"claimName": "ckpts", "readOnly": True}}
    ]
    assert container["volumeMounts"] == [
        {"name": "tau-data", "mountPath": "/data", "readOnly": True}
    ]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["TAU_MODEL_PATH"] == "/data/checkpoints/run-7"
    assert env["TAU_DATA_DIR"] == "/data"
    assert env["TAU_DURABLE_CHECKPOINTS_DIR"] == "/data/checkpoints"
    assert (
        doc["metadata"]["annotations"][meta.ANNOTATION_CHECKPOINT_URI]
        == "pvc://ckpts/checkpoints/run-7"
    )


def test_the_serve_config_is_yaml_naming_the_app_and_its_port():
    spec = _spec(import_path="app:build", port=9000, runtime_pip=("vllm==0.6.3",))
    config = yaml.safe_load(render.render(spec, redact=True)[0]["spec"]["serveConfigV2"])
    assert config["http_options"] == {"host": "0.0.0.0", "port": 9000}
    assert config["applications"] == [
        {
            "name": "chat",
            "import_path": "app:build",
            "route_prefix": "/",
            "runtime_env": {"pip": ["vllm==0.6.3"]},
        }
    ]


def _kuberay_cluster_hash_input(**flags) -> str:
    """What KubeRay compares on a RayService update (generateHashWithoutReplicasAndWorkersToDelete):
    the cluster spec without each worker group's replicas, bounds and workersToDelete."""
    (doc,) = render.render(_spec(**flags), redact=False)
    cluster = json.loads(json.dumps(doc["spec"]["rayClusterConfig"]))
    for group in cluster["workerGroupSpecs"]:
        for key in ("replicas", "minReplicas", "maxReplicas", "scaleStrategy"):
            group.pop(key, None)
    return json.dumps(cluster, sort_keys=True)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ({}, {"replicas": 2}),
        ({"replicas": 3}, {"replicas": 2}),
        ({"min_replicas": 1, "max_replicas": 4}, {"min_replicas": 1, "max_replicas": 8}),
        ({"min_replicas": 1, "max_replicas": 4}, {"min_replicas": 2, "max_replicas": 4}),
    ],
)
def test_a_redeploy_with_another_size_changes_what_kuberay_compares(before, after):
    # KubeRay ignores a change of the replica fields alone (the autoscaler's), so the size is
    # also on the worker template: a redeploy with a new size rolls out a RayCluster of it.
    assert _kuberay_cluster_hash_input(**before) != _kuberay_cluster_hash_input(**after)
    assert _kuberay_cluster_hash_input(**after) == _kuberay_cluster_hash_input(**after)
    (doc,) = render.render(_spec(**after), redact=True)
    (group,) = doc["spec"]["rayClusterConfig"]["workerGroupSpecs"]
    size = group["template"]["metadata"]["annotations"][meta.ANNOTATION_SERVE_WORKERS]
    assert size == (
        f"{group['minReplicas']}-{group['maxReplicas']}"
        if "max_replicas" in after
        else str(group["replicas"])
    )


def test_a_service_is_no_kueue_workload():
    for kind in ("rayservice", "deployment"):
        for doc in render.render(_spec(kind=kind), redact=True):
            assert meta.KUEUE_QUEUE_NAME not in doc["metadata"]["labels"]
            assert "suspend" not in doc["spec"]


# ------------------------------------------------------------------------------ status rows

NOW = dt.datetime(2026, 12, 2, 12, 0, 0, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("created", "age"),
    [
        ("2026-12-02T11:59:15Z", "45s"),
        ("2026-12-02T11:53:00Z", "7m"),
        ("2026-12-02T07:00:00Z", "5h"),
        ("2026-11-29T12:00:00Z", "3d"),
        ("2026-12-02T12:00:05Z", "0s"),
        (None, "<none>"),
        ("garbage", "<none>"),
    ],
)
def test_age_reads_like_kubectl(created, age):
    assert observe.age(created, NOW) == age


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        ({"serviceStatus": "Running"}, "Running"),
        ({"conditions": [{"type": "Ready", "status": "True"}]}, "Running"),
        ({"conditions": [{"type": "Ready", "status": "False"}]}, "NotReady"),
        ({}, "<none>"),
    ],
)
def test_rayservice_status_comes_from_service_status_or_the_ready_condition(status, shown):
    obj = {
        "metadata": {"name": "chat", "creationTimestamp": "2026-12-02T11:00:00Z"},
        "status": status,
    }
    assert observe.row(obj, "rayservice", NOW)["status"] == shown


def test_the_status_table_aligns_columns():
    rows = [{"name": "chat", "status": "Running", "ready": 2, "age": "1h"}]
    assert observe.table(rows, "rayservice") == (
        "NAME   STATUS    READY   AGE\nchat   Running   2       1h\n"
    )


# ------------------------------------------------------------------------------ CLI surface


def test_serve_has_exactly_four_verbs_and_no_run_lifecycle_verbs():
    from tau.cli.serve import app

    verbs = {name for name in app if not name.startswith("-")}
    assert verbs == {"deploy", "status", "scale", "delete"}


def test_a_repository_workspace_connection_does_not_pick_the_namespace(
    tmp_path, monkeypatch, capsys
):
    from tau.cli import main

    (tmp_path / "tau").mkdir()
    (tmp_path / "tau" / "workspace.connection.yaml").write_text(
        "apiVersion: tau.azure.com/v1alpha1\nkind: WorkspaceConnection\n"
        "workspace: {name: research, namespace: from-descriptor}\n"
    )
    monkeypatch.chdir(tmp_path)
    code = main(
        ["serve", "deploy", "chat", "--profile", "serve-cpu", "--image", IMAGE, "--dry-run=client"]
    )
    out, err = capsys.readouterr()
    assert code == 0 and "from-descriptor" not in out
    assert "namespace: <unresolved-namespace>" in out
    assert "does not read tau/workspace.connection.yaml" in err
