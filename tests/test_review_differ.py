"""Every rule of the semantic differ (tau.review.differ), one test each."""

from __future__ import annotations

import copy
import json
from typing import Any

from tau.render import payload
from tau.review import differ, report
from tau.review.differ import Change, compare, compare_values
from tau.review.model import Review, Side, target_diff


def job(name: str = "train", **spec: Any) -> dict[str, Any]:
    container = {
        "name": "main",
        "image": "ghcr.io/acme/train:1.0",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "8"}},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "data", "mountPath": "/ckpt", "subPath": "ckpt"},
        ],
        "ports": [{"name": "metrics", "containerPort": 8080}],
    }
    pod = {
        "containers": [container, {"name": "sidecar", "image": "busybox"}],
        "initContainers": [],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "d"}}],
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "CriticalAddonsOnly", "operator": "Exists"},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "annotations": {"tau.azure.com/gpu-count": "8"}},
        "spec": {"template": {"spec": pod}, **spec},
    }


def pod_of(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


def paths(changes: list[Change]) -> list[tuple[str, str]]:
    return [(c.path, c.op) for c in changes]


MAIN = "spec.template.spec.containers[main]"


def test_objects_match_by_kind_and_name_not_by_position() -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "train"}}
    assert compare([job(), service], [service, job()]) == []
    found = compare([job("a")], [job("b")])
    assert [(o.ref, o.op) for o in found] == [("Job/b", "added"), ("Job/a", "removed")]


def test_an_env_var_inserted_in_the_middle_is_one_added_entry_not_a_shifted_list() -> None:
    new = job()
    pod_of(new)["containers"][0]["env"].insert(1, {"name": "NEW", "value": "x"})
    assert paths(compare_values(job(), new)) == [(f"{MAIN}.env[NEW]", "added")]


def test_containers_match_by_name_so_reordering_them_changes_nothing() -> None:
    new = job()
    pod_of(new)["containers"].reverse()
    pod_of(new)["containers"][0]["image"] = "busybox:2"  # the sidecar, now first
    assert paths(compare_values(job(), new)) == [
        ("spec.template.spec.containers[sidecar].image", "changed")
    ]


def test_volume_mounts_match_by_mount_path_and_ports_by_name() -> None:
    new = job()
    main = pod_of(new)["containers"][0]
    main["volumeMounts"].reverse()
    main["volumeMounts"][0]["subPath"] = "checkpoints"
    main["ports"][0]["containerPort"] = 9090
    assert paths(compare_values(job(), new)) == [
        (f"{MAIN}.ports[metrics].containerPort", "changed"),
        (f"{MAIN}.volumeMounts[/ckpt].subPath", "changed"),
    ]


