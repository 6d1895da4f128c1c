"""The real kube-apiserver's refusals reach the user as tau's one-line errors and exit codes.

403 (an identity without rights, one that can only read its workspace, and a quota that refuses
the object), 404 (a run that does not exist), 409 (a second submit, a retried submission, and a
name a foreign Job holds), 410 (a watch whose resourceVersion the server no longer keeps) and
422 (a value only the server validates), each answered by the real control plane and read back
through the real `tau` CLI: `error: ...` on stderr with `  hint: ...` under it, exit 1 for
invalid input or a failed check, 3 for what the cluster refused, and never a traceback.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.conftest import Shell, connected_repo, wait_for
from tests.e2e.controlplane.cluster import ControlPlane
from tests.e2e.controlplane.objects import Api
from tests.e2e.controlplane.pki import write_kubeconfig
from tests.e2e.controlplane.researcher import SYSTEM_NAMESPACE, Researcher, tau_binary

pytestmark = pytest.mark.e2e

SUFFIX = uuid.uuid4().hex[:5]
KUEUE = "kueue.x-k8s.io/v1beta2"
WORKLOAD_CRD = "workloads.kueue.x-k8s.io"
CRD = "apiextensions.k8s.io/v1"
SUBMISSION_ID = "tau.azure.com/submission-id"
#: What tau's lifecycle needs in a workspace-rbac namespace, as tau names it (all missing).
WORKSPACE_PERMISSIONS = (
    "create jobs.batch, get jobs.batch, list jobs.batch, patch jobs.batch, delete jobs.batch, "
    "create rayjobs.ray.io, get rayjobs.ray.io, list rayjobs.ray.io, patch rayjobs.ray.io, "
    "delete rayjobs.ray.io, get pods, list pods, get pods/log, get localqueues.kueue.x-k8s.io, "
    "get workloads.kueue.x-k8s.io, list workloads.kueue.x-k8s.io, create events, list events"
)


def unique(stem: str) -> str:
    return f"{stem}-{SUFFIX}"


def job_config(name: str, outcome: str | None = None, **policy: Any) -> dict[str, Any]:
    env = {"E2E_OUTCOME": outcome} if outcome else {}
    return {
        "name": name,
        "engine": "job",
        "entrypoint": f"{name}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2", "env": env},
        "policy": {"preset": "azure.research.training.l", **policy},
        "run": {"ttl_seconds_after_finished": 3600},
    }


def ray_config(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "engine": "rayjob",
        "entrypoint": f"{name}.py",
        "runtime": {"image": "ghcr.io/example/trainer:1.4.2", "env": {}},
        "compute": {"workers": 1, "gpus_per_worker": 0},
        "policy": {"preset": "azure.research.training.l"},
    }


def write_target(shell: Shell, config: dict[str, Any]) -> str:
    name: str = config["name"]
    (shell.cwd / "tau" / f"{name}.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    (shell.cwd / "tau" / config["entrypoint"]).write_text("print('training')\n")
    return name


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr as lines, after checking it is tau's error and not a traceback."""
    assert "Traceback" not in proc.stderr and "Exception" not in proc.stderr, proc.stderr
    return proc.stderr.splitlines()


def job_of(admin: Api, namespace: str, name: str) -> dict[str, Any]:
    job = admin.get("batch/v1", "Job", name, namespace)
    assert job is not None, f"Job {namespace}/{name} does not exist"
    return job


def workloads_of(admin: Api, namespace: str, uid: str) -> list[dict[str, Any]]:
    return admin.list(KUEUE, "Workload", namespace, label_selector=f"kueue.x-k8s.io/job-uid={uid}")


def cancel(shell: Shell, name: str) -> None:
    """Give the run's quota back (a missing run is fine: the test may have failed first)."""
    shell.tau("run", "cancel", name)


