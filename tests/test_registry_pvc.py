"""The pvc backend against the local API emulator, with a fake kubelet running the helper pods.

The fake kubelet plays the node: it runs each helper pod's shell script with the pod's env on the
host, with the PVC mount (``$TAU_ROOT``) pointing at a temp dir, then stores the output as the
pod log and sets the phase. So the scripts that would run in busybox really run here.
"""

from __future__ import annotations

import json
import threading

import pytest

from tau.cli import main
from tau.errors import ClusterError
from tau.registry import layout
from tau.registry.pvc import PvcBackend
from tests.kubeapi.fixtures import EMULATOR_CONTEXT
from tests.kubeapi.kubelet import FakeKubelet


@pytest.fixture
def volume(tmp_path):
    path = tmp_path / "pvc"
    path.mkdir()
    return path


@pytest.fixture
def kubelet(kube_api, volume):
    with FakeKubelet(kube_api, volume) as k:
        yield k


@pytest.fixture
def backend(kube_client, kubelet):
    return PvcBackend(
        "blob-training",
        kube_client,
        namespace="default",
        poll=0.01,
        timeout=20,
    )


def test_read_write_list_through_helper_pods(backend, volume, kubelet):
    assert backend.read("a/b.json") is None
    assert backend.write("a/b.json", b'{"x": 1}\n', overwrite=False)
    assert (volume / "a/b.json").read_bytes() == b'{"x": 1}\n'
    assert not backend.write("a/b.json", b"other", overwrite=False)
    assert backend.read("a/b.json") == b'{"x": 1}\n'
    assert backend.write("a/b.json", b"new", overwrite=True) and backend.read("a/b.json") == b"new"
    assert backend.list("a") == ["b.json"] and backend.list("nope") == []
    assert backend.display("a/b.json") == "/data/a/b.json"
    names = [p["metadata"]["name"].rsplit("-", 1)[0] for p in kubelet.pods]
    assert set(names) == {"tau-get", "tau-write", "tau-ls"}
    pod = kubelet.pods[0]
    claim = pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert claim == "blob-training" and pod["spec"]["restartPolicy"] == "Never"
    assert sorted(p.name for p in (volume / "a").iterdir()) == ["b.json"]  # no temp files


def test_helper_pods_are_deleted(backend, kube_api):
    backend.write("x.json", b"1", overwrite=True)
    assert kube_api.list_objects("v1", "Pod") == []


def test_binary_and_large_payloads_round_trip(backend):
    data = bytes(range(256)) * 1500  # 384000 bytes: several env chunks
    assert backend.write("big.bin", data, overwrite=True)
    assert backend.read("big.bin") == data


def test_cas_through_a_pod(backend, volume):
    assert backend.cas("p.json", None, b"a")
    assert not backend.cas("p.json", None, b"b")
    assert not backend.cas("p.json", b"zz", b"b")
    assert backend.cas("p.json", b"a", b"b") and (volume / "p.json").read_bytes() == b"b"
    assert not (volume / "p.json.lockdir").exists()


def test_concurrent_cas_pods_lose_no_update(backend, volume):
    backend.write("n.json", b"0", overwrite=True)

    def bump(times: int) -> None:
        done = 0
        while done < times:
            cur = backend.read("n.json")
            if backend.cas("n.json", cur, str(int(cur) + 1).encode()):
                done += 1

    threads = [threading.Thread(target=bump, args=(5,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert (volume / "n.json").read_bytes() == b"10"


def test_a_failing_pod_is_a_cluster_error(backend, volume):
    (volume / "d").write_bytes(b"a file where a directory must be")
    with pytest.raises(ClusterError, match=r"helper pod tau-write-\w+ on pvc blob-training failed"):
        backend.write("d/x.json", b"1", overwrite=True)


def test_the_cli_uses_the_pvc_by_default(
    capsys, kubelet, kubeconfig_file, volume, tmp_path, monkeypatch
):
    monkeypatch.delenv("TAU_REGISTRY", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig_file))
    src = tmp_path / "src"
    src.mkdir()
    (src / "f.txt").write_bytes(b"hello")
    monkeypatch.setenv("TAU_CONFIG_DIR", str(tmp_path / "tau-config"))
    base = ["--context", EMULATOR_CONTEXT, "-n", "default"]  # no default namespace
    assert (
        main(
            [
                "data",
                "dataset",
                "register",
                "web@v1",
                "--from",
                str(src),
                "--purpose",
                "eval",
                *base,
            ]
        )
        == 0
    )
    assert main(["data", "dataset", "alias", "set", "web", "latest", "v1", *base]) == 0
    capsys.readouterr()
    assert main(["data", "dataset", "show", "web", "-o", "json", *base]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "v1"
    alias = json.loads((volume / layout.dataset_alias("web", "latest")).read_text())
    assert alias["record_path"] == "/data/dataset-registry/datasets/web/v1/dataset.json"


def test_no_kubeconfig_is_a_clear_error(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("TAU_REGISTRY", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing"))
    assert main(["data", "dataset", "list"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: cannot load kubeconfig for the pvc registry")
    assert "Traceback" not in err
