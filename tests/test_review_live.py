"""`tau run --diff --live`: the comparison logic on recorded objects (no cluster).

`answer` plays the API server: what a create of a tau Job returns (defaults, a uid, the Job
controller's selector and labels, Kueue's webhook suspending it, managedFields for the creating
client). `admitted` is the same object later, as Kueue and the Job controller leave it: resumed,
the flavor's node selector and toleration injected, a status. The e2e twin against a real
control plane is tests/e2e/test_review_live_e2e.py.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tau.errors import ClusterError, ConfigError, Diagnostic
from tau.review import live, report
from tau.review.differ import compare
from tau.review.targets import Entry

CLIENT = "OpenAPI-Generator"


def rendered(env: dict[str, str] | None = None) -> dict[str, Any]:
    """A Job as tau renders it for a submit (namespace and queue resolved)."""
    values = env or {"EPOCHS": "3"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "team",
            "labels": {"kueue.x-k8s.io/queue-name": "team-queue", "tau.azure.com/run-id": "train"},
            "annotations": {"tau.azure.com/gpu-count": "0"},
        },
        "spec": {
            "template": {
                "metadata": {"labels": {"tau.azure.com/run-id": "train"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "ghcr.io/acme/train:1.0",
                            "env": [{"name": k, "value": v} for k, v in sorted(values.items())],
                            "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}},
                        }
                    ],
                },
            }
        },
    }


def answer(body: dict[str, Any], uid: str) -> dict[str, Any]:
    """The API server's answer to creating `body`: defaults, uid, selector, managedFields."""
    obj = copy.deepcopy(body)
    name = obj["metadata"]["name"]
    md = obj["metadata"]
    md.update(uid=uid, resourceVersion="", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    md["managedFields"] = [
        {
            "manager": CLIENT,
            "operation": "Update",
            "apiVersion": "batch/v1",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:kueue.x-k8s.io/queue-name": {}}},
                "f:spec": {
                    "f:suspend": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"main"}': {".": {}, "f:env": {}, "f:image": {}}
                            }
                        }
                    },
                },
            },
        }
    ]
    spec = obj["spec"]
    spec.update(backoffLimit=6, completionMode="NonIndexed", suspend=True, parallelism=1)
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    labels = spec["template"]["metadata"]["labels"]
    labels.update(
        {
            "batch.kubernetes.io/controller-uid": uid,
            "controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "job-name": name,
        }
    )
    pod = spec["template"]["spec"]
    pod.update(dnsPolicy="ClusterFirst", schedulerName="default-scheduler")
    for container in pod["containers"]:
        container.update(
            imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log"
        )
    obj["status"] = {}
    return obj


def admitted(body: dict[str, Any]) -> dict[str, Any]:
    """The live Job after Kueue admitted it and the Job controller started it."""
    obj = answer(body, "7d4c-live")
    md = obj["metadata"]
    md.update(resourceVersion="4242", generation=2)
    md["annotations"].update(
        {
            "tau.azure.com/submission-id": "abc123",
            "tau.azure.com/code-sha": "deadbeef-dirty",
            "tau.azure.com/tau-command": "tau run train",
        }
    )
    obj["spec"]["suspend"] = False
    # An Update that changes a field moves it to the updating manager: Kueue owns suspend now.
    del md["managedFields"][0]["fieldsV1"]["f:spec"]["f:suspend"]
    pod = obj["spec"]["template"]["spec"]
    pod["nodeSelector"] = {"agentpool": "gpu"}
    pod["tolerations"] = [
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    ]
    md["managedFields"] += [
        {
            "manager": "kueue",
            "operation": "Update",
            "fieldsV1": {
                "f:spec": {
                    "f:suspend": {},
                    "f:template": {
                        "f:spec": {
                            "f:nodeSelector": {},
                            "f:tolerations": {},
                        }
                    },
                }
            },
        },
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "subresource": "status",
            "fieldsV1": {"f:status": {"f:active": {}, "f:startTime": {}}},
        },
    ]
    obj["status"] = {"active": 1, "startTime": "2026-01-01T00:00:05Z"}
    return obj