def cluster_documents(
    repo: Shell, name: str, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> list[dict[str, Any]]:
    """The objects `tau run NAME` sends to the workspace's namespace and queue, rendered the
    way the CLI renders them."""
    from tau import pipeline
    from tau.intent import load, validate
    from tau.intent import target as targets
    from tau.provenance import collect

    monkeypatch.chdir(repo.cwd)
    found = targets.resolve(name, None, repo.cwd)
    valid = validate.validate(load.load(found.path), name=found.name)
    rendered = pipeline.cluster_render(
        valid,
        repo.env,
        namespace=namespace,
        queue=f"{namespace}-queue",
        provenance=collect(valid.config_dir, ["run", name]),
    )
    return rendered.documents


# ----------------------------------------------------------------------------- identities


def identity_repo(
    plane: ControlPlane, researcher: Researcher, root: Path, user: str
) -> tuple[Shell, str]:
    """A repository connected to the researcher's workspace through another identity's own
    client certificate and kubeconfig, trusted the way that user would trust it."""
    context = f"tau-e2e-{user}"
    cert = plane.ca.issue(user, user, client=True)
    kubeconfig = write_kubeconfig(
        root / f"{user}.kubeconfig",
        server=plane.server,
        ca=plane.ca.cert_path,
        client=cert,
        context=context,
        namespace=researcher.namespace,
    )
    shell = connected_repo(root / "repo", researcher.workspace, context, kubeconfig)
    return shell, context


@pytest.fixture(scope="module")
def stranger(
    plane: ControlPlane, researcher: Researcher, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Shell, str]:
    """An authenticated identity that RBAC grants nothing."""
    return identity_repo(plane, researcher, tmp_path_factory.mktemp("stranger"), "stranger-e2e")


@pytest.fixture(scope="module")
def reader(
    plane: ControlPlane,
    researcher: Researcher,
    admin: Api,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Shell, str]]:
    """An identity that may read TauWorkspaces (the chart's reader role, bound in the system
    namespace) but holds no role in the workspace's namespace."""
    user = "reader-e2e"
    binding: dict[str, Any] = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": f"{user}-workspace-reader", "namespace": SYSTEM_NAMESPACE},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "tau-workspace-reader",
        },
        "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}],
    }
    admin.apply(binding)
    try:
        yield identity_repo(plane, researcher, tmp_path_factory.mktemp("reader"), user)
    finally:
        admin.delete(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            binding["metadata"]["name"],
            SYSTEM_NAMESPACE,
        )


# ----------------------------------------------------------------------------- 403


def test_workspace_check_passes_for_the_researcher(repo: Shell, researcher: Researcher) -> None:
    ns = researcher.namespace
    proc = repo.tau("workspace", "check")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        f'workspace "{researcher.workspace}" is Ready (namespace={ns}, queue={ns}-queue)\n'
    )


def test_an_identity_without_rights_gets_the_403_from_check_and_run(
    stranger: tuple[Shell, str], researcher: Researcher, admin: Api
) -> None:
    shell, context = stranger
    expected = [
        f'error: you are not allowed to get workspaces.tau.azure.com "{researcher.workspace}" '
        f'in namespace "{SYSTEM_NAMESPACE}" on context "{context}" (403 Forbidden)',
        "  hint: ask your platform operator (the TauWorkspace owner) to grant your identity access",
    ]
    check = shell.tau("workspace", "check")
    assert (check.returncode, check.stdout) == (3, ""), check.stderr
    assert error_lines(check) == expected

    name = write_target(shell, job_config(unique("forbidden")))
    run = shell.tau("run", name)
    assert (run.returncode, run.stdout) == (3, ""), run.stderr
    assert error_lines(run) == expected
    assert admin.get("batch/v1", "Job", name, researcher.namespace) is None


def test_an_identity_that_can_only_read_the_workspace_is_told_what_it_lacks(
    reader: tuple[Shell, str], researcher: Researcher, admin: Api
) -> None:
    """The workspace is Ready for its subject, not for this caller: `check` says so before
    `tau run` does, naming the namespace, every missing permission and who grants them."""
    shell, _ = reader
    ws, ns = researcher.workspace, researcher.namespace
    expected = [
        f'error: workspace "{ws}" is missing 18 permission(s) in namespace "{ns}": '
        + WORKSPACE_PERMISSIONS,
        "  hint: the TauWorkspace owner (your platform operator) grants them by binding role "
        f'tau-researcher-v1 to your identity in namespace "{ns}"; tau cannot work around RBAC',
    ]
    check = shell.tau("workspace", "check")
    assert (check.returncode, check.stdout) == (1, ""), check.stderr
    assert error_lines(check) == expected
    doc = json.loads(shell.tau("workspace", "check", "-o", "json").stdout)
    assert (doc["phase"], doc["ready"], doc["reason"]) == ("Ready", False, expected[0][7:])

    name = write_target(shell, job_config(unique("unbound")))
    run = shell.tau("run", name)
    assert (run.returncode, run.stdout) == (1, ""), run.stderr
    assert error_lines(run) == expected
    assert admin.get("batch/v1", "Job", name, ns) is None


