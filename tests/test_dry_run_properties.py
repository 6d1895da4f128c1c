"""Resolve and render are total: a schema-valid config either renders or gets diagnostics.

Random configs, shaped by the schema (its enums, bounds and groups) and biased towards the
engine they declare so most of them reach render, go through the whole client dry-run:
load, validate, preset resolution, GPU arithmetic, the entrypoint on disk, render and the
canonical YAML. The only exceptions allowed are tau's own (a ConfigError with diagnostics,
or NotImplementedYet for a feature refused as not built); anything else is a bug.
"""

from __future__ import annotations

import functools
import json
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tau import pipeline
from tau.errors import ConfigError, NotImplementedYet
from tau.intent import load, presets, validate
from tau.intent.spec import run_config_schema
from tau.render import manifests

SCRIPT = "import os\nprint('train', os.environ.get('TAU_RUN_NAME'))\n"


@functools.cache
def _enum(*path: str) -> list[Any]:
    node = run_config_schema()
    for key in path:
        node = node["properties"][key]
    if "enum" in node:
        return list(node["enum"])
    return [v for option in node["oneOf"] for v in option["enum"]]  # aliases included


def enum(*path: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(_enum(*path))


@functools.cache
def _presets() -> list[str]:
    return sorted(presets.load_catalog(None, None).presets)


names = st.from_regex(r"\A[a-z]([-a-z0-9]{0,60}[a-z0-9])?\Z")
env_names = st.from_regex(r"\A[A-Z][A-Z0-9_]{0,8}\Z")
quantities = st.sampled_from(["1", "500m", "2", "16Gi", "512Mi", "64", "1Ti", "0"])
durations = st.sampled_from(["0s", "10s", "30s", "1m", "5m", "1h30m", "2m"])
label_values = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?\Z")
paths = st.sampled_from(["/data", "/data/out", "/data/checkpoints/x", "/results", "/mnt/x"])


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def group(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A mapping holding a random subset of `fields` (None values are left out)."""
    return st.fixed_dictionaries({}, optional=fields).map(
        lambda d: {k: v for k, v in d.items() if v is not None}
    )


def _resources(prefixes: tuple[str, ...]) -> dict[str, st.SearchStrategy[Any]]:
    return {
        f"{p}{what}": quantities
        for p in prefixes
        for what in ("cpu_request", "memory_request", "cpu_limit", "memory_limit")
    }


def _job_compute() -> st.SearchStrategy[dict[str, Any]]:
    return group(
        gpus=st.integers(0, 16),
        gpu_resource_mode=st.just("device-plugin"),
        **_resources(("",)),
    )


def _ray_compute() -> st.SearchStrategy[dict[str, Any]]:
    return group(
        workers=st.integers(1, 6),
        gpus_per_worker=st.integers(0, 8),
        gpu_resource_mode=st.sampled_from(["device-plugin", "mig"]),
        mig_profile=st.sampled_from(["1g.10gb", "3g.40gb"]),
        **_resources(("", "head_", "worker_")),
    )


def _policy(engine: str) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = dict(
        preset=st.sampled_from(_presets()),
        shape=st.sampled_from(["1xA100", "2xH100", "8xH200", "4x", "x", "0xA100", "gpu"]),
        queue=label_values,
        team=label_values,
        lane=enum("policy", "lane"),
        mode=enum("policy", "mode"),
        topology=enum("policy", "topology"),
        gpu_class=enum("policy", "gpu_class"),
        priority_tier=enum("policy", "priority_tier"),
        namespace=label_values,
        workspace=label_values,
        profile=label_values,
        workload_priority_class=label_values,
        pod_priority_class=label_values,
        disable_default_priorities=st.booleans(),
        node_selector=st.dictionaries(
            st.sampled_from(["kubernetes.io/os", "tau.azure.com/gpu-class", "pool"]),
            label_values,
            max_size=2,
        ),
    )
    if engine == "job":
        fields["clear_node_selector"] = st.booleans()
    return group(**fields)


def _execution(engine: str) -> st.SearchStrategy[dict[str, Any]]:
    flags = st.dictionaries(
        st.from_regex(r"\A[a-z][a-z0-9_]{0,8}\Z"),
        st.one_of(st.integers(-5, 5), st.text(max_size=8), st.booleans()),
        max_size=3,
    )
    if engine == "job":
        return st.one_of(
            group(launcher=st.just("python"), configs=flags),
            group(
                launcher=st.just("torchrun"),
                nodes=st.integers(1, 4),
                processes_per_node=st.integers(1, 8),
                configs=flags,
                allow_nccl_override=st.booleans(),
            ),
        )
    tune = st.fixed_dictionaries(
        {
            "launcher": st.just("ray-tune"),
            "metric": st.sampled_from(["loss", "accuracy"]),
            "configs": st.just({"lr": [0.1, 0.01]}),
        },
        optional={
            "mode": enum("execution", "mode"),
            "num_samples": st.integers(1, 20),
            "max_concurrent_trials": st.integers(1, 4),
        },
    )
    train = group(
        launcher=st.just("ray-train"),
        configs=st.just({"torch_config": {"backend": "nccl"}}),
    )
    return st.one_of(tune, train, st.just({}))


def _storage(engine: str) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = dict(
        data_pvc=label_values,
        output=paths,
        checkpoint=st.sampled_from(["latest", "ckpt/step-1"]),
    )
    if engine == "job":
        fields["volumes"] = st.sampled_from([["scratch=pvc:scratch-pvc"], ["a=pvc:a", "b=b"]])
        fields["mounts"] = st.sampled_from([["scratch:/results"], ["a:/mnt/x:ro", "b:/mnt/y"]])
    return group(**fields)


@st.composite
def configs(draw: st.DrawFn) -> dict[str, Any]:
    engine = draw(st.sampled_from(["job", "rayjob"]))
    config: dict[str, Any] = {"name": draw(names)}
    # The engine and the entrypoint, written under any of their aliases.
    config.update(draw(st.sampled_from([{"engine": engine}, {"run": {"engine": engine}}])))
    entry_key = draw(st.sampled_from(["entrypoint", "script", "run.entrypoint", "run.script"]))
    entry = draw(st.sampled_from(["train.py", "run.sh", "missing.py"]))
    if entry_key.startswith("run."):
        config.setdefault("run", {})[entry_key[4:]] = entry
    else:
        config[entry_key] = entry
    runtime = draw(
        group(
            image=st.sampled_from(["registry.example.com/train:1.0", "python:3.12"]),
            env=st.dictionaries(env_names, st.text(max_size=20), max_size=3),
            env_secret=st.dictionaries(env_names, st.just("creds:token"), max_size=2),
            security=st.just({"mode": "restricted"}),
            **({"pip": st.just(["numpy==2.0.0"])} if engine == "rayjob" else {}),
        )
    )
    sections = {
        "runtime": runtime,
        "compute": draw(_job_compute() if engine == "job" else _ray_compute()),
        "policy": draw(_policy(engine)),
        "storage": draw(_storage(engine)),
        "execution": draw(_execution(engine)),
        "resilience": draw(
            group(
                max_retries=st.integers(0, 3),
                retry_on=st.lists(st.sampled_from(["Preempted", "Evicted", "OOMKilled"])),
                backoff_initial=durations,
                backoff_max=durations,
            )
        ),
        "experiment": draw(group(project=label_values, name=label_values, group=label_values)),
    }
    if engine == "job":
        sections["profiler"] = draw(
            group(mode=enum("profiler", "mode"), rank=st.sampled_from(["0", "1", "all"]))
        )
    config.update({k: v for k, v in sections.items() if v})
    return config


def _dry_run(config: dict[str, Any]) -> str | None:
    """The client dry-run of a config as a file: the rendered YAML, or None on diagnostics."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "train.py").write_text(SCRIPT)
        (root / "run.sh").write_text("#!/bin/sh\necho train\n")
        path = root / "tau.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        try:
            valid = validate.validate(load.load(path))
            preview = pipeline.client_preview(valid, {})
        except ConfigError as exc:
            assert exc.diagnostics, "a ConfigError always carries its diagnostics"
            assert all(d.message for d in exc.diagnostics)
            return None
        except NotImplementedYet:
            return None
        return manifests.dump_yaml(preview.documents)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(configs())
def test_a_schema_valid_config_renders_or_gets_diagnostics(config: dict[str, Any]) -> None:
    rendered = _dry_run(config)
    if rendered is not None:
        assert "kind:" in rendered


def test_the_generator_reaches_render_for_most_engines() -> None:
    """Guards the property above against a generator that only ever produces rejected files."""
    job = {"name": "a", "engine": "job", "entrypoint": "train.py", "compute": {"gpus": 0}}
    ray = {"name": "b", "run": {"engine": "rayjob", "script": "train.py"}}
    for config in (job, ray):
        assert _dry_run(json.loads(json.dumps(config))) is not None