def dry_run(document: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The answer to the scratch-named dry-run create of `document`, and the scratch name."""
    scratch = live.scratch_name(document["metadata"]["name"])
    body = copy.deepcopy(document)
    body["metadata"]["name"] = scratch
    return answer(body, "91ab-dry"), scratch


def test_a_live_run_equal_to_its_render_has_no_difference() -> None:
    dry, scratch = dry_run(rendered())
    old, new = live.normalize(admitted(rendered()), dry, scratch, "train")
    assert old is not None
    assert compare([old], [new]) == []


def test_server_owned_fields_are_left_out_on_both_sides() -> None:
    dry, scratch = dry_run(rendered())
    old, new = live.normalize(admitted(rendered()), dry, scratch, "train")
    for obj in (old, new):
        assert obj is not None
        assert "status" not in obj
        assert not {
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "managedFields",
        } & set(obj["metadata"])
        assert "suspend" not in obj["spec"]  # Kueue's since it resumed the Job
        pod = obj["spec"]["template"]["spec"]
        assert "nodeSelector" not in pod and "tolerations" not in pod
        assert obj["spec"]["selector"]["matchLabels"] == {
            "batch.kubernetes.io/controller-uid": "<uid>"
        }
        labels = obj["spec"]["template"]["metadata"]["labels"]
        assert labels["job-name"] == "train" and labels["controller-uid"] == "<uid>"
        assert pod["dnsPolicy"] == "ClusterFirst"  # a server default: kept, equal on both sides


def test_a_changed_env_var_is_named_and_nothing_server_owned_shows() -> None:
    dry, scratch = dry_run(rendered({"EPOCHS": "3", "LR": "0.1"}))
    old, new = live.normalize(admitted(rendered()), dry, scratch, "train")
    assert old is not None
    [obj] = compare([old], [new])
    assert [(c.path, c.op) for c in obj.changes] == [
        ("spec.template.spec.containers[main].env[LR]", "added")
    ]
    from tau.review.model import Review, Side, target_diff

    review = Review(
        live.LIVE, live.SUBMIT, [target_diff("train", Side([old]), Side([new]), ("a", "b"))]
    )
    for out in (report.text(review), report.markdown(review), report.as_json(review)):
        assert "LR" in out
        for word in (
            "resourceVersion",
            "managedFields",
            "uid",
            "creationTimestamp",
            "suspend",
            "nodeSelector",
            "submission-id",
            "startTime",
            "7d4c",
            "91ab",
        ):
            assert word not in out, word


def test_a_field_the_creator_still_shares_is_compared() -> None:
    live_obj = admitted(rendered())
    live_obj["spec"]["template"]["spec"]["containers"][0]["image"] = "ghcr.io/acme/train:0.9"
    # Another manager also claims the image, but the creating client still owns it.
    live_obj["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"
    ] = {'k:{"name":"main"}': {"f:image": {}}}
    dry, scratch = dry_run(rendered())
    old, new = live.normalize(live_obj, dry, scratch, "train")
    assert old is not None
    [obj] = compare([old], [new])
    assert [(c.path, c.old, c.new) for c in obj.changes] == [
        (
            "spec.template.spec.containers[main].image",
            "ghcr.io/acme/train:0.9",
            "ghcr.io/acme/train:1.0",
        )
    ]


def test_a_container_another_manager_added_whole_is_left_out() -> None:
    live_obj = admitted(rendered())
    live_obj["spec"]["template"]["spec"]["containers"].append({"name": "injected", "image": "x"})
    live_obj["metadata"]["managedFields"][1]["fieldsV1"]["f:spec"]["f:template"]["f:spec"][
        "f:containers"
    ] = {'k:{"name":"injected"}': {".": {}, "f:name": {}, "f:image": {}}}
    dry, scratch = dry_run(rendered())
    old, new = live.normalize(live_obj, dry, scratch, "train")
    assert old is not None and compare([old], [new]) == []


def test_quantities_the_server_canonicalized_compare_equal() -> None:
    live_obj = admitted(rendered())
    live_obj["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
        "cpu": "1",
        "memory": "1Gi",
    }
    dry, scratch = dry_run(rendered())
    old, new = live.normalize(live_obj, dry, scratch, "train")
    assert old is not None and compare([old], [new]) == []


def test_the_scratch_name_keeps_the_length_and_is_a_valid_name() -> None:
    for name in ("a", "train", "x" * 63):
        scratch = live.scratch_name(name)
        assert len(scratch) == max(len(name), 12)
        assert scratch[0].isalpha() and scratch.isalnum() and scratch.islower()
        assert scratch != name


class FakeCluster:
    """`tau.kube.resources.find/create` over a dict of live objects."""

    def __init__(self, objects: dict[tuple[str, str], dict[str, Any]], refuse: str = "") -> None:
        self.objects = objects
        self.refuse = refuse
        self.dry_runs: list[str] = []
        #: (kind, label selector) of each list call: the run's other objects tau created.
        self.lists: list[tuple[str, str]] = []

    def list_items(self, api: Any, resource: Any, **options: Any) -> list[Any]:
        self.lists.append((resource.kind, options.get("selector", "")))
        return []

    def find(self, api: Any, resource: Any, name: str, *, namespace: str | None) -> Any:
        return self.objects.get((resource.kind, name))

    def create(self, api: Any, resource: Any, body: Any, *, namespace: Any, dry_run: bool) -> Any:
        assert dry_run, "a live diff never creates anything"
        self.dry_runs.append(body["metadata"]["name"])
        if self.refuse:
            raise ClusterError(self.refuse, status=422)
        return answer(body, "91ab-dry")


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster({("Job", "train"): admitted(rendered())})
    monkeypatch.setattr("tau.kube.resources.find", fake.find)
    monkeypatch.setattr("tau.kube.resources.create", fake.create)
    monkeypatch.setattr("tau.kube.resources.list_items", fake.list_items)
    return fake


def entry() -> Entry:
    from pathlib import Path

    return Entry("train", "train", Path("tau/train.yaml"), Path("."))


def test_review_sends_dry_runs_under_scratch_names_and_compares(cluster: FakeCluster) -> None:
    result = live.review([entry()], lambda e: (object(), [rendered()]))
    assert [(t.target, t.op) for t in result.targets] == [("train", "unchanged")]
    assert cluster.dry_runs == [live.scratch_name("train")]
    changed = live.review([entry()], lambda e: (object(), [rendered({"EPOCHS": "4"})]))
    assert changed.changed
    assert 'env[EPOCHS].value: "3" → "4"' in report.text(changed)


def test_a_run_not_on_the_cluster_is_a_new_target(cluster: FakeCluster) -> None:
    cluster.objects.clear()
    result = live.review([entry()], lambda e: (object(), [rendered()]))
    assert [(t.op, [o.ref for o in t.objects]) for t in result.targets] == [
        ("added", ["Job/train"])
    ]


def test_a_dry_run_the_server_refuses_is_the_submit_sides_error(cluster: FakeCluster) -> None:
    cluster.refuse = "admission webhook denied the request: no such queue"
    result = live.review([entry()], lambda e: (object(), [rendered()]))
    [target] = result.targets
    assert target.op == "error"
    assert target.errors == (("submit", "Job/train: error: " + cluster.refuse),)


def test_a_config_that_does_not_render_is_an_error_not_a_traceback(cluster: FakeCluster) -> None:
    def broken(e: Entry) -> tuple[Any, list[dict[str, Any]]]:
        raise ConfigError([Diagnostic("compute.gpus", "bad value")])

    result = live.review([entry()], broken)
    assert result.targets[0].op == "error"
    assert "does not render (submit)" in report.text(result)


# The whole command against the local Kubernetes API emulator (tests/kubeapi): submit, then
# `tau run --diff NAME --live`.
from tests.test_cli_lifecycle import project  # noqa: E402

__all__ = ["project"]


def test_the_cli_diffs_a_submitted_run_against_its_live_objects(
    project: Any, kube_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tau.cli import main

    assert main(["run", "finetune", "-n", "team"]) == 0
    capsys.readouterr()
    assert main(["run", "--diff", "finetune", "--live", "-n", "team"]) == 0
    assert capsys.readouterr().out == "no change (1 target, live → submit)\n"
    config = project / "tau" / "finetune.yaml"
    text = config.read_text().replace("cuda13.0\n", "cuda13.0\n  env:\n    REVIEW_LR: '0.1'\n", 1)
    config.write_text(text)
    assert main(["run", "--diff", "finetune", "--live", "-n", "team", "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    changes = [c["path"] for o in doc["targets"][0]["objects"] for c in o["changes"]]
    assert changes == ["spec.template.spec.containers[main].env[REVIEW_LR]"]
    assert kube_api.list_objects("batch/v1", "Job", namespace="team")[0]["metadata"]["name"] == (
        "finetune"
    )


def test_a_run_never_submitted_is_new_on_the_live_side(
    project: Any, kube_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tau.cli import main

    assert main(["run", "--diff", "eval", "--live", "-n", "team"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "eval: new target (not in live)",
        "  + Job/eval",
        "1 of 1 target changed (live → submit)",
    ]
    assert kube_api.list_objects("batch/v1", "Job", namespace="team") == []


def test_a_queued_workload_whose_controller_dropped_suspend_has_no_difference() -> None:
    """KubeRay's RayJob omits a false suspend after Kueue resumes it: no manager owns the
    field any more, yet it is Kueue's admission switch, not the config's (seen on the real
    control plane)."""
    submitted = rendered()
    submitted["spec"]["suspend"] = True
    dry, scratch = dry_run(submitted)
    resumed = admitted(submitted)
    resumed["spec"].pop("suspend", None)
    for entry in resumed["metadata"].get("managedFields") or []:
        (entry.get("fieldsV1") or {}).get("f:spec", {}).pop("f:suspend", None)
    old, new = live.normalize(resumed, dry, scratch, "train")
    assert old is not None
    assert compare([old], [new]) == []
    # Outside Kueue (no queue-name label) suspend is the config's and is compared.
    unqueued = copy.deepcopy(submitted)
    del unqueued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    dry, scratch = dry_run(unqueued)
    plain = copy.deepcopy(resumed)
    del plain["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    old, new = live.normalize(plain, dry, scratch, "train")
    assert old is not None
    assert compare([old], [new]) != []


def test_an_object_an_older_config_created_shows_as_removed(
    project: Any, kube_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A two-node torchrun Job has a headless Service; the same run on one node renders none:
    the live Service is the old config's and a submit would leave it behind."""
    from tau.cli import main

    assert main(["run", "finetune", "-n", "team"]) == 0
    assert kube_api.get_object("v1", "Service", "finetune-headless", namespace="team")
    config = project / "tau" / "finetune.yaml"
    config.write_text(config.read_text().replace("  nodes: 2\n", "  nodes: 1\n"))
    capsys.readouterr()
    assert main(["run", "--diff", "finetune", "--live", "-n", "team", "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    objects = {(o["kind"], o["name"]): o["status"] for o in doc["targets"][0]["objects"]}
    assert objects[("Service", "finetune-headless")] == "removed"
    assert objects[("Job", "finetune")] == "changed"
    assert main(["run", "--diff", "finetune", "--live", "-n", "team"]) == 1
    assert "  - Service/finetune-headless" in capsys.readouterr().out.splitlines()


def test_objects_of_other_runs_and_of_other_tools_are_not_listed_as_removed(
    project: Any, kube_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tau.cli import main

    assert main(["run", "eval", "-n", "team"]) == 0
    assert main(["run", "finetune", "-n", "team"]) == 0  # another run's Service
    for name, labels in (
        ("eval-metrics", {"app": "grafana"}),  # another tool's, no tau labels
        ("eval-old", {"tau.azure.com/managed-by": "tau", "tau.azure.com/run-id": "eval"}),
    ):
        kube_api.put(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": "team", "labels": labels},
                "spec": {"ports": [{"port": 80}]},
            }
        )
    capsys.readouterr()
    assert main(["run", "--diff", "eval", "--live", "-n", "team", "-o", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(o["kind"], o["name"], o["status"]) for o in doc["targets"][0]["objects"]] == [
        ("Service", "eval-old", "removed")
    ]
