"""Activation: context precedence, trust on first use, and the dedicated 0600 kubeconfig."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from tau.connection.activate import TRUST_COMMAND, TrustRequired, activate, choose_context
from tau.connection.descriptor import RELATIVE_PATH
from tau.errors import UsageError

DESCRIPTOR = """\
schema: tau.workspace.connection.v1
workspace: sample
cluster:
  contextName: team
access:
  method: kubeconfig
authorization:
  mode: cluster-wide
requirements:
  minTauVersion: 0.3.0
"""


def user_kubeconfig(server: str = "https://team.example:6443") -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "other",
        "clusters": [
            {
                "name": "team-cluster",
                "cluster": {"server": server, "certificate-authority": "ca.crt"},
            },
            {"name": "other-cluster", "cluster": {"server": "https://other.example"}},
        ],
        "users": [
            {
                "name": "team-user",
                "user": {"exec": {"command": "./bin/kubelogin", "args": ["get-token"]}},
            },
            {"name": "other-user", "user": {"token": "other-secret-token"}},
        ],
        "contexts": [
            {"name": "team", "context": {"cluster": "team-cluster", "user": "team-user"}},
            {"name": "other", "context": {"cluster": "other-cluster", "user": "other-user"}},
        ],
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / RELATIVE_PATH).parent.mkdir()
    (root / RELATIVE_PATH).write_text(DESCRIPTOR)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    kube = tmp_path / "home" / ".kube"
    kube.mkdir(parents=True)
    (kube / "config").write_text(yaml.safe_dump(user_kubeconfig()))
    (kube / "ca.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\nteam\n")
    return {"KUBECONFIG": str(kube / "config"), "TAU_CONFIG_DIR": str(tmp_path / "cfg")}


def test_first_use_without_a_terminal_fails_saying_how_to_confirm(repo: Path, env: dict) -> None:
    with pytest.raises(TrustRequired) as info:
        activate(repo, env=env)
    text = info.value.format()
    assert text.startswith("error: workspace connection requires interactive review: first use")
    assert TRUST_COMMAND in text
    assert not (Path(env["TAU_CONFIG_DIR"]) / "kubeconfigs").exists()


def test_trust_writes_only_the_named_context_0600(repo: Path, env: dict) -> None:
    conn = activate(repo, env=env, trust=True)
    assert conn.context == "team" and conn.source == "descriptor" and conn.workspace == "sample"
    assert conn.kubeconfig.parent == Path(env["TAU_CONFIG_DIR"]) / "kubeconfigs"
    assert stat.S_IMODE(conn.kubeconfig.stat().st_mode) == 0o600
    written = yaml.safe_load(conn.kubeconfig.read_text())
    assert [c["name"] for c in written["contexts"]] == ["team"]
    assert [c["name"] for c in written["clusters"]] == ["team-cluster"]
    assert [u["name"] for u in written["users"]] == ["team-user"]
    assert "other-secret-token" not in conn.kubeconfig.read_text()
    kube_dir = Path(env["KUBECONFIG"]).parent
    # Relative file references are resolved against the kubeconfig that defined them.
    assert written["clusters"][0]["cluster"]["certificate-authority"] == str(kube_dir / "ca.crt")
    exec_cmd = written["users"][0]["user"]["exec"]["command"]
    assert exec_cmd == str(kube_dir / "bin" / "kubelogin")
    leftovers = [p for p in conn.kubeconfig.parent.iterdir() if p.name.startswith(".candidate-")]
    assert leftovers == []


def test_the_users_kubeconfig_is_never_modified(repo: Path, env: dict) -> None:
    main = Path(env["KUBECONFIG"])
    os.utime(main, ns=(1_000_000_000_000_000_000, 1_000_000_000_000_000_000))
    before = (main.read_bytes(), main.stat().st_mtime_ns)
    activate(repo, env=env, trust=True)
    activate(repo, env=env)
    activate(repo, env=env, context="other")
    assert (main.read_bytes(), main.stat().st_mtime_ns) == before


def test_a_confirmed_connection_is_not_asked_again(repo: Path, env: dict) -> None:
    asked: list[str] = []
    activate(repo, env=env, confirm=lambda q: asked.append(q) or True)
    assert len(asked) == 1
    assert 'Pin workspace "sample" on context "team"' in asked[0]
    assert "https://team.example:6443" in asked[0] and asked[0].endswith("[y/N] ")
    activate(repo, env=env, confirm=lambda q: pytest.fail("asked twice"))
    activate(repo, env=env)  # no terminal needed once trusted


def test_declining_changes_nothing(repo: Path, env: dict) -> None:
    with pytest.raises(UsageError, match="not confirmed"):
        activate(repo, env=env, confirm=lambda q: False)
    assert not (Path(env["TAU_CONFIG_DIR"]) / "connections").exists()


def test_a_changed_descriptor_needs_review_again(repo: Path, env: dict) -> None:
    activate(repo, env=env, trust=True)
    path = repo / RELATIVE_PATH
    path.write_text(path.read_text().replace("0.3.0", "0.4.0"))
    with pytest.raises(TrustRequired, match="changed since it was confirmed"):
        activate(repo, env=env)


def test_comments_alone_do_not_change_the_digest(repo: Path, env: dict) -> None:
    activate(repo, env=env, trust=True)
    path = repo / RELATIVE_PATH
    path.write_text("# reviewed by platform\n" + path.read_text())
    activate(repo, env=env)


def test_a_changed_api_server_needs_review_again(repo: Path, env: dict) -> None:
    activate(repo, env=env, trust=True)
    Path(env["KUBECONFIG"]).write_text(yaml.safe_dump(user_kubeconfig("https://evil.example")))
    with pytest.raises(TrustRequired, match='API server behind context "team" changed'):
        activate(repo, env=env)


def test_tau_context_conflicting_with_the_descriptor_is_an_error(repo: Path, env: dict) -> None:
    with pytest.raises(UsageError) as info:
        activate(repo, env={**env, "TAU_CONTEXT": "other"})
    descriptor = (repo / RELATIVE_PATH).resolve()
    assert info.value.message == (
        f'$TAU_CONTEXT names context "other" but {descriptor} names "team"; '
        "pass --context to choose one"
    )


def test_explicit_context_wins_and_is_used_directly(repo: Path, env: dict) -> None:
    conn = activate(repo, env={**env, "TAU_CONTEXT": "other"}, context="other")
    assert (conn.context, conn.source, conn.workspace) == ("other", "flag", None)
    written = yaml.safe_load(conn.kubeconfig.read_text())
    assert [c["name"] for c in written["contexts"]] == ["other"]
    assert stat.S_IMODE(conn.kubeconfig.stat().st_mode) == 0o600


def test_tau_context_matching_the_descriptor_activates_it(repo: Path, env: dict) -> None:
    conn = activate(repo, env={**env, "TAU_CONTEXT": "team"}, trust=True)
    assert conn.source == "descriptor"


def test_without_descriptor_the_current_context_is_isolated(tmp_path: Path, env: dict) -> None:
    conn = activate(tmp_path, env=env)
    assert (conn.context, conn.source, conn.system_namespace) == ("other", "current", "tau-system")


def test_unknown_context_lists_the_known_ones(tmp_path: Path, env: dict) -> None:
    with pytest.raises(UsageError, match=r'context "nope" not found .*"other", "team"'):
        activate(tmp_path, env=env, context="nope")


def test_kubeconfig_path_list_first_definition_wins(tmp_path: Path, env: dict) -> None:
    second = tmp_path / "second"
    doc = user_kubeconfig("https://shadowed.example")
    doc["current-context"] = "team"
    second.write_text(yaml.safe_dump(doc))
    merged_env = {**env, "KUBECONFIG": env["KUBECONFIG"] + os.pathsep + str(second)}
    conn = activate(tmp_path, env=merged_env, context="team")
    written = yaml.safe_load(conn.kubeconfig.read_text())
    assert written["clusters"][0]["cluster"]["server"] == "https://team.example:6443"


@pytest.mark.parametrize(
    ("flag", "env_ctx", "described", "expected"),
    [
        (None, None, None, (None, "current")),
        (None, "a", None, ("a", "env")),
        (None, None, "b", ("b", "descriptor")),
        (None, "b", "b", ("b", "descriptor")),
        ("a", "b", "b", ("a", "flag")),
        ("b", "a", "b", ("b", "descriptor")),
    ],
)
def test_context_precedence(flag, env_ctx, described, expected, tmp_path: Path) -> None:
    from tau.connection.descriptor import Discovery, parse

    discovery = None
    if described:
        desc = parse(DESCRIPTOR.replace("team", described), "f")
        discovery = Discovery(tmp_path / "d.yaml", tmp_path, desc)
    assert choose_context(flag, env_ctx, discovery) == expected


def test_a_missing_context_named_by_the_user_points_at_their_choice(
    tmp_path: Path, env: dict
) -> None:
    with pytest.raises(UsageError) as caught:
        activate(tmp_path, env=env, context="nope")
    assert caught.value.hint is not None
    assert "pick one of them" in caught.value.hint
    assert "workspace.connection" not in caught.value.hint


def test_a_missing_context_named_by_the_descriptor_points_at_the_descriptor(
    repo: Path, env: dict
) -> None:
    (repo / RELATIVE_PATH).write_text(DESCRIPTOR.replace("contextName: team", "contextName: gone"))
    with pytest.raises(UsageError) as caught:
        activate(repo, env=env, confirm=lambda _q: True)
    assert 'context "gone" not found' in caught.value.message
    assert caught.value.hint is not None
    assert f"fix `cluster.contextName` in {repo / RELATIVE_PATH}" in caught.value.hint
