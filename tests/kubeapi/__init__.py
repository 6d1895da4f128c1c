"""A local Kubernetes API server emulation for tests, served over real HTTP on 127.0.0.1.

Tests drive it with the official ``kubernetes`` client and play the cluster's controllers through
:class:`KubeApiServer` helpers (``put``, ``set_status``, ``delete_object``, ``set_pod_log``)::

    def test_submission_is_admitted(kube_api, kube_client):
        kube_api.register_kueue_kuberay_tau_kinds()
        batch = client.BatchV1Api(kube_client)
        job = batch.create_namespaced_job("team", manifest)          # real HTTP POST
        kube_api.put({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                      "metadata": {"name": "job-train", "namespace": "team"}, "spec": {}})
        kube_api.set_status("kueue.x-k8s.io/v1beta2", "Workload", "job-train",
                            {"conditions": [{"type": "Admitted", "status": "True"}]},
                            namespace="team")
        assert kube_api.count_requests("POST", "/apis/batch/v1/") == 1

The fixtures ``kube_api``, ``kubeconfig_file`` and ``kube_client`` live in ``fixtures.py`` and are
loaded for the whole suite by ``tests/conftest.py``. Import this package as ``tests.kubeapi``.
"""

from .errors import ApiError
from .kinds import KUBERAY_KINDS, KUEUE_KINDS, TAU_KINDS, ResourceKind
from .server import KubeApiServer, RecordedRequest

__all__ = [
    "KUBERAY_KINDS",
    "KUEUE_KINDS",
    "TAU_KINDS",
    "ApiError",
    "KubeApiServer",
    "RecordedRequest",
    "ResourceKind",
]
