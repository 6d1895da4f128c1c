"""AKS access: exec-only kubeconfigs from the user's Azure identity, stubbed at the HTTP boundary.

The ARM call goes through the real azure-mgmt-containerservice client and azure-core pipeline; a
`requests` transport adapter answers it in-process, so nothing leaves the machine.
"""

from __future__ import annotations

import base64
import io
import json
import stat
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("azure.identity")
pytest.importorskip("azure.mgmt.containerservice")

import requests
import urllib3
from azure.core.credentials import AccessToken
from azure.core.pipeline.transport import RequestsTransport

from tau.connection.activate import activate
from tau.connection.aks import fetch_kubeconfig, normalize
from tau.connection.descriptor import RELATIVE_PATH, AksAccess
from tau.errors import ClusterError

SUB = "00000000-0000-0000-0000-000000000000"
TENANT = "11111111-1111-1111-1111-111111111111"
RID = (
    f"/subscriptions/{SUB}/resourceGroups/rg-ai"
    "/providers/Microsoft.ContainerService/managedClusters/flex"
)
ACCESS = AksAccess(RID, TENANT)

EXEC_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [
        {
            "name": "flex",
            "cluster": {
                "server": "https://flex.hcp.eastus.azmk8s.io:443",
                "certificate-authority-data": base64.b64encode(b"ca").decode(),
            },
        }
    ],
    "contexts": [
        {"name": "flex", "context": {"cluster": "flex", "user": "clusterUser_rg-ai_flex"}}
    ],
    "current-context": "flex",
    "users": [
        {
            "name": "clusterUser_rg-ai_flex",
            "user": {
                "exec": {
                    "apiVersion": "client.authentication.k8s.io/v1beta1",
                    "command": "kubelogin",
                    "args": [
                        "get-token",
                        "--login",
                        "devicecode",
                        "--server-id",
                        "6dae42f8-4368-4678-94ff-3960e28e3630",
                        "--tenant-id",
                        TENANT,
                        "--environment",
                        "AzurePublicCloud",
                    ],
                }
            },
        }
    ],
}


class FakeCredential:
    """A TokenCredential; the bearer token never needs to be real for a stubbed ARM."""

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        return AccessToken("fake-arm-token", int(time.time()) + 3600)


class ArmStub(requests.adapters.BaseAdapter):
    """Answers ARM requests in-process and records them."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__()
        self.status, self.body, self.requests = status, body, []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        self.requests.append(request)
        data = json.dumps(self.body).encode()
        headers = {"Content-Type": "application/json", "Content-Length": str(len(data))}
        response = requests.Response()
        response.status_code = self.status
        response.raw = urllib3.HTTPResponse(
            body=io.BytesIO(data), headers=headers, status=self.status, preload_content=False
        )
        response.headers = requests.structures.CaseInsensitiveDict(headers)
        response.url = request.url or ""
        response.request = request
        return response

    def close(self) -> None:
        pass


def credentials_body(kubeconfig: dict[str, Any]) -> dict[str, Any]:
    value = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    return {"kubeconfigs": [{"name": "clusterUser", "value": value}]}


def stub_options(stub: ArmStub) -> dict[str, Any]:
    session = requests.Session()
    session.mount("https://", stub)
    return {"credential": FakeCredential(), "transport": RequestsTransport(session=session)}


def test_fetch_asks_for_exec_format_and_normalizes_to_azurecli_login() -> None:
    stub = ArmStub(200, credentials_body(EXEC_KUBECONFIG))
    config = fetch_kubeconfig(ACCESS, "aks-flex", env={}, **stub_options(stub))
    (request,) = stub.requests
    assert request.method == "POST"
    assert f"/subscriptions/{SUB}/resourceGroups/rg-ai/" in request.url
    assert "managedClusters/flex/listClusterUserCredential" in request.url
    assert "format=exec" in request.url
    assert request.headers["Authorization"] == "Bearer fake-arm-token"
    assert config["current-context"] == "aks-flex"
    assert [c["name"] for c in config["contexts"]] == ["aks-flex"]
    args = config["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--login") + 1] == "azurecli"


def test_devicecode_auth_mode_is_passed_to_kubelogin() -> None:
    stub = ArmStub(200, credentials_body(EXEC_KUBECONFIG))
    config = fetch_kubeconfig(
        ACCESS, "c", env={"TAU_AUTH_MODE": "devicecode"}, **stub_options(stub)
    )
    args = config["users"][0]["user"]["exec"]["args"]
    assert args[args.index("--login") + 1] == "devicecode"


@pytest.mark.parametrize("field", ["token", "client-key-data", "password"])
def test_static_credentials_are_rejected_and_never_echoed(field: str) -> None:
    static = json.loads(json.dumps(EXEC_KUBECONFIG))
    static["users"][0]["user"] = {field: "s3cr3t-value"}
    with pytest.raises(ClusterError) as info:
        normalize(static, "c", "azurecli")
    assert "static credentials" in info.value.message and field in info.value.message
    assert "s3cr3t-value" not in info.value.format()


def test_forbidden_arm_call_says_which_role_to_ask_for() -> None:
    stub = ArmStub(403, {"error": {"code": "AuthorizationFailed", "message": "no"}})
    with pytest.raises(ClusterError) as info:
        fetch_kubeconfig(ACCESS, "c", env={}, **stub_options(stub))
    assert info.value.status == 403
    assert "Cluster User Role" in (info.value.hint or "")


def test_missing_cluster_names_the_resource_id() -> None:
    stub = ArmStub(404, {"error": {"code": "ResourceNotFound", "message": "gone"}})
    with pytest.raises(ClusterError, match="not found"):
        fetch_kubeconfig(ACCESS, "c", env={}, **stub_options(stub))


def test_activation_writes_an_exec_only_kubeconfig_and_reuses_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / RELATIVE_PATH).parent.mkdir()
    (root / RELATIVE_PATH).write_text(
        "schema: tau.workspace.connection.v1\nworkspace: sample\n"
        "cluster:\n  contextName: aks-flex\n"
        f"access:\n  method: aks\n  aks:\n    resourceID: {RID}\n    tenantID: {TENANT}\n"
        "authorization:\n  mode: cluster-wide\nrequirements:\n  minTauVersion: 0.3.0\n"
    )
    env = {"TAU_CONFIG_DIR": str(tmp_path / "cfg"), "KUBECONFIG": str(tmp_path / "none")}
    stub = ArmStub(200, credentials_body(EXEC_KUBECONFIG))
    asked: list[str] = []
    conn = activate(
        root, env=env, confirm=lambda q: asked.append(q) or True, aks_options=stub_options(stub)
    )
    assert "AKS cluster /subscriptions/" in asked[0]  # reviewed before any credential is fetched
    assert stat.S_IMODE(conn.kubeconfig.stat().st_mode) == 0o600
    written = yaml.safe_load(conn.kubeconfig.read_text())
    assert "exec" in written["users"][0]["user"] and "token" not in written["users"][0]["user"]
    activate(root, env=env, aks_options=stub_options(stub))
    assert len(stub.requests) == 1  # the cached exec kubeconfig is reused