def test_tolerations_match_by_key_operator_and_effect() -> None:
    new = job()
    tolerations = pod_of(new)["tolerations"]
    tolerations.reverse()
    tolerations[0]["tolerationSeconds"] = 30
    tolerations.append(
        {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    )
    assert paths(compare_values(job(), new)) == [
        ("spec.template.spec.tolerations[CriticalAddonsOnly:Exists:*].tolerationSeconds", "added"),
        ("spec.template.spec.tolerations[spot:Equal:NoSchedule]", "added"),
    ]


def test_ray_worker_groups_match_by_group_name() -> None:
    def rayjob(groups: list[dict[str, Any]]) -> dict[str, Any]:
        return {"kind": "RayJob", "spec": {"rayClusterSpec": {"workerGroupSpecs": groups}}}

    gpu = {"groupName": "gpu", "replicas": 2}
    cpu = {"groupName": "cpu", "replicas": 1}
    changes = compare_values(rayjob([gpu, cpu]), rayjob([cpu, {**gpu, "replicas": 1}]))
    assert [(c.path, c.old, c.new) for c in changes] == [
        ("spec.rayClusterSpec.workerGroupSpecs[gpu].replicas", 2, 1)
    ]


def test_a_list_with_a_repeated_or_missing_key_is_compared_by_position() -> None:
    old = {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}
    new = {"env": [{"name": "A", "value": "1"}, {"name": "A", "value": "3"}]}
    assert paths(compare_values(old, new)) == [("env[1].value", "changed")]


def test_lists_of_values_read_as_a_whole() -> None:
    changes = compare_values({"args": ["a", "b"]}, {"args": ["a", "c"]})
    assert [(c.path, c.old, c.new) for c in changes] == [("args", ["a", "b"], ["a", "c"])]


def test_resource_quantities_compare_by_value() -> None:
    new = job()
    limits = pod_of(new)["containers"][0]["resources"]["limits"]
    limits.update({"cpu": "1000m", "memory": "1024Mi", "nvidia.com/gpu": 8})
    assert compare_values(job(), new) == []
    limits["memory"] = "1G"  # 10^9 bytes is not 2^30
    assert [(c.path, c.old, c.new) for c in compare_values(job(), new)] == [
        (f"{MAIN}.resources.limits.memory", "1Gi", "1G")
    ]


def test_a_quantity_look_alike_outside_resources_is_compared_as_written() -> None:
    old = {"env": [{"name": "LIMIT", "value": "1000m"}]}
    new = {"env": [{"name": "LIMIT", "value": "1"}]}
    assert paths(compare_values(old, new)) == [("env[LIMIT].value", "changed")]


def test_volume_size_limits_compare_by_value() -> None:
    old = {"volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "16Gi"}}]}
    new = {"volumes": [{"name": "dshm", "emptyDir": {"sizeLimit": "16384Mi"}}]}
    assert compare_values(old, new) == []


def test_annotation_keys_with_dots_and_slashes_read_in_brackets() -> None:
    new = job()
    new["metadata"]["annotations"]["tau.azure.com/gpu-count"] = "4"
    assert paths(compare_values(job(), new)) == [
        ("metadata.annotations[tau.azure.com/gpu-count]", "changed")
    ]


def test_per_submission_and_derived_annotations_are_left_out() -> None:
    new = job()
    new["metadata"]["annotations"].update(
        {
            "tau.azure.com/code-sha": "abc-dirty",
            "tau.azure.com/tau-command": "tau run train",
            "tau.azure.com/submission-id": "1234",
            "tau.azure.com/config-hash": "ff",
            "tau.azure.com/payload-digest": "00",
        }
    )
    assert compare_values(job(), new) == []


def with_payload(files: dict[str, bytes]) -> dict[str, Any]:
    doc = job()
    init, digest = payload.init_container(
        payload.SCRIPT_INIT, "img", files, volume="script", target=payload.TARGET_DIR
    )
    pod_of(doc)["initContainers"] = [init]
    doc["metadata"]["annotations"]["tau.azure.com/payload-digest"] = digest
    return doc


def test_payload_scripts_are_a_unified_diff_of_the_decoded_files_never_base64() -> None:
    old = with_payload({"train.py": b"print('a')\nprint('b')\n", "gone.txt": b"x\n"})
    new = with_payload({"train.py": b"print('a')\nprint('c')\n", "new.sh": b"echo hi\n"})
    [obj] = compare([old], [new])
    assert obj.changes == ()  # the env value and the digests are no field change
    assert [(f.path, f.op) for f in obj.files] == [
        ("/script/gone.txt", "removed"),
        ("/script/new.sh", "added"),
        ("/script/train.py", "changed"),
    ]
    train = obj.files[2].diff
    assert "--- a/script/train.py\n+++ b/script/train.py\n" in train
    assert "-print('b')\n+print('c')\n" in train
    review = Review(
        "HEAD", "work tree", [target_diff("train", Side([old]), Side([new]), ("a", "b"))]
    )
    encoded = pod_of(old)["initContainers"][0]["env"][0]["value"]
    for out in (report.text(review), report.markdown(review), report.as_json(review)):
        assert encoded[:40] not in out and "H4sI" not in out
        assert "+print('c')" in out
    assert "script train.py" in report.summary(review.targets[0], review)


def test_a_working_dir_zip_in_the_payload_diffs_by_member() -> None:
    import io
    import zipfile

    def zipped(text: bytes) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("pkg/mod.py", text)
        return buffer.getvalue()

    old = with_payload({"_tau_project.zip": zipped(b"x = 1\n")})
    new = with_payload({"_tau_project.zip": zipped(b"x = 2\n")})
    [obj] = compare([old], [new])
    assert [f.path for f in obj.files] == ["/script/_tau_project.zip/pkg/mod.py"]
    assert "-x = 1\n+x = 2\n" in obj.files[0].diff


def secret(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": data}


def test_secret_data_is_compared_but_never_shown() -> None:
    old = [secret({"TOKEN": "hunter2", "GONE": "old-secret"})]
    new = [{**secret({"TOKEN": "swordfish", "NEW": "new-secret"}), "data": {"K": "c2VjcmV0"}}]
    [obj] = compare(old, new)
    assert [(c.path, c.op, c.old, c.new) for c in obj.changes] == [
        ("data", "added", None, differ.HIDDEN),
        ("stringData.GONE", "removed", differ.HIDDEN, None),
        ("stringData.NEW", "added", None, differ.HIDDEN),
        ("stringData.TOKEN", "changed", differ.HIDDEN, differ.HIDDEN),
    ]
    review = Review("HEAD", "work tree", [target_diff("t", Side(old), Side(new), ("a", "b"))])
    for out in (report.text(review), report.markdown(review), report.as_json(review)):
        for value in ("hunter2", "swordfish", "old-secret", "new-secret", "c2VjcmV0"):
            assert value not in out


def test_an_unchanged_secret_is_no_change_and_other_kinds_show_values() -> None:
    assert compare([secret({"A": "1"})], [secret({"A": "1"})]) == []
    config_map = {"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"A": "1"}}
    changed = copy.deepcopy(config_map)
    changed["data"]["A"] = "2"
    assert [(c.old, c.new) for c in compare([config_map], [changed])[0].changes] == [("1", "2")]


def test_the_comparison_does_not_modify_its_inputs() -> None:
    old, new = with_payload({"a.py": b"1\n"}), with_payload({"a.py": b"2\n"})
    frozen = json.dumps([old, new], sort_keys=True)
    compare([old], [new])
    assert json.dumps([old, new], sort_keys=True) == frozen


def test_a_long_command_reads_as_the_item_and_the_place_that_changed() -> None:
    script = "exec python3 -m torch.distributed.run " + "--opt=x " * 30 + "--nproc_per_node=8 t.py"
    old, new = job(), job()
    pod_of(old)["containers"][0]["command"] = ["bash", "-lc", script]
    pod_of(new)["containers"][0]["command"] = ["bash", "-lc", script.replace("=8 ", "=4 ")]
    pod_of(new)["volumes"][0]["persistentVolumeClaim"]["claimName"] = "e"
    review = Review(
        "HEAD", "work tree", [target_diff("train", Side([old]), Side([new]), ("a", "b"))]
    )
    text = report.text(review)
    [line] = [ln for ln in text.splitlines() if ".command" in ln]
    assert line.strip().startswith(f"{MAIN}.command[2]: ")
    assert "--nproc_per_node=8" in line and "--nproc_per_node=4" in line
    assert "exec python3" not in line  # cut to where they differ, not the same prefix twice
    assert report.summary(review.targets[0], review) == "command, PVC d → e"


def test_a_multi_line_script_in_a_command_is_a_unified_diff_of_its_lines() -> None:
    old, new = job(), job()
    pod_of(old)["containers"][0]["command"] = ["bash", "-lc", "set -e\nrun a\nrun b\n"]
    pod_of(new)["containers"][0]["command"] = ["bash", "-lc", "set -e\nrun a\nrun c\n"]
    review = Review(
        "HEAD", "work tree", [target_diff("train", Side([old]), Side([new]), ("a", "b"))]
    )
    text = report.text(review)
    assert f"{MAIN}.command[2]:" in text
    assert "-run b" in text and "+run c" in text
