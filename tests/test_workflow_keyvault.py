"""runtime.env_kv → Key Vault entries, the spec and its names (tau.intent.workflow.keyvault).

Contract tests 50–60 (the reference's kvspec_test.go), plus every message and where a problem
is reported: each is a located Diagnostic at `runtime.env_kv.<NAME>` once recorded into the
manifest's Findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tau.errors import ConfigError
from tau.intent.load import parse
from tau.intent.validate.findings import Findings
from tau.intent.workflow import keyvault as kv
from tau.intent.workflow.keyvault import KeyVaultEntry, KeyVaultSpec
from tau.intent.workflow.problems import WorkflowInputError


def _problems(env_kv, key_vault="") -> list[tuple[str, ...]]:
    with pytest.raises(WorkflowInputError) as info:
        kv.parse_entries(env_kv, key_vault)
    return [(p.path, p.message) for p in info.value.problems]


# --- contract 50–57: ParseEntries -------------------------------------------------------------


def test_50_bare_secret_name_uses_the_key_vault_flag():
    assert kv.parse_entries({"HF_TOKEN": "hf-token"}, "my-vault") == (
        KeyVaultEntry("HF_TOKEN", "my-vault", "hf-token"),
    )


def test_51_an_explicit_vault_beats_the_default():
    (entry,) = kv.parse_entries({"CUSTOM_KEY": "other-vault/custom-secret"}, "default-vault")
    assert (entry.vault, entry.secret) == ("other-vault", "custom-secret")


def test_52_a_bare_name_without_key_vault_names_the_flag():
    ((path, message),) = _problems({"HF_TOKEN": "hf-token"}, "")
    assert path == ("runtime", "env_kv", "HF_TOKEN")
    assert message == (
        'env_kv HF_TOKEN="hf-token": bare secret name "hf-token" requires --key-vault or '
        "profile spec.secrets.keyVault"
    )


def test_53_entries_in_two_vaults_are_refused():
    ((path, message),) = _problems({"A": "vault-a/secret-a", "B": "vault-b/secret-b"})
    assert path == ("runtime", "env_kv")
    assert message == (
        "env_kv entries reference multiple vaults [vault-a vault-b]; all entries must use the "
        "same vault (one SecretProviderClass per workload)"
    )


def test_54_an_invalid_env_var_name_is_refused_at_its_key():
    with pytest.raises(WorkflowInputError) as info:
        kv.parse_entries({"bad-name": "hf-token"}, "my-vault")
    (problem,) = info.value.problems
    assert problem.path == ("runtime", "env_kv", "bad-name")
    assert problem.key is True
    assert problem.message == (
        'env_kv key "bad-name": invalid env var name (use C_IDENTIFIER format)'
    )


@pytest.mark.parametrize("ref", ["", "   "])
def test_55_an_empty_reference_is_refused(ref):
    ((path, message),) = _problems({"HF_TOKEN": ref}, "my-vault")
    assert path == ("runtime", "env_kv", "HF_TOKEN")
    assert message == f'env_kv HF_TOKEN="{ref}": empty secret reference'


@pytest.mark.parametrize("env_kv", [None, {}, ()])
def test_56_no_entries_is_no_entries(env_kv):
    assert kv.parse_entries(env_kv, "vault") == ()


def test_57_entries_are_sorted_by_env_var():
    entries = kv.parse_entries({"Z_VAR": "z", "A_VAR": "a", "M_VAR": "m"}, "v")
    assert [e.env for e in entries] == ["A_VAR", "M_VAR", "Z_VAR"]


# --- more of ParseEntries ---------------------------------------------------------------------


def test_pairs_are_accepted_like_a_mapping():
    pairs = (("B", "v/b"), ("A", "v/a"))
    assert kv.parse_entries(pairs, None) == (
        KeyVaultEntry("A", "v", "a"),
        KeyVaultEntry("B", "v", "b"),
    )


def test_a_reference_is_trimmed_and_split_at_the_first_slash():
    (entry,) = kv.parse_entries({"X": "  vault/dir/secret  "}, "")
    assert entry == KeyVaultEntry("X", "vault", "dir/secret")


@pytest.mark.parametrize("ref", ["/secret", "vault/"])
def test_a_half_reference_is_a_bare_name(ref):
    # As the reference: only "vault/secret" with both parts names a vault.
    ((_, message),) = _problems({"X": ref}, "")
    assert f'bare secret name "{ref}" requires --key-vault' in message
    assert kv.parse_entries({"X": ref}, "dflt") == (KeyVaultEntry("X", "dflt", ref),)


def test_every_problem_is_reported_at_once():
    problems = _problems({"1BAD": "x", "EMPTY": "", "BARE": "s", "A": "va/a", "B": "vb/b"})
    assert [p for p, _ in problems] == [
        ("runtime", "env_kv", "1BAD"),
        ("runtime", "env_kv", "EMPTY"),
        ("runtime", "env_kv", "BARE"),
        ("runtime", "env_kv"),
    ]


def test_a_bare_name_and_an_explicit_vault_that_differ_are_two_vaults():
    ((_, message),) = _problems({"A": "a", "B": "other/b"}, "dflt")
    assert "multiple vaults [dflt other]" in message


def test_names_are_quoted_with_escapes():
    ((_, message),) = _problems({'a"b': "x"}, "v")
    assert message.startswith('env_kv key "a\\"b":')


# --- contract 58: NewSpec ---------------------------------------------------------------------

ENTRIES = (KeyVaultEntry("HF_TOKEN", "my-vault", "hf-token"),)


def test_58_new_spec_without_a_tenant_names_the_flag():
    with pytest.raises(WorkflowInputError) as info:
        kv.new_spec(ENTRIES, "", "client-id")
    (problem,) = info.value.problems
    assert "--tenant-id" in problem.message
    assert problem.message == "env_kv requires --tenant-id or profile spec.secrets.tenantId"


def test_58_new_spec_without_a_client_names_the_flag():
    with pytest.raises(WorkflowInputError) as info:
        kv.new_spec(ENTRIES, "tenant", "")
    (problem,) = info.value.problems
    assert "--workload-identity-client-id" in problem.message


def test_58_new_spec_without_entries_is_none():
    assert kv.new_spec((), "", "") is None


def test_new_spec_reports_both_missing_flags():
    with pytest.raises(WorkflowInputError) as info:
        kv.new_spec(ENTRIES, None, "  ")
    assert len(info.value.problems) == 2


def test_new_spec_carries_the_one_vault_and_the_identity():
    spec = kv.new_spec(ENTRIES, "tenant-abc", "client-xyz")
    assert spec == KeyVaultSpec("my-vault", "tenant-abc", "client-xyz", ENTRIES)


# --- contract 59–60: env vars and names -------------------------------------------------------


def test_59_env_vars_read_their_own_key_of_the_synced_secret():
    entries = kv.parse_entries({"WANDB_KEY": "wandb-api-key", "HF_TOKEN": "hf-token"}, "v")
    spec = kv.new_spec(entries, "t", "c")
    assert spec is not None
    assert kv.env_vars(spec, "my-job-kv-sync") == (
        ("HF_TOKEN", "my-job-kv-sync", "HF_TOKEN"),
        ("WANDB_KEY", "my-job-kv-sync", "WANDB_KEY"),
    )


def test_60_names():
    assert kv.spc_name("tau-my-job") == "tau-my-job-kv"
    assert kv.synced_secret_name("tau-my-job") == "tau-my-job-kv-sync"


# --- the CLI's identity checks ----------------------------------------------------------------


def test_identity_messages_are_the_references():
    assert kv.TENANT_REQUIRED == "runtime.env_kv_tenant is required when runtime.env_kv is set"
    assert kv.CLIENT_REQUIRED == "runtime.env_kv_client is required when runtime.env_kv is set"
    assert kv.SERVICE_ACCOUNT_REQUIRED == (
        "a ServiceAccount is required when runtime.env_kv is set; use the ServiceAccount "
        "reconciled from TauWorkspace spec.workloadIdentity"
    )


def test_identity_problems_name_each_missing_part():
    messages = [p.message for p in kv.identity_problems("", None, " ")]
    assert messages == [kv.TENANT_REQUIRED, kv.CLIENT_REQUIRED, kv.SERVICE_ACCOUNT_REQUIRED]
    assert kv.identity_problems("t", "c", "sa") == []


# --- problems become located Diagnostics ------------------------------------------------------

MANIFEST = """\
schema_version: 1
name: kv-job
runtime:
  pip: [torch]
  env_kv:
    bad-name: hf-token
    HF_TOKEN: ""
"""


def test_problems_are_reported_at_their_place_in_the_manifest():
    doc = parse(MANIFEST, Path("m.yaml"), kind="manifest")
    findings = Findings(doc.source)
    with pytest.raises(WorkflowInputError) as info:
        kv.parse_entries(doc.data["runtime"]["env_kv"], "vault")
    info.value.report(findings)
    with pytest.raises(ConfigError) as raised:
        findings.raise_errors()
    text = raised.value.format()
    assert 'm.yaml:6:5: error: runtime.env_kv.bad-name: env_kv key "bad-name"' in text
    assert 'm.yaml:7:15: error: runtime.env_kv.HF_TOKEN: env_kv HF_TOKEN="": empty' in text
    assert "hint: letters, digits and '_', not starting with a digit" in text