def test_a_quota_refusal_is_not_reported_as_missing_access(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    """A 403 from admission (here a ResourceQuota) is the cluster's rule, not RBAC: the error
    quotes the server's reason instead of sending the researcher to ask for access."""
    ns, quota = researcher.namespace, unique("no-more-jobs")
    name = write_target(repo, job_config(unique("over-quota")))
    admin.apply(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": quota, "namespace": ns},
            "spec": {"hard": {"count/jobs.batch": "0"}},
        }
    )
    try:
        wait_for(
            "the quota controller to count the namespace's Jobs",
            lambda: ((admin.get("v1", "ResourceQuota", quota, ns) or {}).get("status") or {}).get(
                "used"
            ),
        )
        proc = repo.tau("run", name)
        assert (proc.returncode, proc.stdout) == (3, ""), proc.stderr
        lines = error_lines(proc)
        assert re.fullmatch(
            rf'error: the cluster refused to create jobs\.batch "{name}" in namespace "{ns}" '
            rf"\(403 Forbidden\): jobs\.batch \"{name}\" is forbidden: exceeded quota: {quota}, "
            r"requested: count/jobs\.batch=1, used: count/jobs\.batch=\d+, "
            r"limited: count/jobs\.batch=0",
            lines[0],
        ), lines
        assert lines[1:] == [
            "  hint: an admission rule of the cluster (a ResourceQuota, a policy or a webhook) "
            "refused it, not your permissions; if the reason is unclear, ask your platform "
            "operator"
        ]
        assert admin.get("batch/v1", "Job", name, ns) is None
    finally:
        admin.delete("v1", "ResourceQuota", quota, ns)
        # Quota admission reads its own cache: wait until it lets a Job through again.
        wait_for(
            "the quota to stop refusing Jobs",
            lambda: repo.tau("run", name, "--dry-run=server").returncode == 0,
        )


# ----------------------------------------------------------------------------- 404


def test_a_run_that_does_not_exist_is_not_found(repo: Shell, researcher: Researcher) -> None:
    ns, ghost = researcher.namespace, unique("ghost")

    status = repo.tau("run", "status", ghost, "-o", "json")
    assert status.returncode == 1 and status.stderr == ""
    doc = json.loads(status.stdout)
    assert doc["status"]["state"] == "not_found"
    text = repo.tau("run", "status", ghost)
    assert text.returncode == 1 and text.stderr == ""
    assert text.stdout.startswith(f"Run {ns}/{ghost}\nState: not_found\n")
    assert f"error: RunNotFound — no Job or RayJob {ns}/{ghost}" in text.stdout

    expected = [
        f"error: run {ns}/{ghost} not found: no RayJob or Job of that name",
        f"  hint: list the runs with `tau run list -n {ns}`",
    ]
    for verb in ("logs", "cancel", "get"):
        proc = repo.tau("run", verb, ghost)
        # One rule with status: a missing run is the user's wrong name (1), not a cluster failure.
        assert (proc.returncode, proc.stdout) == (1, ""), (verb, proc.stderr)
        assert error_lines(proc) == expected, verb


# ----------------------------------------------------------------------------- 409


