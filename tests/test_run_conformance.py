# ruff: noqa: E501
"""Run-config behaviours checked against the reference implementation's contract.

Each test renders or rejects a config through `tau run --config tau.yaml --dry-run=client`
(or `tau run validate`) and asserts the exact message or the rendered fields; the golden
cases named in each docstring hold the full output.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tau.cli import main

TRAIN = "print('training')\n"
PRESET = "policy:\n  preset: azure.research.training.l\n"
CPU = "compute:\n  gpus: 0\npolicy:\n  profile: cpu\n  queue: research-eval\n"
PIN = "sha256:" + "b" * 64


@pytest.fixture
def case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TAU_TOPOLOGY_POLICY", raising=False)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def dry(
    capsys: pytest.CaptureFixture[str], text: str, *, script: str | None = None
) -> tuple[int, list[dict[str, Any]], str]:
    """Render ./tau.yaml offline: (exit code, documents, stderr)."""
    Path("tau.yaml").write_text(text)
    if script is not None:
        Path("train.py").write_text(script)
    code = main(["run", "--config", "tau.yaml", "--dry-run=client"])
    out, err = capsys.readouterr()
    docs = [d for d in yaml.safe_load_all(out) if d] if code == 0 else []
    return code, docs, err


def job(extra: str, name: str = "demo") -> str:
    return f"name: {name}\nengine: job\nentrypoint: train.py\n" + extra


def ray(extra: str, name: str = "demo") -> str:
    return f"name: {name}\nengine: rayjob\nentrypoint: train.py\n" + extra


def errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if ": error: " in line]


def pod_spec(doc: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = doc["spec"]["template"]["spec"]
    return spec


# 2. Priority tier with disable_default_priorities (golden job-priority-tier-disable-defaults).
def test_priority_tier_is_applied_before_and_regardless_of_disable_default_priorities(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job(PRESET + "  priority: priority\n  disable_default_priorities: true\n"),
    )
    assert code == 0, err
    (doc,) = docs
    assert doc["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "taugrid-priority"
    assert pod_spec(doc)["priorityClassName"] == "taugrid-priority"


def test_disable_default_priorities_without_a_tier_still_omits_the_default_classes(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, job(PRESET + "  disable_default_priorities: true\n"))
    assert code == 0, err
    assert "kueue.x-k8s.io/priority-class" not in docs[0]["metadata"]["labels"]
    assert "priorityClassName" not in pod_spec(docs[0])


# 3. clear_node_selector keeps the GPU class (golden job-node-selector-clear).
def test_clearing_node_selectors_keeps_the_gpu_class_contract(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job(
            "policy:\n  preset: azure.research.large-memory.xl\n  clear_node_selector: true\n"
            "  node_selector:\n    pool: gpu\n"
        ),
    )
    assert code == 0, err
    assert pod_spec(docs[0])["nodeSelector"] == {
        "pool": "gpu",
        "tau.azure.com/gpu-class": "h200-141gb",
    }


# 4. Elastic needs preemptible/checkpoint semantics (invalid/elastic-without-preemptable, job-elastic-preemptable).
def test_elastic_mode_without_preemption_and_checkpoint_semantics_is_rejected(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = dry(
        capsys, job("compute:\n  gpus: 1\npolicy:\n  lane: elastic\n  mode: elastic\n")
    )
    assert code == 1
    assert errors(err) == [
        "tau.yaml:8:9: error: policy.mode: mode=elastic requires checkpoint/restart semantics: a preempted run must resume from a checkpoint",
        "tau.yaml:8:9: error: policy.mode: mode=elastic requires policy.preemptable=true: elastic capacity is reclaimed, so the run must tolerate preemption",
    ]


def test_an_elastic_lane_alone_implies_elastic_mode_and_the_same_guard(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = dry(
        capsys,
        job(
            "compute:\n  gpus: 1\npolicy:\n  lane: elastic\n  preemptable: true\n"
            "resilience:\n  checkpoint_path: /data/ckpt\n"
        ),
    )
    assert code == 0, err
    code, _, err = dry(capsys, job("compute:\n  gpus: 1\npolicy:\n  lane: elastic\n"))
    assert code == 1
    assert "policy.lane: mode=elastic requires policy.preemptable=true" in err


def test_the_elastic_preset_is_reclaimable_and_checkpoints_so_it_passes(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, job("policy:\n  preset: azure.research.elastic.gpu\n"))
    assert code == 0, err
    labels = docs[0]["metadata"]["labels"]
    assert labels["tau.azure.com/preemptible"] == labels["tau.azure.com/reclaimable"] == "true"


# 5. Default output only with a data or result PVC (golden job-volumes-without-default-output).
def test_explicit_volumes_without_output_get_no_default_output(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job(
            CPU
            + "storage:\n  volumes:\n    - results=pvc:team-results\n  mounts:\n    - results:/results\n"
        ),
    )
    assert code == 0, err
    notes = docs[0]["metadata"].get("annotations", {})
    assert "tau.azure.com/result-path" not in notes
    env = {e["name"] for e in pod_spec(docs[0])["containers"][0]["env"]}
    assert "TAU_OUTPUT_DIR" not in env


def test_a_data_pvc_still_gets_the_workflows_default_output(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, job(CPU + "storage:\n  data_pvc: training-data\n"))
    assert code == 0, err
    notes = docs[0]["metadata"]["annotations"]
    assert notes["tau.azure.com/result-path"] == "/data/checkpoints/workflows/demo"
    assert notes["tau.azure.com/result-pvc"] == "training-data"


# 6, 7. Profiler rules (invalid/profiler-without-pvc, invalid/profiler-torchrun).
def test_a_profiler_run_without_a_data_pvc_is_rejected(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("tau.yaml").write_text(job(PRESET + "profiler:\n  mode: nsys\n"))
    assert main(["run", "validate", "--config", "tau.yaml"]) == 1
    assert errors(capsys.readouterr().err) == [
        "tau.yaml:7:9: error: profiler.mode: profiler requires durable PVC output; configure storage.data_pvc, storage.volumes/mounts, or storage.result_pvc"
    ]


def test_profiler_and_torchrun_cannot_be_combined(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = dry(
        capsys,
        job(
            "execution:\n  launcher: torchrun\n  processes_per_node: 2\n"
            "policy:\n  preset: azure.research.training.2x\nprofiler:\n  mode: ncu\n"
            "storage:\n  data_pvc: training-data\n"
        ),
    )
    assert code == 1
    assert errors(err) == [
        "tau.yaml:10:9: error: profiler.mode and execution.launcher: torchrun cannot be combined: the profiler wraps one process, torchrun starts one per GPU"
    ]


# 8. Profiler env and annotations (job-profiler-nsys, job-profiler-ncu-all-ranks, job-profiler-normalized-duration).
def test_profiler_env_annotations_and_tool_guard(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job(
            PRESET + "profiler:\n  mode: nsys\n  warmup: 90s\nstorage:\n  data_pvc: training-data\n"
        ),
    )
    assert code == 0, err
    notes = docs[0]["metadata"]["annotations"]
    out = "/data/checkpoints/workflows/demo/profile/rank-0.nsys-rep"
    # The annotation names the profile directory (as the reference does), the env the file.
    assert notes["tau.azure.com/profile-path"] == "/data/checkpoints/workflows/demo/profile"
    assert notes["tau.azure.com/profile-pvc"] == "training-data"
    assert notes["tau.azure.com/profile-duration"] == "2m0s"
    assert notes["tau.azure.com/profile-warmup"] == "1m30s"
    main_container = pod_spec(docs[0])["containers"][0]
    env = {e["name"]: e.get("value") for e in main_container["env"]}
    assert env["TAU_PROFILE_OUT"] == out
    assert "TAU_PROFILE_OUT_PATTERN" not in env
    assert 'command -v "$TAU_PROFILE_TOOL"' in main_container["command"][-1]


def test_all_ranks_capture_renders_an_output_pattern(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job(PRESET + "profiler:\n  mode: ncu\n  rank: all\nstorage:\n  data_pvc: training-data\n"),
    )
    assert code == 0, err
    env = {e["name"]: e.get("value") for e in pod_spec(docs[0])["containers"][0]["env"]}
    directory = "/data/checkpoints/workflows/demo/profile"
    assert env["TAU_PROFILE_OUT_PATTERN"] == f"{directory}/rank-<rank>.ncu-rep"
    assert "TAU_PROFILE_OUT" not in env
    assert env["TAU_PROFILE_OUT_DIR"] == directory
    assert docs[0]["metadata"]["annotations"]["tau.azure.com/profile-path"] == directory
    # The pod names its own file from the directory and its index, not from the pattern text.
    command = pod_spec(docs[0])["containers"][0]["command"][-1]
    assert '"$TAU_PROFILE_OUT_DIR/rank-${JOB_COMPLETION_INDEX:-0}.$TAU_PROFILE_EXT"' in command
    assert "<rank>" not in command


# 9. MIG without a profile (invalid/rayjob-mig-without-profile).
def test_mig_mode_without_a_mig_profile_is_rejected(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("tau.yaml").write_text(ray("compute:\n  workers: 2\n  gpu_resource_mode: mig\n"))
    assert main(["run", "validate", "--config", "tau.yaml"]) == 1
    assert errors(capsys.readouterr().err) == [
        "tau.yaml:6:22: error: compute.gpu_resource_mode: mig requires compute.mig_profile; without a profile the workers would request full GPUs"
    ]


# 11. Script interpreter (job-py-with-shell-shebang, job-shebang-env-flags, invalid/bare-shebang, invalid/python-launcher-shell-shebang).
@pytest.mark.parametrize(
    ("script", "runs"),
    [
        ("#!/bin/sh\necho hi\n", "exec /tmp/run.sh"),
        ("#!/usr/bin/env -S python3 -u\nprint(1)\n", "exec /tmp/run.sh"),
        ("#!/usr/bin/env python3\nprint(1)\n", "exec /tmp/run.sh"),
        ("print(1)\n", "exec python3 /tmp/tau-entrypoint.py"),
    ],
    ids=["shell-shebang", "env-flags", "python-shebang", "no-shebang"],
)
def test_without_a_launcher_a_shebang_wins_over_the_py_suffix(
    case: Path, capsys: pytest.CaptureFixture[str], script: str, runs: str
) -> None:
    code, docs, err = dry(capsys, job(CPU), script=script)
    assert code == 0, err
    assert pod_spec(docs[0])["containers"][0]["command"][-1].endswith(runs)


def test_an_explicit_python_launcher_runs_python3_even_with_a_python_shebang(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(
        capsys,
        job("execution:\n  launcher: python\n" + CPU),
        script="#!/usr/bin/env python3\nprint(1)\n",
    )
    assert code == 0, err
    assert pod_spec(docs[0])["containers"][0]["command"][-1].endswith(
        "exec python3 /tmp/tau-entrypoint.py"
    )


@pytest.mark.parametrize(
    ("launcher", "script", "message"),
    [
        (
            "",
            "#!\nprint(1)\n",
            'tau.yaml:3:13: error: entrypoint: script "train.py" has an empty shebang; add an interpreter after #!',
        ),
        (
            "execution:\n  launcher: python\n",
            "#!/bin/bash\necho hi\n",
            'tau.yaml:3:13: error: entrypoint: script "train.py" has a non-Python shebang but execution.launcher is python (#!/bin/bash)',
        ),
    ],
    ids=["bare-shebang", "python-launcher-shell-shebang"],
)
def test_scripts_that_cannot_run_are_rejected(
    case: Path, capsys: pytest.CaptureFixture[str], launcher: str, script: str, message: str
) -> None:
    code, _, err = dry(capsys, job(launcher + CPU), script=script)
    assert code == 1
    assert errors(err) == [message]


# 12. torchrun needs a known GPU count (invalid/torchrun-without-gpu-count).
def test_torchrun_with_several_processes_needs_a_gpu_count(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = dry(
        capsys, job("execution:\n  launcher: torchrun\n  processes_per_node: 4\n" + CPU)
    )
    assert code == 1
    assert errors(err) == [
        "tau.yaml:6:23: error: execution.processes_per_node: processes_per_node (4) with torchrun requires a known GPU count, but the profile does not declare one"
    ]


# 15. IPv6 registries (job-source-ipv6-registry).
@pytest.mark.parametrize(
    ("image", "ok"),
    [
        (f"[2001:db8::1]:5000/repo@{PIN}", True),
        (f"[2001:db8::1]/team/repo@{PIN}", True),
        (f"[::1]:5000/repo@{PIN}", True),
        (f"[2001:db8::zz]:5000/repo@{PIN}", False),
        (f"[2001:DB8::1]:5000/repo@{PIN}", False),
    ],
)
def test_digest_pinned_references_accept_ipv6_registry_hosts(
    case: Path, capsys: pytest.CaptureFixture[str], image: str, ok: bool
) -> None:
    Path("tau.yaml").write_text(
        job(f'run:\n  source:\n    image: "{image}"\n    path: /workspace\n' + CPU)
    )
    assert main(["run", "validate", "--config", "tau.yaml"]) == (0 if ok else 1)
    err = capsys.readouterr().err
    if not ok:
        assert (
            "run.source.image must be a complete lowercase OCI image reference pinned by an @sha256:<64 lowercase hex> digest"
            in err
        )


# Also: run.execution_deadline_seconds (job-execution-deadline, invalid/execution-deadline-with-retry).
def test_execution_deadline_renders_active_deadline_and_the_kueue_max_exec_time(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, job(PRESET + "run:\n  execution_deadline_seconds: 600\n"))
    assert code == 0, err
    (doc,) = docs
    assert doc["spec"]["activeDeadlineSeconds"] == 600
    assert doc["metadata"]["labels"]["kueue.x-k8s.io/max-exec-time-seconds"] == "600"
    assert (
        "kueue.x-k8s.io/max-exec-time-seconds" not in doc["spec"]["template"]["metadata"]["labels"]
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            job(
                PRESET + "run:\n  execution_deadline_seconds: 600\nresilience:\n  max_retries: 2\n"
            ),
            "tau.yaml:7:31: error: run.execution_deadline_seconds is not allowed together with Tau retry (resilience.max_retries=2): a deadline failure is not retryable and each resubmit would restart the clock",
        ),
        (
            job(PRESET + "run:\n  execution_deadline_seconds: 0\n"),
            "tau.yaml:7:31: error: run.execution_deadline_seconds must be between 1 and 2147483647 (got 0)",
        ),
        (
            ray("run:\n  execution_deadline_seconds: 600\n"),
            "tau.yaml:5:31: error: run.execution_deadline_seconds requires engine: job and direct dispatch",
        ),
    ],
    ids=["with-retry", "zero", "rayjob"],
)
def test_execution_deadline_rules(
    case: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    Path("tau.yaml").write_text(text)
    assert main(["run", "validate", "--config", "tau.yaml"]) == 1
    assert errors(capsys.readouterr().err) == [message]


# Also: engine-scoped launcher errors (invalid/launcher-unknown-job, invalid/launcher-unknown-rayjob).
@pytest.mark.parametrize(
    ("head", "message"),
    [
        (
            "engine: job\n",
            'execution.launcher "deepspeed" is not valid for engine: job; use python or torchrun',
        ),
        (
            "engine: rayjob\n",
            'execution.launcher "deepspeed" is not valid for engine: rayjob; use ray-train or ray-tune',
        ),
        (
            "",
            'execution.launcher "deepspeed" is not valid; use python, torchrun (engine: job) or ray-train, ray-tune (engine: rayjob)',
        ),
    ],
    ids=["job", "rayjob", "implicit"],
)
def test_an_unknown_launcher_lists_only_the_engines_launchers(
    case: Path, capsys: pytest.CaptureFixture[str], head: str, message: str
) -> None:
    Path("tau.yaml").write_text(
        f"name: demo\n{head}entrypoint: train.py\nexecution:\n  launcher: deepspeed\n"
    )
    assert main(["run", "validate", "--config", "tau.yaml"]) == 1
    (line,) = errors(capsys.readouterr().err)
    assert line.endswith(f"error: {message}")


# Also: the removed eval surface (invalid/eval-task-migration).
def test_the_removed_eval_surface_says_where_results_and_settings_go(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("tau.yaml").write_text(job("task: eval\n" + CPU))
    assert main(["run", "validate", "--config", "tau.yaml"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        "tau.yaml:4:1: error: task: eval, eval.harness, and eval.model were removed; evaluation is an ordinary run.",
        "  hint: keep `engine: job`, put the evaluation in the entrypoint script and have it write its results under `storage.output` (on a PVC), where `tau run get` reads them back; move eval settings such as the model path into `runtime.env` (for example MODEL_PATH)",
    ]


# Also: JSON-valued env is compact (rayjob-ray-train-preset, rayjob-ray-tune).
def test_json_valued_env_is_compact(case: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, docs, err = dry(
        capsys,
        ray("execution:\n  configs:\n    scaling_config:\n      use_gpu: true\n"),
    )
    assert code == 0, err
    head = docs[0]["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in head["containers"][0]["env"]}
    assert env["TAU_RAY_TRAIN_CONFIG_JSON"] == '{"scaling_config":{"use_gpu":true}}'


# 10. Restricted security (rayjob-restricted-security, job-ttl-working-dir-restricted).
_PSS_VOLUME_TYPES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def pss_restricted_violations(spec: dict[str, Any]) -> list[str]:
    """Where a pod spec breaks the Pod Security Standard "restricted" profile (baseline included).

    The rules of https://kubernetes.io/docs/concepts/security/pod-security-standards/ that a
    pod spec can break: host namespaces and ports, privileged containers, added capabilities,
    volume types, privilege escalation, running as root, seccomp, and dropping ALL.
    """
    out = []
    pod_sc = spec.get("securityContext", {})
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(host):
            out.append(f"pod: {host}")
    for vol in spec.get("volumes", []):
        kinds = set(vol) - {"name"}
        if not kinds <= _PSS_VOLUME_TYPES:
            out.append(f"volume {vol['name']}: type {sorted(kinds)}")
    pod_seccomp = pod_sc.get("seccompProfile", {}).get("type")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        out.append(f"pod: seccomp {pod_seccomp}")
    if pod_sc.get("runAsUser") == 0:
        out.append("pod: runAsUser 0")
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        sc = c.get("securityContext", {})
        who = f"container {c['name']}"
        if sc.get("privileged"):
            out.append(f"{who}: privileged")
        if any(p.get("hostPort") for p in c.get("ports", [])):
            out.append(f"{who}: hostPort")
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"{who}: allowPrivilegeEscalation is not false")
        if not (sc.get("runAsNonRoot") is True or pod_sc.get("runAsNonRoot") is True) or (
            sc.get("runAsNonRoot") is False
        ):
            out.append(f"{who}: runAsNonRoot is not true")
        if sc.get("runAsUser") == 0:
            out.append(f"{who}: runAsUser 0")
        seccomp = sc.get("seccompProfile", {}).get("type") or pod_seccomp
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"{who}: seccomp profile {seccomp}")
        caps = sc.get("capabilities", {})
        if "ALL" not in caps.get("drop", []):
            out.append(f"{who}: capabilities do not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"{who}: adds capabilities {caps['add']}")
    return out


def pod_specs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    if doc["kind"] == "Job":
        return [pod_spec(doc)]
    cluster = doc["spec"]["rayClusterSpec"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    return [g["template"]["spec"] for g in groups]


GOLDEN = Path(__file__).resolve().parents[1] / "golden"


@pytest.mark.parametrize(
    "case_name", ["rayjob-restricted-security", "job-ttl-working-dir-restricted"]
)
def test_restricted_goldens_pass_the_restricted_pod_security_standard(case_name: str) -> None:
    docs = list(yaml.safe_load_all((GOLDEN / case_name / "rendered.yaml").read_text()))
    specs = [s for d in docs if d["kind"] in ("Job", "RayJob") for s in pod_specs(d)]
    assert specs
    for spec in specs:
        assert pss_restricted_violations(spec) == []


@pytest.mark.parametrize(
    "text",
    [
        ray("runtime:\n  security:\n    mode: restricted\ncompute:\n  workers: 2\n" + PRESET),
        job(
            "runtime:\n  security:\n    mode: restricted\n"
            f"run:\n  source:\n    image: ghcr.io/acme/src@{PIN}\n    path: /src\n"
            f"storage:\n  data_pvc: d\n  image_assets:\n    - name: vocab\n      image: ghcr.io/acme/vocab@{PIN}\n"
            "      source_path: /vocab\n      mount_path: /opt/vocab\n" + PRESET
        ),
    ],
    ids=["rayjob", "job-with-init-containers"],
)
def test_restricted_mode_renders_pods_a_restricted_namespace_admits(
    case: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    code, docs, err = dry(capsys, text)
    assert code == 0, err
    for spec in pod_specs(docs[0]):
        assert pss_restricted_violations(spec) == []
        assert spec["securityContext"] == {
            "fsGroup": 65532,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        }


@pytest.mark.parametrize(
    ("text", "pods"),
    [
        (ray("runtime:\n  security:\n    mode: restricted\ncompute:\n  workers: 2\n" + PRESET), 2),
        (
            job(
                "runtime:\n  security:\n    mode: restricted\n"
                f"run:\n  source:\n    image: ghcr.io/acme/src@{PIN}\n    path: /src\n"
                f"storage:\n  data_pvc: d\n  image_assets:\n    - name: vocab\n"
                f"      image: ghcr.io/acme/vocab@{PIN}\n"
                "      source_path: /vocab\n      mount_path: /opt/vocab\n" + PRESET
            ),
            1,
        ),
    ],
    ids=["rayjob", "job-with-init-containers"],
)
def test_restricted_pods_run_every_container_as_user_and_group_65532(
    case: Path, capsys: pytest.CaptureFixture[str], text: str, pods: int
) -> None:
    code, docs, err = dry(capsys, text)
    assert code == 0, err
    specs = pod_specs(docs[0])
    assert len(specs) == pods
    for spec in specs:
        containers = [*spec.get("initContainers", []), *spec["containers"]]
        assert containers
        for container in containers:
            context = container["securityContext"]
            assert (context["runAsUser"], context["runAsGroup"]) == (65532, 65532), container[
                "name"
            ]
    if docs[0]["kind"] == "RayJob":
        assert [c["name"] for c in specs[1]["containers"]] == ["ray-worker"]
    else:
        assert len(specs[0]["initContainers"]) >= 2  # source and asset images


def test_without_restricted_mode_ray_containers_keep_the_image_group(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, ray("compute:\n  workers: 2\n" + PRESET))
    assert code == 0, err
    for spec in pod_specs(docs[0]):
        for container in spec["containers"]:
            assert "runAsGroup" not in container.get("securityContext", {}), container["name"]


def test_without_restricted_mode_the_ray_head_is_not_restricted(
    case: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, docs, err = dry(capsys, ray("compute:\n  workers: 2\n" + PRESET))
    assert code == 0, err
    head = pod_specs(docs[0])[0]
    assert "container prepare-ray-tmp: runAsUser 0" in pss_restricted_violations(head)


# 13. Policy files are validated (invalid/topology-policy-bad-gpu-class, invalid/topology-policy-mig-shape).
@pytest.mark.parametrize(
    ("shape", "gpu_class", "message"),
    [
        (
            "1xt4-16gb",
            "t4-16gb",
            "preset 'lab.p': gpuClass=\"t4-16gb\" is invalid (allowed: any|a100-80gb|h100-95gb|h200-141gb)",
        ),
        (
            "2x1g.10gb",
            "a100-80gb",
            "preset 'lab.p': shape \"2x1g.10gb\" is a MIG shape; presets place whole GPUs (request MIG slices with compute.mig_profile on a RayJob)",
        ),
        (
            "1g.10gb",
            "1g.10gb",
            "preset 'lab.p': shape \"1g.10gb\" is a MIG shape; presets place whole GPUs (request MIG slices with compute.mig_profile on a RayJob)",
        ),
    ],
    ids=["unsupported-class", "mig-shape", "mig-class"],
)
def test_a_policy_file_preset_with_a_mig_shape_or_unknown_class_is_rejected(
    case: Path, capsys: pytest.CaptureFixture[str], shape: str, gpu_class: str, message: str
) -> None:
    Path("policy.yaml").write_text(
        "apiVersion: tau.azure.com/v1alpha1\nkind: TopologyPolicy\nmetadata:\n  name: p\n"
        "spec:\n  presets:\n    lab.p:\n      team: lab\n      lane: training\n"
        f"      shape: {shape}\n      gpuClass: {gpu_class}\n      queue: q\n      clusterQueue: cq\n"
    )
    code, _, err = dry(capsys, job("policy:\n  topology_policy: policy.yaml\n  preset: lab.p\n"))
    assert code == 1
    assert message in err


def test_the_builtin_catalog_passes_its_own_gpu_rules() -> None:
    from tau.intent.presets import load_catalog

    assert load_catalog(None, None).presets


# 14. Experiment identity (job-experiment-labels, job-experiment-identity-fallback, job-experiment-group-as-id).
@pytest.mark.parametrize(
    ("experiment", "label", "annotation"),
    [
        ("  name: q1\n  title: Old Title\n  group: g\n", "q1", "q1"),
        (
            '  name: "  "\n  title: Does LoRA Rank Matter?\n  group: g\n',
            "does-lora-rank-matter",
            "does-lora-rank-matter",
        ),
        ('  name: ""\n  group: Sweep A\n', "sweep-a", "Sweep A"),
    ],
    ids=["name", "blank-name-falls-back-to-title", "group"],
)
def test_the_experiment_id_falls_back_from_name_to_title_to_group(
    case: Path, capsys: pytest.CaptureFixture[str], experiment: str, label: str, annotation: str
) -> None:
    code, docs, err = dry(capsys, job(CPU + "experiment:\n  project: Vision\n" + experiment))
    assert code == 0, err
    meta = docs[0]["metadata"]
    assert meta["labels"]["tau.azure.com/stellar-experiment"] == label
    assert meta["annotations"]["tau.azure.com/stellar-experiment-id"] == annotation
    assert meta["annotations"]["tau.azure.com/stellar-project-value"] == "Vision"
    pod_notes = docs[0]["spec"]["template"]["metadata"]["annotations"]
    assert pod_notes["tau.azure.com/stellar-experiment-id"] == annotation
