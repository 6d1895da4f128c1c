"""`tau data dataset ...` end to end through `tau.cli.main` on a file:// registry."""

from __future__ import annotations

import hashlib
import json

import pytest

from tau.cli import main


@pytest.fixture
def reg(tmp_path, monkeypatch):
    """A file registry as the default, and a source directory with two files."""
    monkeypatch.setenv("TAU_REGISTRY", f"file://{tmp_path / 'reg'}")
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.bin").write_bytes(b"\x01\x00" * 1000)
    (src / "sub" / "b.bin").write_bytes(b"\x02\x00" * 500)
    return tmp_path


def run(capsys, *argv):
    code = main(["data", "dataset", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def register(capsys, reg, ref="web@v1", *extra):
    return run(
        capsys,
        "register",
        ref,
        "--from",
        str(reg / "src"),
        "--purpose",
        "pretrain",
        "--format",
        "tokenized-bin-uint16",
        "--tokenizer",
        "gpt2",
        *extra,
    )


def test_register_hashes_real_files_into_an_immutable_record(capsys, reg):
    code, out, _ = register(capsys, reg, "web@v1", "--tag", "team=nlp")
    assert code == 0 and out.startswith("registered web@v1: 2 file(s), 2.9KiB, sha256:")
    path = reg / "reg/dataset-registry/datasets/web/v1/dataset.json"
    rec = json.loads(path.read_text())
    a = hashlib.sha256(b"\x01\x00" * 1000).hexdigest()
    assert rec["files"][0] == {"path": "a.bin", "bytes": 2000, "sha256": a, "token_count": 1000}
    assert rec["pretrain"] == {
        "format": "tokenized-bin-uint16",
        "tokenizer": "gpt2",
        "total_tokens": 1500,
    }
    assert rec["tags"] == {"team": "nlp"} and rec["assurance"] == "verified"
    assert path.read_text().endswith("}\n")


def test_register_refuses_an_existing_version(capsys, reg):
    register(capsys, reg)
    code, _, err = register(capsys, reg)
    assert code == 1
    assert (
        "dataset web@v1 already registered (versions are immutable; register a new version)" in err
    )


@pytest.mark.parametrize("ref", ["Web@v1", "web", "web@V1", "we_b@v1", "web@../x"])
def test_register_refuses_bad_names_without_a_traceback(capsys, reg, ref):
    code, _, err = register(capsys, reg, ref)
    assert code == 1 and err.startswith("error: ") and "Traceback" not in err


def test_register_refuses_flags_of_another_purpose(capsys, reg):
    code, _, err = run(
        capsys,
        "register",
        "web@v1",
        "--from",
        str(reg / "src"),
        "--purpose",
        "eval",
        "--tokenizer",
        "x",
    )
    assert code == 1 and "--tokenizer cannot be used with --purpose eval" in err


def test_register_needs_a_real_directory(capsys, reg):
    code, _, err = run(
        capsys, "register", "web@v1", "--from", str(reg / "nope"), "--purpose", "eval"
    )
    assert code == 1 and "is not a directory" in err


def test_list_filters_and_formats(capsys, reg):
    register(capsys, reg, "web@v1", "--tag", "team=nlp")
    run(
        capsys,
        "register",
        "evals@v1",
        "--from",
        str(reg / "src"),
        "--purpose",
        "eval",
        "--task",
        "mmlu",
    )
    code, out, _ = run(capsys, "list")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == [
        "NAME",
        "VERSION",
        "PURPOSE",
        "FILES",
        "SIZE",
        "ASSURANCE",
        "DIGEST",
        "CREATED",
    ]
    assert [ln.split()[0] for ln in lines[1:]] == ["evals", "web"]
    assert lines[0].index("VERSION") == lines[1].index("v1")  # aligned columns
    _, out, _ = run(capsys, "list", "--purpose", "pretrain", "-o", "json")
    assert [r["name"] for r in json.loads(out)] == ["web"]
    _, out, _ = run(capsys, "list", "--tag", "team=other", "-o", "json")
    assert json.loads(out) == []
    code, _, err = run(capsys, "list", "-o", "yaml")
    assert code == 1 and "--output must be one of: table, json" in err


def test_show_resolves_versions_aliases_and_latest(capsys, reg):
    register(capsys, reg, "web@v1")
    code, _, err = run(capsys, "show", "web")
    assert code == 1 and 'dataset "web" has no alias "latest"' in err
    assert run(capsys, "alias", "set", "web", "latest", "v1")[1] == "web:latest -> v1\n"
    code, out, _ = run(capsys, "show", "web")
    assert code == 0 and "Version:     v1" in out and "Pretrain:" in out
    _, out, _ = run(capsys, "show", "web@latest", "-o", "json")
    assert json.loads(out)["version"] == "v1"
    code, _, err = run(capsys, "show", "web@v9")
    assert code == 1 and 'no version or alias "v9"' in err and "versions: v1" in err


def test_alias_compare_and_swap(capsys, reg):
    register(capsys, reg, "web@v1")
    register(capsys, reg, "web@v2")
    assert run(capsys, "alias", "set", "web", "prod", "v1", "--expect-absent")[0] == 0
    code, _, err = run(capsys, "alias", "set", "web", "prod", "v2", "--expect-absent")
    assert code == 1 and "alias web:prod already exists (points at v1)" in err
    code, _, err = run(capsys, "alias", "set", "web", "prod", "v2", "--expect", "v2")
    assert code == 1 and "alias web:prod points at v1, not v2" in err
    assert run(capsys, "alias", "set", "web", "prod", "v2", "--expect", "v1")[0] == 0
    assert run(capsys, "alias", "get", "web", "prod")[1] == "web@v2\n"
    doc = json.loads(run(capsys, "alias", "get", "web", "prod", "-o", "json")[1])
    assert set(doc) == {
        "schema_version",
        "name",
        "alias",
        "version",
        "digest",
        "record_path",
        "updated_at",
    }
    code, _, err = run(capsys, "alias", "set", "web", "prod", "v7")
    assert code == 1 and "v7" in err


def test_ref_json_and_env(capsys, reg):
    register(capsys, reg, "web@v1")
    doc = json.loads(run(capsys, "ref", "web@v1")[1])
    assert doc["version"] == "v1" and [f["path"] for f in doc["files"]] == ["a.bin", "sub/b.bin"]
    code, _, err = run(capsys, "ref", "web@v1", "-o", "env")
    assert code == 1 and "--staged-root or --base-url" in err
    _, out, _ = run(
        capsys, "ref", "web@v1", "-o", "env", "--staged-root", "/data/web", "--env-prefix", "WEB"
    )
    lines = out.splitlines()
    code, _, err = run(
        capsys,
        "ref",
        "web@v1",
        "-o",
        "env",
        "--base-url",
        "https://x",
        "--env-prefix",
        "bad-prefix",
    )
    assert code == 1 and 'invalid --env-prefix "bad-prefix"' in err
    assert lines[0] == "WEB_URIS=/data/web/a.bin,/data/web/sub/b.bin"
    assert lines[1].startswith("WEB_SHA256S=") and lines[2] == "WEB_TOKEN_COUNTS=1000,500"


def test_verify_ok_then_failed_lists_each_mismatch(capsys, reg):
    register(capsys, reg, "web@v1")
    code, out, _ = run(capsys, "verify", "web@v1")
    assert code == 0 and out.splitlines()[0] == "web@v1: OK"
    (reg / "src" / "a.bin").write_bytes(b"\x01\x00" * 999 + b"\x09\x00")  # same size
    (reg / "src" / "sub" / "b.bin").unlink()
    (reg / "src" / "extra").write_bytes(b"e")
    code, out, err = run(capsys, "verify", "web@v1")
    lines = out.splitlines()
    assert code == 1 and lines[0] == "web@v1: FAILED"
    assert lines[1].startswith("  record digest: sha256:")
    assert lines[2].startswith("  actual digest: sha256:")
    assert "  - missing file: sub/b.bin" in lines and "  - extra file: extra" in lines
    assert any(ln.startswith("  - sha256 mismatch: a.bin") for ln in lines)
    assert "error: verification FAILED for web@v1" in err
    report = json.loads(run(capsys, "verify", "web@v1", "-o", "json")[1])
    assert report["ok"] is False and len(report["mismatches"]) == 3


def test_verify_from_another_copy(capsys, reg):
    register(capsys, reg, "web@v1")
    copy = reg / "copy"
    (copy / "sub").mkdir(parents=True)
    (copy / "a.bin").write_bytes(b"\x01\x00" * 1000)
    (copy / "sub" / "b.bin").write_bytes(b"\x02\x00" * 501)
    code, out, _ = run(capsys, "verify", "web@v1", "--from", str(copy))
    assert code == 1 and "  - size mismatch: sub/b.bin: record 1000 bytes, actual 1002 bytes" in out


def test_az_registry_says_it_is_not_built(capsys, reg):
    code, _, err = run(capsys, "list", "--registry", "az://acct/ctr")
    assert code == 2 and "the az:// registry backend is not built" in err


def test_importing_the_cli_does_not_import_kubernetes():
    import subprocess
    import sys

    code = (
        "import sys, tau.cli.data; "
        "sys.exit(1 if any(m.split('.')[0] == 'kubernetes' for m in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


def test_az_located_records_verify_only_from_a_local_copy(capsys, reg):
    code, _, _ = register(
        capsys, reg, "web@v1", "--account", "acct", "--container", "data", "--prefix", "web/v1"
    )
    assert code == 0
    _, out, _ = run(capsys, "show", "web@v1")
    assert "Location:    az://acct/data/web/v1" in out
    code, _, err = run(capsys, "verify", "web@v1")
    assert code == 1 and "cannot read az://" in err and "--from DIR" in err
    assert run(capsys, "verify", "web@v1", "--from", str(reg / "src"))[0] == 0
    code, _, err = register(capsys, reg, "web@v2", "--account", "acct")
    assert code == 1 and "--account and --container go together" in err


def test_verify_catches_an_edited_record(capsys, reg):
    register(capsys, reg, "web@v1")
    path = reg / "reg/dataset-registry/datasets/web/v1/dataset.json"
    rec = json.loads(path.read_text())
    rec["files"][0]["sha256"] = "0" * 64
    path.write_text(json.dumps(rec))
    code, out, _ = run(capsys, "verify", "web@v1")
    assert code == 1
    assert "  - record digest does not match the record's own file list" in out.splitlines()


def test_corrupt_records_are_reported_not_raised(capsys, reg):
    register(capsys, reg, "web@v1")
    (reg / "reg/dataset-registry/datasets/web/v1/dataset.json").write_text("{nope")
    code, _, err = run(capsys, "show", "web@v1")
    assert code == 1 and "is not valid JSON" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["dataset", "model"])
def test_listing_a_registry_directory_that_does_not_exist_says_so(capsys, tmp_path, kind):
    missing = tmp_path / "typo"
    assert main(["data", kind, "list", "--registry", f"file://{missing}"]) == 0
    err = capsys.readouterr().err
    assert f"note: registry directory {missing} does not exist yet" in err
    assert not missing.exists()