def test_a_second_submit_is_a_conflict_that_leaves_the_first_run_alone(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    ns = researcher.namespace
    name = write_target(repo, job_config(unique("twice")))
    repo.ok("run", name)
    try:
        job = job_of(admin, ns, name)
        uid, first = job["metadata"]["uid"], job["metadata"]["annotations"][SUBMISSION_ID]
        again = repo.tau("run", name)
        assert (again.returncode, again.stdout) == (3, ""), again.stderr
        assert error_lines(again) == [
            f"error: run {ns}/{name} already exists from another submission "
            f"(Job {name}, submission-id {first})",
            f"  hint: choose a distinct run name, or `tau run cancel {name} -n {ns}` first, or "
            f"`tau run resume {name} --config PATH` to continue it",
        ]
        after = job_of(admin, ns, name)
        assert after["metadata"]["uid"] == uid
        assert after["metadata"]["annotations"][SUBMISSION_ID] == first
        assert len(workloads_of(admin, ns, uid)) == 1
    finally:
        cancel(repo, name)


def test_a_retried_submission_recovers_the_object_it_created(
    repo: Shell, researcher: Researcher, admin: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same submission sent twice (a retry after a lost answer) meets the server's 409
    AlreadyExists and recovers the Job it made, instead of failing or making a second one.
    One CLI call is one submission, so the retry is made where tau makes it: `submit`."""
    from tau.kube.client import api_client
    from tau.runs.submit import submit

    ns = researcher.namespace
    name = write_target(repo, job_config(unique("retried")))
    documents = cluster_documents(repo, name, ns, monkeypatch)
    api = api_client(researcher.kubeconfig, researcher.context)
    try:
        first = submit(api, documents, submission_id=f"e2e{SUFFIX}")
        uid = job_of(admin, ns, name)["metadata"]["uid"]
        second = submit(api, documents, submission_id=f"e2e{SUFFIX}")
        assert (first.recovered, second.recovered) == (False, True)
        assert [o["metadata"]["uid"] for o in second.objects if o["kind"] == "Job"] == [uid]
        assert job_of(admin, ns, name)["metadata"]["uid"] == uid
        assert len(workloads_of(admin, ns, uid)) == 1
    finally:
        cancel(repo, name)


def test_a_job_tau_did_not_create_holds_the_name_with_a_clear_conflict(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    ns, name = researcher.namespace, unique("foreign")
    foreign = admin.apply(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": ns},
            "spec": {
                "suspend": True,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox:1.36"}],
                    }
                },
            },
        }
    )
    try:
        write_target(repo, job_config(name))
        proc = repo.tau("run", name)
        assert (proc.returncode, proc.stdout) == (3, ""), proc.stderr
        assert error_lines(proc) == [
            f"error: Job {ns}/{name} already exists and tau did not submit it "
            f"(no {SUBMISSION_ID} annotation)",
            "  hint: give the run another name (`name:` in its config): that Job is not a tau "
            "run, so it is not tau's to replace, cancel or resume",
        ]
        job = job_of(admin, ns, name)
        assert job["metadata"]["uid"] == foreign["metadata"]["uid"]
        assert SUBMISSION_ID not in (job["metadata"].get("annotations") or {})
    finally:
        admin.delete("batch/v1", "Job", name, ns)


# ----------------------------------------------------------------------------- 422


def test_a_value_only_the_server_validates_is_a_one_line_422(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    """A PriorityClass name is a DNS subdomain: tau passes it through, the API server
    validates it, and the error names the field, the value and the rule, on one line."""
    ns = researcher.namespace
    name = write_target(repo, job_config(unique("invalid"), pod_priority_class="Bad_Class"))
    for argv in (("--dry-run=server",), ()):
        proc = repo.tau("run", name, *argv)
        assert (proc.returncode, proc.stdout) == (3, ""), (argv, proc.stderr)
        lines = [line for line in error_lines(proc) if not line.startswith(f"tau/{name}.yaml")]
        assert lines == [
            f'error: the API server rejected Job "{name}" in namespace "{ns}" as invalid '
            '(422 Invalid): spec.template.spec.priorityClassName: Invalid value: "Bad_Class": '
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
            "characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "  hint: the cluster validates more than tau does offline; change the value that "
            "sets the field named above and retry",
        ], argv
    assert admin.get("batch/v1", "Job", name, ns) is None


def test_the_objects_tau_sends_pass_strict_field_validation(
    repo: Shell, researcher: Researcher, admin: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every field tau renders is one the server's schema (KubeRay's CRD included) knows: a
    server dry run with fieldValidation=Strict, as the researcher, accepts the Job and the
    RayJob (an unknown field would be a 422 there, and silently dropped on a normal submit)."""
    from kubernetes import config as kube_config
    from kubernetes.client import CustomObjectsApi

    ns = researcher.namespace
    # The official client as the researcher: tau's own reads may not load it at all.
    official = kube_config.new_client_from_config(
        str(researcher.kubeconfig), context=researcher.context
    )
    api = CustomObjectsApi(official)
    kinds = []
    for config in (job_config(unique("strict")), ray_config(unique("strict-ray"))):
        name = write_target(repo, config)
        for doc in cluster_documents(repo, name, ns, monkeypatch):
            group, _, version = doc["apiVersion"].rpartition("/")
            assert group, doc["kind"]  # a Job or a RayJob; no core objects for these configs
            answer = api.create_namespaced_custom_object(
                group,
                version,
                ns,
                doc["kind"].lower() + "s",
                doc,
                dry_run="All",
                field_validation="Strict",
            )
            assert answer["metadata"]["uid"] and answer["metadata"]["name"] == name
            kinds.append(doc["kind"])
    assert kinds == ["Job", "RayJob"]


# ----------------------------------------------------------------------------- 410


def test_a_watch_from_a_version_the_server_no_longer_keeps_is_expired(
    researcher: Researcher,
) -> None:
    """A real 410 (a Workload watch from resourceVersion 1, older than the server's watch
    cache) leaves tau's stream layer as `Expired`, a one-line error, and the relist it asks
    for gives a version the server watches from again."""
    from tau.k8s.kinds import WORKLOAD
    from tau.kube.client import api_client
    from tau.kube.lists import list_kind
    from tau.kube.streams import Expired, watch_kind

    ns = researcher.namespace
    api = api_client(researcher.kubeconfig, researcher.context)
    with pytest.raises(Expired) as caught:
        for _ in watch_kind(api, WORKLOAD, ns, resource_version="1", timeout_seconds=5):
            pass
    assert (caught.value.status, caught.value.exit_code) == (410, 3)
    assert caught.value.format() == (
        f"error: watch of workloads.kueue.x-k8s.io in {ns} from resourceVersion 1 expired "
        "(410 Gone)\n  hint: list again and watch from the list's resourceVersion"
    )
    listed = list_kind(api, WORKLOAD, ns)
    assert listed.ok and int(listed.resource_version) > 1
    stream = watch_kind(
        api, WORKLOAD, ns, resource_version=listed.resource_version, timeout_seconds=2
    )
    seen = [change for change, _ in stream]
    assert set(seen) <= {"BOOKMARK", "ADDED", "MODIFIED", "DELETED"}
    assert int(stream.resource_version) >= int(listed.resource_version)


def metrics(admin: Api) -> str:
    host = admin.api_client.configuration.host
    return str(admin.api_client.call_api("GET", f"{host}/metrics").read().decode())


def workload_watches(admin: Api) -> int:
    """Open Workload watch requests scoped to a namespace (Kueue watches cluster-wide; tau's
    `--watch` is the only namespaced watcher of Workloads)."""
    labels = ('group="kueue.x-k8s.io"', 'resource="workloads"', 'scope="namespace"', 'verb="WATCH"')
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in metrics(admin).splitlines()
        if line.startswith("apiserver_longrunning_requests{") and all(x in line for x in labels)
    )


def workload_watch_expired(admin: Api, namespace: str, version: str) -> bool:
    """Whether the server now answers a Workload watch from `version` with 410 Gone."""
    from kubernetes.client import CustomObjectsApi

    response = CustomObjectsApi(admin.api_client).list_namespaced_custom_object(
        "kueue.x-k8s.io",
        "v1beta2",
        namespace,
        "workloads",
        watch=True,
        resource_version=version,
        timeout_seconds=1,
        _preload_content=False,
    )
    first = response.data.split(b"\n", 1)[0]
    event = json.loads(first) if first else {}
    return event.get("type") == "ERROR" and (event.get("object") or {}).get("code") == 410


def current_version(admin: Api, namespace: str) -> str:
    """The resourceVersion of a fresh (consistent) Workload list: the server's newest."""
    from kubernetes.client import CustomObjectsApi

    listed = CustomObjectsApi(admin.api_client).list_namespaced_custom_object(
        "kueue.x-k8s.io", "v1beta2", namespace, "workloads", limit=1
    )
    return str(listed["metadata"]["resourceVersion"])


class Watching:
    """`tau run status NAME --watch` in the background, its redraws timestamped."""

    HEADER = "watching "

    def __init__(self, shell: Shell, name: str) -> None:
        self.proc = subprocess.Popen(
            [tau_binary(), "run", "status", name, "--watch", "--interval", "0.5"],
            env={**shell.env, "PYTHONUNBUFFERED": "1"},
            cwd=shell.cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self.draws: list[float] = []
        self.errors: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith(self.HEADER):
                self.draws.append(time.monotonic())

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        self.errors.extend(self.proc.stderr)

    def last_view(self) -> str:
        text = "".join(self.lines)
        return text[text.rfind(self.HEADER) :]

    def signal(self, sig: signal.Signals) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)

    def stop(self) -> int:
        """Ctrl-C, the way a user ends a watch; returns the exit code."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGINT)
        try:
            # A bound for a hung watch only: with the control plane and other work sharing
            # the cores, ending the process takes many times its quiet duration.
            return self.proc.wait(timeout=180)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=10)


def poke(admin: Api, workload: dict[str, Any], value: str) -> None:
    """Change only the run's Workload (an annotation), so only its watch reports it."""
    admin.patch(
        KUEUE,
        "Workload",
        workload["metadata"]["name"],
        {"metadata": {"annotations": {"tau-e2e/poke": value}}},
        workload["metadata"]["namespace"],
    )


def test_status_watch_relists_after_a_410_and_keeps_following(
    repo: Shell, researcher: Researcher, admin: Api
) -> None:
    """`tau run status --watch` paused like a sleeping laptop while the server forgets the
    Workload versions it was watching from (a changed Workload CRD replaces the server's
    watch cache): on resume its watch meets a real 410 Gone, and tau relists and keeps
    redrawing on changes instead of failing or going deaf."""
    ns = researcher.namespace
    # No node matches its selector: Kueue keeps the run queued, so the watch keeps following.
    name = write_target(repo, job_config(unique("gone"), node_selector={"tau-e2e/nowhere": "true"}))
    repo.ok("run", name)
    crd = admin.get(CRD, "CustomResourceDefinition", WORKLOAD_CRD)
    assert crd is not None
    categories = crd["spec"]["names"].get("categories")
    watching = Watching(repo, name)
    try:
        uid = job_of(admin, ns, name)["metadata"]["uid"]
        workload = wait_for("the run's Workload", lambda: workloads_of(admin, ns, uid))[0]
        wait_for(
            "the watch to show the run queued",
            lambda: "State: queued (first open phase: Kueue admission)" in watching.last_view(),
        )
        wait_for("tau's Workload watch", lambda: workload_watches(admin) >= 1)
        drawn = len(watching.draws)
        poke(admin, workload, "before")
        wait_for(
            "a redraw for the Workload change", lambda: len(watching.draws) > drawn, timeout=15
        )

        watching.signal(signal.SIGSTOP)
        # The server ends each of tau's watch requests at its timeout; until tau wakes up
        # nothing resumes them, and every version tau holds is at most the current one.
        wait_for(
            "the server to end tau's Workload watch",
            lambda: workload_watches(admin) == 0,
            timeout=60,
        )
        version = current_version(admin, ns)
        admin.patch(
            CRD,
            "CustomResourceDefinition",
            WORKLOAD_CRD,
            {"spec": {"names": {"categories": [*(categories or []), "tau-e2e-410"]}}},
        )
        wait_for(
            f"a Workload watch from resourceVersion {version} to be answered 410 Gone",
            lambda: workload_watch_expired(admin, ns, version),
            timeout=60,
        )
        drawn = len(watching.draws)
        # tau redraws at least every 30 s anyway (its heartbeat): resume well before that, so
        # the next redraw can only come from a watch.
        assert time.monotonic() - watching.draws[-1] < 25, "paused too long"
        watching.signal(signal.SIGCONT)

        # Its resumed watch got the 410; the relist's ADDED event redraws, and the new watch
        # is open on the server.
        wait_for("a redraw after the relist", lambda: len(watching.draws) > drawn, timeout=10)
        wait_for("tau's new Workload watch", lambda: workload_watches(admin) >= 1)
        # The new watch delivers: a change only the Workload watch sees redraws at once.
        drawn = len(watching.draws)
        poke(admin, workload, "after")
        wait_for(
            "a redraw for the next Workload change", lambda: len(watching.draws) > drawn, timeout=10
        )
        assert "State: queued" in watching.last_view()

        code = watching.stop()
        assert code == 0
        assert "".join(watching.errors) == ""
    finally:
        watching.stop()
        restore = {"spec": {"names": {"categories": categories}}}
        admin.patch(CRD, "CustomResourceDefinition", WORKLOAD_CRD, restore)
        cancel(repo, name)
