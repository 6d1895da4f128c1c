"""The e2e control plane installs the Secrets Store CSI driver's SecretProviderClass CRD.

None of these tests starts a control plane. The CRD is read from the Go module cache at the
version pins.toml pins (nothing of the driver is built or run); the lookup is tested against a
fake cache, the install path against a recording API, and the real CRD, when the cache has it,
against the resource type tau creates (tau.k8s.kinds.SECRET_PROVIDER_CLASS).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from tau.k8s.kinds import BY_KIND, SECRET_PROVIDER_CLASS
from tests.e2e.controlplane import build, upstream
from tests.e2e.controlplane.cluster import ControlPlane

COMPONENT = upstream.SECRETS_STORE


def _pin() -> build.Component:
    return next(c for c in build.components() if c.name == COMPONENT)


def test_the_driver_is_pinned_for_its_manifests_only():
    component = _pin()
    assert component.module == "sigs.k8s.io/secrets-store-csi-driver"
    assert component.binaries == {}
    build.check_pinned(component)  # its go.mod says the pinned version
    gosum = (component.folder / "go.sum").read_text()
    assert f"{component.module} {component.version} h1:" in gosum


def test_a_manifests_only_component_builds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU_E2E_CACHE", str(tmp_path))
    dest, seconds = build.build(_pin(), "go1.26.0")
    assert seconds is None
    assert not dest.exists()


def test_cached_module_dir_finds_the_pinned_version_in_the_cache(tmp_path):
    component = _pin()
    folder = tmp_path / f"{component.module}@{component.version}"
    folder.mkdir(parents=True)
    assert upstream.cached_module_dir(COMPONENT, tmp_path) == folder


def test_cached_module_dir_is_none_without_the_module_or_at_another_version(tmp_path):
    component = _pin()
    assert upstream.cached_module_dir(COMPONENT, tmp_path) is None
    (tmp_path / f"{component.module}@v0.0.1").mkdir(parents=True)
    assert upstream.cached_module_dir(COMPONENT, tmp_path) is None


def test_module_cache_honours_gomodcache(tmp_path, monkeypatch):
    monkeypatch.setenv("GOMODCACHE", str(tmp_path))
    assert upstream.module_cache() == tmp_path


def test_cache_paths_escape_capital_letters():
    # The Go module cache spells github.com/Azure as github.com/!azure.
    assert upstream._escape("github.com/Azure/go-autorest") == "github.com/!azure/go-autorest"


def _fake_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "secretproviderclasses.secrets-store.csi.x-k8s.io"},
    }


def test_secrets_store_crds_reads_the_crd_from_the_module(tmp_path, monkeypatch):
    path = upstream.secrets_store_crd_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("---\n" + yaml.safe_dump(_fake_crd()))
    monkeypatch.setattr(
        upstream, "module_dir", lambda name: tmp_path if name == COMPONENT else None
    )
    assert upstream.secrets_store_crds() == [_fake_crd()]


class _RecordingApi:
    def __init__(self) -> None:
        self.applied: list[str] = []
        self.established: list[str] = []

    def apply(self, doc: dict[str, Any]) -> None:
        self.applied.append(doc["metadata"]["name"])

    def wait_established(self, name: str, timeout: float) -> None:
        self.established.append(name)


def test_the_control_plane_installs_and_waits_for_the_crd(monkeypatch):
    def crd(name: str) -> list[dict[str, Any]]:
        return [{"metadata": {"name": name}}]

    monkeypatch.setattr(upstream, "kueue_crds", lambda port, ca: crd("kueue"))
    monkeypatch.setattr(upstream, "kuberay_crds", lambda: crd("kuberay"))
    monkeypatch.setattr(upstream, "kwok_crds", lambda kinds: crd("kwok"))
    monkeypatch.setattr(upstream, "secrets_store_crds", lambda: [_fake_crd()])
    api = _RecordingApi()
    plane = SimpleNamespace(
        api=api, ca=SimpleNamespace(pem=b""), ports=SimpleNamespace(kueue_webhook=1)
    )
    ControlPlane._install_crds(plane)  # type: ignore[arg-type]
    name = "secretproviderclasses.secrets-store.csi.x-k8s.io"
    assert name in api.applied
    assert name in api.established


def _real_crd() -> Path:
    root = upstream.cached_module_dir(COMPONENT)
    if root is None:
        pytest.skip(f"{_pin().module}@{_pin().version} is not in the Go module cache")
    return upstream.secrets_store_crd_path(root)


def test_the_pinned_crd_serves_the_kind_tau_creates():
    (crd,) = [d for d in yaml.safe_load_all(_real_crd().read_text()) if d]
    spec = crd["spec"]
    assert spec["group"] == SECRET_PROVIDER_CLASS.group
    assert spec["names"]["kind"] == SECRET_PROVIDER_CLASS.kind
    assert spec["names"]["plural"] == SECRET_PROVIDER_CLASS.plural
    assert spec["scope"] == "Namespaced"
    served = {v["name"] for v in spec["versions"] if v["served"]}
    assert SECRET_PROVIDER_CLASS.version in served
    assert BY_KIND["SecretProviderClass"] is SECRET_PROVIDER_CLASS
